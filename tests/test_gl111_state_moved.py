"""GL111 stays silent when the optimizer's state is moved to the device by hand after the early
load (the workaround of michuanhaohao/reid-strong-baseline#114), inline or in a helper."""

from __future__ import annotations

import textwrap

from fixture_support import check

HEAD = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2)
optimizer = torch.optim.Adam(model.parameters())
optimizer.load_state_dict(torch.load("opt.pth", map_location="cpu"))
model.to(device)
"""
TAIL = """
loss = model(torch.randn(2, 4, device=device)).sum()
loss.backward()
optimizer.step()
"""


def _lines(middle: str) -> list[int]:
    src = textwrap.dedent(HEAD) + textwrap.dedent(middle) + textwrap.dedent(TAIL)
    return [d.line for d in check(src, {"GL111"}) if d.code == "GL111"]


def test_early_load_without_the_state_loop_is_reported():
    assert _lines("") == [8]


def test_inline_state_loop():
    assert _lines("""
        for state in optimizer.state.values():
            for k, v in state.items():
                if torch.is_tensor(v):
                    state[k] = v.cuda()
        """) == []


def test_state_loop_in_a_helper():
    assert _lines("""
        def optimizer_to(optim, device):
            for param in optim.state.values():
                if isinstance(param, torch.Tensor):
                    param.data = param.data.to(device)

        optimizer_to(optimizer, device)
        """) == []


def test_loop_over_another_optimizer_does_not_count():
    assert _lines("""
        other = torch.optim.SGD(model.parameters(), lr=0.1)
        for state in other.state.values():
            for k, v in state.items():
                state[k] = v.to(device)
        """) == [8]
