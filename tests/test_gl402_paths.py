"""GL402 through the file's own methods: a loss returned by a step method, and a meter class."""

from __future__ import annotations

import textwrap

from fixture_support import check

HEAD = """
import torch
import torch.nn as nn


class Meter:
    def __init__(self):
        self.sum = 0
        self.count = 0
        self.last = None

    def update(self, val, n=1):
        self.last = val
        self.sum += val * n
        self.count += n

    def note(self, val):
        self.last = val


class Runner:
    def __init__(self, model, loader):
        self.model = model
        self.loader = loader
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
        self.meter = Meter()

    def step(self, x, y):
        loss = nn.functional.mse_loss(self.model(x), y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss

    def predict(self, x):
        return self.model(x)
"""


def lines(body: str) -> set[int]:
    src = textwrap.dedent(HEAD) + textwrap.dedent(body)
    return {d.line for d in check(src, {"GL402"}) if d.code == "GL402"}


def test_a_loss_returned_by_a_step_method_accumulated():
    found = lines("""
    r = Runner(nn.Linear(2, 2), [])
    total = 0
    for x, y in r.loader:
        loss = r.step(x, y)
        total += loss
    """)
    assert len(found) == 1


def test_a_meter_that_sums_its_argument():
    found = lines("""
    r = Runner(nn.Linear(2, 2), [])
    for x, y in r.loader:
        loss = r.step(x, y)
        r.meter.update(loss, x.size(0))
        r.meter.note(loss)
    """)
    assert len(found) == 1  # update() adds it to self.sum; note() only keeps the last one


def test_numbers_and_non_step_results_are_silent():
    found = lines("""
    r = Runner(nn.Linear(2, 2), [])
    total = 0
    for x, y in r.loader:
        loss = r.step(x, y)
        total += loss.item()
        r.meter.update(loss.item(), x.size(0))
        out = r.predict(x)
        total += out.sum().item()
    """)
    assert found == set()
