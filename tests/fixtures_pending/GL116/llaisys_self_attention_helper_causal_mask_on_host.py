# source: https://github.com/InfiniTensor/llaisys/pull/11
# A reference self-attention helper builds its causal mask with
# `torch.ones(L, S, dtype=torch.bool).tril(diagonal=S - L)` and no device, then fills the
# attention bias with it. The query/key/value it receives come from a model on the GPU, so
# `masked_fill_` meets a CPU mask and a CUDA bias. The PR added `device=query.device`.
# fails-on-cuda: expected self and mask to be on the same device
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def torch_self_attention(query, key, value, scale):
    L, S = query.size(-2), key.size(-2)
    attn_bias = torch.zeros(L, S, dtype=query.dtype, device=query.device)
    temp_mask = torch.ones(L, S, dtype=torch.bool).tril(diagonal=S - L)
    attn_bias.masked_fill_(temp_mask.logical_not(), float("-inf"))  # expect: GL116
    attn_weight = query @ key.transpose(-2, -1) * scale + attn_bias
    return torch.softmax(attn_weight, dim=-1) @ value


class TinyDecoder(nn.Module):
    def __init__(self, vocab=16, dim=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, vocab)
        self.scale = 1.0 / math.sqrt(dim)

    def forward(self, tokens):
        h = self.emb(tokens)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        return self.out(h + torch_self_attention(q, k, v, self.scale))


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = TinyDecoder().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
losses = []
for step in range(60):
    start = torch.randint(0, 16, (8, 1))
    seq = (start + torch.arange(9)) % 16
    seq = seq.to(device)
    logits = model(seq[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, 16), seq[:, 1:].reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
