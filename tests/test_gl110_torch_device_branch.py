"""GL110: a load in the `else:` of `if device == torch.device("cpu"):` whose own branch passes
`map_location='cpu'` (YuliaRubanova/latent_ode person_activity.py / physionet.py: the data set
classes take `device`, and load their processed tensors with `map_location='cpu'` when it is
the CPU and without it otherwise). The `else:` runs only where the script put itself on a GPU.
The string form (`device == "cpu"`) was already understood; `torch.device("...")` on either
side now is too. The load in the CPU branch, or under a comparison with a device built from a
variable, keeps the finding."""

from __future__ import annotations

import textwrap

from fixture_support import check

SRC = """
import os
import torch


class PersonActivity(object):
    def __init__(self, root, device=torch.device("cpu")):
        self.root = root
        if {test}:
            self.data = torch.load(os.path.join(root, "data.pt"), map_location='cpu')
        else:
            self.data = torch.load(os.path.join(root, "data.pt"))


device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
dataset = PersonActivity("data", device=device)
"""


def _lines(test: str):
    src = textwrap.dedent(SRC).format(test=test)
    return [d.line for d in check(src, ["GL110"]) if d.code == "GL110"]


def test_else_of_device_equals_torch_device_cpu_is_not_reported():
    assert _lines('device == torch.device("cpu")') == []
    assert _lines('torch.device("cpu") == device') == []
    assert _lines('device != torch.device("cuda")') == []


def test_cpu_branch_of_torch_device_cuda_is_reported():
    # here the load without map_location is the CPU branch
    assert _lines('device == torch.device("cuda")') == [12]


def test_comparison_with_a_device_from_a_variable_is_reported():
    assert _lines("device == torch.device(root)") == [12]
