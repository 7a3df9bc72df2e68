"""GL404 follows `self.<method>()` from a training loop two methods deep to `self.model.eval()`
(small-text#40: batch loop -> self._perform_model_selection() -> self.validate() -> eval), and stays
silent when the middle method restores training mode or when the evaluated module is not the one
the loop trains."""

from __future__ import annotations

import textwrap

from fixture_support import check

SRC = """
import torch
import torch.nn as nn


class Clf:
    def __init__(self):
        self.model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1), nn.Linear(4, 2))
        self.teacher = nn.Sequential(nn.Linear(4, 2), nn.Dropout(0.1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def fit(self, batches):
        self.model.train()
        for i, (x, y) in enumerate(batches):
            self.opt.zero_grad()
            nn.functional.cross_entropy(self.model(x), y).backward()
            self.opt.step()
            if i % 2 == 1:
                self._select(batches)

    def _select(self, batches):
        score = self.validate(batches)
RESTORE
        return score

    def validate(self, batches):
        self.EVALUATED.eval()
        with torch.no_grad():
            return sum(self.EVALUATED(x).sum().item() for x, _ in batches)
"""


def lines(restore: str = "", evaluated: str = "model") -> list[int]:
    src = textwrap.dedent(SRC).replace("RESTORE", restore).replace("EVALUATED", evaluated)
    return sorted(d.line for d in check(src, {"GL404"}) if d.code == "GL404")


def test_eval_two_methods_below_the_training_loop_is_reported():
    assert lines() == [27]


def test_middle_method_restoring_train_mode_is_silent():
    assert lines(restore="        self.model.train()") == []


def test_eval_of_a_module_the_loop_does_not_train_is_silent():
    assert lines(evaluated="teacher") == []
