# source: https://github.com/IDEA-Research/DAB-DETR/issues/58
# engine.py's train_one_epoch(model, criterion, data_loader, optimizer, device, epoch, max_norm,
# ..., args=...) builds its own GradScaler(enabled=args.amp) and ends each step with two branches:
# with args.amp `optimizer.zero_grad(); scaler.scale(losses).backward(); scaler.unscale_(optimizer);
# clip; scaler.step(optimizer); scaler.update()`, else (the "original backward function")
# `losses.backward(); clip; optimizer.step()` with no zero_grad anywhere on that path: without
# --amp the gradients of every batch add up (the report: "optimizer.zero_grad() is forgotten",
# answered "a bug in our implementation"). The zero_grad of the other branch does not run here.
import argparse
import json
import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class DABDETRLite(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.class_embed = nn.Linear(8, num_classes)
        self.bbox_embed = nn.Linear(8, 4)

    def forward(self, samples):
        h = self.backbone(samples)
        return {"pred_logits": self.class_embed(h), "pred_boxes": self.bbox_embed(h).sigmoid()}


class SetCriterion(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight_dict = {"loss_ce": 1.0, "loss_bbox": 5.0}

    def forward(self, outputs, targets):
        labels = torch.stack([t["labels"] for t in targets])
        boxes = torch.stack([t["boxes"] for t in targets])
        return {"loss_ce": F.cross_entropy(outputs["pred_logits"], labels), "loss_bbox": F.l1_loss(outputs["pred_boxes"], boxes)}


def train_one_epoch(model, criterion, data_loader, optimizer, device, epoch, max_norm=0, args=None):
    scaler = torch.amp.GradScaler("cuda", enabled=args.amp)
    model.train()
    criterion.train()
    seen = []
    for samples, labels, boxes in data_loader:
        samples = samples.to(device)
        targets = [{"labels": l, "boxes": b} for l, b in zip(labels, boxes)]
        targets = [{k: v.to(device) for k, v in t.items()} for t in targets]
        with torch.autocast(device_type=device.type, enabled=args.amp):
            outputs = model(samples)
            loss_dict = criterion(outputs, targets)
            weight_dict = criterion.weight_dict
            losses = sum(loss_dict[k] * weight_dict[k] for k in loss_dict.keys() if k in weight_dict)
        loss_value = losses.item()
        if not math.isfinite(loss_value):
            print("Loss is {}, stopping training".format(loss_value))
            sys.exit(1)
        # amp backward function
        if args.amp:
            optimizer.zero_grad()
            scaler.scale(losses).backward()
            if max_norm > 0:
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            scaler.step(optimizer)
            scaler.update()
        else:
            # original backward function
            losses.backward()
            if max_norm > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()  # expect: GL401
        seen.append(loss_value)
    return sum(seen) / len(seen)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--clip_max_norm", type=float, default=0.1)
    parser.add_argument("--amp", action="store_true")
    args = parser.parse_args([])
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    images = torch.randn(48, 3, 8, 8)
    labels = (images[:, 0].mean(dim=(1, 2)) > 0).long() + (images[:, 1].mean(dim=(1, 2)) > 0).long()
    boxes = torch.sigmoid(images[:, :, :2, :2].mean(1).flatten(1))
    data_loader = DataLoader(TensorDataset(images, labels, boxes), batch_size=8, shuffle=True)
    model = DABDETRLite().to(device)
    criterion = SetCriterion()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-4)
    history = []
    for epoch in range(args.epochs):
        history.append(train_one_epoch(model, criterion, data_loader, optimizer, device, epoch, args.clip_max_norm, args=args))
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))


if __name__ == "__main__":
    main()
