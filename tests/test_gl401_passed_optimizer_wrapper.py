"""GL401's fix inserts `opt.zero_grad(set_to_none=True)`. PRECISION23 #2: nnzhan/MTGNN
train_single_step.py runs `def train(data, X, Y, model, criterion, optim, batch_size)`, whose inner
loop over node splits calls `loss.backward()` and `optim.step()` with no clear (the outer batch loop
clears with `model.zero_grad()`); its caller passes `optim = Optim(model.parameters(), ...)` of
`from trainer import Optim`, a project wrapper with `step()` and no `zero_grad`. The finding is
right, but the **safe** fix `optim.zero_grad(set_to_none=True)` raised AttributeError: the rule took
the parameter for a torch optimizer. A parameter is now followed to what the file's callers pass:
an object of a class the file cannot see (an imported name spelled as a class), or of a class of
the file with no `zero_grad` (own or inherited), keeps the finding without a fix. A torch optimizer
passed in, a class of the file inheriting from one, and an optimizer built by an imported helper
function keep their fix."""

from __future__ import annotations

import ast

from fixture_support import check, fix

TEMPLATE = '''import torch
import torch.nn as nn
IMPORT


def train(model, criterion, optim, batches, num_split):
    model.train()
    total = 0.0
    for x, y in batches:
        model.zero_grad()
        for j in range(num_split):
            cols = torch.arange(j, x.size(1), num_split)
            loss = criterion(model(x)[:, cols], y[:, cols])
            loss.backward()
            total += loss.item()
            optim.step()
    return total


model = nn.Linear(8, 4)
optim = BUILD
batches = [(torch.randn(16, 8), torch.randn(16, 4)) for _ in range(3)]
train(model, nn.MSELoss(), optim, batches, 2)
'''

FILE_CLASS = '''

class Optim(object):
    def __init__(self, params, lr, clip):
        self.params = list(params)
        self.clip = clip
        self.optimizer = torch.optim.Adam(self.params, lr=lr)

    def step(self):
        torch.nn.utils.clip_grad_norm_(self.params, self.clip)
        self.optimizer.step()
'''

SUBCLASS = '''

class Optim(torch.optim.SGD):
    pass
'''


def _text(imp: str, build: str) -> str:
    return TEMPLATE.replace("IMPORT", imp).replace("BUILD", build)


def _one(text: str):
    found = [d for d in check(text, {"GL401"})]
    step_line = next(i for i, line in enumerate(text.splitlines(), 1) if line.strip() == "optim.step()")
    assert [d.line for d in found] == [step_line]
    return found[0]


def _inserted(before: str, unsafe: bool) -> list[str]:
    out = fix(before, {"GL401"}, unsafe=unsafe).text
    ast.parse(out)
    old = before.splitlines()
    return [line.strip() for line in out.splitlines() if line not in old]


def test_imported_wrapper_passed_in_gets_no_fix():
    text = _text("from trainer import Optim", "Optim(model.parameters(), lr=1e-3, clip=5)")
    assert _one(text).fix is None
    assert _inserted(text, unsafe=True) == []


def test_file_class_without_zero_grad_passed_in_gets_no_fix():
    text = _text(FILE_CLASS, "Optim(model.parameters(), lr=1e-3, clip=5)")
    assert _one(text).fix is None
    assert _inserted(text, unsafe=True) == []


def test_torch_optimizer_passed_in_keeps_its_fix():
    text = _text("", "torch.optim.Adam(model.parameters(), lr=1e-3)")
    assert _one(text).fix is not None
    assert _inserted(text, unsafe=False) == ["optim.zero_grad(set_to_none=True)"]


def test_file_subclass_of_a_torch_optimizer_keeps_its_fix():
    text = _text(SUBCLASS, "Optim(model.parameters(), lr=1e-3)")
    assert _inserted(text, unsafe=False) == ["optim.zero_grad(set_to_none=True)"]


def test_optimizer_from_an_imported_helper_keeps_its_fix():
    text = _text("from lib import make_optimizer", "make_optimizer(model.parameters())")
    assert _inserted(text, unsafe=False) == ["optim.zero_grad(set_to_none=True)"]
