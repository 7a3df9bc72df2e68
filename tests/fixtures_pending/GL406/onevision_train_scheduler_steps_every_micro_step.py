# source: https://github.com/EvolvingLMMs-Lab/OneVision-Encoder/pull/82
# OneVision-Encoder's training/train.py accumulates gradients over `backward_passes_per_step`
# micro-steps and steps the optimizer only on the last one, but calls `lr_scheduler.step()` on every
# loop iteration. The first micro-steps step the schedule before any `opt.step()` (PyTorch warns
# "Detected call of `lr_scheduler.step()` before `optimizer.step()`") and the warmup runs
# `backward_passes_per_step` times too fast. The PR moves the scheduler step under the optimizer
# step's condition.
import json

import torch
import torch.nn as nn


class PolynomialLRWarmup(torch.optim.lr_scheduler.LRScheduler):
    def __init__(self, optimizer, warmup_iters, total_iters, power=1.0, last_epoch=-1):
        self.warmup_iters = warmup_iters
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        step = self.last_epoch
        if step < self.warmup_iters:
            factor = (step + 1) / self.warmup_iters
        else:
            progress = min(1.0, (step - self.warmup_iters) / max(1, self.total_iters - self.warmup_iters))
            factor = (1.0 - progress) ** self.power
        return [base_lr * factor for base_lr in self.base_lrs]


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 32))
        self.head = nn.Linear(32, 4)

    def forward(self, x):
        return self.head(self.backbone(x))


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    backbone = Encoder().to(device)
    opt = torch.optim.AdamW(backbone.parameters(), lr=3e-3, weight_decay=0.01)
    backward_passes_per_step = 4
    total_steps = 80
    lr_scheduler = PolynomialLRWarmup(opt, warmup_iters=8, total_iters=total_steps)
    w = torch.randn(16, 4, device=device)
    history = []
    for global_step in range(total_steps):
        x = torch.randn(32, 16, device=device)
        y = (x @ w).argmax(dim=1)
        loss = nn.functional.cross_entropy(backbone(x), y) / backward_passes_per_step
        loss.backward()
        if (global_step + 1) % backward_passes_per_step == 0:
            torch.nn.utils.clip_grad_norm_(backbone.parameters(), max_norm=5.0)
            opt.step()
            history.append(loss.item() * backward_passes_per_step)
            opt.zero_grad()
        lr_scheduler.step()  # expect: GL406
    return history, device


history, device = main()
first = sum(history[:3]) / 3
last = sum(history[-3:]) / 3
print("GPULINT-TRAIN " + json.dumps({"first_loss": first, "last_loss": last, "device": device.type}))
