"""GL404 on a model put in eval mode right before the loop that trains it (PRECISION24 #4,
xuguodong03/SSKD student.py: each epoch of the teacher's self-supervision head starts with
`t_model.eval()`, a few meters, then `for x, _ in train_loader: ... t_model(x, bb_grad=False) ...
loss.backward(); t_optimizer.step()`, and ends with `t_model.eval()` before validation). The
teacher is trained in eval mode on purpose (frozen batch-norm statistics of a detached backbone,
only its linear head learns). An `eval()` followed by an evaluation and then training, the slip the
rule is about, is still reported, and so is an `eval()` with a call of the model in between."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import time

import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.Linear(8, 4))
optimizer = torch.optim.SGD(model[2].parameters(), lr=0.1)
train_loader = [(torch.randn(6, 8), torch.randint(0, 4, (6,))) for _ in range(3)]
val_loader = train_loader[:1]
for epoch in range(2):
    model.eval()
    BETWEEN
    start = time.time()
    for x, y in train_loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        for x, y in val_loader:
            print(model(x).argmax(1))
'''


def _lines(between="pass"):
    return [f.line for f in check(TEXT.replace("BETWEEN", between), {"GL404"}) if f.code == "GL404"]


def test_eval_right_before_the_training_loop_is_a_choice():
    assert _lines() == []


def test_eval_then_an_evaluation_then_training_is_still_reported():
    between = "with torch.no_grad():\n        print(model(val_loader[0][0]).sum())"
    assert _lines(between) == [11, 20]


def test_eval_then_a_model_call_then_training_is_still_reported():
    assert _lines("print(model)") == [11, 19]
