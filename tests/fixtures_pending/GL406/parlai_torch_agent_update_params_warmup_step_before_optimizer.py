# source: https://github.com/facebookresearch/ParlAI/issues/2042
# ParlAI's TorchAgent (2019): `train_step()` computes the loss, calls `self.backward(loss)` and then
# `self.update_params()`. update_params() counts the update, steps the warmup/invsqrt LR scheduler
# kept on the agent (`self.scheduler`), clips, and only then calls `self.optimizer.step()`; PyTorch
# warns "Detected call of `lr_scheduler.step()` before `optimizer.step()`" on the first update
# (`--lr-scheduler invsqrt --warmup-updates 50`), and the first value of the schedule is skipped.
# PR #2105 ("Swap step order") moves the scheduler step after the optimizer step. (A tiny ranker
# agent on synthetic data; ParlAI passed the update count to step(), dropped here.)
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class RankerModel(nn.Module):
    def __init__(self, dim=16, n_cands=8):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(dim, 32), nn.ReLU(), nn.Linear(32, n_cands))

    def forward(self, xs):
        return self.encoder(xs)


class TorchAgent:
    def __init__(self, opt):
        self.opt = opt
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = RankerModel().to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=opt["learningrate"])
        self._number_training_updates = 0
        warmup_updates = opt["warmup_updates"]
        decay = warmup_updates ** 0.5

        def _invsqrt_lr(step):
            if step < warmup_updates:
                return (step + 1) / warmup_updates
            return decay / max(1, step) ** 0.5

        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, _invsqrt_lr)

    def backward(self, loss):
        self.optimizer.zero_grad()
        loss.backward()

    def update_params(self):
        self._number_training_updates += 1
        if self.scheduler is not None:
            self.scheduler.step()  # expect: GL406
        if self.opt["gradient_clip"] > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.opt["gradient_clip"])
        self.optimizer.step()

    def train_step(self, batch):
        xs, ys = batch
        xs, ys = xs.to(self.device), ys.to(self.device)
        self.model.train()
        scores = self.model(xs)
        loss = F.cross_entropy(scores, ys)
        self.backward(loss)
        self.update_params()
        return loss.item()


def main():
    torch.manual_seed(0)
    opt = {"learningrate": 0.01, "warmup_updates": 5, "gradient_clip": 0.1}
    agent = TorchAgent(opt)
    X = torch.randn(256, 16)
    y = X[:, :8].argmax(dim=1)
    losses = []
    for epoch in range(4):
        perm = torch.randperm(256)
        for i in range(0, 256, 32):
            idx = perm[i:i + 32]
            losses.append(agent.train_step((X[idx], y[idx])))
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": agent.device.type}))


if __name__ == "__main__":
    main()
