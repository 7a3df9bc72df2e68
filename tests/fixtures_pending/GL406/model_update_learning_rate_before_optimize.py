# source: https://github.com/XPixelGroup/BasicSR/issues/206
# BasicSR-style model classes: BaseModel keeps its optimizers and schedulers in lists on self;
# train.py calls model.update_learning_rate(current_step) (which steps every scheduler) before
# model.optimize_parameters(current_step) (which steps self.optimizer_G) in each iteration, so
# PyTorch warns that lr_scheduler.step() ran before optimizer.step() and skips the first value.
import json

import torch
import torch.nn as nn


class BaseModel:
    def __init__(self):
        self.optimizers = []
        self.schedulers = []

    def update_learning_rate(self, current_step):
        for scheduler in self.schedulers:
            scheduler.step()


class SRModel(BaseModel):
    def __init__(self, device):
        super().__init__()
        self.device = device
        self.netG = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 3, 3, padding=1)).to(device)
        self.cri_pix = nn.L1Loss()
        self.optimizer_G = torch.optim.Adam(self.netG.parameters(), lr=2e-3)
        self.optimizers.append(self.optimizer_G)
        for optimizer in self.optimizers:
            self.schedulers.append(torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[40], gamma=0.5))

    def feed_data(self, lq, gt):
        self.lq = lq.to(self.device)
        self.gt = gt.to(self.device)

    def optimize_parameters(self, step):
        self.optimizer_G.zero_grad()
        l_pix = self.cri_pix(self.netG(self.lq), self.gt)
        l_pix.backward()
        self.optimizer_G.step()
        return l_pix.item()


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
gt = torch.rand(64, 3, 8, 8)
lq = gt + 0.1 * torch.randn_like(gt)
model = SRModel(device)
history = []
current_step = 0
for epoch in range(4):
    for i in range(0, 64, 8):
        current_step += 1
        model.update_learning_rate(current_step)  # expect: GL406
        model.feed_data(lq[i : i + 8], gt[i : i + 8])
        history.append(model.optimize_parameters(current_step))

print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(history[:4]) / 4, "last_loss": sum(history[-4:]) / 4, "device": device.type}))
