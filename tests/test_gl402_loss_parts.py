"""GL402: the components a loss function returns next to the loss it backpropagates
(`loss, parts = criterion(...)`, `parts` a dict of tensors with gradients) carry the same graph;
accumulating the values of a loop over them keeps every batch's graph (YOLO PR 83's shape)."""

from __future__ import annotations

import pytest
from fixture_support import check

HEAD = '''from collections import defaultdict
import torch
import torch.nn as nn
import torch.nn.functional as F


class DetLoss:
    def __call__(self, pred, t):
        a = F.mse_loss(pred[:, :2], t)
        b = F.mse_loss(pred[:, 2:], t)
        return a + b, {{"A": {a}, "B": {b}}}


loss_fn = DetLoss()
model = nn.Linear(4, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
'''

LOOP = '''total = defaultdict(float)
for x in torch.randn(5, 3, 4):
    opt.zero_grad()
    loss, parts = loss_fn(model(x), x[:, :2])
    loss.backward()
    opt.step()
    {accumulate}
'''

METHOD = '''

def train_one_batch(x):
    opt.zero_grad()
    loss, parts = loss_fn(model(x), x[:, :2])
    loss.backward()
    opt.step()
    return parts


total = defaultdict(float)
for x in torch.randn(5, 3, 4):
    parts = train_one_batch(x)
    for name, val in parts.items():
        total[name] += val
'''


def gl402(text):
    return [d.line for d in check(text, {"GL402"}) if d.code == "GL402"]


@pytest.mark.parametrize(
    "accumulate",
    [
        "for name, val in parts.items():\n        total[name] += val",
        "for val in parts.values():\n        total['all'] += val * 2",
    ],
)
def test_values_of_the_parts_in_the_training_loop(accumulate):
    assert gl402(HEAD.format(a="a", b="b") + LOOP.format(accumulate=accumulate)) == [24]


def test_parts_returned_by_the_step_function():
    assert gl402(HEAD.format(a="a", b="b") + METHOD) == [31]


@pytest.mark.parametrize("a, b", [("a.detach()", "b.detach()"), ("a.item()", "b.item()")])
def test_detached_parts_are_silent(a, b):
    text = HEAD.format(a=a, b=b)
    assert gl402(text + LOOP.format(accumulate="for name, val in parts.items():\n        total[name] += val")) == []
    assert gl402(text + METHOD) == []


def test_item_of_the_value_is_silent():
    accumulate = "for name, val in parts.items():\n        total[name] += val.item()"
    assert gl402(HEAD.format(a="a", b="b") + LOOP.format(accumulate=accumulate)) == []
