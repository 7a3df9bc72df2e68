"""GL116 and `torch.*_like(t)` in a module method, where `t` is the module's own device-less
factory (EasyTemporalPointProcess#40, AttNHP's `make_combined_att_mask`): GL105 reports the factory
and its fix places the copy too, so GL116 does not report the copy again. A `*_like` of a host
tensor that is no module factory (a plain host tensor of a script) stays GL116's."""

from __future__ import annotations

import textwrap

from fixture_support import check

LIKE_OF_FACTORY = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def make_layer_mask(self, attention_mask):
        return (torch.eye(attention_mask.size(1)) < 1).unsqueeze(0).expand_as(attention_mask)

    def combine(self, attention_mask, layer_mask):
        combined = torch.cat([attention_mask, layer_mask], dim=-1)
        contextual = torch.cat([attention_mask, torch.ones_like(layer_mask)], dim=-1)
        return torch.cat([contextual, combined], dim=1)

    def forward(self, x, attention_mask):
        layer_mask = self.make_layer_mask(attention_mask)
        mask = self.combine(attention_mask, layer_mask)
        return self.fc(x) * mask.float().mean()


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = Net().to(device)
x = torch.randn(2, 4, 8).to(device)
am = torch.ones(2, 4, 4, dtype=torch.bool).to(device)
print(net(x, am))
"""

LIKE_OF_SCRIPT_TENSOR = """
import torch
import torch.nn as nn


def score(pred, target):
    weights = torch.ones_like(target)
    return (pred * weights).sum()


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Linear(4, 1).to(device)
target = torch.randn(8, 1)
pred = net(torch.randn(8, 4).to(device))
print(score(pred, target))
"""


def _lines(text, code):
    return sorted(d.line for d in check(textwrap.dedent(text), {"GL105", "GL116"}) if d.code == code)


def test_like_of_a_module_factory_is_left_to_gl105():
    assert _lines(LIKE_OF_FACTORY, "GL105") == [12]
    assert _lines(LIKE_OF_FACTORY, "GL116") == []


def test_like_of_a_script_host_tensor_stays_reported():
    assert _lines(LIKE_OF_SCRIPT_TENSOR, "GL116") != []
