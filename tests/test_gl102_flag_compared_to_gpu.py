"""GL102: `.cuda()` under `if cmd_args.ctx == 'gpu':` (Shen-Lab/GraphCL
adversarialRobustness_Component/code/graph_attack/dqn.py, the `cmd_args` options of Hanjun Dai's
pytorch_structure2vec: `-ctx` default 'cpu', help 'cpu/gpu') is one branch of a run-time choice,
not a hard-coded device. A plain name compared with "cuda", a tensor's `.device.type` and an
attribute of `self` are not options and keep the finding."""

from __future__ import annotations

import textwrap

from fixture_support import check

SRC = """
import torch
import torch.nn as nn
from cmd_args import cmd_args

net = nn.Linear(4, 2)
x = torch.randn(8, 4)
if {test}:
    net = net.cuda()
    x = x.cuda()
for step in range(2):
    loss = net(x).sum()
    loss.backward()
"""


def _codes(test: str, src: str = SRC):
    return [(d.code, d.line) for d in check(textwrap.dedent(src).format(test=test), ["GL102"])]


def test_option_compared_with_gpu_is_a_flag():
    assert _codes("cmd_args.ctx == 'gpu'") == []


def test_option_compared_with_cuda_reversed_is_a_flag():
    assert _codes('"cuda" == cmd_args.device') == []


def test_nested_option_is_a_flag():
    assert _codes("cfg.train.ctx == 'gpu' and cfg.seed > 0") == []


def test_plain_name_compared_stays_reported():
    src = SRC.replace("from cmd_args import cmd_args", "ctx = 'gpu'")
    assert _codes("ctx == 'gpu'", src) == [("GL102", 9)]


def test_tensor_device_type_is_a_cpu_fallback():
    # `.cuda()` under `if x.device.type == 'cuda':` runs only when CUDA is in use already: the other
    # path is the CPU fallback (PRECISION24 #3, rethinking-network-pruning's shortcut; this test
    # asserted a report before that change)
    assert _codes("x.device.type == 'cuda'") == []


def test_self_attribute_stays_reported():
    src = """
    import torch
    import torch.nn as nn


    class Runner:
        def __init__(self):
            self.mode = "gpu"
            self.net = nn.Linear(4, 2)

        def run(self, x):
            if self.mode == "gpu":
                self.net = self.net.cuda()
                x = x.cuda()
            return self.net(x)


    runner = Runner()
    for step in range(2):
        loss = runner.run(torch.randn(8, 4)).sum()
        loss.backward()
    """
    assert [(d.code, d.line) for d in check(textwrap.dedent(src), ["GL102"])] == [("GL102", 13)]


def test_other_word_stays_reported():
    assert _codes("cmd_args.ctx == 'fast'") == [("GL102", 9)]
