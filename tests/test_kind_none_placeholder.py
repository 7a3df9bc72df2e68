"""`self.optimizer = None` in `__init__` beside `self.optimizer = torch.optim.Adam(...)` in a setup
method is a placeholder, not a second kind: the binding table reads the attribute as an optimizer
(fixtures23's F23-3: pykg2vec's `self.model = None` ... `self.model = TransE(...)`), so rules
that type receivers with `kind_of` see it (GL103 on `.to()` of that optimizer)."""

from __future__ import annotations

import textwrap

import libcst as cst
import libcst.matchers as M

from gpulint.engine import Options, run_text
from gpulint.model import Kind, ScriptModel
from gpulint.registry import Registry

SRC = """
import torch
import torch.nn as nn


class Trainer:
    def __init__(self):
        self.model = None
        self.optimizer = {placeholder}
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def setup(self):
        self.model = nn.Linear(4, 2)
        self.optimizer = {built}
        self.model.to(self.device)
        self.optimizer.to(self.device)


t = Trainer()
t.setup()
"""


def gl103(placeholder="None", built="torch.optim.Adam(self.model.parameters())") -> list[int]:
    rule = Registry.load().by_code("GL103")()
    src = textwrap.dedent(SRC.format(placeholder=placeholder, built=built))
    return [d.line for d in run_text("train.py", src, [rule], Options()).diagnostics]


def kinds(src: str, attr: str) -> set:
    src = textwrap.dedent(src)
    mod = cst.parse_module(src)
    m = ScriptModel(mod, src)
    found = M.findall(mod, M.Attribute(value=M.Name("self"), attr=M.Name(attr)))
    return {m.kind_of(n) for n in found}


def test_a_none_placeholder_does_not_hide_the_optimizer():
    assert gl103() == [16]
    src = SRC.format(placeholder="None", built="torch.optim.Adam(self.model.parameters())")
    assert kinds(src, "model") == {Kind.MODULE}
    assert kinds(src, "optimizer") == {Kind.OPTIMIZER}


def test_hard_negatives():
    # the attribute holds something else than an optimizer on another path: unknown
    assert gl103(placeholder="make_optimizer()") == []
    # only ever None: no kind
    src = SRC.format(placeholder="None", built="None")
    assert kinds(src, "optimizer") == {Kind.UNKNOWN}
    # a wrapper of another library with its own `.to()` (not a torch optimizer)
    assert gl103(built="ZeroRedundancyWrapper(self.model.parameters())") == []
