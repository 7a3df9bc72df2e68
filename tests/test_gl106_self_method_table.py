"""GL106 for a table `__init__` builds with a method of its own class (pytorch-lightning#3674's
SGN-style module: `self.tem = self.one_hot(self.seg, self.num_joints)`, then `self.tem =
self.tem.permute(2, 0, 1)`): the engine knows the method returns a host tensor; GL106 reports the
attribute (its buffer fix is the repair) and GL116 leaves the mismatch to it. Silent when the
table is a registered buffer, or when the method returns no tensor."""

from __future__ import annotations

import textwrap

from fixture_support import check

SRC = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.seg = 4
        INIT
        self.embed = nn.Conv1d(4, 2, kernel_size=1)

    def one_hot(self, n):
        y = torch.arange(n).unsqueeze(-1)
        return torch.zeros(n, n).scatter_(1, y, 1)

    def forward(self, x):
        return self.embed(self.tem.unsqueeze(0)).mean() + x.sum()


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = Net().to(device)
print(net(torch.randn(2, 3, device=device)))
"""


def _diags(init: str):
    src = textwrap.dedent(SRC).replace("INIT", init)
    return [(d.line, d.code) for d in check(src, {"GL106", "GL116"})]


def test_table_from_own_method_is_gl106_not_gl116():
    assert _diags("self.tem = self.one_hot(self.seg)") == [(10, "GL106")]


def test_table_from_own_method_then_permuted_is_gl106():
    assert _diags("self.tem = self.one_hot(self.seg)\n        self.tem = self.tem.permute(1, 0)") == [(10, "GL106")]


def test_registered_buffer_is_silent():
    assert _diags('self.register_buffer("tem", self.one_hot(self.seg))') == []


def test_fix_registers_the_first_assignment_and_keeps_the_permute():
    from fixture_support import fix

    src = textwrap.dedent(SRC).replace(
        "INIT", "self.tem = self.one_hot(self.seg)\n        self.tem = self.tem.permute(1, 0)")
    out = fix(src, {"GL106"}, unsafe=False).text
    assert 'self.register_buffer("tem", self.one_hot(self.seg), persistent=False)\n        self.tem = self.tem.permute(1, 0)' in out
