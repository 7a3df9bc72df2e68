"""GL105 at the factory inside a torch function (`torch.triu(torch.full(...))`) returned by a helper
method forward calls; GL116 leaves that mismatch to GL105 (one report)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

_SRC = """
import torch
import torch.nn as nn


class CausalAttention(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def _causal_bias(self, scores):
        n = scores.size(-1)
        return torch.triu(torch.full((n, n), float("-inf"){kw}), diagonal=1)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1)
        scores = scores + self._causal_bias(scores)
        return scores.softmax(dim=-1) @ v


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = CausalAttention().to(device)
print(model(torch.randn(2, 5, 8, device=device)))
"""


def findings(kw: str, codes=("GL105", "GL116")) -> list[tuple[str, int]]:
    reg = Registry.load()
    res = run_text("t.py", textwrap.dedent(_SRC.format(kw=kw)), [reg.by_code(c)() for c in codes], Options())
    return sorted((d.code, d.line) for d in res.diagnostics)


def test_one_report_at_the_inner_factory():
    assert findings("") == [("GL105", 13)]
    assert findings("", ("GL116",)) == []  # GL116 alone leaves it to GL105


def test_factory_on_the_scores_device_is_silent():
    assert findings(", device=scores.device") == []
