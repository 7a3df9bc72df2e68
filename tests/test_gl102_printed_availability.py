"""GL102: a file that only prints `torch.cuda.is_available()` (a notebook's first cell, `print("GPU
available:", torch.cuda.is_available())`, or `USE_CUDA = torch.cuda.is_available()` read only by a
print) and then hard-codes CUDA has no CPU fallback: the test chooses nothing, so the file is
reported as one that never checks (PRECISION17 M1, PRECISION18 M2, PRECISION19 M3 shapes)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SRC = """
import torch
import torch.nn as nn

{probe}
model = nn.Linear(4, 2).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(8, 4).cuda()
    loss = model(x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def gl102(probe: str) -> list:
    rule = Registry.load().by_code("GL102")()
    return run_text("train.py", textwrap.dedent(SRC.format(probe=probe)), [rule], Options()).diagnostics


def test_printed_availability_is_no_check():
    found = gl102('print("GPU available:", torch.cuda.is_available())')
    assert [d.line for d in found] == [6]
    assert "only prints `torch.cuda.is_available()`" in found[0].message
    assert [d.line for d in gl102('USE_CUDA = torch.cuda.is_available()\nprint(f"CUDA: {USE_CUDA}")')] == [7]
    assert [d.line for d in gl102("logger.info('cuda %s', torch.cuda.is_available())")] == [6]


def test_availability_that_chooses_something_is_a_check():
    # the answer is used: a device choice, a branch, a flag handed on
    assert gl102('device = "cuda" if torch.cuda.is_available() else "cpu"') == []
    assert gl102("USE_CUDA = torch.cuda.is_available()\nprint(USE_CUDA)\nif not USE_CUDA:\n    raise SystemExit") == []
    assert gl102("USE_CUDA = torch.cuda.is_available()\nrun(USE_CUDA)") == []
    assert gl102("ok = print(torch.cuda.is_available()) or torch.cuda.is_available()\nassert ok") == []
