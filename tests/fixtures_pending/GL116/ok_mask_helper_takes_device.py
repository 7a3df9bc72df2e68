# source: https://github.com/allenai/allennlp/pull/2224
# Hard negative: the look-ahead mask helper takes the device from its caller
# (`subsequent_mask(size, device)`) and builds the mask there; the padding mask comes from the
# device batch itself.
import json

import torch
import torch.nn as nn


def subsequent_mask(size, device="cpu"):
    return torch.tril(torch.ones(size, size, device=device, dtype=torch.bool)).unsqueeze(0)


def make_masks(trg, pad):
    trg_mask = (trg != pad).unsqueeze(-2)
    return trg_mask & subsequent_mask(trg.size(1), trg.device)


class TinyDecoder(nn.Module):
    def __init__(self, vocab=16, dim=24):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.attn = nn.MultiheadAttention(dim, 2, batch_first=True)
        self.out = nn.Linear(dim, vocab)

    def forward(self, trg, trg_mask):
        h = self.emb(trg)
        h, _ = self.attn(h, h, h, attn_mask=~trg_mask[0])
        return self.out(h)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = TinyDecoder().to(device)
opt = torch.optim.Adam(model.parameters(), lr=0.01)
losses = []
for step in range(40):
    seq = torch.randint(1, 16, (16, 7), device=device)
    trg = torch.roll(seq, 1, dims=1)
    preds = model(trg[:, :-1], make_masks(trg[:, :-1], pad=0))
    loss = nn.functional.cross_entropy(preds.reshape(-1, 16), trg[:, :-1].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
