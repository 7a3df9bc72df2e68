"""GL404: a validation loop under `with evaluating(model):`, a `@contextmanager` of the file that
calls `model.eval()` before it yields (and `model.train()` in its `finally`), runs the model in
evaluation mode (benchmarks/PRECISION47.md P47-3, NVIDIA/DeepLearningExamples
PyTorch/SpeechSynthesis/Tacotron2/train.py `validate`: `with evaluating(model), torch.no_grad():`).
A context manager that does not call `eval()` on what it is given, calls it only under an `if`,
after its `yield`, or on another argument, or a function without `@contextmanager`, keeps the
loop reported."""

from __future__ import annotations

import textwrap

from fixture_support import check

SRC = """
from contextlib import contextmanager

import torch
import torch.nn as nn


{decorator}
def evaluating(model, other=None):
    istrain = model.training
    try:
        {before}
        yield model
    finally:
        if istrain:
            model.train()


def validate(model, other, loader):
    with evaluating({args}), torch.no_grad():
        total = 0.0
        for x, y in loader:
            total += (model(x) - y).abs().mean().item()
    return total


model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.2), nn.Linear(8, 1))
other = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(3)]
for epoch in range(2):
    model.train()
    for x, y in data:
        loss = (model(x) - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(validate(model, other, data))
"""


def _lines(decorator="@contextmanager", before="model.eval()", args="model"):
    text = textwrap.dedent(SRC).format(decorator=decorator, before=before, args=args)
    loop = next(i for i, line in enumerate(text.splitlines(), 1) if line.strip().startswith("for x, y in loader"))
    return sorted("loop" if d.line == loop else d.line for d in check(text, ["GL404"]) if d.code == "GL404")


def test_context_manager_that_evals_the_model_is_silent():
    assert _lines() == []


def test_context_manager_given_the_model_by_keyword_is_silent():
    assert _lines(args="other=other, model=model") == []


def test_context_manager_without_eval_stays_reported():
    assert _lines(before="pass") == ["loop"]


def test_eval_only_under_a_condition_stays_reported():
    assert _lines(before="if istrain: model.eval()") == ["loop"]


def test_eval_of_another_argument_stays_reported():
    assert _lines(before="other.eval()", args="model, other") == ["loop"]


def test_function_without_contextmanager_stays_reported():
    assert _lines(decorator="") == ["loop"]
