# source: https://github.com/JieyuZ2/wrench/issues/4
# utils.py-style cross_entropy_with_probs(input, target, weight=None): the caller builds the class
# weight vector on the host and passes it with the device logits to F.cross_entropy.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


def cross_entropy_with_probs(input, target, weight=None, reduction="mean"):
    return F.cross_entropy(input, target.long(), weight=weight, reduction=reduction)  # expect: GL116


def fit(model, X, Y, device, steps=60):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
    counts = torch.bincount(Y, minlength=2).float()
    class_weight = counts.sum() / (2 * counts)
    history = []
    for step in range(steps):
        idx = torch.randint(0, len(X), (32,))
        outputs = model(X[idx].to(device))
        loss = cross_entropy_with_probs(outputs, Y[idx].to(device), weight=class_weight)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append(loss.item())
    return history


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
X = torch.randn(300, 6)
Y = (X[:, 0] > 0.7).long()
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2)).to(device)
losses = fit(model, X, Y, device)
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
