"""GL406 on a schedule class of the file built on torch's `_LRScheduler` (fixtures41 G41-1).

ildoonet/pytorch-gradual-warmup-lr#8: `GradualWarmupScheduler(_LRScheduler)` inherits torch's
`step()` and its warning ("Detected call of `lr_scheduler.step()` before `optimizer.step()`").
`_LRScheduler` (the deprecated private name of `LRScheduler` that such classes still subclass) was
not in the generated knowledge base, so the instance was of no known kind and the rule skipped it.
"""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SRC = """
import torch
import torch.nn as nn
from torch.optim.lr_scheduler import {base}


class Warmup({base}):
    def get_lr(self):
        return [b * min(1.0, (self.last_epoch + 1) / 3) for b in self.base_lrs]


model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
sched = Warmup(opt)
for epoch in range(1, 5):
    {first}
    for _ in range(3):
        opt.zero_grad()
        model(torch.randn(8, 4)).sum().backward()
        opt.step()
    {last}
"""


def _lines(base: str, first: str, last: str) -> list[int]:
    rule = Registry.load().by_code("GL406")()
    src = textwrap.dedent(SRC.format(base=base, first=first, last=last))
    return [d.line for d in run_text("train.py", src, [rule], Options()).diagnostics]


def test_a_subclass_of_lrscheduler_stepped_first_is_reported():
    assert _lines("_LRScheduler", "sched.step()", "pass") == [16]
    assert _lines("LRScheduler", "sched.step()", "pass") == [16]


def test_stepped_after_the_optimizer_it_is_silent():
    assert _lines("_LRScheduler", "pass", "sched.step()") == []
