"""GL305: a trainer class whose `__init__` wraps `self.model` under `if self.num_gpus > 1:` and
whose other methods read `self.model.<attr>` in the `else:` of an `if` on the same test
(coqui-ai/Trainer#48: `if self.num_gpus > 1: self.model.module.test_run(...) else:
self.model.test_run(...)`) reads the unwrapped model there: silent. A read outside that `else:`
(the issue's `self.model.test_log(...)`), a flag another method re-binds, or a different test keeps
the finding. fixtures25."""

from __future__ import annotations

from fixture_support import check

SRC = '''import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(x)

    def test_run(self, x):
        return self.head(x)


class Trainer:
    def __init__(self, num_gpus):
        self.num_gpus = num_gpus
        self.model = Model()
        if self.num_gpus > 1:
            self.model = DDP(self.model)

    def test_run(self, x):
        if READ_TEST:
            out = self.model.module.test_run(x)
        else:
            out = self.model.test_run(x)
        return out

    def log(self, x):
        return self.model.test_run(x)

    REBIND
'''


def _lines(text):
    return [d.line for d in check(text, {"GL305"}) if d.code == "GL305"]


def _src(read_test="self.num_gpus > 1", rebind="pass"):
    rebind_src = "def set_gpus(self, n):\n        self.num_gpus = n" if rebind != "pass" else "pass"
    return SRC.replace("READ_TEST", read_test).replace("REBIND", rebind_src)


def test_else_of_the_wrap_test_is_silent_and_the_unguarded_read_reported():
    assert _lines(_src()) == [33]


def test_flag_rebound_by_another_method_keeps_the_finding():
    assert _lines(_src(rebind="rebind")) == [29, 33]


def test_other_test_keeps_the_finding():
    assert _lines(_src(read_test="self.num_gpus > 2")) == [29, 33]
