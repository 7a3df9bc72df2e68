# source: https://github.com/WongKinYiu/PyTorch_YOLOv4/issues/296 (same report: ScaledYOLOv4#35)
# PyTorch_YOLOv4's YOLOLayer keeps `anchor_vec = anchors / stride` as a plain tensor attribute made
# in __init__ (not a buffer, so `model.to(device)` leaves it on the host); `forward` moves it
# lazily (`if self.anchor_vec.device != device: self.anchor_vec = self.anchor_vec.to(device)`).
# With several GPUs train.py wraps the model in `torch.nn.DataParallel`: forward then runs on the
# replicas, and the lazy move never reaches the original layer. The loss's `build_targets` reads
# `model.module.module_list[jj].anchor_vec` (still on the host) and divides the device targets by
# it: "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and
# cpu!" (at `r = t[None, :, 4:6] / anchors[:, None]`). This is the thread's fix:
# `anchors = anchors.to(targets.device)` after reading them (trains with one and two emulated
# GPUs: `python -m gpulint.emulate --force --gpus 2 <file>`).
# Hard negative for GL305 (pending, P63-1): `build_targets` reads the wrapped model's attributes
# through `model.module.X if multi_gpu else model.X` with `multi_gpu = is_parallel(model)`, the
# exact guard of PyTorch_YOLOv4's utils/loss.py; GL305 reports the three `else` branches today.
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class YOLOLayer(nn.Module):
    def __init__(self, anchors, nc, stride):
        super().__init__()
        self.anchors = torch.Tensor(anchors)
        self.stride = stride
        self.na = len(anchors)
        self.no = nc + 5
        self.nx, self.ny = 0, 0
        self.anchor_vec = self.anchors / self.stride

    def create_grids(self, ng, device="cpu"):
        self.nx, self.ny = ng
        if self.anchor_vec.device != device:
            self.anchor_vec = self.anchor_vec.to(device)

    def forward(self, p):
        bs, _, ny, nx = p.shape
        if (self.nx, self.ny) != (nx, ny):
            self.create_grids((nx, ny), p.device)
        return p.view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()


class Darknet(nn.Module):
    def __init__(self, nc=2):
        super().__init__()
        anchors = [[8.0, 8.0], [16.0, 12.0], [12.0, 16.0]]
        self.module_list = nn.ModuleList([
            nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.LeakyReLU(0.1)),
            nn.Sequential(nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.LeakyReLU(0.1)),
            nn.Conv2d(32, len(anchors) * (nc + 5), 1),
            YOLOLayer(anchors, nc, stride=4),
        ])
        self.yolo_layers = [3]
        self.hyp = {"anchor_t": 4.0}

    def forward(self, x):
        out = []
        for m in self.module_list:
            x = m(x)
            if isinstance(m, YOLOLayer):
                out.append(x)
        return out


def is_parallel(model):
    return type(model) in (nn.parallel.DataParallel, nn.parallel.DistributedDataParallel)


def build_targets(p, targets, model):
    nt = targets.shape[0]
    tcls, tbox, indices, anch = [], [], [], []
    gain = torch.ones(6, device=targets.device)
    multi_gpu = is_parallel(model)
    hyp = model.module.hyp if multi_gpu else model.hyp
    for i, jj in enumerate(model.module.yolo_layers if multi_gpu else model.yolo_layers):
        anchors = model.module.module_list[jj].anchor_vec if multi_gpu else model.module_list[jj].anchor_vec
        anchors = anchors.to(targets.device)
        gain[2:] = torch.tensor(p[i].shape)[[3, 2, 3, 2]]
        t = targets * gain
        na = anchors.shape[0]
        at = torch.arange(na, device=targets.device).view(na, 1).repeat(1, nt)
        r = t[None, :, 4:6] / anchors[:, None]
        j = torch.max(r, 1.0 / r).max(2)[0] < hyp["anchor_t"]
        a, t = at[j], t.repeat(na, 1, 1)[j]
        b, c = t[:, :2].long().T
        gxy, gwh = t[:, 2:4], t[:, 4:6]
        gij = gxy.long()
        gi, gj = gij.T
        indices.append((b, a, gj.clamp_(0, int(gain[3]) - 1), gi.clamp_(0, int(gain[2]) - 1)))
        tbox.append(torch.cat((gxy - gij, gwh), 1))
        anch.append(anchors[a])
        tcls.append(c)
    return tcls, tbox, indices, anch


def compute_loss(p, targets, model):
    tcls, tbox, indices, anchors = build_targets(p, targets, model)
    lbox = torch.zeros(1, device=targets.device)
    lobj = torch.zeros(1, device=targets.device)
    lcls = torch.zeros(1, device=targets.device)
    for i, pi in enumerate(p):
        b, a, gj, gi = indices[i]
        tobj = torch.zeros_like(pi[..., 0])
        if b.shape[0]:
            ps = pi[b, a, gj, gi]
            pxy = ps[:, :2].sigmoid()
            pwh = torch.exp(ps[:, 2:4]).clamp(max=1e3) * anchors[i]
            lbox = lbox + F.mse_loss(torch.cat((pxy, pwh), 1), tbox[i])
            tobj[b, a, gj, gi] = 1.0
            lcls = lcls + F.cross_entropy(ps[:, 5:], tcls[i])
        lobj = lobj + F.binary_cross_entropy_with_logits(pi[..., 4], tobj)
    return lbox + lobj + lcls


def make_batch(g, bs=8):
    imgs = torch.rand(bs, 3, 32, 32, generator=g)
    rows = []
    for k in range(bs):  # one box per image: image index, class, x, y, w, h (normalised)
        cls = float(torch.randint(0, 2, (1,), generator=g))
        xy = torch.rand(2, generator=g) * 0.6 + 0.2
        imgs[k, int(cls)] += 0.5
        rows.append(torch.tensor([k, cls, xy[0], xy[1], 0.25, 0.25]))
    return imgs, torch.stack(rows)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Darknet().to(device)
if device.type == "cuda" and torch.cuda.device_count() > 1:
    model = torch.nn.DataParallel(model)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
g = torch.Generator().manual_seed(0)
losses = []
for step in range(60):
    imgs, targets = make_batch(g)
    pred = model(imgs.to(device))
    loss = compute_loss(pred, targets.to(device), model)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
