# source: https://github.com/ildoonet/pytorch-gradual-warmup-lr/issues/8
# pytorch-gradual-warmup-lr's GradualWarmupScheduler (an _LRScheduler subclass that ramps the
# learning rate up over `total_epoch` epochs, then hands over to `after_scheduler`) is used as in
# its README: `scheduler_warmup.step(epoch)` first in each epoch, then the epoch's optimizer
# steps. PyTorch warns "Detected call of `lr_scheduler.step()` before `optimizer.step()`" and the
# first value of the schedule is skipped; the maintainer found the warning "unavoidable" with that
# usage (PR #11 later pointed out the scheduler step belongs after optimizer.step()).
import json

import torch
import torch.nn as nn
from torch.optim.lr_scheduler import StepLR, _LRScheduler


class GradualWarmupScheduler(_LRScheduler):
    def __init__(self, optimizer, multiplier, total_epoch, after_scheduler=None):
        self.multiplier = multiplier
        self.total_epoch = total_epoch
        self.after_scheduler = after_scheduler
        self.finished = False
        super().__init__(optimizer)

    def get_lr(self):
        if self.last_epoch > self.total_epoch:
            if self.after_scheduler:
                if not self.finished:
                    self.after_scheduler.base_lrs = [base_lr * self.multiplier for base_lr in self.base_lrs]
                    self.finished = True
                return self.after_scheduler.get_last_lr()
            return [base_lr * self.multiplier for base_lr in self.base_lrs]
        if self.multiplier == 1.0:
            return [base_lr * (float(self.last_epoch) / self.total_epoch) for base_lr in self.base_lrs]
        return [base_lr * ((self.multiplier - 1.0) * self.last_epoch / self.total_epoch + 1.0) for base_lr in self.base_lrs]

    def step(self, epoch=None, metrics=None):
        if self.finished and self.after_scheduler:
            if epoch is None:
                self.after_scheduler.step(None)
            else:
                self.after_scheduler.step(epoch - self.total_epoch)
            self._last_lr = self.after_scheduler.get_last_lr()
        else:
            return super().step(epoch)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
criterion = nn.MSELoss()
optim = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scheduler_steplr = StepLR(optim, step_size=10, gamma=0.5)
scheduler_warmup = GradualWarmupScheduler(optim, multiplier=2, total_epoch=3, after_scheduler=scheduler_steplr)

x = torch.randn(128, 10)
y = x[:, :3].sum(dim=1, keepdim=True)
losses = []
for epoch in range(1, 12):
    scheduler_warmup.step(epoch)  # expect: GL406
    epoch_loss = 0.0
    for i in range(0, 128, 32):
        xb, yb = x[i:i + 32].to(device), y[i:i + 32].to(device)
        optim.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optim.step()
        epoch_loss += loss.item()
    losses.append(epoch_loss / 4)

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
