# source: https://github.com/blakechi/ComVEX/issues/1
# A CoAtNet-style relative attention keeps its relative-position index table as a plain tensor
# attribute built in __init__; forward gathers the learned bias table with it.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn


class RelativeAttention(nn.Module):
    def __init__(self, n=6, dim=8):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.relative_bias = nn.Parameter(torch.zeros(1, n, 2 * n - 1))
        coords = torch.arange(n)
        self.relative_indices = (coords[None, :] - coords[:, None] + n - 1).unsqueeze(0)  # expect: GL106
        self.scale = dim**-0.5

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        relative_biases = self.relative_bias.expand(x.size(0), -1, -1).gather(dim=-1, index=self.relative_indices.expand(x.size(0), -1, -1))
        attn = torch.softmax(q @ k.transpose(1, 2) * self.scale + relative_biases, dim=-1)
        return attn @ v


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(RelativeAttention(), nn.Flatten(), nn.Linear(48, 2)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
losses = []
for step in range(50):
    x = torch.randn(16, 6, 8, device=device)
    y = (x[:, 0, 0] > x[:, -1, 0]).long()
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
