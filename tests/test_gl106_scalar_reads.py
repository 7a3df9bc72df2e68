"""GL106 leaves alone a flat tensor attribute read only through integer indices (0-dim reads,
which PyTorch lets into device operations): mdlm's GeometricNoise, PRECISION16 A2."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

_SRC = """
import torch
import torch.nn as nn


class GeometricNoise(nn.Module):
    def __init__(self, sigma_min=1e-3, sigma_max=1):
        super().__init__()
        self.sigmas = 1.0 * torch.tensor([sigma_min, sigma_max])

    def forward(self, t):
        return {expr}


noise = GeometricNoise().cuda()
print(noise(torch.rand(4).cuda()))
"""


def findings(expr: str) -> list[tuple[str, int]]:
    reg = Registry.load()
    res = run_text("t.py", textwrap.dedent(_SRC.format(expr=expr)), [reg.by_code(c)() for c in ("GL106", "GL116")], Options())
    return sorted((d.code, d.line) for d in res.diagnostics)


def test_integer_index_reads_are_silent():
    assert findings("self.sigmas[0] ** (1 - t) * self.sigmas[-1] ** t") == []


def test_whole_or_sliced_reads_still_report():
    assert findings("self.sigmas[0] * t + self.sigmas") == [("GL106", 9)]
    assert findings("t * self.sigmas[:1]") == [("GL106", 9)]
