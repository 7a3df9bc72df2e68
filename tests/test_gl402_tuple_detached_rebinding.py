"""GL402: `loss, l1_loss, att_loss = loss.item(), l1_loss.item(), att_loss.item()` after the
backward step (tugstugi/pytorch-dc-tts train-text2mel.py) rebinds every name to a Python number:
the `running_loss += loss` below accumulates floats. A tuple rebinding that leaves the accumulated
name a tensor keeps the finding."""

from __future__ import annotations

import textwrap

from fixture_support import check

SRC = """
import torch
import torch.nn as nn
import torch.nn.functional as F

model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
running_loss = 0.0
running_l1 = 0.0
for step in range(3):
    x = torch.randn(8, 4)
    y = model(x)
    l1_loss = F.l1_loss(y, torch.zeros_like(y))
    loss = l1_loss + y.pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    {rebind}
    running_loss += loss
    running_l1 += l1_loss
"""


def _codes(rebind: str):
    return [(d.code, d.line) for d in check(textwrap.dedent(SRC).format(rebind=rebind), ["GL402"])]


def test_tuple_of_items_rebinds_both():
    assert _codes("loss, l1_loss = loss.item(), l1_loss.item()") == []


def test_tuple_of_float_calls_rebinds_both():
    assert _codes("[loss, l1_loss] = float(loss), float(l1_loss)") == []


def test_tuple_leaving_one_tensor_keeps_its_finding():
    assert _codes("loss, l1_loss = loss.item(), l1_loss * 1") == [("GL402", 20)]


def test_no_rebinding_reports_both():
    assert _codes("pass") == [("GL402", 19), ("GL402", 20)]
