# source: https://github.com/lukemelas/EfficientNet-PyTorch/issues/52 (the answer)
# Hard negative: the transform's output is re-bound to its moved copy (`img = img.to(device)`),
# the model is moved with a statement (a Module moves in place), and a buffer of a Module is
# converted in place with `.to` of the Module.
import json

import numpy as np
import torch
import torch.nn as nn


def tfms(raw):
    t = torch.from_numpy(raw.transpose(2, 0, 1).astype(np.float32) / 255.0)
    return (t - 0.5) / 0.25


torch.manual_seed(0)
rng = np.random.default_rng(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 2))
model.to(device)
norm = nn.BatchNorm1d(2)
norm.to(device)
optimizer = torch.optim.SGD(list(model.parameters()) + list(norm.parameters()), lr=0.05)
losses = []
for step in range(60):
    label = step % 2
    raw = (rng.integers(0, 128, size=(12, 12, 3)) + 100 * label).astype(np.uint8)
    img = tfms(raw).unsqueeze(0)
    img = img.to(device)
    logits = model(torch.cat([img, img.flip(-1)]))
    loss = nn.functional.cross_entropy(norm(logits), torch.tensor([label, label], device=device))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
