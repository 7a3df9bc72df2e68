"""GL402: the attribute name `loss` in `self.loss` is not the local name `loss`. ULTRA's DLA
(ULTR-Community/ULTRA_pytorch#6): `train()` sets `self.loss`, backpropagates it and returns it;
the driver sums `loss += step_loss / n`. The rule read `self.loss.backward()` as a backward of the
accumulator `loss` (the file's occurrences of the chain `loss` included the `attr` of every
`X.loss`) and took the accumulator for a differentiated one: silent."""

from __future__ import annotations

from fixture_support import check, fix

LEARNER = '''import torch
import torch.nn as nn


class Learner:
    def __init__(self):
        self.model = nn.Linear(4, 1)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def train(self, x, y):
        self.loss = ((self.model(x) - y) ** 2).mean()
        self.opt.zero_grad()
        self.loss.backward()
        self.opt.step()
        return self.loss, None, {}


learner = Learner()
loss = 0.0
for step in range(20):
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    step_loss, _, summary = learner.train(x, y)
    loss += step_loss / 10
print(float(loss))
'''


def _gl402(text):
    return [(d.line, d.code) for d in check(text, {"GL402"}) if d.code == "GL402"]


def _line(text, needle):
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_accumulator_named_like_the_attribute():
    assert _gl402(LEARNER) == [(_line(LEARNER, "loss += step_loss / 10"), "GL402")]
    out = fix(LEARNER, {"GL402"}, unsafe=False).text
    assert "    loss += step_loss.item() / 10\n" in out
    assert _gl402(out) == []


def test_single_return_of_the_attribute():
    src = LEARNER.replace("return self.loss, None, {}", "return self.loss").replace(
        "step_loss, _, summary = learner", "step_loss = learner")
    assert _gl402(src) == [(_line(src, "loss += step_loss / 10"), "GL402")]


def test_item_returned_silent():
    # the fix
    assert _gl402(LEARNER.replace("return self.loss, None, {}", "return self.loss.item(), None, {}")) == []


def test_accumulator_really_backpropagated_silent():
    # the accumulator itself is backpropagated: a sum meant to keep its graph
    src = LEARNER.replace("print(float(loss))", "loss.backward()")
    assert _gl402(src) == []


def test_attribute_accumulator_still_differentiated_silent():
    # `self.total` accumulated and backpropagated as `self.total.backward()`: still the same chain
    src = '''import torch
import torch.nn as nn


class Trainer:
    def __init__(self):
        self.model = nn.Linear(4, 1)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.total = 0.0

    def fit(self):
        for step in range(4):
            loss = self.model(torch.randn(8, 4)).pow(2).mean()
            loss.backward()
            self.total += loss
        self.total.backward()
        self.opt.step()


Trainer().fit()
'''
    assert _gl402(src) == []
