# source: https://github.com/gjy3035/C-3-Framework/issues/96
# A crowd-counting Trainer: forward() runs the epoch loop and, once past the decay start, calls
# self.scheduler.step() before self.train(), the method that steps self.optimizer over the
# batches; PyTorch warns "Detected call of `lr_scheduler.step()` before `optimizer.step()`" and the
# first value of the schedule is skipped.
import json

import torch
import torch.nn as nn
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset

LR_DECAY_START = -1
MAX_EPOCH = 6


class Trainer:
    def __init__(self, dataloader, device):
        self.device = device
        self.net = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 1)).to(device)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=1e-2)
        self.scheduler = StepLR(self.optimizer, step_size=1, gamma=0.9)
        self.train_loader = dataloader
        self.epoch = 0
        self.history = []

    def forward(self):
        for epoch in range(self.epoch, MAX_EPOCH):
            self.epoch = epoch
            if epoch > LR_DECAY_START:
                self.scheduler.step()  # expect: GL406
            self.train()

    def train(self):
        self.net.train()
        losses = []
        for img, gt_map in self.train_loader:
            img, gt_map = img.to(self.device), gt_map.to(self.device)
            self.optimizer.zero_grad()
            loss = nn.functional.mse_loss(self.net(img), gt_map)
            loss.backward()
            self.optimizer.step()
            losses.append(loss.item())
        self.history.append(sum(losses) / len(losses))


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
img = torch.rand(64, 1, 8, 8)
gt = nn.functional.avg_pool2d(img, 3, stride=1, padding=1)
trainer = Trainer(DataLoader(TensorDataset(img, gt), batch_size=16, shuffle=True), device)
trainer.forward()
h = trainer.history
print("GPULINT-TRAIN " + json.dumps({"first_loss": h[0], "last_loss": h[-1], "device": device.type}))
