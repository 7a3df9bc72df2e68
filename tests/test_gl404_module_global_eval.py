"""GL404 through a module-level model (tk-rusch/coRNN#1): the model is a module global; test()
runs `model.eval()` on it, and the step loop of train() calls test() every 100 steps after a
single `model.train()` before the loop, so training goes on in eval mode."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

SRC = """
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.3), nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = [torch.randn(8, 4) for _ in range(10)]


def test():
    model.eval()
    with torch.no_grad():
        return sum(model(x).sum().item() for x in data[:2])


def train({params}):
    model.train()
    for step, x in enumerate(data):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
        if step % 4 == 0:
            test(){after}


train({args})
"""


def src(params="", args="", after=""):
    return textwrap.dedent(SRC.format(params=params, args=args, after=after))


def test_global_model_eval_in_step_loop_is_reported_and_fixed():
    s = src()
    assert [(d.code, d.line) for d in check(s, {"GL404"})] == [("GL404", 11)]
    out = fix(s, {"GL404"}, unsafe=False).text
    assert "    for step, x in enumerate(data):\n        model.train()\n" in out


def test_global_model_eval_undone_in_the_loop_is_silent():
    assert check(src(after="\n            model.train()"), {"GL404"}) == []


def test_test_restoring_train_mode_is_silent():
    s = src().replace(
        "        return sum(model(x).sum().item() for x in data[:2])",
        "        total = sum(model(x).sum().item() for x in data[:2])\n    model.train()\n    return total")
    assert check(s, {"GL404"}) == []


def test_training_function_with_its_own_model_parameter_is_silent():
    # train(model) trains its parameter: the eval of the global in test() is another name's
    # object as far as the file shows (the analysis cannot tell they are the same).
    s = src(params="model", args="nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.3), nn.Linear(4, 1))")
    assert check(s, {"GL404"}) == []


def test_attribute_and_keyword_named_like_the_global_still_report():
    # `x.model` and `dict(model=...)` in train() are not uses of the variable `model`
    s = src(after="\n            print(dict(model=1), x.model if hasattr(x, 'model') else None)")
    assert [(d.code, d.line) for d in check(s, {"GL404"})] == [("GL404", 11)]
