"""GL404 through a helper that sets the mode of a list of models by a string argument
(`set_mode("eval", [pg, ee])`, clevr-iep): the branch the call's literal takes decides."""

from __future__ import annotations

import pytest
from fixture_support import check

TEXT = '''import torch
import torch.nn as nn


def set_mode(mode, models):
    for m in models:
        if mode {op} "train":
            m.train()
        else:
            m.eval()


model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.2), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    for i in range(4):
        opt.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
        if i % 2 == 0:
            {call}
'''


def gl404(op, call):
    return [(d.line, d.fix is None) for d in check(TEXT.format(op=op, call=call), {"GL404"}) if d.code == "GL404"]


@pytest.mark.parametrize("op, literal", [("==", "eval"), ("!=", "train")])
def test_the_eval_branch_taken_is_reported_at_the_call_without_fix(op, literal):
    assert gl404(op, f'set_mode("{literal}", [model])') == [(21, True)]


@pytest.mark.parametrize("op, literal", [("==", "train"), ("!=", "eval")])
def test_the_train_branch_taken_is_silent(op, literal):
    assert gl404(op, f'set_mode("{literal}", [model])') == []


def test_an_unknown_mode_is_silent():
    assert gl404("==", "set_mode(flag, [model])") == []
