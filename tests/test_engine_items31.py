"""Engine items, twenty-fourth session (each test checked to fail with its change stashed)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def _lines(src: str, *codes: str) -> list[tuple[int, str]]:
    rules = [Registry.load().by_code(c)() for c in codes]
    diags = run_text("train.py", textwrap.dedent(src), rules, Options()).diagnostics
    return sorted((d.line, d.code) for d in diags)


# P33-A2 (pixel2style2pixel's BicubicDownSample): `self.k.type(<a type name built at run time>)`
# names a device the analysis cannot read, so the attribute does not meet forward's input as a
# host tensor. A dtype keeps the attribute where it is, so GL106 still reports that form.
TYPED_KERNEL = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Down(nn.Module):
    def __init__(self, cuda=True):
        super().__init__()
        self.k = torch.ones(3, 1, 4, 1) / 4
        self.cuda = ".cuda" if cuda else ""

    def forward(self, x):
        k = self.k.type({arg})
        return F.conv2d(x, k, stride=(4, 1), groups=3)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
down = Down(cuda=False).to(device)
print(down(torch.rand(1, 3, 16, 16, device=device)).shape)
"""


def test_a_type_name_made_at_run_time_leaves_the_device_unknown():
    for arg in ('"torch{}.FloatTensor".format(self.cuda)', 'f"torch{self.cuda}.FloatTensor"',
                '"torch" + self.cuda + ".FloatTensor"'):
        assert _lines(TYPED_KERNEL.replace("{arg}", arg), "GL106") == [], arg


def test_a_dtype_keeps_the_attribute_on_the_host():
    assert _lines(TYPED_KERNEL.replace("{arg}", "torch.float32"), "GL106") == [(10, "GL106")]


# E44-6 (RLHive's DQN agent): `MLPNetwork(**qnet["kwargs"])` of a file class whose `__init__`
# takes no `device` and no `**kwargs` is built on the host whatever the mapping holds; the engine
# read every `**mapping` as a possible `device=`.
SPLAT_BUILT = """
import torch
import torch.nn as nn


class MLPNetwork(nn.Module):
    def __init__(self, in_dim, out_dim{extra}):
        super().__init__()
        self.net = nn.Linear(in_dim, out_dim)

    def forward(self, x):
        return self.net(x)


def get_qnet(qnet):
    return MLPNetwork(**qnet["kwargs"])


class Agent:
    def __init__(self, qnet, device):
        qnet["kwargs"]["in_dim"] = 4
        qnet["kwargs"]["out_dim"] = 2
        self._qnet = get_qnet(qnet)
        self._device = torch.device(device)

    def act(self, observation):
        return self._qnet(torch.tensor(observation).to(self._device).float())


device = "cuda" if torch.cuda.is_available() else "cpu"
Agent({"kwargs": {}}, device).act([0.0, 1.0, 2.0, 3.0])
"""


def test_a_mapping_splat_cannot_place_a_class_that_takes_no_device():
    assert _lines(SPLAT_BUILT.replace("{extra}", ""), "GL112") == [(27, "GL112")]


def test_a_mapping_splat_may_place_a_class_that_takes_a_device_or_kwargs():
    assert _lines(SPLAT_BUILT.replace("{extra}", ", device=None"), "GL112") == []
    assert _lines(SPLAT_BUILT.replace("{extra}", ", **kwargs"), "GL112") == []
