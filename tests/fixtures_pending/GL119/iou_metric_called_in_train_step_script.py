# source: https://github.com/Lightning-AI/torchmetrics/issues/275
# An MLOps pipeline's train step (steps/train.py): main() moves the segmentation model and each
# batch to the GPU and, after each step, calls `metric_iou(preds, targets)` on a torchmetrics-style
# IoU object (its confusion-matrix state is a buffer, updated with `self.confmat += confmat`)
# built once in main() and never moved ("Expected all tensors to be on the same device" inside
# the metric's update).
# fails-on-cuda: Expected all tensors to be on the same device
import argparse
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class ConfusionMatrix(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.num_classes = num_classes
        self.register_buffer("confmat", torch.zeros(num_classes, num_classes, dtype=torch.long))

    def update(self, preds, target):
        idx = target.flatten() * self.num_classes + preds.flatten()
        self.confmat += torch.bincount(idx, minlength=self.num_classes**2).reshape(self.num_classes, self.num_classes)

    def forward(self, preds, target):
        self.update(preds, target)
        return self.compute()

    def compute(self):
        return self.confmat


class IoU(ConfusionMatrix):
    def compute(self):
        cm = self.confmat.float()
        inter = cm.diag()
        return (inter / (cm.sum(0) + cm.sum(1) - inter).clamp(min=1)).mean()


def main(args):
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() and not args.cpu else "cpu")
    images = torch.randn(32, 3, 8, 8)
    masks = (images[:, 0] > 0).long()
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 2, 1)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    metric_iou = IoU(num_classes=2)  # expect: GL119
    losses = []
    for step in range(args.steps):
        idx = torch.randint(0, 32, (8,))
        x, targets = images[idx].to(device), masks[idx].to(device)
        logits = model(x)
        loss = F.cross_entropy(logits, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        preds = logits.argmax(dim=1)
        iou = metric_iou(preds, targets)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": device.type}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--cpu", action="store_true")
    main(parser.parse_args())
