# source: https://github.com/WongKinYiu/yolor/issues/113
# fails-on-cuda: can't convert cuda:0 device type tensor to numpy
# At the end of training the detector's test() plots its predictions: output_to_target() walks the
# per-image outputs (CUDA tensors), appends [image index, class, x, y, w, h, conf] rows whose entries
# are still 0-dim CUDA tensors, and returns np.array(targets), which calls Tensor.numpy() on each
# ("can't convert cuda:0 device type tensor to numpy"). The maintainer's answer: `.cpu()` first.
import json

import numpy as np
import torch
import torch.nn as nn


class TinyDetector(nn.Module):
    def __init__(self, n_boxes=4, n_cls=3):
        super().__init__()
        self.n_boxes = n_boxes
        self.backbone = nn.Sequential(nn.Linear(16, 32), nn.ReLU())
        self.head = nn.Linear(32, n_boxes * (5 + n_cls))

    def forward(self, img):
        return self.head(self.backbone(img)).view(img.shape[0], self.n_boxes, -1)


def output_to_target(output, width, height):
    targets = []
    for i, o in enumerate(output):
        for pred in o:
            box = pred[:4] * torch.tensor([width, height, width, height], device=pred.device)
            conf = pred[4].sigmoid()
            cls = pred[5:].argmax()
            targets.append([i, cls, *list(box), conf])
    return np.array(targets)  # expect: GL109


def test(model, imgs, device):
    model.eval()
    with torch.no_grad():
        output = model(imgs.to(device))
    targets = output_to_target(output, 64, 64)
    return targets.shape[0]


def train(model, imgs, gt, device, epochs=40):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for epoch in range(epochs):
        model.train()
        idx = torch.randperm(imgs.shape[0])[:16]
        x, y = imgs[idx].to(device), gt[idx].to(device)
        pred = model(x)
        loss = nn.functional.mse_loss(pred[..., :5], y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    test(model, imgs[:2], device)
    return losses


def main():
    torch.manual_seed(0)
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    imgs = torch.randn(32, 16)
    gt = torch.sigmoid(torch.randn(32, 4, 5))
    model = TinyDetector().to(device)
    losses = train(model, imgs, gt, device)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))


if __name__ == "__main__":
    main()
