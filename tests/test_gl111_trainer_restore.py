"""GL111 in a trainer class: the instance restores the optimizer's state while it is built
(`__init__`, or a method `__init__` calls), and a later method moves the model
(atomistic-machine-learning/schnetpack#126; the fixture is
tests/fixtures/GL111/trainer_restores_optimizer_before_train_device.py)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

BUILT_INSIDE = """
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model, ckpt):
        self.model = model
        self.optimizer = torch.optim.Adam(self.model.parameters())
        self.optimizer.load_state_dict(torch.load(ckpt, map_location="cpu")["optimizer"])

    def train(self, device):
        self.model.to(device)
        for i in range(3):
            loss = self.model(torch.randn(4, 4, device=device)).sum()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
trainer = Trainer(nn.Linear(4, 1), "c.pt")
trainer.train(device)
"""


def codes(src):
    reg = Registry.load()
    return [(d.code, d.line) for d in run_text("t.py", textwrap.dedent(src), [reg.by_code("GL111")()], Options()).diagnostics]


def test_optimizer_built_and_restored_in_init_model_moved_in_train():
    assert codes(BUILT_INSIDE) == [("GL111", 10)]


def test_model_moved_before_the_construction_is_silent():
    assert codes(BUILT_INSIDE.replace('Trainer(nn.Linear(4, 1), "c.pt")', 'Trainer(nn.Linear(4, 1).to(device), "c.pt")')) == []


def test_model_moved_in_init_before_the_load_is_silent():
    src = BUILT_INSIDE.replace("        self.model = model\n", "        self.model = model\n        self.model.to(torch.device('cuda'))\n")
    assert codes(src) == []


def test_load_in_a_later_method_is_silent():
    # restored in `resume()`, which the caller may run after `train()` moved the model: not ordered
    src = BUILT_INSIDE.replace(
        '        self.optimizer.load_state_dict(torch.load(ckpt, map_location="cpu")["optimizer"])\n',
        "        self.ckpt = ckpt\n\n    def resume(self):\n"
        '        self.optimizer.load_state_dict(torch.load(self.ckpt, map_location="cpu")["optimizer"])\n')
    assert codes(src) == []


def test_state_moved_after_the_load_is_silent():
    src = BUILT_INSIDE.replace(
        '        self.optimizer.load_state_dict(torch.load(ckpt, map_location="cpu")["optimizer"])\n',
        '        self.optimizer.load_state_dict(torch.load(ckpt, map_location="cpu")["optimizer"])\n'
        "        for state in self.optimizer.state.values():\n"
        "            for k, v in state.items():\n"
        "                if torch.is_tensor(v):\n"
        "                    state[k] = v.to(torch.device('cuda'))\n")
    assert codes(src) == []
