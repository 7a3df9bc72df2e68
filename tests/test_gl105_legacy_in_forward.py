"""GL105 owns legacy host constructors in forward (`torch.Tensor(n, 1)`, `torch.LongTensor(...)`,
also inside arithmetic and kept on `self` from forward) that meet device tensors: IBM/pytorch-
seq2seq#123's TopKDecoder (fixtures16). GL116 leaves them to it."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SRC = """
import torch
import torch.nn as nn


class Beam(nn.Module):
    def __init__(self, k=2, v=5):
        super().__init__()
        self.k = k
        self.v = v
        self.out = nn.Linear(4, v)

    def forward(self, h):
        n = h.size(0)
        self.pos_index = (torch.LongTensor(range(n)) * self.k).view(-1, 1)
        scores = torch.Tensor(n * self.k, 1)
        scores.fill_(0.0)
        log_probs = self.out(h.repeat_interleave(self.k, dim=0)).log_softmax(-1)
        scores = scores.repeat(1, self.v) + log_probs
        top, cand = scores.view(n, -1).topk(self.k, dim=1)
        return cand // self.v + self.pos_index.expand_as(cand)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
beam = Beam().to(device)
out = beam(torch.randn(3, 4, device=device))
"""


def codes(src):
    reg = Registry.load()
    rules = [reg.by_code(c)() for c in ("GL105", "GL116")]
    return [(d.code, d.line) for d in run_text("model.py", textwrap.dedent(src), rules, Options()).diagnostics]


def test_legacy_constructors_in_forward_are_gl105():
    assert codes(SRC) == [("GL105", 15), ("GL105", 16)]


def test_constructors_moved_are_silent():
    src = SRC.replace("torch.LongTensor(range(n))", "torch.arange(n, device=h.device)").replace(
        "torch.Tensor(n * self.k, 1)", "h.new_empty(n * self.k, 1)")
    assert codes(src) == []


def test_arithmetic_with_an_operand_put_on_the_host_on_purpose_is_not_claimed():
    # transformers inkling2: `image_grid_thw.cpu() * torch.tensor([1, merge, merge])` is host data
    # on purpose; the factory inside it is not forward's forgotten device
    src = SRC.replace("(torch.LongTensor(range(n)) * self.k)", "(h.new_ones(n).long().cpu() * torch.LongTensor(range(n)))")
    assert ("GL105", 15) not in codes(src)
