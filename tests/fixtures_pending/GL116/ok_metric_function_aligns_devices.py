# source: https://github.com/opendataval/opendataval/pull/37 (the fix)
# Hard negative: metric functions move their second operand to the first one's device
# (`b = b.to(a.device)`) before combining; another compares two host copies.
import json

import torch
import torch.nn as nn


def accuracy(a, b):
    b = b.to(a.device)
    return (a.argmax(dim=1) == b.argmax(dim=1)).float().mean().item()


def neg_mse(a, b):
    return -((a.cpu() - b.cpu()) ** 2).mean().item()


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x_train, x_test = torch.randn(200, 5), torch.randn(50, 5)
y_train = torch.stack([x_train[:, 0] <= 0, x_train[:, 0] > 0], dim=1).float()
y_test = torch.stack([x_test[:, 0] <= 0, x_test[:, 0] > 0], dim=1).float()
model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 2)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
xb, yb = x_train.to(device), y_train.argmax(dim=1).to(device)
losses = []
for epoch in range(50):
    loss = nn.functional.cross_entropy(model(xb), yb)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
with torch.no_grad():
    y_hat = model(x_test.to(device))
print("test accuracy", accuracy(y_hat, y_test), neg_mse(y_hat.softmax(dim=1), y_test))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
