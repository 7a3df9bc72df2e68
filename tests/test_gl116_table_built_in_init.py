"""GL116 leaves a module's own plain tensor table built in `__init__` to GL106 (one report)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

_SRC = """
import torch
import torch.nn as nn


class PositionalEncoding(nn.Module):
    def __init__(self, d, max_len=512):
        super().__init__()
        pe = torch.zeros(max_len, d)
        pos = torch.arange(0, max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, d, 2) * (-9.2 / d))
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        {store}

    def forward(self, x):
        return x + self.pe[:, : x.size(1)]


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 16)
        self.pos = PositionalEncoding(16)

    def forward(self, ids):
        return self.pos(self.emb(ids))


model = Model().cuda()
ids = torch.randint(0, 100, (2, 10)).cuda()
model(ids).sum().backward()
"""


def findings(src: str, codes=("GL105", "GL106", "GL116")) -> list[tuple[str, int]]:
    reg = Registry.load()
    res = run_text("t.py", textwrap.dedent(src), [reg.by_code(c)() for c in codes], Options())
    return sorted((d.code, d.line) for d in res.diagnostics)


def test_table_built_in_init_then_stored_is_gl106_only():
    # the sinusoidal table is built in a local and stored transformed (`pe.unsqueeze(0)`): GL106
    # at the attribute; GL116 at forward's addition would report the same table twice
    assert findings(_SRC.format(store="self.pe = pe.unsqueeze(0)")) == [("GL106", 14)]


def test_registered_table_silent():
    assert findings(_SRC.format(store='self.register_buffer("pe", pe.unsqueeze(0))')) == []


def test_gl116_alone_leaves_the_table_to_gl106():
    # GL116 alone: GL106 owns the shape whatever the selection (like the tables assigned directly)
    assert findings(_SRC.format(store="self.pe = pe.unsqueeze(0)"), ("GL116",)) == []


_HELPER = """
import torch
import torch.nn as nn


class PositionalEncoding(nn.Module):
    def __init__(self, d, n=100):
        super().__init__()
        self.d = d
        self._init_table(n)

    def _init_table(self, n):
        pos = torch.arange(n).unsqueeze(1)
        div = torch.exp(torch.arange(0, self.d, 2) * (-9.2 / self.d))
        pe = torch.zeros(n, self.d)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        {store}

    def forward(self, x):
        return x + self.pe[: x.size(1)]


model = PositionalEncoding(8).cuda()
model(torch.randn(4, 6, 8).cuda())
"""


def test_table_built_in_a_helper_init_calls_is_gl106_only():
    # the table is built and stored by a helper `__init__` calls: GL106's construction state too
    assert findings(_HELPER.format(store="self.pe = pe")) == [("GL106", 18)]
    assert findings(_HELPER.format(store="self.pe = pe"), ("GL116",)) == []


def test_table_built_in_a_helper_registered_silent():
    assert findings(_HELPER.format(store='self.register_buffer("pe", pe)')) == []
