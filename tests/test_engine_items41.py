"""Engine and rule items, thirty-fourth session (each test checked to fail on f0874ac5 unless it says
it is a control that already passed there). The items are described in
tests/fixtures_pending/README.md, section "Thirty-fourth session (lead)"."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def _run(src: str, *codes: str, unsafe: bool = False):
    rules = [Registry.load().by_code(c)() for c in codes]
    return run_text("train.py", textwrap.dedent(src), rules, Options())


def _lines(src: str, *codes: str) -> list[tuple[int, str]]:
    return sorted((d.line, d.code) for d in _run(src, *codes).diagnostics)


def _fixes(src: str, *codes: str) -> list:
    return [d for d in _run(src, *codes).diagnostics if d.fix is not None]


# ER67-1: GL111's optimizer source through a name bound twice, both bindings inside a `with` block
WITH_RESTORE = """
import tempfile
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
with tempfile.TemporaryDirectory() as tmp:
    model = nn.Linear(4, 1)
    model.to(device)
    optimizer = torch.optim.AdamW(model.parameters())
    torch.save({"m": model.state_dict(), "o": optimizer.state_dict()}, "ck.pth")

    checkpoint = torch.load("ck.pth", map_location="cpu")
    model = nn.Linear(4, 1)
    model.load_state_dict(checkpoint["m"])
    optimizer = torch.optim.AdamW(model.parameters())
    optimizer.load_state_dict(checkpoint["o"])
    model.to(device)
    for _ in range(3):
        optimizer.zero_grad()
        model(torch.randn(2, 4, device=device)).sum().backward()
        optimizer.step()
"""


def test_er67_1_restore_inside_with_gets_the_fix():
    found = _run(WITH_RESTORE, "GL111").diagnostics
    assert [(d.line, d.code) for d in found] == [(17, "GL111")]
    assert found[0].fix is not None


def test_er67_1_suppress_block_is_not_straight_line():
    # control (passes on the base too): a `with contextlib.suppress(...)` body may stop half-way
    src = WITH_RESTORE.replace("import tempfile", "import tempfile, contextlib").replace(
        "with tempfile.TemporaryDirectory() as tmp:", "with contextlib.suppress(RuntimeError):")
    found = _run(src, "GL111").diagnostics
    assert all(d.fix is None for d in found)
