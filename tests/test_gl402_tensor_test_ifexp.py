"""GL402 is silent on `acc += x.item() if hasattr(x, "item") else x` (ctallec/world-models
trainmdrnn.py:185: the MDRNN's `mse` loss is a tensor, or the number 0 when rewards are not
modelled): the `else` branch runs only for a value that is not a tensor, so nothing holds a graph.
The same test with the branches swapped (`x if hasattr(x, "item") else ...`) and a plain
`acc += x` are still reported."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.nn as nn

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
cum_mse = 0
for _ in range(3):
    pred = model(torch.randn(8, 4))
    losses = {"loss": pred.pow(2).mean(), "mse": pred.abs().mean()}
    opt.zero_grad()
    losses["loss"].backward()
    opt.step()
    ACC
print(cum_mse)
'''


def _lines(acc):
    return [f.line for f in check(TEXT.replace("ACC", acc), {"GL402"})]


def test_hasattr_item_guard_keeps_the_tensor_branch_detached():
    assert _lines("cum_mse += losses['mse'].item() if hasattr(losses['mse'], 'item') else losses['mse']") == []


def test_is_tensor_guard_keeps_the_tensor_branch_detached():
    assert _lines("cum_mse += losses['mse'].item() if torch.is_tensor(losses['mse']) else losses['mse']") == []


def test_negated_guard():
    assert _lines("cum_mse += losses['mse'] if not hasattr(losses['mse'], 'item') else losses['mse'].item()") == []


def test_tensor_in_the_guarded_branch_is_still_reported():
    assert _lines("cum_mse += losses['mse'] if hasattr(losses['mse'], 'item') else 0.0") == [13]


def test_plain_accumulation_is_still_reported():
    assert _lines("cum_mse += losses['mse']") == [13]
