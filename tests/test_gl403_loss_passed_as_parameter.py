"""GL403 on an evaluation function that receives its loss modules as parameters (laiguokun/LSTNet
main.py:14-33, https://github.com/laiguokun/LSTNet: `evaluate(data, X, Y, model, evaluateL2,
evaluateL1, batch_size)` with `evaluateL2 = nn.MSELoss(size_average=False)`, moved by
`evaluateL2 = evaluateL2.cuda()`). The loop is reported once, at the model's call; the loss calls
are not reported as models. A parameter given a model at some call site is still reported."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.nn as nn


def evaluate(X, Y, model, evaluateL2, evaluateL1):
    model.eval()
    total = 0.0
    for i in range(0, len(X), 8):
        output = model(X[i:i + 8])
        total += evaluateL2(output, Y[i:i + 8]).item()
        total += evaluateL1(output, Y[i:i + 8]).item()
    return total


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 1).to(device)
evaluateL2 = nn.MSELoss(reduction="sum")
evaluateL1 = nn.L1Loss(reduction="sum")
if torch.cuda.is_available():
    evaluateL2 = evaluateL2.cuda()
    evaluateL1 = evaluateL1.cuda()
X, Y = torch.randn(32, 4, device=device), torch.randn(32, 1, device=device)
for epoch in range(2):
    evaluate(X, Y, model, evaluateL2, SECOND)
'''


def _lines(second="evaluateL1"):
    return [f.line for f in check(TEXT.replace("SECOND", second), {"GL403"}) if f.code == "GL403"]


def test_loss_parameters_are_not_reported_as_models():
    assert _lines() == [9]


def test_parameter_given_a_model_is_reported():
    assert _lines(second="model") == [9, 11]
