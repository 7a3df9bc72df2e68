# source: https://github.com/harvardnlp/annotated-transformer/issues/25 (comment of 2019-03-17)
# Annotated-Transformer copy task run on a GPU: the model is moved to the device, but the
# batches come from a generator, data_gen(V, batch, nbatches), that builds `Batch(src, tgt, 0)`
# objects from `torch.from_numpy(np.random.randint(...))` on the CPU (with their masks), and
# run_epoch() passes `batch.src`, `batch.trg` and the masks to `model.forward` unmoved ("Expected
# object of backend CUDA but got backend CPU for argument #3 'index'" in the source embedding).
# fails-on-cuda: Expected all tensors to be on the same device
import json

import numpy as np
import torch
import torch.nn as nn


class Batch:
    def __init__(self, src, trg=None, pad=0):
        self.src = src
        self.src_mask = (src != pad).unsqueeze(-2)
        if trg is not None:
            self.trg = trg[:, :-1]
            self.trg_y = trg[:, 1:]
            self.trg_mask = (self.trg != pad).unsqueeze(-2)
            self.ntokens = (self.trg_y != pad).sum()


def data_gen(V, batch, nbatches):
    for i in range(nbatches):
        data = torch.from_numpy(np.random.randint(1, V, size=(batch, 6)))
        data[:, 0] = 1
        yield Batch(data, data.clone(), 0)


class EncoderDecoder(nn.Module):
    def __init__(self, vocab, d_model=16):
        super().__init__()
        self.src_embed = nn.Embedding(vocab, d_model)
        self.tgt_embed = nn.Embedding(vocab, d_model)
        self.generator = nn.Linear(d_model, vocab)

    def forward(self, src, tgt, src_mask, tgt_mask):
        memory = (self.src_embed(src) * src_mask.transpose(-1, -2)).mean(dim=1, keepdim=True)
        return self.generator(self.tgt_embed(tgt) + memory)


def run_epoch(data_iter, model, criterion, optimizer):
    losses = []
    for i, batch in enumerate(data_iter):
        out = model.forward(batch.src, batch.trg, batch.src_mask, batch.trg_mask)  # expect: GL116
        loss = criterion(out.reshape(-1, out.size(-1)), batch.trg_y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


np.random.seed(0)
torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
V = 11
model = EncoderDecoder(V).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
losses = []
for epoch in range(6):
    model.train()
    losses += run_epoch(data_gen(V, 16, 10), model, criterion, optimizer)
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
