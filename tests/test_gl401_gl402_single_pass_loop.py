"""GL401 / GL402: a loop that skips to one batch and breaks after one step runs its step (and its
accumulation) once per call (PRECISION43: openfl's vertical-FL tutorial flow, where `start` zeroes
the optimizer and `label_model_forward_pass` does `for idx, (_, y) in enumerate(loader): if idx <
self.batch_num: continue; ...; opt.step(); total_loss += loss; break`). A `continue` after the step,
no `break`, or no `zero_grad` of that optimizer anywhere in the file keep the reports."""

from __future__ import annotations

from fixture_support import check

SRC = """
import torch
import torch.nn as nn


class Flow:
    def __init__(self, model, loader, batch_num):
        self.model = model
        self.loader = loader
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
        self.batch_num = batch_num

    def start(self):
        CLEAR
        self.forward_pass()

    def forward_pass(self):
        total_loss = 0
        for idx, (x, y) in enumerate(self.loader):
            if idx < self.batch_num:
                continue
            loss = nn.functional.mse_loss(self.model(x), y)
            loss.backward()
            self.opt.step()
            total_loss += loss
            TAIL
        print(total_loss)


loader = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(3)]
flow = Flow(nn.Linear(3, 1), loader, 1)
for b in range(3):
    flow.batch_num = b
    flow.start()
"""


def _codes(clear: str = "self.opt.zero_grad()", tail: str = "break") -> list[str]:
    return sorted(d.code for d in check(SRC.replace("CLEAR", clear).replace("TAIL", tail), ["GL401", "GL402"]))


def test_one_step_per_call_cleared_by_another_method_is_silent():
    assert _codes() == []


def test_without_break_keeps_both_reports():
    assert _codes(tail="pass") == ["GL401", "GL402"]


def test_one_step_per_call_never_cleared_keeps_gl401():
    assert _codes(clear="pass") == ["GL401"]


def test_continue_after_the_step_keeps_both_reports():
    # `if idx > 0: continue` after the step: the loop can run the step again before it breaks
    assert _codes(tail="if idx % 2:\n                continue\n            break") == ["GL401", "GL402"]
