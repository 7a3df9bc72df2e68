"""GL403: an evaluation loop over a model of the file whose own methods take gradients (OCP-style
force fields: `forces = -torch.autograd.grad(energy.sum(), pos, create_graph=self.training)[0]` in
forward) needs autograd on: `no_grad` (GL403's safe fix) makes the grad call raise "element 0 of
tensors does not require grad". fixtures25, facebookresearch/fairchem#199 (the forces trainers)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

MODEL = """
import torch
import torch.nn as nn


class ForceField(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, 8), nn.SiLU(), nn.Linear(8, 1))

    def forward(self, pos):
        pos = pos.requires_grad_(True)
        energy = self.net(pos).sum(-1)
        forces = -torch.autograd.grad(energy.sum(), pos, create_graph=self.training)[0]
        return energy, forces
"""

PLAIN_MODEL = """
import torch
import torch.nn as nn


class ForceField(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, 8), nn.SiLU(), nn.Linear(8, 1))

    def forward(self, pos):
        return self.net(pos).sum(-1), self.net(pos)
"""

DIRECT = """
model = ForceField()
val = [torch.randn(4, 3) for _ in range(3)]


def validate(model, val):
    model.eval()
    total = 0.0
    for pos in val:
        energy, forces = model(pos)
        total += forces.abs().mean().item()
    return total


print(validate(model, val))
"""

THROUGH_HELPER = """
class Trainer:
    def __init__(self):
        self.model = ForceField()
        self.val_loader = [torch.randn(4, 3) for _ in range(3)]

    def _forward(self, pos):
        return self.model(pos)

    def validate(self):
        self.model.eval()
        total = 0.0
        for pos in self.val_loader:
            energy, forces = self._forward(pos)
            total += forces.abs().mean().item()
        return total


print(Trainer().validate())
"""

# a model of the file with a helper class that differentiates, through its base class
BASE_CLASS = """
import torch
import torch.nn as nn


class ConservativeBase(nn.Module):
    def forces(self, energy, pos):
        return -torch.autograd.grad(energy.sum(), pos, create_graph=self.training)[0]


class ForceField(ConservativeBase):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(3, 1)

    def forward(self, pos):
        pos = pos.requires_grad_(True)
        energy = self.net(pos).sum(-1)
        return energy, self.forces(energy, pos)
"""


def codes(src):
    reg = Registry.load()
    diags = run_text("t.py", textwrap.dedent(src), [reg.by_code("GL403")()], Options()).diagnostics
    return [d.code for d in diags]


def test_direct_call_of_a_model_that_differentiates_is_silent():
    assert codes(MODEL + DIRECT) == []


def test_helper_call_of_a_model_that_differentiates_is_silent():
    assert codes(MODEL + THROUGH_HELPER) == []


def test_differentiation_in_a_base_class_of_the_file_is_silent():
    assert codes(BASE_CLASS + DIRECT) == []


def test_plain_model_direct_call_still_reported():
    assert codes(PLAIN_MODEL + DIRECT) == ["GL403"]


def test_plain_model_helper_call_still_reported():
    assert codes(PLAIN_MODEL + THROUGH_HELPER) == ["GL403"]
