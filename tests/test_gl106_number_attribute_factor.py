"""GL106 treats `self.<attr>` as a Python number when every assignment of it in the class is a
numeric literal or a parameter whose default is one, so a full reduction scaled by it is a 0-dim
tensor (which PyTorch lets into device operations): TensoRF's `self.stepSize =
torch.mean(self.units) * self.step_ratio`, PRECISION21 #1."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

_SRC = """
import torch
import torch.nn as nn


class Field(nn.Module):
    def __init__(self, grid_size, {param}):
        super().__init__()
        self.step_ratio = {value}
        self.units = torch.linspace(0.5, 1.0, grid_size)
        self.stepSize = torch.mean(self.units) * self.step_ratio
        self.density = nn.Linear(3, 1)

    def forward(self, rays):
        rng = torch.arange(8, device=rays.device)[None].float()
        return self.density(rays).squeeze(-1)[:, None] * (self.stepSize * rng)


field = Field(16).cuda()
print(field(torch.rand(4, 3).cuda()))
"""


def findings(param: str, value: str) -> list[tuple[str, int]]:
    reg = Registry.load()
    src = textwrap.dedent(_SRC.format(param=param, value=value))
    res = run_text("t.py", src, [reg.by_code(c)() for c in ("GL106", "GL116")], Options())
    return sorted((d.code, d.line) for d in res.diagnostics)


def test_parameter_with_numeric_default_is_a_number():
    assert findings("step_ratio=2.0", "step_ratio") == []
    assert findings("step_ratio: float = 2", "step_ratio") == []


def test_literal_is_a_number():
    assert findings("step_ratio=None", "0.5") == []


def test_tensor_or_unknown_factor_still_reports():
    assert findings("step_ratio=None", "step_ratio") == [("GL106", 11)]
    assert findings("step_ratio=2.0", "torch.ones(16) * step_ratio") == [("GL106", 11)]
    assert findings("step_ratio: torch.Tensor = 2.0", "step_ratio") == [("GL106", 11)]
