"""GL402: a loss rebound to a Python number before it is accumulated (PRECISION22 #1 and #2).

#1 HawkAaron/E2E-ASR train_ctc.py / train_rnnt.py: `loss.backward()`, then
`loss = float(loss.data) * len(xlen)` and `totloss += loss`: the binding that reaches the
accumulation is arithmetic of `float(...)` and `len(...)`, a Python number.
#2 yihong-chen/neural-collaborative-filtering src/engine.py: `train_single_batch` runs
`loss.backward()`, then `loss = loss.item()` and `return loss`; the epoch loop's
`total_loss += loss` adds numbers. The safe fix (`loss.item()`) would raise AttributeError on a
float in both. Look-alikes that keep the graph stay reported."""

from __future__ import annotations

from fixture_support import check

REBIND = '''import torch
import torch.nn as nn

model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.MSELoss()
data = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(3)]
for epoch in range(2):
    totloss = 0
    for x, y in data:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        loss = VALUE
        totloss += loss
        optimizer.step()
    print(totloss)
'''

RETURNED = '''import torch
import torch.nn as nn


class Engine:
    def __init__(self):
        self.model = nn.Linear(4, 1)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.crit = nn.MSELoss()

    def train_single_batch(self, x, y):
        self.opt.zero_grad()
        loss = self.crit(self.model(x).view(-1), y)
        loss.backward()
        self.opt.step()
        REBIND
        return loss

    def train_an_epoch(self, loader):
        self.model.train()
        total_loss = 0
        for x, y in loader:
            loss = self.train_single_batch(x, y)
            total_loss += loss
        return total_loss


print(Engine().train_an_epoch([(torch.randn(8, 4), torch.randn(8)) for _ in range(3)]))
'''


def _gl402(text):
    return [(d.line, d.code) for d in check(text, {"GL402"}) if d.code == "GL402"]


def test_float_times_len_rebinding_is_a_number():
    assert _gl402(REBIND.replace("VALUE", "float(loss.data) * len(x)")) == []
    assert _gl402(REBIND.replace("VALUE", "loss.item() * x.size(0)".replace("x.size(0)", "len(x)"))) == []


def test_graph_keeping_rebinding_still_reported():
    assert _gl402(REBIND.replace("VALUE", "loss * len(x)")) == [(15, "GL402")]
    assert _gl402(REBIND.replace("VALUE", "round(loss) * len(x)")) == [(15, "GL402")]


def test_step_function_rebinds_loss_to_item_before_returning_it():
    assert _gl402(RETURNED.replace("REBIND", "loss = loss.item()")) == []


def test_step_function_returning_backpropagated_loss_still_reported():
    assert _gl402(RETURNED.replace("        REBIND\n", "")) == [(23, "GL402")]
