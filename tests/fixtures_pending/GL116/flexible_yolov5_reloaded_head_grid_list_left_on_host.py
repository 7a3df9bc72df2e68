# source: https://github.com/Bobo-y/flexible-yolov5/issues/111
# A YOLOv5-style detection head caches its inference grids in plain Python lists
# (`self.grid = [torch.zeros(1)] * self.nl`, same for `self.anchor_grid`) and only rebuilds an
# entry when its shape no longer matches the feature map. Validation during training fills the
# lists; the checkpoint pickles the whole model; the evaluation script loads it with
# `map_location="cpu"` and calls `.to(device)`, which moves parameters and buffers but not tensors
# kept in a list, so with same-size images the stale host grids meet the CUDA predictions:
# "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and
# cpu!" (the reporter moved each grid by hand after loading; YOLOv5 overrides `_apply` to map the
# grids along with the module).
# fails-on-cuda: Expected all tensors to be on the same device
import copy
import json
import os
import tempfile

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class YOLOHead(nn.Module):
    def __init__(self, nc=2, anchors=((10, 13, 16, 30), (30, 61, 62, 45)), ch=(8, 16), stride=(8.0, 16.0)):
        super().__init__()
        self.nc = nc
        self.no = nc + 5
        self.nl = len(anchors)
        self.na = len(anchors[0]) // 2
        self.grid = [torch.zeros(1)] * self.nl
        self.anchor_grid = [torch.zeros(1)] * self.nl
        self.register_buffer("anchors", torch.tensor(anchors).float().view(self.nl, -1, 2))
        self.register_buffer("stride", torch.tensor(stride))
        self.m = nn.ModuleList(nn.Conv2d(c, self.no * self.na, 1) for c in ch)

    def forward(self, x):
        z = []
        for i in range(self.nl):
            x[i] = self.m[i](x[i])
            bs, _, ny, nx = x[i].shape
            x[i] = x[i].view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            if not self.training:
                if self.grid[i].shape[2:4] != x[i].shape[2:4]:
                    self.grid[i], self.anchor_grid[i] = self._make_grid(nx, ny, i)
                y = x[i].sigmoid()
                xy = (y[..., 0:2] * 2 + self.grid[i]) * self.stride[i]  # expect: GL116
                wh = (y[..., 2:4] * 2) ** 2 * self.anchor_grid[i]
                z.append(torch.cat((xy, wh, y[..., 4:]), 4).view(bs, -1, self.no))
        return x if self.training else (torch.cat(z, 1), x)

    def _make_grid(self, nx, ny, i):
        d = self.anchors[i].device
        yv, xv = torch.meshgrid(torch.arange(ny, device=d), torch.arange(nx, device=d), indexing="ij")
        shape = 1, self.na, ny, nx, 2
        grid = torch.stack((xv, yv), 2).float().expand(shape) - 0.5
        anchor_grid = self.anchors[i].view((1, self.na, 1, 1, 2)).expand(shape)
        return grid, anchor_grid


class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.SiLU())
        self.down = nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.SiLU())
        self.detection = YOLOHead()

    def forward(self, img):
        p3 = self.stem(img)
        p4 = self.down(p3)
        return self.detection([p3, p4])


def objectness_loss(preds, targets):
    return sum(nn.functional.binary_cross_entropy_with_logits(p[..., 4], t) for p, t in zip(preds, targets))


torch.manual_seed(0)
imgs = torch.rand(16, 3, 16, 16)
targets = [(imgs[:, 0].unsqueeze(1).repeat(1, 2, 1, 1)[..., ::2, ::2] > 0.5).float(),
           (imgs[:, 0].unsqueeze(1).repeat(1, 2, 1, 1)[..., ::4, ::4] > 0.5).float()]
model = Detector().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
losses = []
for epoch in range(15):
    model.train()
    preds = model(imgs.to(device))
    loss = objectness_loss(preds, [t.to(device) for t in targets])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        model(imgs[:4].to(device))  # validation pass: fills the head's grids
ckpt_path = os.path.join(tempfile.mkdtemp(), "last.pt")
torch.save({"model": copy.deepcopy(model)}, ckpt_path)

# eval.py: attempt_load() then .to(device)
ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=False)
model = ckpt["model"].float().eval()
model = model.to(device)
with torch.no_grad():
    out, _ = model(imgs[4:8].to(device))
print("detections:", tuple(out.shape))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
