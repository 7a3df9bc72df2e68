# source: https://github.com/norse/norse/pull/397
# Hard negative: precomputed index/weight tensors registered as buffers (moved with the module),
# Python numbers and tuples as plain attributes, and a tensor attribute only used in __init__.
import json

import torch
import torch.nn as nn


class ReceptiveField(nn.Module):
    def __init__(self, n=6, dim=8):
        super().__init__()
        coords = torch.arange(n)
        self.register_buffer("relative_indices", (coords[None, :] - coords[:, None] + n - 1).unsqueeze(0))
        self.register_buffer("weights", torch.linspace(0.5, 1.5, n), persistent=False)
        init = torch.randn(1, n, 2 * n - 1) * 0.01
        self.relative_bias = nn.Parameter(init.clone())
        self.kernel_size = (3, 3)
        self.scale = dim**-0.5
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        bias = self.relative_bias.expand(x.size(0), -1, -1).gather(-1, self.relative_indices.expand(x.size(0), -1, -1))
        attn = torch.softmax(q @ k.transpose(1, 2) * self.scale + bias, dim=-1)
        return (attn @ v) * self.weights[None, :, None]


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(ReceptiveField(), nn.Flatten(), nn.Linear(48, 2)).to(device)
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
