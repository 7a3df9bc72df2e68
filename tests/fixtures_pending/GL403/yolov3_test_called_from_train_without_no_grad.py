# source: https://github.com/ultralytics/yolov3/pull/457
# ultralytics/yolov3 (Aug 2019): train.py calls `test.test(cfg, data, batch_size=..., model=model)`
# after every epoch. `test()` takes the training model (`device = next(model.parameters()).device`),
# calls `model.eval()`, and for every validation batch runs `inf_out, train_out = model(imgs)`
# ("inference and training outputs") with autograd on, adds the detached loss items of
# `compute_loss(train_out, targets, model)[1][:3].cpu()` to the validation loss, and runs NMS on
# `inf_out`. Nothing in test() or at its call site disables gradients, so every validation forward
# records a graph that is never used. The PR ("put `with torch.no_grad():` into test() in
# test.py") asks for the fix the repository later adopted. Rebuilt with a one-scale toy detector
# (objectness + box regression per grid cell) on synthetic images; the training loop keeps
# yolov3's gradient accumulation (`if ni % accumulate == 0: optimizer.step(); optimizer.zero_grad()`).
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Darknet(nn.Module):
    def __init__(self, grid=4):
        super().__init__()
        self.grid = grid
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(grid))
        self.head = nn.Conv2d(8, 5, 1)  # x, y, w, h, objectness per cell
        self.hyp = {"giou": 1.0, "obj": 1.0}

    def forward(self, x):
        p = self.head(self.backbone(x)).permute(0, 2, 3, 1)  # bs, gy, gx, 5
        if self.training:
            return p
        io = p.clone()
        io[..., :4] = torch.sigmoid(io[..., :4])
        io[..., 4] = torch.sigmoid(io[..., 4])
        return io.view(x.shape[0], -1, 5), p


def compute_loss(p, targets, model):
    h = model.hyp
    lbox = F.mse_loss(torch.sigmoid(p[..., :4]), targets[..., :4])
    lobj = F.binary_cross_entropy_with_logits(p[..., 4], targets[..., 4])
    lcls = torch.zeros_like(lobj)
    loss = h["giou"] * lbox + h["obj"] * lobj
    return loss, torch.cat((lbox.view(1), lobj.view(1), lcls.view(1), loss.view(1))).detach()


def non_max_suppression(prediction, conf_thres=0.5):
    return [pred[pred[:, 4] > conf_thres] for pred in prediction]


def test(cfg, data, batch_size=16, img_size=32, conf_thres=0.5, model=None):
    if model is None:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = Darknet().to(device)
    else:
        device = next(model.parameters()).device  # get model device

    dataloader = DataLoader(data, batch_size=batch_size)
    model.eval()
    loss = torch.zeros(3)
    correct, seen = 0, 0
    for batch_i, (imgs, targets) in enumerate(dataloader):
        imgs = imgs.to(device)
        targets = targets.to(device)

        # Run model
        inf_out, train_out = model(imgs)  # expect: GL403

        # Compute loss
        if hasattr(model, "hyp"):
            loss += compute_loss(train_out, targets, model)[1][:3].cpu()

        # Run NMS
        output = non_max_suppression(inf_out, conf_thres=conf_thres)
        for si, pred in enumerate(output):
            obj = targets[si, ..., 4].reshape(-1) > 0.5
            hit = inf_out[si, :, 4] > conf_thres
            correct += int((hit == obj).sum())
            seen += obj.numel()
    return (correct / seen, *(loss / len(dataloader)).tolist())


def make_data(n, g, img_size=32):
    gen = torch.Generator().manual_seed(n)
    imgs = torch.rand(n, 3, img_size, img_size, generator=gen)
    cells = F.adaptive_avg_pool2d(imgs, g).permute(0, 2, 3, 1)  # n, g, g, 3
    obj = (cells[..., 0] > cells[..., 1]).float()
    box = torch.cat([cells, cells[..., :1]], dim=-1)
    return TensorDataset(imgs, torch.cat([box, obj.unsqueeze(-1)], dim=-1))


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Darknet().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[6], gamma=0.1)
    train_data, val_data = make_data(256, 4), make_data(64, 4)
    dataloader = DataLoader(train_data, batch_size=16, shuffle=True)
    accumulate, epochs, nb = 2, 8, len(dataloader)
    history = []
    for epoch in range(epochs):
        model.train()
        mloss = torch.zeros(4)
        for i, (imgs, targets) in enumerate(dataloader):
            ni = i + nb * epoch
            imgs, targets = imgs.to(device), targets.to(device)
            pred = model(imgs)
            loss, loss_items = compute_loss(pred, targets, model)
            loss.backward()
            if ni % accumulate == 0:
                optimizer.step()
                optimizer.zero_grad()
            mloss = (mloss * i + loss_items.cpu()) / (i + 1)
        scheduler.step()
        results = test("cfg/yolov3-tiny.cfg", val_data, batch_size=16, model=model)
        history.append(sum(results[1:]))
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
