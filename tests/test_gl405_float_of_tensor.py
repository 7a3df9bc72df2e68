"""GL405 reports `float(t)` / `int(t)` of a tensor every step like `.item()`: reading a CUDA
tensor's value as a Python number waits for the device (lnccbrown/LANfactory#120:
`epoch_loss_sum += float(loss)` after every optimizer step, the loss made by a loss function
picked from the config, so it is known as the step's loss through its `.backward()`). A periodic
read, a read after the batch loop, and `float()` of plain numbers stay silent."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Trainer:
    def __init__(self, model, loader):
        self.model = model
        self.loader = loader
        self.loss_fun = F.mse_loss
        self.optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def train(self, lr_scale=0.5):
        for epoch in range(2):
            total = 0.0
            hits = 0
            for step, (xb, yb) in enumerate(self.loader):
                pred = self.model(xb)
                loss = self.loss_fun(pred, yb)
                loss.backward()
                self.optimizer.step()
                self.optimizer.zero_grad()
                BODY
            print(total, hits)


trainer = Trainer(nn.Linear(4, 1), [(torch.randn(8, 4), torch.randn(8, 1))])
trainer.train()
'''


def _lines(body):
    text = TEXT.replace("BODY", body)
    line = next(i for i, s in enumerate(text.splitlines(), 1) if body.splitlines()[0].strip() in s)
    return line, [f.line for f in check(text, {"GL405"})]


def test_float_of_the_step_loss_every_step_is_reported():
    line, got = _lines("total += float(loss)")
    assert got == [line]


def test_int_of_a_tensor_every_step_is_reported():
    line, got = _lines("correct = torch.zeros(1).sum()\n                hits += int(correct)")
    line += 1
    assert got == [line]


def test_periodic_float_of_the_loss_is_silent():
    _, got = _lines("if step % 100 == 0:\n                    total += float(loss)")
    assert got == []


def test_float_of_plain_numbers_is_silent():
    _, got = _lines("total += float(lr_scale) * int(step)")
    assert got == []
