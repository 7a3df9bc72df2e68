# source: https://github.com/clcarwin/focal_loss_pytorch/blob/master/focalloss.py
# Hard negative (GL112): the widely copied FocalLoss is an nn.Module of the user's file whose
# __init__ keeps only Python numbers (gamma, size_average; alpha left at None), so it has no
# parameters or buffers and never needs a move. The classifier is moved, each batch is moved with
# `inputs, targets = inputs.to(device), targets.to(device)`, and `criterion(model(inputs),
# targets)` runs on the device.
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class FocalLoss(nn.Module):
    def __init__(self, gamma=0, alpha=None, size_average=True):
        super().__init__()
        self.gamma = gamma
        self.alpha = alpha
        self.size_average = size_average

    def forward(self, input, target):
        target = target.view(-1, 1)
        logpt = F.log_softmax(input, dim=1)
        logpt = logpt.gather(1, target).view(-1)
        pt = logpt.exp()
        loss = -1 * (1 - pt) ** self.gamma * logpt
        return loss.mean() if self.size_average else loss.sum()


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
X = torch.randn(320, 10)
Y = (X[:, 0] - X[:, 1] > 0).long()
loader = DataLoader(TensorDataset(X, Y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2)).to(device)
criterion = FocalLoss(gamma=2)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
history = []
for epoch in range(5):
    running = 0.0
    for inputs, targets in loader:
        inputs, targets = inputs.to(device), targets.to(device)
        optimizer.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        optimizer.step()
        running += loss.item()
    history.append(running / len(loader))
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
