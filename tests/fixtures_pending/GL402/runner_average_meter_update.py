# source: https://github.com/microsoft/SpareNet/issues/12
# The runner logs its losses through AverageMeter.update(...) with the loss tensors themselves,
# so the meters keep every iteration's graph (steady GPU memory growth, OOM after ~2 epochs);
# the fix passes loss.item().
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class AverageMeter:
    def __init__(self):
        self.reset()

    def reset(self):
        self.val = 0
        self.sum = 0
        self.count = 0
        self.avg = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


class Runner:
    def __init__(self, model, loader):
        self.model = model
        self.loader = loader
        self.optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        self.losses = AverageMeter()
        self.history = []

    def train_step(self, partial, gt):
        rec = self.model(partial)
        loss = nn.functional.l1_loss(rec, gt)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss

    def train(self, epochs):
        for epoch in range(epochs):
            self.losses.reset()
            for partial, gt in self.loader:
                loss = self.train_step(partial, gt)
                self.losses.update(loss)  # expect: GL402
            self.history.append(float(self.losses.avg))
        return self.history


torch.manual_seed(0)
gt = torch.randn(256, 12)
partial = gt * (torch.rand(256, 12) > 0.3).float()
runner = Runner(nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 12)), DataLoader(TensorDataset(partial, gt), batch_size=32, shuffle=True))
history = runner.train(5)
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": "cpu"}))
