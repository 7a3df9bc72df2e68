# source: https://github.com/Lineves7/EMNet/issues/1
# fails-on-cuda: indices should be either on cpu or on the same device as the indexed tensor
# The external-memory module keeps `self.top_index`, a plain tensor attribute that build_index() fills
# from a CPU sort; topk_feature() indexes it with the top-k indices of a similarity computed on the
# GPU, so test.py fails with "indices should be either on cpu or on the same device as the indexed
# tensor (cpu)" (the maintainer's fix: model.top_index = model.top_index.cuda()).
import json

import torch
import torch.nn as nn


class MemoryNet(nn.Module):
    def __init__(self, n_slots=16, dim=8):
        super().__init__()
        self.encoder = nn.Linear(dim, dim)
        self.memory = nn.Parameter(torch.randn(n_slots, dim))
        self.head = nn.Linear(dim, 1)
        self.top_index = None

    def build_index(self, slot_scores):
        self.top_index = torch.argsort(slot_scores, descending=True)

    def topk_feature(self, query, k):
        sim = query @ self.memory.t()
        _, topk_index = sim.topk(k, dim=1)
        _bs = query.size(0)
        topk_idx = torch.cat([torch.unsqueeze(self.top_index[topk_index[i]], dim=0) for i in range(_bs)], dim=0)  # expect: GL116
        return self.memory[topk_idx].mean(dim=1)

    def forward(self, x, k=3):
        query = torch.tanh(self.encoder(x))
        return self.head(query + self.topk_feature(query, k)).squeeze(-1)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.randn(160, 8)
y = x[:, 0] - 0.5 * x[:, 1]
model_restoration_mem = MemoryNet()
model_restoration_mem.build_index(torch.rand(16))
model_restoration_mem.to(device)
optimizer = torch.optim.Adam(model_restoration_mem.parameters(), lr=1e-2)
losses = []
for step in range(40):
    idx = torch.randint(0, 160, (32,))
    xb, yb = x[idx].to(device), y[idx].to(device)
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model_restoration_mem(xb), yb)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
