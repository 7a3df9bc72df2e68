# source: https://github.com/mosecorg/mosec/pull/98
# A worker class keeps self.model on self.device; the variable-length inputs are padded into
# one batch (torch functions of CPU tensors give a CPU tensor) and handed to self.model without
# `.to(self.device)`. (The report used pad_sequence; `gpulint run` treats pad_sequence's result
# as device-less and does not fail, so this rebuild pads with F.pad + torch.stack.)
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, vocab=30, dim=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.out = nn.Linear(dim, 2)

    def forward(self, tokens):
        return self.out(self.emb(tokens).mean(dim=1))


class Worker:
    def __init__(self):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = Encoder().to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=0.02)

    def step(self, tensors, labels):
        longest = max(len(t) for t in tensors)
        batch = torch.stack([nn.functional.pad(t, (0, longest - len(t))) for t in tensors])
        logits = self.model(batch)  # expect: GL116
        loss = nn.functional.cross_entropy(logits, labels.to(self.device))
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()


torch.manual_seed(0)
worker = Worker()
losses = []
for step in range(40):
    lengths = torch.randint(3, 9, (16,)).tolist()
    seqs = [torch.randint(0, 30, (n,)) for n in lengths]
    labels = torch.tensor([int(s[0] >= 15) for s in seqs])
    losses.append(worker.step(seqs, labels))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": worker.device.type}))
