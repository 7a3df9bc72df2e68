"""The flow engine: `.to(t.dtype)` is a cast, not a move (asyml/texar-pytorch#252's shape,
fixtures16's engine item 1): the tensor stays where it was, so a host mask cast to the dtype of
a device tensor still meets it on the host. And a `forward` parameter that a call leaves out takes
its constant default (`self.encoder(inputs)` with `sequence_length=None`)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.model import ScriptModel
from gpulint.registry import Registry

import libcst as cst

SRC = """
import torch
import torch.nn as nn


def scale(seq, lengths):
    mask = (lengths[:, None] > 1).to(seq.dtype)
    return seq * mask[:, :, None]


def run(cell, inputs):
    lengths = torch.tensor([inputs.size(1)] * inputs.size(0))
    outputs, state = cell(inputs)
    return scale(outputs, lengths)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.GRU(3, 4, batch_first=True)

    def forward(self, inputs):
        return run(self.cell, inputs)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
enc = Encoder().to(device)
out = enc(torch.randn(2, 5, 3, device=device))
"""


def test_dtype_cast_keeps_the_device():
    src = textwrap.dedent(SRC)
    m = ScriptModel(cst.parse_module(src), src)
    casts = [n for n in m.nodes if isinstance(n, cst.Call) and m.module.code_for_node(n).endswith(".to(seq.dtype)")]
    assert casts and m.value_of(casts[0]).dev is not None


def test_host_mask_cast_to_a_device_dtype_meets_it():
    reg = Registry.load()
    res = run_text("t.py", textwrap.dedent(SRC), [reg.by_code("GL116")()], Options())
    assert [(d.code, d.line) for d in res.diagnostics] == [("GL116", 8)]  # `seq * mask[...]`


def test_cast_mask_is_not_placed_on_purpose():
    # `.to(seq.dtype)` is no deliberate move to the CPU: the host mask still fails beside `seq`
    src = SRC.replace("return seq * mask[:, :, None]", "m2 = mask.unsqueeze(-1)\n    return seq * m2")
    reg = Registry.load()
    res = run_text("t.py", textwrap.dedent(src), [reg.by_code("GL116")()], Options())
    assert [(d.code, d.line) for d in res.diagnostics] == [("GL116", 9)]
