"""An autocast context returned by a function or method of the file (`def maybe_autocast(self):
return torch.cuda.amp.autocast() if ... else contextlib.nullcontext()`, the BLIP-2/LAVIS shape) is an
autocast region at each `with` that calls it: GL201 reports float16 training under it with no
GradScaler, as for `with torch.cuda.amp.autocast():` written inline."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

METHOD = """
import contextlib
import torch
import torch.nn as nn


class Captioner(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 8)

    def maybe_autocast(self):
        if torch.cuda.is_available():
            return torch.cuda.amp.autocast({args})
        return contextlib.nullcontext()

    def train_step(self, x, opt):
        with self.maybe_autocast():
            loss = self.net(x).pow(2).mean()
        {backward}
        opt.step()


model = Captioner().cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    model.train_step(torch.randn(4, 8).cuda(), opt)
"""

FUNCTION = """
import torch
import torch.nn as nn


def get_autocast(precision):
    return torch.cuda.amp.autocast() if precision == "amp" else torch.cuda.amp.autocast(enabled=False)


model = nn.Linear(8, 8).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    with get_autocast("amp"):
        loss = model(torch.randn(4, 8).cuda()).pow(2).mean()
    loss.backward()
    opt.step()
"""


def lines(src: str) -> list[int]:
    rule = Registry.load().by_code("GL201")()
    return [d.line for d in run_text("train.py", textwrap.dedent(src), [rule], Options()).diagnostics]


def test_method_returning_autocast_is_a_region():
    assert lines(METHOD.format(args="", backward="loss.backward()")) == [18]


def test_function_returning_autocast_is_a_region():
    assert lines(FUNCTION) == [13]


def test_bfloat16_or_no_backward_is_silent():
    assert lines(METHOD.format(args="dtype=torch.bfloat16", backward="loss.backward()")) == []
    assert lines(METHOD.format(args="", backward="print(loss.item())")) == []


def test_a_scaler_is_silent():
    src = METHOD.format(args="", backward="scaler.scale(loss).backward()").replace(
        "        opt.step()", "        scaler.step(opt)\n        scaler.update()").replace(
        "opt = torch.optim", "scaler = torch.amp.GradScaler('cuda')\nopt = torch.optim")
    assert lines(src) == []
