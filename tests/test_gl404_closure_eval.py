"""GL404 through a closure (asyml/texar-pytorch#310): main() defines _train_epoch() and
_eval_epoch() as nested functions over its `model`; the step loop of _train_epoch() calls
_eval_epoch(), which runs `model.eval()` and never switches back."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

SRC = """
import torch
import torch.nn as nn


def main():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.3), nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = [torch.randn(8, 4) for _ in range(10)]

    def _eval_epoch():
        model.eval()
        with torch.no_grad():
            return sum(model(x).sum().item() for x in data[:2])

    def _train_epoch():
        model.train()
        for step, x in enumerate(data):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
            if step % 4 == 0:
                _eval_epoch(){after}

    for _ in range(3):
        _train_epoch()


main()
"""


def test_closure_eval_in_step_loop_is_reported_and_fixed():
    src = textwrap.dedent(SRC.format(after=""))
    assert [(d.code, d.line) for d in check(src, {"GL404"})] == [("GL404", 12)]
    out = fix(src, {"GL404"}, unsafe=False).text
    assert "        for step, x in enumerate(data):\n            model.train()\n" in out


def test_closure_eval_undone_in_the_loop_is_silent():
    src = textwrap.dedent(SRC.format(after="\n                model.train()"))
    assert check(src, {"GL404"}) == []


def test_closure_restoring_train_mode_is_silent():
    src = textwrap.dedent(SRC.format(after="")).replace(
        "            return sum(model(x).sum().item() for x in data[:2])",
        "            total = sum(model(x).sum().item() for x in data[:2])\n        model.train()\n        return total")
    assert check(src, {"GL404"}) == []
