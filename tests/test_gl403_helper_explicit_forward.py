"""GL403 through a method of the same class that runs the model with the explicit `.forward`
call (nyu-mll/jiant#718: `SamplingMultiTaskTrainer._calculate_validation_performance` loops over
the validation batches after `self._model.eval()` and calls `self._forward(batch, task=task)`,
whose body is `return self._model.forward(task, tensor_batch)`). The helper form was seen for
`self.model(x)` only; `self._model.forward(...)` runs the same module. Silent as before when the
helper detaches what it returns or uses gradients itself, and when the loop is under no_grad."""

from __future__ import annotations

from fixture_support import check

SRC = """
import torch
import torch.nn as nn


class Trainer:
    def __init__(self):
        self._device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self._model = nn.Linear(4, 3).to(self._device)
        self._optimizer = torch.optim.Adam(self._model.parameters())
        self._batches = [torch.randn(8, 4) for _ in range(3)]

    def _forward(self, batch):
        out = self._model.forward(batch.to(self._device))
        HELPER

    def train(self):
        self._model.train()
        for batch in self._batches:
            self._optimizer.zero_grad()
            self._forward(batch).sum().backward()
            self._optimizer.step()

    def validate(self):
        self._model.eval()
        total = 0.0
        for batch in self._batches:
            LOOP
            total += out.sum().item()
        return total


t = Trainer()
t.train()
t.validate()
"""


def lines(helper: str, loop: str = "out = self._forward(batch)") -> list[int]:
    src = SRC.replace("HELPER", helper).replace("LOOP", loop)
    return [d.line for d in check(src, {"GL403"}) if d.code == "GL403"]


def test_a_helper_returning_the_explicit_forward_output_is_reported_at_its_call_in_the_loop():
    assert lines("return out") == [28]  # `out = self._forward(batch)`


def test_the_call_form_is_still_reported():
    assert lines("return self._model(batch.to(self._device))") == [28]


def test_a_helper_that_detaches_what_it_returns_is_silent():
    assert lines("return out.detach()") == []


def test_a_helper_that_uses_gradients_is_silent():
    assert lines("out.sum().backward()\n        return out") == []


def test_the_loop_under_no_grad_is_silent():
    assert lines("return out", "with torch.no_grad():\n                out = self._forward(batch)") == []
