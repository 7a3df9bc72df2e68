"""Engine items, twenty-first session (each test checked to fail with its change stashed)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def _lines(src: str, *codes: str) -> list[tuple[int, str]]:
    rules = [Registry.load().by_code(c)() for c in codes]
    diags = run_text("train.py", textwrap.dedent(src), rules, Options()).diagnostics
    return sorted((d.line, d.code) for d in diags)


# PRECISION27 A1 (Comprehensive-Transformer-TTS model/coordconv.py): `if torch.cuda.is_available:`
# names the function without calling it. A function object is always true: the branch runs on
# every machine, so the coordinate channels are moved before they meet the input. The engine read
# only the called form and followed the path that skips the branch: GL105 at the arange.
COORDS = """
import torch
import torch.nn as nn


class AddCoords(nn.Module):
    def forward(self, input_tensor):
        b, c, dim_x = input_tensor.shape
        xx = torch.arange(dim_x, dtype=torch.int32)[None, None, :].float()
        xx = xx.repeat(b, 1, 1)
        if {test}:
            input_tensor = input_tensor.cuda()
            xx = xx.cuda()
        return torch.cat([input_tensor, xx], dim=1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.add = AddCoords()
        self.conv = nn.Conv1d(3, 4, 3)

    def forward(self, x):
        return self.conv(self.add(x))


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
out = model(torch.randn(2, 2, 8, device=device))
"""


def test_an_uncalled_availability_test_always_runs_its_branch():
    assert _lines(COORDS.format(test="torch.cuda.is_available"), "GL105", "GL116") == []


def test_the_called_form_is_silent_too():
    assert _lines(COORDS.format(test="torch.cuda.is_available()"), "GL105", "GL116") == []


def test_a_branch_on_an_unknown_flag_is_still_reported():
    assert _lines(COORDS.format(test="input_tensor.shape[0] > 4"), "GL105", "GL116") == [(9, "GL105")]
