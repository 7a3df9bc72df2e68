# source: https://github.com/pytorch/pytorch/pull/85609
# pytorch/pytorch PR #85609 ("Designate device to generate_square_subsequent_mask"): "When the
# model is on GPU, generating the mask on default device (cpu) is quite time consuming." The
# language-model shape it profiles: a TransformerEncoder LM whose `forward` builds the causal mask
# with `nn.Transformer.generate_square_subsequent_mask(len(src))` (a `torch.full(..., -inf)` +
# `torch.triu` on the CPU) and copies it to the input's device with `.to(src.device)` on every
# call, that is every training step. The PR added a `device=` argument to the static method (today's
# signature also has `dtype=`) so the mask is made where it is used. Rebuilt with a two-layer encoder on a synthetic token stream
# (batchify/get_batch as in the word-language-model example).
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class TransformerModel(nn.Module):
    def __init__(self, ntoken, d_model=32, nhead=2, d_hid=64, nlayers=2):
        super().__init__()
        self.embedding = nn.Embedding(ntoken, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, d_hid, dropout=0.0)
        self.transformer_encoder = nn.TransformerEncoder(layer, nlayers, enable_nested_tensor=False)
        self.linear = nn.Linear(d_model, ntoken)
        self.d_model = d_model

    def forward(self, src):
        src_mask = nn.Transformer.generate_square_subsequent_mask(len(src)).to(src.device)  # expect: GL501
        x = self.embedding(src) * math.sqrt(self.d_model)
        x = self.transformer_encoder(x, src_mask)
        return self.linear(x)


def batchify(data, bsz, device):
    seq_len = data.size(0) // bsz
    return data[: seq_len * bsz].view(bsz, seq_len).t().contiguous().to(device)


def get_batch(source, i, bptt=12):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len].reshape(-1)


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ntokens = 12
    stream = torch.arange(2400) % ntokens  # a periodic token stream the LM can learn
    train_data = batchify(stream, 8, device)
    model = TransformerModel(ntokens).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    history = []
    for epoch in range(2):
        model.train()
        for batch, i in enumerate(range(0, train_data.size(0) - 1, 12)):
            data, targets = get_batch(train_data, i)
            output = model(data)
            loss = F.cross_entropy(output.view(-1, ntokens), targets)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
            history.append(loss.item())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(history[:3]) / 3, "last_loss": sum(history[-3:]) / 3, "device": device.type}))
