"""GL105 on a legacy typed constructor (`torch.FloatTensor(3, 8)`) whose operand the analysis does
not name (fixtures16, the shape of IBM/pytorch-seq2seq#123's TopKDecoder): the message used to
say `move it with .to(x.device)` with an `x` the method does not have (its tensor parameter is
`hidden`); now it invents no variable, like the non-legacy message (test_gl105_unnamed_operand)."""

from __future__ import annotations

from fixture_support import check

SRC = """
import torch
import torch.nn as nn


class Dec(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = nn.Linear(8, 5)


class Beam(nn.Module):
    def __init__(self, dec):
        super().__init__()
        self.dec = dec

    def forward(self, hidden):
        scores = torch.FloatTensor(3, 8)
        logp = hidden * 2.0
        return scores + logp


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
dec = Dec().to(device)
beam = Beam(dec)
print(beam(torch.zeros(3, 8).to(device)).shape)
"""


def test_legacy_message_invents_no_variable():
    found = [d for d in check(SRC, ["GL105"]) if d.code == "GL105"]
    assert len(found) == 1
    assert found[0].line == 18
    assert "x.device" not in found[0].message
    assert "torch.FloatTensor" in found[0].message


SRC_RETURNED = """
import torch
import torch.nn as nn


class Init(nn.Module):
    def forward(self, batch_size):
        return torch.zeros(batch_size, 8)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.init = Init()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        h = self.init(x.size(0))
        return self.lin(x) + h


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
print(model(torch.randn(3, 8).to(device)).shape)
"""


def test_returned_from_forward_without_tensor_parameter_invents_no_variable():
    # Init.forward has no tensor parameter: the factory it returns is reported, without `x`
    found = [d for d in check(SRC_RETURNED, ["GL105"]) if d.code == "GL105"]
    assert len(found) == 1
    assert found[0].line == 8
    assert "x.device" not in found[0].message
