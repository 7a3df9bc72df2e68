"""GL118 across the methods of one instance (E61-2, madgrad#4): a stateful optimizer built in
`__init__` over a model on the host, stepped by a method of a class whose other method moves the
model; each positive checked to fail on b44bdc6."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

LEARNER = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class MADGRAD(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-2):
        super().__init__(params, dict(lr=lr))
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["s"] = torch.zeros_like(p.data)

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self.state[p]["s"].add_(p.grad)
                    p.sub_(self.state[p]["s"], alpha=group["lr"])


class Learner:
    def __init__(self, model):
        self.model = model
        {before}self.opt = {opt}(self.model.parameters())

    def one_batch(self, x):
        self.model(x.to(device)).sum().backward()
        self.opt.step()
        self.opt.zero_grad()

    def fit(self, xs):
        self.model.to(device)
        {rebuild}for x in xs:
            self.one_batch(x)


learn = Learner({model})
learn.fit([torch.randn(3, 4) for _ in range(4)])
"""


def _lines(before="", opt="MADGRAD", rebuild="", model="nn.Linear(4, 2)"):
    src = textwrap.dedent(LEARNER.format(before=before, opt=opt, rebuild=rebuild, model=model))
    rules = [Registry.load().by_code("GL118")()]
    return [(d.line, d.message) for d in run_text("train.py", src, rules, Options()).diagnostics]


def test_a_learner_moving_its_model_in_fit_after_init_built_the_state():
    for opt in ("MADGRAD", "torch.optim.Adagrad"):
        found = _lines(opt=opt)
        assert [line for line, _ in found] == [27], opt
        assert "moved to `device` on line 35" in found[0][1]


def test_a_model_moved_before_the_optimizer_or_already_moved_is_silent():
    assert _lines(before="self.model.to(device)\n        ") == []
    assert _lines(model="nn.Linear(4, 2).to(device)") == []


def test_an_optimizer_rebuilt_after_the_move_is_silent():
    assert _lines(rebuild="self.opt = MADGRAD(self.model.parameters())\n        ") == []


def test_a_lazily_stateful_optimizer_is_silent():
    assert _lines(opt="torch.optim.Adam") == []
