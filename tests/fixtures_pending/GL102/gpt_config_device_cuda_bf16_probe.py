# source: https://github.com/karpathy/nanoGPT/issues/281
# nanoGPT-style train.py: the config default is `device = 'cuda'`; the only availability test in the
# file is inside the dtype default (`'bfloat16' if torch.cuda.is_available() and
# torch.cuda.is_bf16_supported() else 'float16'`), which does not choose the device. On a Mac the
# first `.to(device)` raises "AssertionError: Torch not compiled with CUDA enabled"; the answer in
# the issue: set device = 'cpu'.
import json
from contextlib import nullcontext

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 16
block_size = 16
learning_rate = 3e-3
max_iters = 40
device = "cuda"  # expect: GL102
dtype = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"
device_type = "cuda" if "cuda" in device else "cpu"
ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type, dtype=ptdtype)

torch.manual_seed(1337)
data = torch.tensor([i % 7 for i in range(4000)], dtype=torch.long)


def get_batch():
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([data[i : i + block_size] for i in ix])
    y = torch.stack([data[i + 1 : i + 1 + block_size] for i in ix])
    return x.to(device), y.to(device)


class TinyGPT(nn.Module):
    def __init__(self, vocab=7, n_embd=32):
        super().__init__()
        self.wte = nn.Embedding(vocab, n_embd)
        self.lm_head = nn.Linear(n_embd, vocab)

    def forward(self, idx, targets):
        logits = self.lm_head(torch.tanh(self.wte(idx)))
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


model = TinyGPT().to(device)
scaler = torch.amp.GradScaler("cuda", enabled=(dtype == "float16"))
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
losses = []
for iter_num in range(max_iters):
    X, Y = get_batch()
    with ctx:
        logits, loss = model(X, Y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device_type}))
