# source: https://github.com/microsoft/Swin-Transformer/issues/237
# Swin V2's cosine window attention clamps its learnable logit scale with
# `max=torch.log(torch.tensor(1. / 0.01))`: a tensor made in forward without a device. Since
# PyTorch 1.12 clamp's tensor bounds must be on the input's device, so with the model on the GPU
# the attention fails ("... when checking argument for argument max in method wrapper_CUDA_clamp_Tensor").
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class WindowAttention(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.logit_scale = nn.Parameter(torch.log(10 * torch.ones((num_heads, 1, 1))))
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
        logit_scale = torch.clamp(self.logit_scale, max=torch.log(torch.tensor(1.0 / 0.01))).exp()  # expect: GL105
        attn = (attn * logit_scale).softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(x)


class TinySwinV2(nn.Module):
    def __init__(self, dim=16, num_heads=2, num_classes=4):
        super().__init__()
        self.embed = nn.Linear(8, dim)
        self.attn = WindowAttention(dim, num_heads)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.embed(x)
        x = x + self.attn(x)
        return self.head(x.mean(dim=1))


X = torch.randn(128, 6, 8)
Y = (X.sum(dim=(1, 2)) > 0).long() + 2 * (X[:, 0, 0] > 0).long()
loader = DataLoader(TensorDataset(X, Y), batch_size=16, shuffle=True)
model = TinySwinV2().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
criterion = nn.CrossEntropyLoss()

losses = []
for epoch in range(4):
    for xb, yb in loader:
        xb, yb = xb.to(device), yb.to(device)
        loss = criterion(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
