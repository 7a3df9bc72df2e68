# source: https://github.com/jokester-zzz/SSA-SC/issues/2
# The model computes a dict of losses (`loss = model.compute_loss(scores, data)`, one entry per
# term plus 'total'); backward runs on loss['total'] and the epoch statistics keep
# `epoch_loss[key] += loss[key]` for every key, i.e. the graph-holding tensors (the report:
# it should be `loss[key].item()`; GPU memory rises continuously).
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class SSCNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(12, 32), nn.ReLU())
        self.sem = nn.Linear(32, 4)
        self.com = nn.Linear(32, 1)

    def forward(self, x):
        h = self.body(x)
        return {"semantic": self.sem(h), "completion": self.com(h)}

    def compute_loss(self, scores, data):
        loss_sem = F.cross_entropy(scores["semantic"], data["label"])
        loss_com = F.binary_cross_entropy_with_logits(scores["completion"].squeeze(1), data["occupied"])
        return {"total": loss_sem + loss_com, "semantic": loss_sem, "completion": loss_com}


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
X = torch.randn(320, 12)
label = (X[:, 0] > 0).long() * 2 + (X[:, 1] > 0).long()
occupied = (X[:, 2] > 0).float()
loader = DataLoader(TensorDataset(X, label, occupied), batch_size=32, shuffle=True)
model = SSCNet().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
history = []
for epoch in range(6):
    epoch_loss = {"total": 0.0, "semantic": 0.0, "completion": 0.0}
    for x, lbl, occ in loader:
        data = {"x": x.to(device), "label": lbl.to(device), "occupied": occ.to(device)}
        optimizer.zero_grad()
        scores = model(data["x"])
        loss = model.compute_loss(scores, data)
        loss["total"].backward()
        optimizer.step()
        for key in loss:
            epoch_loss[key] += loss[key]  # expect: GL402
    history.append(float(epoch_loss["total"]) / len(loader))
    print(f"epoch {epoch}: " + ", ".join(f"{k} {float(v) / len(loader):.4f}" for k, v in epoch_loss.items()))

print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
