"""GL403: a loop in a method that the file's evaluation path calls with an argument that switches
the loop's branch off (thunlp/OpenNRE opennre/model/bag_one.py: `infer` runs `self.eval()` then
`self.forward(None, scope, ..., train=False)`; the per-bag loop under `if train:` in `forward` is
training code and never runs on that path). The loop of the other branch, which does run in eval
mode with autograd on, stays reported; so does the training-branch loop when some call of the
method leaves the flag unknown or true."""

from __future__ import annotations

import textwrap

from fixture_support import check

SRC = """
import torch
import torch.nn as nn
from .base_model import BagRE


class BagOne(BagRE):
    def __init__(self, encoder, num_class):
        super().__init__()
        self.encoder = encoder
        self.fc = nn.Linear(8, num_class)

    def infer(self, bag):
        self.eval()
        scope = torch.tensor([[0, len(bag)]])
        logits = self.forward(None, scope, bag, {flag})
        return logits.argmax().item()

    def forward(self, label, scope, token, train=True):
        rep = self.encoder(token)
        if train:
            bag_rep = []
            for i in range(len(scope)):
                bag_mat = rep[scope[i][0]:scope[i][1]]
                logit = self.fc(bag_mat)
                bag_rep.append(bag_mat[logit[:, label[i]].argmax()])
            return self.fc(torch.stack(bag_rep, 0))
        else:
            bag_logits = []
            for i in range(len(scope)):
                bag_logits.append(self.fc(rep[scope[i][0]:scope[i][1]]).max(0)[0])
            return torch.stack(bag_logits, 0)
"""

TRAIN_LOOP_LINE = 25  # `logit = self.fc(bag_mat)` under `if train:`
EVAL_LOOP_LINE = 31  # `bag_logits.append(self.fc(...))` in the `else:` branch


def _lines(flag: str):
    return sorted(d.line for d in check(textwrap.dedent(SRC).format(flag=flag), ["GL403"]) if d.code == "GL403")


def test_training_branch_dead_on_the_eval_path_is_not_reported():
    assert _lines("train=False") == [EVAL_LOOP_LINE]


def test_training_branch_dead_with_the_flag_passed_positionally():
    assert _lines("False") == [EVAL_LOOP_LINE]


def test_flag_unknown_at_the_call_keeps_both_loops():
    assert _lines("train=bag is None") == [TRAIN_LOOP_LINE, EVAL_LOOP_LINE]
