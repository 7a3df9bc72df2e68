# source: https://github.com/YanaiEliyahu/AdasOptimizer/issues/1
# The Adas optimizer (a torch.optim.Optimizer subclass) creates every per-parameter slot through a
# helper, `_make_variable`, which stores `torch.full(size=shape, fill_value=value, dtype=dtype)` in
# `self.state[self._curr_var][name]` without a device; `_derivatives_normalizer` then updates the
# slot in place with the gradient (`m.mul_(...).add_(... derivative * derivative)`). With the model
# on the GPU the first `step()` fails (the reporter's workaround: `device="cuda:0"`, the merged fix:
# `device=self._curr_var.device`).
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn
from torch.optim import Optimizer


class Adas(Optimizer):
    def __init__(self, params, lr=0.001, lr2=0.005, lr3=0.0005, beta_1=0.999, beta_2=0.999, beta_3=0.9999, epsilon=1e-8):
        defaults = dict(lr=lr, lr2=lr2, lr3=lr3)
        self._varn = None
        self._is_create_slots = None
        self._curr_var = None
        self._lr, self._lr2, self._lr3 = lr, lr2, lr3
        self._beta_1, self._beta_2, self._beta_3 = beta_1, beta_2, beta_3
        self._epsilon = epsilon
        super().__init__(params, defaults)

    def _make_variable(self, value, shape, dtype):
        self._varn += 1
        name = "unnamed_variable" + str(self._varn)
        if self._is_create_slots:
            self.state[self._curr_var][name] = torch.full(size=shape, fill_value=value, dtype=dtype)
        return self.state[self._curr_var][name]

    @torch.no_grad()
    def _derivatives_normalizer(self, derivative, beta):
        steps = self._make_variable(0, (), derivative.dtype)
        steps.add_(1)
        factor = (1.0 - (self._beta_1**steps)).sqrt()
        m = self._make_variable(0, derivative.shape, derivative.dtype)
        moments = self._make_variable(0, derivative.shape, derivative.dtype)
        m.mul_(self._beta_1).add_((1 - self._beta_1) * derivative * derivative)  # expect: GL116
        np_t = derivative * factor / (m.sqrt() + self._epsilon)
        return moments, np_t, lambda: moments.mul_(beta).add_((1 - beta) * np_t)

    @torch.no_grad()
    def _get_updates_universal_impl(self, grad, param):
        lr = self._make_variable(self._lr, param.shape[1:], param.dtype)
        moment, deriv, f = self._derivatives_normalizer(grad, self._beta_3)
        param.add_(-torch.unsqueeze(lr, 0) * deriv)
        lr_deriv = torch.sum(moment * grad, 0)
        f()
        master_lr = self._make_variable(self._lr2, (), torch.float32)
        m2, d2, f = self._derivatives_normalizer(lr_deriv, self._beta_2)
        lr.add_(master_lr * lr * d2)
        master_lr_deriv2 = torch.sum(m2 * lr_deriv)
        f()
        m3, d3, f = self._derivatives_normalizer(master_lr_deriv2, 0.0)
        master_lr.add_(self._lr3 * master_lr * d3)
        f()

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                self._curr_var = p
                self._is_create_slots = len(self.state[p]) == 0
                self._varn = 0
                self._get_updates_universal_impl(p.grad, p.data)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
    optimizer = Adas(model.parameters(), lr=0.01, lr2=0.005)
    x = torch.randn(512, 10)
    y = (x[:, :3].sum(dim=1, keepdim=True) > 0).float()
    losses = []
    for step in range(60):
        idx = torch.randint(0, 512, (64,))
        xb, yb = x[idx].to(device), y[idx].to(device)
        loss = nn.functional.binary_cross_entropy_with_logits(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))


if __name__ == "__main__":
    main()
