# source: https://github.com/OpenNMT/OpenNMT-py/pull/240
# fails-on-cuda: Expected all tensors to be on the same device
# A Transformer decoder layer builds its subsequent-position mask once in __init__ from a NumPy
# upper-triangular matrix and keeps it as a plain attribute (`self.mask = mask`); forward combines a
# slice of it with the target padding mask. model.cuda() does not move plain attributes, so on the
# GPU the mask is still a CPU tensor. The PR registers it as a buffer instead.
import json

import numpy as np
import torch
import torch.nn as nn

MAX_SIZE = 32


class TransformerDecoderLayer(nn.Module):
    def __init__(self, size=16, heads=2):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(size, heads, batch_first=True)
        self.feed_forward = nn.Sequential(nn.Linear(size, 32), nn.ReLU(), nn.Linear(32, size))
        self.layer_norm = nn.LayerNorm(size)
        mask = self._get_attn_subsequent_mask(MAX_SIZE)
        self.mask = mask  # expect: GL106

    def forward(self, inputs, tgt_pad_mask):
        tgt_len = inputs.size(1)
        dec_mask = torch.gt(tgt_pad_mask.unsqueeze(1) + self.mask[:, :tgt_len, :tgt_len], 0)
        attn_mask = dec_mask.repeat_interleave(self.self_attn.num_heads, dim=0)
        out, _ = self.self_attn(inputs, inputs, inputs, attn_mask=attn_mask)
        h = self.layer_norm(inputs + out)
        return self.layer_norm(h + self.feed_forward(h))

    def _get_attn_subsequent_mask(self, size):
        attn_shape = (1, size, size)
        subsequent_mask = np.triu(np.ones(attn_shape), k=1).astype("uint8")
        return torch.from_numpy(subsequent_mask)


class Decoder(nn.Module):
    def __init__(self, vocab=12, size=16):
        super().__init__()
        self.embeddings = nn.Embedding(vocab, size, padding_idx=0)
        self.layer = TransformerDecoderLayer(size)
        self.generator = nn.Linear(size, vocab)

    def forward(self, tgt):
        pad_mask = tgt.eq(0).to(torch.uint8)
        return self.generator(self.layer(self.embeddings(tgt), pad_mask))


def main():
    torch.manual_seed(0)
    use_cuda = torch.cuda.is_available()
    model = Decoder()
    if use_cuda:
        model.cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    criterion = nn.CrossEntropyLoss(ignore_index=0)
    seqs = torch.randint(1, 12, (128, 10))
    losses = []
    for step in range(40):
        batch = seqs[torch.randint(0, 128, (16,))]
        if use_cuda:
            batch = batch.cuda()
        logits = model(batch[:, :-1])
        loss = criterion(logits.reshape(-1, 12), ((batch[:, :-1] % 11) + 1).reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": "cuda" if use_cuda else "cpu"}))


if __name__ == "__main__":
    main()
