"""GL117 on a Parameter converted in a helper method whose result the class stores on self
(`self.wh = self.init_weight(shape)`, `init_weight` returning
`nn.Parameter(torch.zeros(shape)).to(self.device)`: pytorch/pytorch#127760). Silent when the
conversion is inside the Parameter, or when the helper's result is not stored on self."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.nn as nn


class Way2(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.device = device
        STORE

    def init_weight(self, shape):
        _para = PARAM
        nn.init.xavier_normal_(_para)
        return _para

    def forward(self, x):
        return x @ self.wh


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = Way2(device)
'''


def _found(store="self.wh = self.init_weight((6, 2))",
           param="nn.Parameter(torch.zeros(shape), requires_grad=True).to(self.device)"):
    text = TEXT.replace("STORE", store).replace("PARAM", param)
    return [(d.code, d.line) for d in check(text, {"GL117"}) if d.code == "GL117"]


def test_converted_parameter_returned_to_an_attribute_is_reported():
    assert _found() == [("GL117", 12)]


def test_conversion_inside_the_parameter_is_silent():
    assert _found(param="nn.Parameter(torch.zeros(shape).to(self.device), requires_grad=True)") == []


def test_result_not_stored_on_self_is_silent():
    assert _found(store="w = self.init_weight((6, 2))\n        self.wh = nn.Parameter(w.detach())") == []
