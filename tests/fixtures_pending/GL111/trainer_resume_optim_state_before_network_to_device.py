# source: https://github.com/pytorch/pytorch/issues/8741
# A trainer object builds its network and its optimizer, resumes both from a checkpoint loaded
# to the host (`map_location` sends every tensor to the CPU), and only then moves the network to
# the GPU in a separate method. The Adam state restored by `self.optim.load_state_dict` stays on
# the host while the parameters move, so the first `step()` of the resumed training fails.
# fails-on-cuda: Tensors of the same index must be on the same device
import json
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


class Network(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))

    def forward(self, x):
        return self.body(x)


class Trainer:
    def __init__(self, lr=1e-2):
        self.device = torch.device("cpu")
        self.network = Network()
        self.optim = torch.optim.Adam(self.network.parameters(), lr=lr)

    def load(self, path):
        state = torch.load(path, map_location=lambda storage, loc: storage)
        self.network.load_state_dict(state["network"])
        self.optim.load_state_dict(state["optim"])  # expect: GL111

    def save(self, path):
        torch.save({"network": self.network.state_dict(), "optim": self.optim.state_dict()}, path)

    def to(self, device):
        self.device = device
        self.network.to(device)

    def train_epoch(self, x, y):
        x, y = x.to(self.device), y.to(self.device)
        losses = []
        for i in range(0, len(x), 16):
            loss = F.cross_entropy(self.network(x[i:i + 16]), y[i:i + 16])
            self.optim.zero_grad()
            loss.backward()
            self.optim.step()
            losses.append(loss.item())
        return losses


torch.manual_seed(0)
x = torch.randn(128, 10)
y = (x[:, 0] > 0).long() + (x[:, 1] > 1).long()
with tempfile.TemporaryDirectory() as tmp:
    ckpt = os.path.join(tmp, "last.pt")
    warmup = Trainer()
    first_losses = warmup.train_epoch(x, y)
    warmup.save(ckpt)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    trainer = Trainer()
    trainer.load(ckpt)
    trainer.to(device)
    losses = []
    for epoch in range(5):
        losses += trainer.train_epoch(x, y)
print("GPULINT-TRAIN " + json.dumps({"first_loss": first_losses[0], "last_loss": losses[-1], "device": device.type}))
