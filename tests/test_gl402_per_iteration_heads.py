"""GL402: one linear head per optimizer (bytedance/ibot evaluation/eval_linear_multi.py and
analysis/linear_part/eval.py). `losses = []` at the top of each batch and one `losses.append(loss)`
per head keep one batch's losses only, and a loop over the list that calls `loss.backward()` on
each item needs the graph it keeps. The epoch-level running sum (reset per epoch, grown per batch)
and a list whose items are only logged stay reported."""

from __future__ import annotations

import textwrap

from fixture_support import check

HEAD = """
import torch
import torch.nn as nn

heads = [nn.Linear(4, 2) for _ in range(3)]
optimizers = [torch.optim.SGD(h.parameters(), lr=0.1) for h in heads]
"""


def _codes(body: str):
    src = textwrap.dedent(HEAD) + textwrap.dedent(body)
    return [(d.code, d.line) for d in check(src, ["GL402"])]


def test_items_backpropagated_by_a_loop_over_the_list():
    assert _codes("""
    for step in range(3):
        x = torch.randn(8, 4)
        target = torch.randint(0, 2, (8,))
        losses = []
        for head in heads:
            loss = nn.functional.cross_entropy(head(x), target)
            losses.append(loss)
        for optimizer, loss in zip(optimizers, losses):
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    """) == []


def test_list_reset_per_batch_one_item_per_head():
    assert _codes("""
    for step in range(3):
        x = torch.randn(8, 4)
        target = torch.randint(0, 2, (8,))
        losses = []
        for head, optimizer in zip(heads, optimizers):
            loss = nn.functional.cross_entropy(head(x), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss)
        print([l.item() for l in losses])
    """) == []


def test_reset_in_the_loop_body_before_the_sum():
    assert _codes("""
    model, opt = heads[0], optimizers[0]
    for step in range(3):
        total = 0.0
        loss = model(torch.randn(8, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss
    """) == []


def test_epoch_running_sum_stays_reported():
    assert _codes("""
    model, opt = heads[0], optimizers[0]
    for epoch in range(2):
        running = 0.0
        for step in range(3):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            running += loss
    """) == [("GL402", 16)]


def test_heads_list_reset_per_epoch_around_the_data_loop_stays_reported():
    # the reset is one loop further out than the data loop: the list grows with every batch
    assert _codes("""
    for epoch in range(2):
        losses = []
        for step in range(3):
            x = torch.randn(8, 4)
            for head, optimizer in zip(heads, optimizers):
                loss = head(x).pow(2).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.append(loss)
    """) == [("GL402", 17)]


def test_list_iterated_for_logging_only_stays_reported():
    assert _codes("""
    model, opt = heads[0], optimizers[0]
    history = []
    for step in range(3):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        history.append(loss)
    for i, loss in enumerate(history):
        print(i, loss.item())
    """) == [("GL402", 15)]


def test_sum_grown_in_a_test_loop_inside_the_epoch_stays_reported():
    # `test_loss = 0.0` per epoch, `test_loss += loss` per test batch (jetbot's road-following notebook)
    assert _codes("""
    model, opt = heads[0], optimizers[0]
    for epoch in range(2):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        test_loss = 0.0
        for step in range(3):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            test_loss += loss
    """) == [("GL402", 17)]
