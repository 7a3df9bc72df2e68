"""GL117 on `nn.Parameter(x.to(device)).to(device)` (nnzhan/Graph-WaveNet model.py:80-81,
https://github.com/nnzhan/Graph-WaveNet): the data is already on `device`, so the outer `.to(device)`
finds nothing to change and returns the Parameter itself, which stays registered. Silent when the
inner and outer conversions are the same call (written out, or through a name bound once to it);
still reported when they differ or when the data was not converted inside."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.nn as nn


class AdaptiveAdjacency(nn.Module):
    def __init__(self, num_nodes, device):
        super().__init__()
        PRE
        self.nodevec1 = PARAM

    def forward(self, x):
        return x @ self.nodevec1


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = AdaptiveAdjacency(5, device).to(device)
'''


def _found(param, pre="pass"):
    text = TEXT.replace("PARAM", param).replace("PRE", pre)
    return [(d.code, d.line) for d in check(text, {"GL117"}) if d.code == "GL117"]


def test_same_move_inside_and_outside_is_silent():
    assert _found("nn.Parameter(torch.randn(num_nodes, 10).to(device), requires_grad=True).to(device)") == []


def test_same_move_through_a_name_bound_once_is_silent():
    assert _found("nn.Parameter(init, requires_grad=True).to(device)",
                  pre="init = torch.randn(num_nodes, 10).to(device)") == []


def test_same_cuda_inside_and_outside_is_silent():
    assert _found("nn.Parameter(torch.randn(num_nodes, 10).cuda()).cuda()") == []


def test_unconverted_data_is_reported():
    assert _found("nn.Parameter(torch.randn(num_nodes, 10), requires_grad=True).to(device)") == [("GL117", 9)]


def test_different_conversion_outside_is_reported():
    # data moved to the device, then the Parameter converted to half: a new non-leaf tensor
    assert _found("nn.Parameter(torch.randn(num_nodes, 10).to(device)).half()") == [("GL117", 9)]


def test_name_bound_to_unconverted_data_is_reported():
    assert _found("nn.Parameter(init).to(device)", pre="init = torch.randn(num_nodes, 10)") == [("GL117", 9)]
