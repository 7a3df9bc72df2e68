# source: https://github.com/weecology/DeepForest/issues/1390
# DeepForest: the `deepforest` class keeps the detector in `self.model`; predict_image() reads an
# RGB array and hands `self.model` to the module-level helper `_predict_image_(model, image, path,
# nms_thresh)`, which builds the input with `torch.tensor(image).permute(2, 0, 1) / 255` and runs
# `model(image.unsqueeze(0))` without moving it. After the user (or a trainer) puts the detector
# on the GPU with `m.model.to("cuda")`, prediction fails with "Input type (torch.FloatTensor) and
# weight type (torch.cuda.FloatTensor) should be the same". The PR moves the input to
# `next(model.parameters()).device`.
# (A small box-regression CNN instead of torchvision's RetinaNet; synthetic images with one
# bright square each; training in a plain loop instead of Lightning.)
# fails-on-cuda: Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class BoxRegressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, stride=2, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4))
        self.head = nn.Linear(16 * 16, 5)

    def forward(self, images):
        out = self.head(self.backbone(images).flatten(1))
        return {"boxes": torch.sigmoid(out[:, :4]), "scores": torch.sigmoid(out[:, 4])}


def create_model():
    return BoxRegressor()


def _predict_image_(model, image, path, nms_thresh):
    image = torch.tensor(image).permute(2, 0, 1)
    image = image / 255
    with torch.no_grad():
        prediction = model(image.unsqueeze(0))  # expect: GL116
    boxes = prediction["boxes"][prediction["scores"] > nms_thresh]
    return boxes.cpu().numpy()


def synthetic_tiles(n, size=24, seed=0):
    rng = np.random.default_rng(seed)
    images = np.zeros((n, size, size, 3), dtype=np.float32)
    boxes = np.zeros((n, 4), dtype=np.float32)
    for i in range(n):
        x0, y0 = rng.integers(0, size - 8, size=2)
        w, h = rng.integers(4, 8, size=2)
        images[i, y0:y0 + h, x0:x0 + w] = 255.0
        boxes[i] = [x0 / size, y0 / size, (x0 + w) / size, (y0 + h) / size]
    return images, boxes


class deepforest:
    def __init__(self):
        self.model = create_model()
        self.nms_thresh = 0.05

    def train_model(self, images, boxes, device, epochs=40):
        self.model.to(device)
        self.model.train()
        optimizer = torch.optim.Adam(self.model.parameters(), lr=3e-3)
        x = torch.from_numpy(images).permute(0, 3, 1, 2).div(255).to(device)
        y = torch.from_numpy(boxes).to(device)
        losses = []
        for epoch in range(epochs):
            out = self.model(x)
            loss = F.smooth_l1_loss(out["boxes"], y, beta=0.05) + F.binary_cross_entropy(out["scores"], torch.ones_like(out["scores"]))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses

    def predict_image(self, image=None, path=None):
        self.model.eval()
        return _predict_image_(model=self.model, image=image, path=path, nms_thresh=self.nms_thresh)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    images, boxes = synthetic_tiles(64)
    m = deepforest()
    losses = m.train_model(images, boxes, device)
    m.model.to(device)
    result = m.predict_image(image=images[0])
    print("predicted boxes:", result.round(2).tolist())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": device.type}))


if __name__ == "__main__":
    main()
