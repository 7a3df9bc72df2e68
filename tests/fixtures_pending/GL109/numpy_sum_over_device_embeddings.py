# source: https://github.com/xiaxin1998/DHCN/issues/14
# model.py-style: the per-layer item embeddings (device tensors) are collected in a list and
# averaged with np.sum(final, 0), which converts them to numpy.
# fails-on-cuda: can't convert cuda:0 device type tensor to numpy
import json

import numpy as np
import torch
import torch.nn as nn


class HyperConv(nn.Module):
    def __init__(self, n_items=20, dim=8, layers=2):
        super().__init__()
        self.layers = layers
        self.embedding = nn.Embedding(n_items, dim)
        self.adj = nn.Linear(n_items, n_items, bias=False)

    def forward(self):
        item_embeddings = self.embedding.weight
        final = [item_embeddings]
        for i in range(self.layers):
            item_embeddings = self.adj.weight @ item_embeddings
            final.append(item_embeddings)
        return final


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = HyperConv().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
target = torch.randn(20, 8, device=device)
losses = []
for step in range(40):
    final = model()
    loss = sum(nn.functional.mse_loss(f, target) for f in final) / len(final)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
with torch.no_grad():
    final = model()
    item_embeddings = np.sum(final, 0) / (model.layers + 1)  # expect: GL109
print("emb", item_embeddings.shape)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
