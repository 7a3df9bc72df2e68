"""GL402: an accumulation window one call wide (davidtvs/pytorch-lr-finder, `LRFinder._train_batch`
after PR #31: `total_loss = None`, `optimizer.zero_grad()`, `for i in range(accumulation_steps):`
with a backward and `total_loss += loss`, then `optimizer.step()` and `return total_loss.item()`;
`range_test` calls it once per iteration). Each call starts a new sum of at most
`accumulation_steps` losses whose saved tensors `backward()` already freed: no graph outlives the
call. Before, the micro-batch window was recognised only with the loop around it in the same
function. A data loop that steps inside, a loop over a loader, and a function with no optimizer step
after the loop stay reported."""

from __future__ import annotations

from fixture_support import check

TEMPLATE = '''import torch
import torch.nn as nn


class Finder:
    def __init__(self, model, optimizer, criterion):
        self.model = model
        self.optimizer = optimizer
        self.criterion = criterion

    def _train_batch(self, batches, accumulation_steps):
        self.model.train()
        total_loss = RESET
        self.optimizer.zero_grad()
        for i in LOOP:
            inputs, labels = batches[i]
            loss = self.criterion(self.model(inputs), labels) / accumulation_steps
            loss.backward()
            if total_loss is None:
                total_loss = loss
            else:
                total_loss += loss
INNER_STEP        AFTER
        return total_loss.item()


model = nn.Linear(4, 2)
finder = Finder(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss())
batches = [(torch.randn(8, 4), torch.randint(0, 2, (8,))) for _ in range(4)]
history = []
for iteration in range(10):
    history.append(finder._train_batch(batches, 2))
'''


def _text(reset="None", loop="range(accumulation_steps)", inner_step="", after="self.optimizer.step()"):
    return (TEMPLATE.replace("RESET", reset).replace("LOOP", loop).replace("INNER_STEP", inner_step)
            .replace("AFTER", after))


def _gl402(text):
    return [d for d in check(text, {"GL402"}) if d.code == "GL402"]


def test_lr_finder_train_batch_window_is_silent():
    assert _gl402(_text()) == []


def test_zero_reset_window_is_silent():
    assert _gl402(_text(reset="0.0")) == []


def test_optimizer_step_inside_the_loop_is_reported():
    text = _text(inner_step="            self.optimizer.step()\n", after="pass")
    assert [d.line for d in _gl402(text)] == [22]


def test_no_optimizer_step_after_the_loop_is_reported():
    assert [d.line for d in _gl402(_text(after="pass"))] == [22]


def test_loop_over_batches_not_range_is_reported():
    text = _text(loop="range(len(batches)) if False else list(range(accumulation_steps))")
    assert [d.line for d in _gl402(text)] == [22]
