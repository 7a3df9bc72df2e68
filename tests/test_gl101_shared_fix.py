"""GL101 reports the model call and the loss call that receive two tensors of one
`next(iter(loader))` batch; the one edit that moves both is offered on both findings (a method
of the batch tensor, `target.flatten()`, keeps its device), so fixing leaves nothing behind."""

from __future__ import annotations

from fixture_support import check, fix

TEXT = '''import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 1).to(device)
loss_fn = nn.MSELoss()
loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 1)), batch_size=4)
x, y = next(iter(loader))
out = model(x)
loss = loss_fn(out.flatten(), y.flatten())
'''


def test_both_findings_carry_the_same_fix():
    found = [d for d in check(TEXT, {"GL101"}) if d.code == "GL101"]
    assert [d.line for d in found] == [10, 11]
    assert all(d.fix is not None for d in found)
    out = fix(TEXT, {"GL101"}, unsafe=True).text
    assert "x = x.to(device)\ny = y.to(device)\nout = model(x)" in out
    assert out.count("y = y.to(device)") == 1
    assert [d for d in check(out, {"GL101"}) if d.code == "GL101"] == []
