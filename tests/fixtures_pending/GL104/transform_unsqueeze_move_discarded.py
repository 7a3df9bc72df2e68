# source: https://github.com/lukemelas/EfficientNet-PyTorch/issues/52
# `img = tfms(raw).unsqueeze(0)` is a tensor (a transform's output, then a Tensor method);
# `img.to(device)` on its own line throws the moved copy away; the model is on the device.
# fails-on-cuda: Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same
import json

import numpy as np
import torch
import torch.nn as nn


class Compose:
    def __init__(self, steps):
        self.steps = steps

    def __call__(self, x):
        for step in self.steps:
            x = step(x)
        return x


def to_tensor(raw):
    return torch.from_numpy(raw.transpose(2, 0, 1).astype(np.float32) / 255.0)


def normalize(t, mean=0.5, std=0.25):
    return (t - mean) / std


torch.manual_seed(0)
rng = np.random.default_rng(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
tfms = Compose([to_tensor, normalize])
model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 2))
model.to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
losses = []
for step in range(60):
    label = step % 2
    raw = rng.integers(0, 128, size=(12, 12, 3), dtype=np.uint8) + 100 * label
    img = tfms(raw.astype(np.uint8)).unsqueeze(0)
    img.to(device)  # expect: GL104
    target = torch.tensor([label], device=device)
    loss = nn.functional.cross_entropy(model(img), target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
