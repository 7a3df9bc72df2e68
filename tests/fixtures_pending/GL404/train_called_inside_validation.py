# source: https://github.com/pliang279/MultiBench/issues/26
# The supervised trainer calls model.eval() for validation and, a few lines later inside the
# validation block, model.train() again, so the validation forward passes run in train mode
# (dropout on, BatchNorm updated); the maintainers' fix removed the model.train() calls there.
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class MMDL(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoders = nn.ModuleList([nn.Linear(6, 8), nn.Linear(6, 8)])
        self.head = nn.Sequential(nn.BatchNorm1d(16), nn.Dropout(0.3), nn.Linear(16, 2))

    def forward(self, inputs):
        outs = [enc(x) for enc, x in zip(self.encoders, inputs)]
        return self.head(torch.relu(torch.cat(outs, dim=1)))


def train(model, train_dataloader, valid_dataloader, total_epochs, lr=0.01):
    op = torch.optim.AdamW(model.parameters(), lr=lr)
    criterion = nn.CrossEntropyLoss()
    losses = []
    best_acc = 0.0
    for epoch in range(total_epochs):
        model.train()
        for a, b, y in train_dataloader:
            op.zero_grad()
            out = model([a, b])
            loss = criterion(out, y)
            loss.backward()
            op.step()
            losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            correct, total = 0, 0
            for a, b, y in valid_dataloader:  # expect: GL404
                model.train()
                out = model([a, b])
                correct += (out.argmax(dim=1) == y).sum().item()
                total += y.size(0)
            best_acc = max(best_acc, correct / total)
    return losses, best_acc


torch.manual_seed(0)
a = torch.randn(256, 6)
b = torch.randn(256, 6)
y = ((a[:, 0] + b[:, 0]) > 0).long()
train_loader = DataLoader(TensorDataset(a[:192], b[:192], y[:192]), batch_size=32, shuffle=True)
valid_loader = DataLoader(TensorDataset(a[192:], b[192:], y[192:]), batch_size=32)
losses, acc = train(MMDL(), train_loader, valid_loader, 4)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": "cpu"}))
