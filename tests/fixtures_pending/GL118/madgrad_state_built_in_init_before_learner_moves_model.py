# source: https://github.com/facebookresearch/madgrad/issues/4
# The MADGRAD optimizer created its per-parameter state (grad_sum_sq, s, x0) in __init__, with
# zeros_like/clone of the parameters as they were then. The reporter used it from fastai, whose
# Learner builds the optimizer from the model's parameters and moves the model to the GPU only
# when fit() starts, so the first step() meets CUDA gradients and CPU state ("tensors on two
# different devices"). Here the optimizer class and a minimal Learner live in the file.
# fails-on-cuda: Expected all tensors to be on the same device
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MADGRAD(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-2, momentum=0.9, eps=1e-6):
        super().__init__(params, dict(lr=lr, momentum=momentum, eps=eps))
        self.k = 0
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["grad_sum_sq"] = torch.zeros_like(p.data)
                state["s"] = torch.zeros_like(p.data)
                state["x0"] = torch.clone(p.data)

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            lamb = group["lr"] * math.sqrt(self.k + 1)
            ck = 1 - group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                state["grad_sum_sq"].addcmul_(p.grad, p.grad, value=lamb)
                rms = state["grad_sum_sq"].pow(1 / 3).add_(group["eps"])
                state["s"].add_(p.grad, alpha=lamb)
                z = state["x0"].addcdiv(state["s"], rms, value=-1)
                p.mul_(1 - ck).add_(z, alpha=ck)
        self.k += 1


class Learner:
    def __init__(self, model, batches, lr=1e-2):
        self.model = model
        self.batches = batches
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.opt = MADGRAD(self.model.parameters(), lr=lr)  # expect: GL118

    def one_batch(self, xb, yb):
        xb, yb = xb.to(self.device), yb.to(self.device)
        loss = F.cross_entropy(self.model(xb), yb)
        loss.backward()
        self.opt.step()
        self.opt.zero_grad()
        return loss.item()

    def fit(self, n_epoch):
        self.model.to(self.device)
        self.model.train()
        losses = []
        for epoch in range(n_epoch):
            for xb, yb in self.batches:
                losses.append(self.one_batch(xb, yb))
        return losses


torch.manual_seed(0)
x = torch.randn(256, 10)
y = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()
batches = [(x[i:i + 32], y[i:i + 32]) for i in range(0, 256, 32)]
learn = Learner(nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3)), batches)
losses = learn.fit(5)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": learn.device.type}))
