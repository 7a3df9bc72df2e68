# source: https://github.com/ChaoningZhang/MobileSAM/pull/47
# MobileSAM's TinyViT `Attention` overrides `train(mode)`: in eval mode it caches the gathered
# attention biases as a plain attribute, `self.ab = self.attention_biases[:, self.attention_bias_idxs]`,
# and `forward` adds `self.ab` when not training. The model builder calls `.eval()` before the
# caller moves the model, so `self.ab` is computed on the CPU and `.to(device)` does not move it
# (not a parameter, not a buffer); the first eval-mode forward on the GPU fails at
# `(q @ k.transpose(-2, -1)) * self.scale + self.ab`: "RuntimeError: Expected all tensors to be on
# the same device, but found at least two devices, cuda:0 and cpu!". The PR registers `ab` as a
# non-persistent buffer instead. (`evaluate` relies on the builder's eval mode, as the predictor does.)
# fails-on-cuda: Expected all tensors to be on the same device
import itertools
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, dim, key_dim, num_heads=2, resolution=(4, 4)):
        super().__init__()
        self.num_heads = num_heads
        self.scale = key_dim ** -0.5
        self.key_dim = key_dim
        self.qkv = nn.Linear(dim, num_heads * key_dim * 3)
        self.proj = nn.Linear(num_heads * key_dim, dim)
        points = list(itertools.product(range(resolution[0]), range(resolution[1])))
        attention_offsets = {}
        idxs = []
        for p1 in points:
            for p2 in points:
                offset = (abs(p1[0] - p2[0]), abs(p1[1] - p2[1]))
                if offset not in attention_offsets:
                    attention_offsets[offset] = len(attention_offsets)
                idxs.append(attention_offsets[offset])
        self.attention_biases = nn.Parameter(torch.zeros(num_heads, len(attention_offsets)))
        self.register_buffer("attention_bias_idxs", torch.LongTensor(idxs).view(len(points), len(points)), persistent=False)

    @torch.no_grad()
    def train(self, mode=True):
        super().train(mode)
        if mode and hasattr(self, "ab"):
            del self.ab
        else:
            self.ab = self.attention_biases[:, self.attention_bias_idxs]
        return self

    def forward(self, x):
        B, N, _ = x.shape
        qkv = self.qkv(x).view(B, N, self.num_heads, 3 * self.key_dim).permute(0, 2, 1, 3)
        q, k, v = qkv.split(self.key_dim, dim=3)
        attn = (q @ k.transpose(-2, -1)) * self.scale + (  # expect: GL116
            self.attention_biases[:, self.attention_bias_idxs] if self.training else self.ab
        )
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, -1)
        return self.proj(x)


class TinyViTBlock(nn.Module):
    def __init__(self, dim=16, n_classes=3):
        super().__init__()
        self.attn = Attention(dim, key_dim=8)
        self.head = nn.Linear(dim, n_classes)

    def forward(self, x):
        x = x + self.attn(x)
        return self.head(x.mean(1))


def build_sam_vit_t():
    model = TinyViTBlock()
    model.eval()
    return model


def evaluate(model, tokens, labels):
    with torch.no_grad():
        return F.cross_entropy(model(tokens), labels).item()


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
tokens = torch.randn(32, 16, 16)
labels = (tokens[:, :, 0].mean(1) > 0).long()
model = build_sam_vit_t()
model.to(device)
tokens, labels = tokens.to(device), labels.to(device)
print("baseline loss", evaluate(model, tokens, labels))

optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
losses = []
for step in range(20):
    model.train()
    loss = F.cross_entropy(model(tokens), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
model.eval()
print("final eval loss", evaluate(model, tokens, labels))

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
