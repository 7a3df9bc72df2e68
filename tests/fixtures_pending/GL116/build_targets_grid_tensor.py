# source: https://github.com/Zzh-tju/ultralytics-YOLOv3-Cluster-NMS/issues/6
# utils.py-style compute_loss/build_targets (plain functions): the grid size `ng` is made with
# torch.Tensor(...) on the host and multiplies the device targets.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn


def build_targets(model, targets):
    ng = torch.Tensor([model.grid, model.grid])
    t = targets
    gxy = t[:, 2:4] * model.grid
    gwh = t[:, 4:6] * ng  # expect: GL116
    gi = gxy.long().clamp(0, model.grid - 1)
    return t[:, 1].long(), gi, gwh


def compute_loss(pred, targets, model):
    tcls, gi, gwh = build_targets(model, targets)
    cell = pred[torch.arange(len(targets), device=pred.device), :, gi[:, 1], gi[:, 0]]
    box_loss = nn.functional.mse_loss(cell[:, :2].sigmoid() * model.grid, gwh)
    cls_loss = nn.functional.cross_entropy(cell[:, 2:], tcls)
    return box_loss * 0.01 + cls_loss


class TinyYolo(nn.Module):
    def __init__(self, grid=4, classes=2):
        super().__init__()
        self.grid = grid
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(grid), nn.Conv2d(8, 2 + classes, 1))

    def forward(self, x):
        return self.body(x)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = TinyYolo().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
losses = []
for step in range(40):
    imgs = torch.randn(8, 3, 16, 16)
    targets = torch.cat([torch.zeros(8, 1), torch.randint(0, 2, (8, 1)).float(), torch.rand(8, 2), torch.rand(8, 2) * 0.5], dim=1)
    imgs[:, 0] += targets[:, 1:2, None] * 2
    pred = model(imgs.to(device))
    loss = compute_loss(pred, targets.to(device), model)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
