# source: https://github.com/wingedsheep/transformer/issues/4
# A module-level helper computes the sinusoidal table with numpy and returns
# torch.from_numpy(...).float() (host); the encoder's forward adds it to the device embeddings.
# fails-on-cuda: Expected all tensors to be on the same device
import json
import math

import numpy as np
import torch
import torch.nn as nn


def positional_encoding(max_len, d_model):
    pos = np.arange(max_len)[:, None]
    i = np.arange(d_model)[None, :]
    angle = pos / np.power(10000, (2 * (i // 2)) / d_model)
    table = np.where(i % 2 == 0, np.sin(angle), np.cos(angle))
    return torch.from_numpy(table).float()


class Encoder(nn.Module):
    def __init__(self, vocab=20, d_model=16):
        super().__init__()
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab, d_model)
        self.classify = nn.Linear(d_model, 2)

    def forward(self, tokens):
        x = self.embedding(tokens) * math.sqrt(self.d_model)
        x = x + positional_encoding(tokens.size(1), self.d_model)  # expect: GL116
        return self.classify(x.mean(dim=1))


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Encoder().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
losses = []
for step in range(50):
    tokens = torch.randint(0, 20, (32, 10), device=device)
    labels = (tokens[:, 0] < tokens[:, -1]).long()
    loss = nn.functional.cross_entropy(model(tokens), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
