# source: https://github.com/jmclong/random-fourier-features-pytorch/pull/4
# The library's functional positional_encoding(v, sigma, m) builds `torch.arange(m)` on the CPU
# and scales the input with it; the PositionalEncoding layer's forward calls it with inputs on
# the GPU ("The torch.arange(m) was being created on CPU, regardless of the input tensor").
# fails-on-cuda: Expected all tensors to be on the same device
import json
import math

import torch
import torch.nn as nn


def positional_encoding(v, sigma, m):
    j = torch.arange(m)
    coeffs = 2 * math.pi * sigma ** (j / m)
    vp = coeffs * torch.unsqueeze(v, -1)  # expect: GL116
    vp_cat = torch.cat((torch.cos(vp), torch.sin(vp)), dim=-1)
    return vp_cat.flatten(-2, -1)


class PositionalEncoding(nn.Module):
    def __init__(self, sigma, m):
        super().__init__()
        self.sigma = sigma
        self.m = m

    def forward(self, v):
        return positional_encoding(v, self.sigma, self.m)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
coords = torch.rand(512, 2)
signal = torch.sin(6 * coords[:, :1]) * torch.cos(4 * coords[:, 1:])
model = nn.Sequential(PositionalEncoding(sigma=1.0, m=8), nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
losses = []
for step in range(60):
    idx = torch.randint(0, 512, (64,))
    x, y = coords[idx].to(device), signal[idx].to(device)
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
