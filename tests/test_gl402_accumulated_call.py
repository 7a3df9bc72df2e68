"""GL402: the accumulated value is the call itself of a function of the file that runs
`loss.backward()` and returns the loss (huggingface/transformers#6999: the Trainer's
`tr_loss += self.training_step(model, inputs)`, whose training_step returned `loss` still
attached; the fix returned `loss.detach()`). Before, only `loss = self.training_step(...)` then
`tr_loss += loss` was followed. A step function that returns `loss.detach()` / `loss.item()`, or
an accumulator that is differentiated later, stays silent."""

from __future__ import annotations

from fixture_support import check, fix

TEXT = '''import torch
import torch.nn as nn


class Trainer:
    def __init__(self):
        self.model = nn.Linear(4, 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def training_step(self, model, inputs):
        model.train()
        loss = nn.functional.mse_loss(model(inputs[0]), inputs[1])
        loss.backward()
        return RET

    def train(self, data):
        model = self.model
        tr_loss = torch.tensor(0.0)
        for step, inputs in enumerate(data):
            tr_loss += self.training_step(model, inputs)
            self.optimizer.step()
            model.zero_grad()
        return tr_loss.item() / len(data)


print(Trainer().train([(torch.randn(2, 4), torch.randn(2, 1))] * 3))
'''


def _gl402(text):
    return [(d.line, d.code) for d in check(text, {"GL402"}) if d.code == "GL402"]


def test_accumulated_call_returning_backpropagated_loss():
    text = TEXT.replace("RET", "loss")
    assert _gl402(text) == [(20, "GL402")]
    out = fix(text, {"GL402"}, unsafe=False).text
    assert "tr_loss += self.training_step(model, inputs).detach()\n" in out
    assert _gl402(out) == []


def test_python_number_accumulator_gets_item():
    text = TEXT.replace("RET", "loss").replace("tr_loss = torch.tensor(0.0)", "tr_loss = 0.0").replace(
        "tr_loss.item()", "tr_loss")
    out = fix(text, {"GL402"}, unsafe=False).text
    assert "tr_loss += self.training_step(model, inputs).item()\n" in out


def test_step_returns_detached_or_number():
    assert _gl402(TEXT.replace("RET", "loss.detach()")) == []
    assert _gl402(TEXT.replace("RET", "loss.item()")) == []


def test_accumulator_differentiated_later():
    text = TEXT.replace("RET", "loss").replace("return tr_loss.item() / len(data)", "tr_loss.backward()")
    assert _gl402(text) == []
