# source: https://github.com/torchgeo/torchgeo/pull/3232
# CROMA-style ViT encoder: __init__ stores the 2D-ALiBi attention bias returned by a module-level
# helper (`self.attn_bias = get_2dalibi(num_heads, num_patches)`) as a plain attribute, and
# forward adds it to the attention logits. `model.to(device)` does not move it ("Register
# attn_bias as a buffer ... preventing device mismatch errors").
# fails-on-cuda: Expected all tensors to be on the same device
import json
import math

import torch
import torch.nn as nn


def get_2dalibi(num_heads, num_patches):
    side = int(math.sqrt(num_patches))
    points = torch.stack(torch.meshgrid(torch.arange(side), torch.arange(side), indexing="ij"), dim=-1).reshape(-1, 2)
    dist = torch.cdist(points.float(), points.float())
    slopes = torch.tensor([2 ** (-8 * (h + 1) / num_heads) for h in range(num_heads)])
    return (-slopes[:, None, None] * dist[None]).unsqueeze(0)


class Attention(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, relative_position_bias):
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.num_heads, d // self.num_heads).permute(2, 0, 3, 1, 4)
        attn = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.num_heads) + relative_position_bias
        out = attn.softmax(dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(b, n, d))


class ViTEncoder(nn.Module):
    def __init__(self, dim=16, num_heads=2, num_patches=16, in_dim=12):
        super().__init__()
        self.embed = nn.Linear(in_dim, dim)
        self.attn = Attention(dim, num_heads)
        self.attn_bias = get_2dalibi(num_heads, num_patches)  # expect: GL106
        self.head = nn.Linear(dim, 3)

    def forward(self, patches):
        x = self.embed(patches)
        x = x + self.attn(x, relative_position_bias=self.attn_bias)
        return self.head(x.mean(dim=1))


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = ViTEncoder().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
patches = torch.randn(32, 16, 12)
labels = (patches.mean(dim=(1, 2)) > 0).long() + (patches[:, 0, 0] > 0).long()
losses = []
for step in range(40):
    idx = torch.randint(0, 32, (8,))
    x, y = patches[idx].to(device), labels[idx].to(device)
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": device.type}))
