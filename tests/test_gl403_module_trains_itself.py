"""GL403 in a module that trains itself with an optimizer handed in (PRECISION23 M2).

AnubhavGupta3377/Text-Classification-Models (Model_TextCNN/old_code/model.py and its siblings): the
`nn.Module` subclass has a `run_epoch(self, train_iterator, val_iterator, ...)` method that trains
on the training batches with the optimizer it was given (`self.optimizer.zero_grad()`, `.step()`),
then calls `self.eval()` and runs the validation batches through `self.__call__(x)` with autograd on.
The rule skipped every loop inside a module's own methods ("its caller chooses the grad mode")
unless the class built a `torch.optim` optimizer itself, and did not read `self.__call__(x)` as a
model call.
"""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SRC = """
import torch
import torch.nn as nn


class TextCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(x)

    def run_epoch(self, train_batches, val_batches, optimizer):
        for x, y in train_batches:
            {zero}
            loss = nn.functional.cross_entropy(self(x), y)
            loss.backward()
            optimizer.step()
        self.eval()
        preds = []
        for x, y in val_batches:
            y_pred = {call}(x)
            preds.append(y_pred.argmax(1))
        self.train()
        return preds


model = TextCNN()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
batches = [(torch.randn(4, 8), torch.randint(0, 4, (4,)))]
model.run_epoch(batches, batches, opt)
"""


def _lines(src: str) -> list[int]:
    rule = Registry.load().by_code("GL403")()
    return [d.line for d in run_text("model.py", textwrap.dedent(src), [rule], Options()).diagnostics]


def test_explicit_call_in_the_modules_own_evaluation_loop():
    assert _lines(SRC.format(zero="optimizer.zero_grad()", call="self.__call__")) == [23]


def test_plain_self_call_in_the_modules_own_evaluation_loop():
    assert _lines(SRC.format(zero="optimizer.zero_grad()", call="self")) == [23]


def test_a_module_that_steps_nothing_it_zeroes_is_left_to_its_caller():
    # no optimizer zeroed and stepped by the class: a loop in its methods is the caller's business
    assert _lines(SRC.format(zero="pass", call="self")) == []


NESTED = """
import torch
import torch.nn as nn


class TextCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(x)

    def run_epoch(self, train_batches, val_batches, optimizer):
        for i, (x, y) in enumerate(train_batches):
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(self(x), y)
            loss.backward()
            optimizer.step()
            if (i + 1) % 50 == 0:
                self.eval()
                preds = []
                for vx, vy in val_batches:
                    {body}
                self.train()


model = TextCNN()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
batches = [(torch.randn(4, 8), torch.randint(0, 4, (4,)))]
model.run_epoch(batches, batches, opt)
"""


def test_an_evaluation_loop_inside_the_training_loop():
    # the real layout: validation every 50 batches, inside the batch loop whose backward is training
    assert _lines(NESTED.format(body="preds.append(self.__call__(vx).argmax(1))")) == [24]


def test_gradients_used_by_the_evaluation_itself_stay_silent():
    body = "vx.requires_grad_(); self(vx).sum().backward(); preds.append(vx.grad)"
    assert _lines(NESTED.format(body=body)) == []
