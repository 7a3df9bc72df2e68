"""GL304: `if ddp: model = DDP(model, ...)` and, in the epoch function, `if ddp: save
model.module.state_dict() else: save model.state_dict()` (DLLXW/baby-llama2-chinese pretrain.py,
a nanoGPT descendant): the plain `state_dict()` runs only where the flag is false, where the model
was never wrapped. A save under the same flag being true, or under no flag, stays reported."""

from __future__ import annotations

import textwrap

from fixture_support import check

SRC = """
import os
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

ddp = int(os.environ.get("RANK", -1)) != -1
model = nn.Linear(4, 4)
if ddp:
    torch.distributed.init_process_group("gloo")
    model = DDP(model)


def train_epoch(epoch):
    loss = model(torch.randn(2, 4)).sum()
    loss.backward()
{save}


for epoch in range(2):
    train_epoch(epoch)
"""


def _codes(save: str):
    src = textwrap.dedent(SRC).replace("{save}", textwrap.indent(textwrap.dedent(save).strip("\n"), "    "))
    return [(d.code, d.line) for d in check(src, ["GL304"])]


def test_plain_save_in_the_else_of_the_wrap_flag():
    assert _codes("""
    if ddp:
        torch.save(model.module.state_dict(), "a.pth")
    else:
        torch.save(model.state_dict(), "a.pth")
    """) == []


def test_plain_save_under_the_negated_flag():
    assert _codes("""
    if not ddp:
        torch.save(model.state_dict(), "a.pth")
    """) == []


def test_plain_save_in_an_elif_after_the_flag():
    assert _codes("""
    if ddp:
        pass
    elif epoch % 2 == 0:
        torch.save(model.state_dict(), "a.pth")
    """) == []


def test_plain_save_where_the_flag_is_true_stays_reported():
    assert _codes("""
    if ddp:
        torch.save(model.state_dict(), "a.pth")
    """) == [("GL304", 18)]


def test_unguarded_save_stays_reported():
    assert _codes("""
    torch.save(model.state_dict(), "a.pth")
    """) == [("GL304", 17)]


def test_other_flag_stays_reported():
    assert _codes("""
    if epoch == 0:
        pass
    else:
        torch.save(model.state_dict(), "a.pth")
    """) == [("GL304", 20)]
