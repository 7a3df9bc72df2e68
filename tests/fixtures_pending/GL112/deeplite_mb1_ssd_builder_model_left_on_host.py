# source: https://github.com/Deeplite/deeplite-torch-zoo/pull/61
# deeplite-torch-zoo's model wrapper `mb1_ssd_voc_20(num_classes, pretrained, device)` builds the
# MobileNetV1-SSD with the project's `create_mobilenetv1_ssd()`, attaches its config and puts the
# prior boxes on `device` (`model.priors = config.priors.to(device)`), loads weights with
# `map_location=device`, and returns the network without moving it. The training and evaluation code
# takes the model from the wrapper, moves every batch to the same device and calls it: on a GPU
# "Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same". The
# PR ("Fix mb1 ssd device", "assign model to device param") returns `model.to(device)`.
# (A two-layer backbone with SSD heads on one feature map, 16 priors, synthetic one-box images.)
# fails-on-cuda: should be the same
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class MOBILENET_CONFIG:
    def __init__(self, grid=4):
        cy, cx = torch.meshgrid(torch.arange(grid), torch.arange(grid), indexing="ij")
        centers = torch.stack([(cx.flatten() + 0.5) / grid, (cy.flatten() + 0.5) / grid], dim=1)
        self.priors = torch.cat([centers, torch.full_like(centers, 1.0 / grid)], dim=1)
        self.center_variance = 0.1
        self.size_variance = 0.2


class SSD(nn.Module):
    def __init__(self, num_classes, base_net, classification_header, regression_header):
        super().__init__()
        self.num_classes = num_classes
        self.base_net = base_net
        self.classification_header = classification_header
        self.regression_header = regression_header

    def forward(self, x):
        x = self.base_net(x)
        confidence = self.classification_header(x).permute(0, 2, 3, 1).reshape(x.size(0), -1, self.num_classes)
        location = self.regression_header(x).permute(0, 2, 3, 1).reshape(x.size(0), -1, 4)
        return confidence, location


def create_mobilenetv1_ssd(num_classes):
    base_net = nn.Sequential(
        nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
    )
    return SSD(num_classes, base_net, nn.Conv2d(32, num_classes, 3, padding=1), nn.Conv2d(32, 4, 3, padding=1))


def mb1_ssd_voc_20(num_classes=20, pretrained=False, progress=True, device="cuda"):
    model = create_mobilenetv1_ssd(num_classes + 1)
    config = MOBILENET_CONFIG()
    model.config = config
    model.priors = config.priors.to(device)
    return model


def make_batch(g, n=8, size=16):
    images = torch.rand(n, 3, size, size, generator=g) * 0.1
    cells = torch.randint(0, 16, (n,), generator=g)
    labels = torch.zeros(n, 16, dtype=torch.long)
    labels[torch.arange(n), cells] = 1 + cells % 3
    for i, c in enumerate(cells.tolist()):
        r, q = divmod(c, 4)
        images[i, :, r * 4:(r + 1) * 4, q * 4:(q + 1) * 4] = 1.0
    boxes = torch.zeros(n, 16, 4)
    return images, boxes, labels


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net = mb1_ssd_voc_20(num_classes=3, device=device)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    g = torch.Generator().manual_seed(0)
    losses = []
    for step in range(30):
        images, boxes, labels = make_batch(g)
        images = images.to(device)
        boxes = boxes.to(device)
        labels = labels.to(device)
        confidence, locations = net(images)  # expect: GL112
        gt_locations = (boxes[..., :2] - net.priors[..., :2]) / (net.config.center_variance * net.priors[..., 2:])
        regression_loss = F.smooth_l1_loss(locations[..., :2], gt_locations)
        classification_loss = F.cross_entropy(confidence.reshape(-1, confidence.size(-1)), labels.reshape(-1))
        loss = regression_loss + classification_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))


if __name__ == "__main__":
    main()
