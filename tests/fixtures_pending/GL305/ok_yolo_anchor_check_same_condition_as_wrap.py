# source: https://github.com/ultralytics/yolov5/issues/90
# train.py: train(hyp) wraps the detector in DistributedDataParallel when several GPUs are
# available, and then reads the detection head through the wrapper for the anchor check,
# `check_best_possible_recall(dataset, anchors=model.model[-1].anchor_grid, ...)`:
# "AttributeError: 'DistributedDataParallel' object has no attribute 'model'".
# Hard negative: the fix given in the thread, the same condition as the wrap choosing
# `model.module.model` (wrapped) or `model.model` (not wrapped).
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class Detect(nn.Module):
    def __init__(self, nc=2, na=3):
        super().__init__()
        self.conv = nn.Conv2d(8, na * (nc + 5), 1)
        self.register_buffer("anchor_grid", torch.tensor([[10.0, 13.0], [16.0, 30.0], [33.0, 23.0]]))

    def forward(self, x):
        return self.conv(x)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.SiLU(), Detect())

    def forward(self, x):
        return self.model(x)


def check_best_possible_recall(wh, anchors, thr=4.0):
    r = wh[:, None] / anchors[None]
    x = torch.min(r, 1.0 / r).min(2)[0].max(1)[0]
    return (x > 1.0 / thr).float().mean().item()


def train(hyp, device):
    torch.manual_seed(0)
    model = Model().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=hyp["lr0"], momentum=hyp["momentum"])
    if device.type != "cpu" and torch.cuda.device_count() > 1 and dist.is_available():
        dist.init_process_group(backend="nccl", init_method="tcp://127.0.0.1:9999", world_size=1, rank=0)
        model = torch.nn.parallel.DistributedDataParallel(model)

    imgs = torch.randn(32, 3, 8, 8)
    targets = torch.randn(32, 21, 8, 8)
    wh = torch.rand(100, 2) * 40 + 5
    if device.type != "cpu" and torch.cuda.device_count() > 1 and dist.is_available():
        bpr = check_best_possible_recall(wh, anchors=model.module.model[-1].anchor_grid.cpu(), thr=hyp["anchor_t"])
    else:
        bpr = check_best_possible_recall(wh, anchors=model.model[-1].anchor_grid.cpu(), thr=hyp["anchor_t"])
    print("best possible recall", round(bpr, 3))

    losses = []
    for epoch in range(4):
        for i in range(0, 32, 8):
            pred = model(imgs[i:i + 8].to(device))
            loss = F.mse_loss(pred, targets[i:i + 8].to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses


if __name__ == "__main__":
    hyp = {"lr0": 0.05, "momentum": 0.9, "anchor_t": 4.0}
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    losses = train(hyp, device)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
