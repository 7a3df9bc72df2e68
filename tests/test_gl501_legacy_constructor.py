"""GL501 on legacy typed constructors given sizes (ShichenLiu/SoftRas#50:
`torch.FloatTensor(bs, nf, 27).fill_(0.0).to(device=ctx.device)` in an autograd Function's
forward): reported, and fixed to `torch.empty(..., device=d, dtype=torch.float32)` (the legacy
constructor takes no device, and given sizes it allocates uninitialised memory as `empty` does).
Silent on a one-argument constructor that may hold data (`torch.FloatTensor(weights)`); reported
without a fix when the constructor is imported by name."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

SRC = """
import torch as th
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = CTOR.fill_(0.0).to(device=x.device)
        return self.fc(x + h)


model = Net()
for step in range(3):
    y = model(th.randn(2, 4))
"""


def _src(ctor: str, header: str = "") -> str:
    return header + textwrap.dedent(SRC).replace("CTOR", ctor)


def _lines(src: str) -> list[int]:
    return [d.line for d in check(src, {"GL501"}) if d.code == "GL501"]


def test_legacy_float_constructor_with_sizes_is_reported_and_fixed():
    src = _src("th.FloatTensor(x.size(0), 4)")
    assert _lines(src) == [12]
    out = fix(src, {"GL501"}, unsafe=False).text
    assert "h = th.empty(x.size(0), 4, device=x.device, dtype=th.float32).fill_(0.0)" in out
    assert _lines(out) == []


def test_legacy_long_constructor_gets_its_dtype():
    src = _src("th.LongTensor(x.size(0), 4)").replace(".fill_(0.0)", ".zero_()")
    out = fix(src, {"GL501"}, unsafe=False).text
    assert "h = th.LongTensor" not in out
    assert "th.empty(x.size(0), 4, device=x.device, dtype=th.int64).zero_()" in out


def test_one_argument_constructor_may_be_data_and_is_silent():
    assert _lines(_src("th.FloatTensor(x.tolist())")) == []
    assert _lines(_src("th.FloatTensor(n)")) == []


def test_constructor_imported_by_name_is_reported_without_a_fix():
    src = _src("FloatTensor(x.size(0), 4)", "from torch import FloatTensor\n")
    assert _lines(src) == [13]
    assert fix(src, {"GL501"}, unsafe=True).text == src
