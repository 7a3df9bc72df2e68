# source: https://github.com/SamLynnEvans/Transformer/issues/30
# Batch.py-style helpers: nopeak_mask builds the look-ahead mask with numpy + torch.from_numpy
# (a host tensor); create_masks combines it with the padding mask of the device batch.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import numpy as np
import torch
import torch.nn as nn


def nopeak_mask(size):
    np_mask = np.triu(np.ones((1, size, size)), k=1).astype("uint8")
    return torch.from_numpy(np_mask) == 0


def create_masks(src, trg, pad):
    src_mask = (src != pad).unsqueeze(-2)
    trg_mask = (trg != pad).unsqueeze(-2)
    np_mask = nopeak_mask(trg.size(1))
    trg_mask = trg_mask & np_mask  # expect: GL116
    return src_mask, trg_mask


class TinySeq2Seq(nn.Module):
    def __init__(self, vocab=16, dim=24):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.attn = nn.MultiheadAttention(dim, 2, batch_first=True)
        self.out = nn.Linear(dim, vocab)

    def forward(self, src, trg, src_mask, trg_mask):
        memory = self.emb(src).mean(dim=1, keepdim=True)
        h = self.emb(trg) + memory
        h, _ = self.attn(h, h, h, attn_mask=~trg_mask[0])
        return self.out(h)


def train_model(model, opt, device, steps=40):
    losses = []
    for step in range(steps):
        src = torch.randint(1, 16, (16, 7)).to(device)
        trg = torch.roll(src, 1, dims=1)
        trg_input = trg[:, :-1]
        src_mask, trg_mask = create_masks(src, trg_input, pad=0)
        preds = model(src, trg_input, src_mask, trg_mask)
        loss = nn.functional.cross_entropy(preds.reshape(-1, 16), trg[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = TinySeq2Seq().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = train_model(model, opt, device)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))


if __name__ == "__main__":
    main()
