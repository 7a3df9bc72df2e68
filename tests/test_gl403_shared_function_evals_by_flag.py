"""GL403 on a train/valid function that picks the mode itself (jpata/particleflow#290:
`train_and_valid(rank, model, optimizer, loader, is_train)` starts with `if is_train:
model.train() else: model.eval()`, runs the forward with autograd on, and does its backward and
step only `if is_train`): the call with `is_train=False` is reported, with the fix `with
torch.no_grad():` around it. Silent for the training call, when a `train()` may run on the
validation path too, and when the validation path still does gradient work."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

SRC = """
import torch
import torch.nn as nn


def train_and_valid(model, optimizer, loader, is_train):
    if is_train:
        model.train()
    else:
        model.eval()
    total = 0.0
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        if is_train:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        total += loss.item()
    return total


model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1), nn.Linear(4, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
data = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(3)]
for epoch in range(2):
    train_loss = train_and_valid(model, optimizer, data, True)
    valid_loss = train_and_valid(model, optimizer, data, False)
"""


def _codes(src: str) -> list[int]:
    return [d.line for d in check(src, {"GL403"}) if d.code == "GL403"]


def test_validation_call_of_a_flag_switched_function_is_reported_with_a_fix():
    src = textwrap.dedent(SRC)
    assert _codes(src) == [27]
    out = fix(src, {"GL403"}, unsafe=False).text
    assert "    with torch.no_grad():\n        valid_loss = train_and_valid(model, optimizer, data, False)" in out


def test_training_call_alone_is_silent():
    src = textwrap.dedent(SRC).replace("    valid_loss = train_and_valid(model, optimizer, data, False)\n", "")
    assert _codes(src) == []


def test_train_mode_restored_on_the_validation_path_is_left_alone():
    src = textwrap.dedent(SRC).replace("    return total\n", "    model.train()\n    return total\n")
    assert _codes(src) == []


def test_validation_path_with_gradient_work_is_silent():
    src = textwrap.dedent(SRC).replace("        if is_train:\n            optimizer.zero_grad()", "        if True:\n            optimizer.zero_grad()")
    assert _codes(src) == []
