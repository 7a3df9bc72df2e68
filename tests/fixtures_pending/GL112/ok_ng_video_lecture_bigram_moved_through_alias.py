# source: https://github.com/karpathy/ng-video-lecture/blob/master/bigram.py
# Hard negative (PRECISION24 A1, engine-rooted). The lecture's bigram and GPT scripts build the
# model and move it with `m = model.to(device)`: `Module.to` moves the module in place and returns
# it, so `model` and `m` are the same object on `device`. The training loop then calls
# `logits, loss = model(xb, yb)` with batches `get_batch` moved to `device`. GL112 reports that
# call ("`model` receives inputs moved to `device` but the model itself is never moved"): the
# engine keeps `model` on the host because the move's result is bound to another name.
import json

import torch
import torch.nn as nn
from torch.nn import functional as F

batch_size = 8
block_size = 8
max_iters = 60
eval_interval = 20
learning_rate = 1e-1
device = 'cuda' if torch.cuda.is_available() else 'cpu'
eval_iters = 4
torch.manual_seed(1337)

text = "hello world, this is a tiny corpus for a bigram model. " * 20
chars = sorted(list(set(text)))
vocab_size = len(chars)
stoi = {ch: i for i, ch in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
n = int(0.9 * len(data))
train_data = data[:n]
val_data = data[n:]


def get_batch(split):
    data = train_data if split == 'train' else val_data
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([data[i:i + block_size] for i in ix])
    y = torch.stack([data[i + 1:i + block_size + 1] for i in ix])
    x, y = x.to(device), y.to(device)
    return x, y


@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for split in ['train', 'val']:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            logits, loss = model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean()
    model.train()
    return out


class BigramLanguageModel(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.token_embedding_table = nn.Embedding(vocab_size, vocab_size)

    def forward(self, idx, targets=None):
        logits = self.token_embedding_table(idx)
        if targets is None:
            loss = None
        else:
            B, T, C = logits.shape
            logits = logits.view(B * T, C)
            targets = targets.view(B * T)
            loss = F.cross_entropy(logits, targets)
        return logits, loss


model = BigramLanguageModel(vocab_size)
m = model.to(device)

optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
history = []
for iter in range(max_iters):
    if iter % eval_interval == 0 or iter == max_iters - 1:
        history.append(float(estimate_loss()['train']))
    xb, yb = get_batch('train')
    logits, loss = model(xb, yb)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()

print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1],
                                     "device": torch.device(device).type}))
