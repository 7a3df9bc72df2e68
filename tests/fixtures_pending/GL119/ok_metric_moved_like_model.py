# source: https://github.com/Lightning-AI/torchmetrics/issues/917 (the maintainers' answer)
# Hard negative: metric objects moved to the device like the model: `.to(device)` on the
# constructor, as a statement, and a metric fed host tensors (`.cpu()`) while staying on the CPU.
import json

import torch
import torch.nn as nn


class Accuracy(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("correct", torch.tensor(0))
        self.register_buffer("total", torch.tensor(0))

    def update(self, preds, target):
        self.correct += (preds.argmax(dim=1) == target).sum()
        self.total += target.numel()

    def compute(self):
        return self.correct.float() / self.total


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
X = torch.randn(320, 10)
Y = (X[:, 2] > X[:, 3]).long()
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2)).to(device)
train_acc = Accuracy().to(device)
val_acc = Accuracy()
val_acc.to(device)
host_acc = Accuracy()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
losses = []
for step in range(50):
    idx = torch.randint(0, 320, (32,))
    x, y = X[idx].to(device), Y[idx].to(device)
    out = model(x)
    loss = nn.functional.cross_entropy(out, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
    train_acc.update(out.detach(), y)
    host_acc.update(out.detach().cpu(), y.cpu())
with torch.no_grad():
    val_acc.update(model(X[:64].to(device)), Y[:64].to(device))
print("acc", train_acc.compute().item(), val_acc.compute().item(), host_acc.compute().item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
