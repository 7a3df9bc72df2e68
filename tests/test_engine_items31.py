"""Engine items, twenty-fourth session (each test checked to fail with its change stashed)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def _lines(src: str, *codes: str) -> list[tuple[int, str]]:
    rules = [Registry.load().by_code(c)() for c in codes]
    diags = run_text("train.py", textwrap.dedent(src), rules, Options()).diagnostics
    return sorted((d.line, d.code) for d in diags)


# P33-A2 (pixel2style2pixel's BicubicDownSample): `self.k.type(<a type name built at run time>)`
# names a device the analysis cannot read, so the attribute does not meet forward's input as a
# host tensor. A dtype keeps the attribute where it is, so GL106 still reports that form.
TYPED_KERNEL = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Down(nn.Module):
    def __init__(self, cuda=True):
        super().__init__()
        self.k = torch.ones(3, 1, 4, 1) / 4
        self.cuda = ".cuda" if cuda else ""

    def forward(self, x):
        k = self.k.type({arg})
        return F.conv2d(x, k, stride=(4, 1), groups=3)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
down = Down(cuda=False).to(device)
print(down(torch.rand(1, 3, 16, 16, device=device)).shape)
"""


def test_a_type_name_made_at_run_time_leaves_the_device_unknown():
    for arg in ('"torch{}.FloatTensor".format(self.cuda)', 'f"torch{self.cuda}.FloatTensor"',
                '"torch" + self.cuda + ".FloatTensor"'):
        assert _lines(TYPED_KERNEL.replace("{arg}", arg), "GL106") == [], arg


def test_a_dtype_keeps_the_attribute_on_the_host():
    assert _lines(TYPED_KERNEL.replace("{arg}", "torch.float32"), "GL106") == [(10, "GL106")]
