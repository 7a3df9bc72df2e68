"""GL105: a module-level GPU flag (`GPU = cfg["gpu_train"]`, then `if GPU: loc_t = loc_t.cuda()`
inside forward, biubug6/Pytorch_Retinaface's MultiBoxLoss; precision12's ENGINE_FP #3) counts like
the module's own `self.use_gpu`: the factory's tensor is moved before it meets anything."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SRC = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from data import cfg

GPU = cfg['gpu_train']


class MultiBoxLoss(nn.Module):
    def __init__(self, threshold):
        super().__init__()
        self.threshold = threshold

    def forward(self, loc_data, priors, targets):
        loc_t = torch.Tensor(loc_data.size(0), priors.size(0), 4)
        if GPU:
            loc_t = loc_t.cuda()
        return F.smooth_l1_loss(loc_data, loc_t)
"""


def codes(src):
    reg = Registry.load()
    return [(d.code, d.line) for d in run_text("t.py", textwrap.dedent(src), [reg.by_code("GL105")()], Options()).diagnostics]


def test_module_level_gpu_flag_moves_the_factory():
    assert codes(SRC) == []


def test_a_flag_named_otherwise_is_not_read():
    src = SRC.replace("GPU = ", "VERBOSE = ").replace("if GPU:", "if VERBOSE:")
    assert codes(src) == [("GL105", 16)]


def test_not_moved_is_still_reported():
    src = SRC.replace("        if GPU:\n            loc_t = loc_t.cuda()\n", "")
    assert codes(src) == [("GL105", 16)]
