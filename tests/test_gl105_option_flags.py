"""GL105 (its class-local analysis) reads an options namespace's GPU flag like an availability
test: `if cmd_args.ctx == 'gpu': labels = labels.cuda()` moves the factory's tensor where the same
option put the model (Shen-Lab/GraphCL's pytorch_structure2vec code, PRECISION18 A1)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SRC = """
import torch
import torch.nn as nn
from cmd_args import cmd_args


class Classifier(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.mlp = nn.Linear(4, 2)

    def forward(self, x):
        labels = torch.zeros(4)
        if {test}:
            labels = labels.cuda()
        return self.mlp(x) + labels
"""


def lines(test: str) -> list[int]:
    rule = Registry.load().by_code("GL105")()
    res = run_text("model.py", textwrap.dedent(SRC.format(test=test)), [rule], Options())
    return [d.line for d in res.diagnostics]


def test_option_compared_with_a_gpu_word_guards_the_move():
    assert lines("cmd_args.ctx == 'gpu'") == []
    assert lines('cmd_args.device == "cuda"') == []
    assert lines("'gpu' == cmd_args.ctx") == []


def test_option_flags_guard_the_move():
    assert lines("cmd_args.cuda") == []
    assert lines("self.args.use_gpu") == []


def test_negated_option_test_moves_on_the_cpu_path_only():
    assert lines("cmd_args.ctx != 'gpu'") == [14]
    assert lines("not cmd_args.cuda") == [14]


def test_an_option_compared_with_the_cpu_word_is_no_gpu_guard():
    assert lines("cmd_args.ctx == 'cpu'") == [14]


def test_where_the_input_is_decides_too():
    # `x.device.type == 'cuda'` asks where the input is: moved with it (already silent before)
    assert lines("x.device.type == 'cuda'") == []
