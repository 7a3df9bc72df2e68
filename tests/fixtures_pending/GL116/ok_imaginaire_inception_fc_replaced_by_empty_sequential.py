# source: https://github.com/NVlabs/imaginaire (imaginaire/evaluation/common.py `inception_init`,
# `inception_forward`, `get_activations`)
# imaginaire's FID code builds torchvision's inception_v3, moves it with `.to('cuda')`, then turns
# the classifier into a feature extractor with `inception.fc = torch.nn.Sequential()`: an empty
# Sequential has no weights (it returns its input), so the model has no part left on the host.
# Hard negative for GL116: nothing is mixed. (torchvision is not needed here: a small
# Inception-like network of this file stands in for `inception_v3`.) The features drive a
# feature-matching loss that trains a tiny generator.
import json

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"


class InceptionLike(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2), nn.ReLU(), nn.Conv2d(8, 16, 3), nn.ReLU())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x):
        x = self.pool(self.stem(x)).flatten(1)
        return self.fc(x)


def inception_init():
    inception = InceptionLike()
    inception = inception.to(device)
    inception.eval()
    inception.fc = torch.nn.Sequential()
    for p in inception.parameters():
        p.requires_grad_(False)
    return inception


def inception_forward(inception, images):
    images = images.clamp(-1, 1)
    images = F.interpolate(images, size=(32, 32), mode="bilinear", align_corners=True)
    return inception(images)


def main():
    inception = inception_init()
    real = torch.rand(16, 3, 24, 24, device=device) * 2 - 1
    with torch.no_grad():
        target = inception_forward(inception, real).mean(0)
    generator = nn.Sequential(nn.Linear(8, 3 * 24 * 24), nn.Tanh()).to(device)
    opt = torch.optim.Adam(generator.parameters(), lr=1e-2)
    losses = []
    for step in range(30):
        z = torch.randn(16, 8, device=device)
        fake = generator(z).view(16, 3, 24, 24)
        feats = inception_forward(inception, fake)
        loss = ((feats.mean(0) - target) ** 2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": torch.device(device).type}))


if __name__ == "__main__":
    main()
