# source: https://github.com/yatengLG/Focal-Loss-Pytorch/issues/17 (the fix)
# Hard negative: the focal loss registers alpha as a buffer (moved with the module), and builds
# its per-call helpers from the inputs' device; a Python float attribute is not a tensor.
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class FocalLoss(nn.Module):
    def __init__(self, alpha=0.25, gamma=2, num_classes=3):
        super().__init__()
        alpha_t = torch.zeros(num_classes)
        alpha_t[0] += alpha
        alpha_t[1:] += 1 - alpha
        self.register_buffer("alpha", alpha_t)
        self.gamma = float(gamma)
        self.eps = 1e-6

    def forward(self, preds, labels):
        logsoft = F.log_softmax(preds, dim=1)
        p = torch.exp(logsoft).gather(1, labels.view(-1, 1)).clamp(min=self.eps)
        logp = logsoft.gather(1, labels.view(-1, 1))
        alpha = self.alpha.gather(0, labels.view(-1))
        ones = torch.ones_like(p)
        loss = -torch.mul(torch.pow(ones - p, self.gamma), logp)
        return torch.mul(alpha, loss.t()).mean()


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
X = torch.randn(384, 6)
Y = (X[:, 0] > 0).long() + (X[:, 1] > 0.5).long()
model = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 3)).to(device)
criterion = FocalLoss().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.3)
losses = []
for step in range(60):
    idx = torch.randint(0, 384, (48,))
    loss = criterion(model(X[idx].to(device)), Y[idx].to(device))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
