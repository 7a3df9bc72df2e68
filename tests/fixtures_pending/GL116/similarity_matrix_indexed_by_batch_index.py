# source: https://github.com/aassxun/SEMICON/issues/2
# Deep hashing: the full similarity matrix S lives on the host; train() moves the batch and its
# sample indices to the device and slices S with them for the criterion.
# fails-on-cuda: indices should be either on cpu or on the same device as the indexed tensor (cpu)
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class IndexedSet(Dataset):
    def __init__(self, X):
        self.X = X

    def __len__(self):
        return len(self.X)

    def __getitem__(self, i):
        return self.X[i], i


class HashLoss(nn.Module):
    def forward(self, F, B, S):
        inner = F @ B.t() / F.size(1)
        return ((inner - S) ** 2).mean()


def train(net, loader, B, S, criterion, optimizer, device, epochs=8):
    losses = []
    for epoch in range(epochs):
        for data, index in loader:
            data, index = data.to(device), index.to(device)
            F = net(data)
            loss = criterion(F, B, S[index, :])  # expect: GL116
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
labels = torch.randint(0, 3, (192,))
X = torch.randn(192, 10) + nn.functional.one_hot(labels, 10).float() * 3
S = (labels[:, None] == labels[None, :]).float() * 2 - 1
net = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 8), nn.Tanh()).to(device)
codes = torch.sign(torch.randn(3, 8))
B = codes[labels].to(device)
loader = DataLoader(IndexedSet(X), batch_size=32, shuffle=True)
losses = train(net, loader, B, S, HashLoss(), torch.optim.Adam(net.parameters(), lr=0.01), device)
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:6]) / 6, "last_loss": sum(losses[-6:]) / 6, "device": device.type}))
