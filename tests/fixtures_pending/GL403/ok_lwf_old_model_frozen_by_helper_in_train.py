# source: https://github.com/joansj/hat/blob/6fd0b9d98e08/src/approaches/lwf.py
# Hard negative (real shape, benchmarks/PRECISION34.md P34-A3): the HAT repository's
# Learning-without-Forgetting approach. `Appr.train(t, ...)` trains task t, then keeps a copy of
# the network: `self.model_old = deepcopy(self.model)`, `self.model_old.eval()`,
# `utils.freeze_model(self.model_old)` (a helper that sets `requires_grad = False` on every
# parameter; here it is a function of the file). `Appr.eval(t, ...)` scores a task batch by batch
# and, for t > 0, runs `self.model_old.forward(images)` for the distillation term of the loss.
# `model_old` has no parameter that asks for a gradient and the inputs are data, so that call
# records no graph: `no_grad` would change nothing. (In the repository the current model's call
# in `eval` is outside `no_grad` too, behind `Variable(..., volatile=True)`, a no-op since
# PyTorch 0.4: that one is a true GL403; here it runs under `no_grad`.) GL403 reports the
# `self.model_old.forward` call: the freeze is in another method, through a helper.
import json
from copy import deepcopy

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def freeze_model(model):
    for param in model.parameters():
        param.requires_grad = False
    return


class Net(nn.Module):
    def __init__(self, ntasks=2, ncla=2):
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.last = nn.ModuleList([nn.Linear(32, ncla) for _ in range(ntasks)])

    def forward(self, x):
        h = F.relu(self.fc1(x))
        return [head(h) for head in self.last]


class Appr:
    def __init__(self, model, nepochs=30, sbatch=16, lr=0.1, lamb=1.0, T=2.0):
        self.model = model
        self.model_old = None
        self.nepochs = nepochs
        self.sbatch = sbatch
        self.lr = lr
        self.lamb = lamb
        self.T = T
        self.losses = []

    def criterion(self, t, targets_old, outputs, targets):
        loss_dist = 0
        for t_old in range(0, t):
            old = F.softmax(targets_old[t_old] / self.T, dim=1)
            new = F.log_softmax(outputs[t_old] / self.T, dim=1)
            loss_dist += -(old * new).sum(1).mean()
        return F.cross_entropy(outputs[t], targets) + self.lamb * loss_dist

    def train(self, t, x, y, xvalid, yvalid):
        self.losses = []
        optimizer = torch.optim.SGD(self.model.parameters(), lr=self.lr)
        for e in range(self.nepochs):
            self.model.train()
            for i in range(0, x.size(0), self.sbatch):
                images, targets = x[i:i + self.sbatch].to(device), y[i:i + self.sbatch].to(device)
                targets_old = None
                if t > 0:
                    targets_old = self.model_old.forward(images)
                outputs = self.model.forward(images)
                loss = self.criterion(t, targets_old, outputs, targets)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                self.losses.append(loss.item())
            self.eval(t, xvalid, yvalid)
        self.model_old = deepcopy(self.model)
        self.model_old.eval()
        freeze_model(self.model_old)

    def eval(self, t, x, y):
        total_loss, total_num = 0.0, 0
        self.model.eval()
        for i in range(0, x.size(0), self.sbatch):
            images, targets = x[i:i + self.sbatch].to(device), y[i:i + self.sbatch].to(device)
            targets_old = None
            if t > 0:
                targets_old = self.model_old.forward(images)
            with torch.no_grad():
                outputs = self.model.forward(images)
            loss = self.criterion(t, targets_old, outputs, targets)
            total_loss += loss.item() * len(targets)
            total_num += len(targets)
        return total_loss / total_num


if __name__ == "__main__":
    torch.manual_seed(0)
    tasks = []
    for t in range(2):
        w = torch.randn(8)
        xs = torch.randn(64, 8)
        tasks.append((xs, (xs @ w > 0).long()))
    appr = Appr(Net().to(device))
    for t, (xs, ys) in enumerate(tasks):
        appr.train(t, xs[:48], ys[:48], xs[48:], ys[48:])
        print("task", t, "valid loss", round(appr.eval(t, xs[48:], ys[48:]), 4))
    # the last task's training losses (the distillation term makes its start higher than task 0's end)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": appr.losses[0], "last_loss": appr.losses[-1],
                                         "device": device.type}))
