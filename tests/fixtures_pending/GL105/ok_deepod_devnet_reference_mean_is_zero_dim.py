# Source shape: https://github.com/xuhongzuo/DeepOD/blob/main/deepod/models/tabular/devnet.py (DevLoss.forward)
# Pending hard negative (PRECISION43, P43-1): the deviation loss draws its Gaussian reference on the
# host, `ref = torch.randn(self.loss_l)`, and uses it only through `torch.mean(ref)` and
# `torch.std(ref)`: full reductions, 0-dim tensors, which PyTorch combines with tensors on any
# device (like a Python number). Nothing host-sized meets the device predictions. GL105 reports
# the factory today (its method form, `ref.mean()`, is already silent).
import json

import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class DevLoss(nn.Module):
    def __init__(self, margin=5.0, l=5000, reduction="mean"):
        super().__init__()
        self.margin = margin
        self.loss_l = l
        self.reduction = reduction

    def forward(self, y_true, y_pred):
        ref = torch.randn(self.loss_l)
        dev = (y_pred - torch.mean(ref)) / torch.std(ref)
        inlier_loss = torch.abs(dev)
        outlier_loss = torch.abs(torch.max(self.margin - dev, torch.zeros_like(dev)))
        loss = (1 - y_true) * inlier_loss + y_true * outlier_loss
        if self.reduction == "mean":
            return torch.mean(loss)
        return loss


X = torch.randn(256, 8)
y = (X[:, 0] > 1.2).float()
X[y == 1] += 2.0
net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
criterion = DevLoss()
optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
losses = []
for epoch in range(20):
    for i in range(0, 256, 64):
        xb, yb = X[i:i + 64].to(device), y[i:i + 64].to(device)
        loss = criterion(yb, net(xb).view(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
