"""GL118 on an optimizer class of the file whose `__init__` keeps a copy of each parameter
(lessw2020/Ranger-Deep-Learning-Optimizer#1: Ranger's Lookahead "slow weights",
`[[p.clone().detach() for p in group["params"]] for group in self.param_groups]`). Built from the
model's parameters before the model moves to the GPU, those copies stay on the CPU and the first
Lookahead update mixes devices, as Adagrad's accumulators do. Optimizers of the file that make
their state lazily (in `step()`), or copy something other than the parameters, stay silent."""

from __future__ import annotations

from fixture_support import check

HEAD = '''import torch
import torch.nn as nn
from torch.optim.optimizer import Optimizer


'''

LOOKAHEAD = '''class Lookahead(Optimizer):
    def __init__(self, params, lr=1e-3, alpha=0.5, k=6):
        super().__init__(params, dict(lr=lr))
        self.alpha = alpha
        self.k = k
        self.slow_weights = [[p.clone().detach() for p in group["params"]] for group in self.param_groups]

    def step(self, closure=None):
        for group, slow in zip(self.param_groups, self.slow_weights):
            for p, q in zip(group["params"], slow):
                q.data.add_(p.data - q.data, alpha=self.alpha)
                p.data.copy_(q.data)

'''

STATE_DICT = '''class Accum(Optimizer):
    def __init__(self, params, lr=1e-2):
        super().__init__(params, dict(lr=lr))
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["sum"] = torch.zeros_like(p)

    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["sum"].add_(p.grad * p.grad)

'''

LAZY = '''class Lazy(Optimizer):
    def __init__(self, params, lr=1e-2):
        super().__init__(params, dict(lr=lr))
        self.names = [len(group["params"]) for group in self.param_groups]

    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                if len(state) == 0:
                    state["sum"] = torch.zeros_like(p)
                state["sum"].add_(p.grad * p.grad)

'''


def _script(cls_src: str, ctor: str, before_move: bool) -> str:
    build = f"optimizer = {ctor}(model.parameters())\n"
    move = "model.to(device)\n"
    order = build + move if before_move else move + build
    return (
        HEAD
        + cls_src
        + '\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
        + "model = nn.Linear(4, 2)\n"
        + order
        + "model(torch.randn(3, 4, device=device)).sum().backward()\n"
        + "optimizer.step()\n"
    )


def _gl118(text: str):
    return [(d.line, d.fix is not None) for d in check(text, {"GL118"}) if d.code == "GL118"]


def test_lookahead_slow_weights_copied_before_the_move_are_reported_with_the_reordering_fix():
    text = _script(LOOKAHEAD, "Lookahead", before_move=True)
    line = text.splitlines().index("optimizer = Lookahead(model.parameters())") + 1
    assert _gl118(text) == [(line, True)]


def test_state_filled_in_init_through_a_state_name_is_reported():
    text = _script(STATE_DICT, "Accum", before_move=True)
    line = text.splitlines().index("optimizer = Accum(model.parameters())") + 1
    assert _gl118(text) == [(line, True)]


def test_built_after_the_move_is_silent():
    assert _gl118(_script(LOOKAHEAD, "Lookahead", before_move=False)) == []


def test_state_made_lazily_in_step_is_silent():
    assert _gl118(_script(LAZY, "Lazy", before_move=True)) == []
