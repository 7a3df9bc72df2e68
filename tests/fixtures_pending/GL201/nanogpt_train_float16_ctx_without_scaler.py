# source: https://github.com/karpathy/nanoGPT/issues/84 (fixed by https://github.com/karpathy/nanoGPT/pull/87)
# train.py (a top-level script, config variables at the top) builds its precision context once:
# `ptdtype = {...}[dtype]`, `ctx = nullcontext() if device_type == 'cpu' else
# torch.amp.autocast(device_type=device_type, dtype=ptdtype)`, then runs gradient-accumulation
# micro-steps `with ctx: logits, loss = model(X, Y)` and `loss.backward()`. On a GPU without bf16
# the reporter switched `dtype` to 'float16'; there was no GradScaler, so fp16 gradients underflow.
# PR #87 added `scaler = torch.cuda.amp.GradScaler(enabled=(dtype == 'float16'))`.
import json
import math
from contextlib import nullcontext

import torch
import torch.nn as nn
import torch.nn.functional as F

# -----------------------------------------------------------------------------
batch_size = 8
block_size = 8
gradient_accumulation_steps = 2
learning_rate = 3e-3
max_iters = 40
grad_clip = 1.0
device = "cuda" if torch.cuda.is_available() else "cpu"
dtype = "float16"  # the reporter's GPU could not run 'bfloat16'
# -----------------------------------------------------------------------------

torch.manual_seed(1337)
device_type = "cuda" if "cuda" in device else "cpu"
ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type, dtype=ptdtype)  # expect: GL201

vocab_size = 16
data = torch.arange(400) % vocab_size


def get_batch():
    ix = torch.randint(len(data) - block_size - 1, (batch_size,))
    x = torch.stack([data[i:i + block_size] for i in ix])
    y = torch.stack([data[i + 1:i + 1 + block_size] for i in ix])
    return x.to(device), y.to(device)


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, 32)
        self.wpe = nn.Embedding(block_size, 32)
        self.mlp = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 32))
        self.lm_head = nn.Linear(32, vocab_size)

    def forward(self, idx, targets=None):
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        x = x + self.mlp(x)
        logits = self.lm_head(x)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


model = GPT()
model.to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, betas=(0.9, 0.95))


def get_lr(it):
    return learning_rate * 0.5 * (1.0 + math.cos(math.pi * it / max_iters))


X, Y = get_batch()
iter_num = 0
losses = []
while True:
    lr = get_lr(iter_num)
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr
    for micro_step in range(gradient_accumulation_steps):
        with ctx:
            logits, loss = model(X, Y)
            loss = loss / gradient_accumulation_steps
        X, Y = get_batch()
        loss.backward()
    if grad_clip != 0.0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    losses.append(loss.item() * gradient_accumulation_steps)
    iter_num += 1
    if iter_num > max_iters:
        break

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device_type}))
