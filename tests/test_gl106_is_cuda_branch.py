"""GL106 leaves alone a plain tensor attribute read only on the CPU branch of a device test
(`if x.is_cuda: <cached .cuda() copy> else: (x - self.mean) / self.sigma`), the Normalization
module of imrahulr/adversarial_robustness_pytorch (PRECISION34 R1)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

_SRC = """
import torch
import torch.nn as nn


class Normalization(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.mean = torch.FloatTensor(mean).view(1, len(mean), 1, 1)
        self.sigma = torch.FloatTensor(std).view(1, len(std), 1, 1)
        self.mean_cuda, self.sigma_cuda = None, None

    def forward(self, x):
{body}


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
norm = Normalization([0.5, 0.5, 0.5], [0.2, 0.2, 0.2]).to(device)
print(norm(torch.rand(2, 3, 4, 4).to(device)).sum())
"""

CACHED_ELSE = """
if x.is_cuda:
    if self.mean_cuda is None:
        self.mean_cuda = self.mean.cuda()
        self.sigma_cuda = self.sigma.cuda()
    out = (x - self.mean_cuda) / self.sigma_cuda
else:
    out = (x - self.mean) / self.sigma
return out
"""

NEGATED = """
if not x.is_cuda:
    return (x - self.mean) / self.sigma
if self.mean_cuda is None:
    self.mean_cuda = self.mean.to(x.device)
    self.sigma_cuda = self.sigma.to(x.device)
return (x - self.mean_cuda) / self.sigma_cuda
"""

ALSO_AFTER = """
if x.is_cuda:
    if self.mean_cuda is None:
        self.mean_cuda = self.mean.cuda()
    out = x - self.mean_cuda
else:
    out = x - self.mean
return out / self.sigma
"""

WRONG_BRANCH = """
if x.is_cuda:
    out = (x - self.mean) / self.sigma
else:
    out = x
return out
"""


def findings(body: str) -> list[tuple[str, int]]:
    reg = Registry.load()
    src = textwrap.dedent(_SRC).format(body=textwrap.indent(body.strip("\n"), " " * 8))
    res = run_text("t.py", src, [reg.by_code("GL106")()], Options())
    return sorted((d.code, d.line) for d in res.diagnostics)


def test_read_only_in_else_of_is_cuda_is_silent():
    assert findings(CACHED_ELSE) == []


def test_read_only_under_not_is_cuda_is_silent():
    assert findings(NEGATED) == []


def test_a_read_outside_the_host_branch_still_reports():
    # `self.sigma` is read after the `if`, where x may be on the device; `self.mean` stays silent
    assert findings(ALSO_AFTER) == [("GL106", 10)]


def test_a_read_on_the_device_branch_still_reports():
    assert findings(WRONG_BRANCH) == [("GL106", 9), ("GL106", 10)]
