# source: https://github.com/ultralytics/yolov5/pull/5110
# YOLOv5's `Detect` head (models/yolo.py, autumn 2021): `__init__` keeps the decoding grids as a
# plain list of tensors, `self.grid = [torch.zeros(1)] * self.nl`, and `forward` (inference)
# rebuilds `self.grid[i]` with `_make_grid` only when the feature-map size changes, on the device
# of the current input. A model run on the GPU and then moved with `model.to('cpu')` keeps the
# cached CUDA grids (a list is neither a parameter nor a buffer, so `Module.to` never sees it), and
# the next CPU inference adds them to CPU predictions ("Expected all tensors to be on the same
# device, but found at least two devices, cuda:0 and CPU!"; the PR moves the grids in an `_apply`
# override). Here: a tiny backbone with a Detect head trained for a few steps on synthetic boxes,
# GPU inference, then the reporter's move to the CPU and a second inference.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn


class Detect(nn.Module):
    def __init__(self, nc=2, anchors=((10, 13, 16, 30), (30, 61, 62, 45)), ch=(16, 32)):
        super().__init__()
        self.nc = nc
        self.no = nc + 5
        self.nl = len(anchors)
        self.na = len(anchors[0]) // 2
        self.grid = [torch.zeros(1)] * self.nl  # expect: GL106
        self.register_buffer("anchors", torch.tensor(anchors).float().view(self.nl, -1, 2))
        self.register_buffer("stride", torch.tensor([8.0, 16.0]))
        self.m = nn.ModuleList(nn.Conv2d(x, self.no * self.na, 1) for x in ch)

    def forward(self, x):
        z = []
        for i in range(self.nl):
            x[i] = self.m[i](x[i])
            bs, _, ny, nx = x[i].shape
            x[i] = x[i].view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            if not self.training:
                if self.grid[i].shape[2:4] != x[i].shape[2:4]:
                    self.grid[i] = self._make_grid(nx, ny).to(x[i].device)
                y = x[i].sigmoid()
                xy = (y[..., 0:2] * 2 - 0.5 + self.grid[i]) * self.stride[i]
                wh = (y[..., 2:4] * 2) ** 2 * self.anchors[i].view(1, self.na, 1, 1, 2)
                z.append(torch.cat((xy, wh, y[..., 4:]), -1).view(bs, -1, self.no))
        return x if self.training else torch.cat(z, 1)

    @staticmethod
    def _make_grid(nx=20, ny=20):
        yv, xv = torch.meshgrid(torch.arange(ny), torch.arange(nx), indexing="ij")
        return torch.stack((xv, yv), 2).view((1, 1, ny, nx, 2)).float()


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.b1 = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.SiLU(), nn.Conv2d(16, 16, 3, 4, 1), nn.SiLU())
        self.b2 = nn.Sequential(nn.Conv2d(16, 32, 3, 2, 1), nn.SiLU())
        self.detect = Detect()

    def forward(self, x):
        p3 = self.b1(x)
        return self.detect([p3, self.b2(p3)])


def objectness_targets(images, outs):
    # a stand-in for the YOLO loss: objectness where the image's red channel is bright
    targets = []
    for o in outs:
        bs, na, ny, nx, _ = o.shape
        heat = nn.functional.adaptive_avg_pool2d(images[:, :1], (ny, nx))
        targets.append((heat > 0.55).float().expand(bs, na, ny, nx))
    return targets


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Model().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
losses = []
for step in range(20):
    images = torch.rand(8, 3, 64, 64).to(device)
    outs = model(images)
    loss = sum(nn.functional.binary_cross_entropy_with_logits(o[..., 4], t) for o, t in zip(outs, objectness_targets(images, outs)))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

model.eval()
with torch.no_grad():
    pred = model(torch.rand(1, 3, 64, 64).to(device))
    print("GPU inference", tuple(pred.shape))
    model.to("cpu")
    pred = model(torch.rand(1, 3, 64, 64))
    print("CPU inference", tuple(pred.shape))
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
