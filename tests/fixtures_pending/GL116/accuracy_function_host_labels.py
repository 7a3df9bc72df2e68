# source: https://github.com/opendataval/opendataval/pull/37
# Metric functions accuracy(a, b) / neg_mse(a, b) combine the model's predictions (device) with
# the held-out labels, which stay on the host. (One-hot labels are built with torch.stack: under
# `gpulint run`, F.one_hot's result is device-less and the comparison does not fail.)
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn


def accuracy(a, b):
    return (a.argmax(dim=1) == b.argmax(dim=1)).float().mean().item()  # expect: GL116


def fit(model, x, y, device, epochs=50):
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for epoch in range(epochs):
        loss = nn.functional.cross_entropy(model(x.to(device)), y.argmax(dim=1).to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x_train, x_test = torch.randn(200, 5), torch.randn(50, 5)
y_train = torch.stack([x_train[:, 0] <= 0, x_train[:, 0] > 0], dim=1).float()
y_test = torch.stack([x_test[:, 0] <= 0, x_test[:, 0] > 0], dim=1).float()
model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 2)).to(device)
losses = fit(model, x_train, y_train, device)
with torch.no_grad():
    y_hat = model(x_test.to(device))
print("test accuracy", accuracy(y_hat, y_test))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
