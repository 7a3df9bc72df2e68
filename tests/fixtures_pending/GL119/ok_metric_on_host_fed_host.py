# source: https://github.com/Lightning-AI/torchmetrics/issues/167
# Hard negative: the metric object stays on the CPU and is only ever updated with host copies
# (`preds.detach().cpu()`), which is the documented alternative to moving the metric.
import json

import torch
import torch.nn as nn


class ConfusionMatrix(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.register_buffer("confmat", torch.zeros(num_classes, num_classes, dtype=torch.long))

    def update(self, preds, target):
        idx = target * self.confmat.size(0) + preds
        self.confmat += torch.bincount(idx, minlength=self.confmat.numel()).view_as(self.confmat)

    def compute(self):
        return self.confmat.diag().sum().item() / max(self.confmat.sum().item(), 1)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
X = torch.randn(300, 6)
Y = X[:, :3].argmax(dim=1)
model = nn.Sequential(nn.Linear(6, 24), nn.ReLU(), nn.Linear(24, 3)).to(device)
metric = ConfusionMatrix()
optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
losses = []
for step in range(50):
    idx = torch.randint(0, 300, (32,))
    x, y = X[idx].to(device), Y[idx].to(device)
    out = model(x)
    loss = nn.functional.cross_entropy(out, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
    metric.update(out.argmax(dim=1).detach().cpu(), y.cpu())
print("acc", metric.compute())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
