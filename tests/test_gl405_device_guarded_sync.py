"""GL405 through a device test (HuguesTHOMAS/KPConv-PyTorch#22: the trainer's step ends with
`torch.cuda.synchronize(self.device)`; guarded by `if 'cuda' in self.device.type:` it still runs
every step on a GPU): a condition that only asks whether the run is on CUDA does not make the call
periodic. A periodic condition, a flag of the script, or the `else` of a device test stay silent."""

from __future__ import annotations

import textwrap

from fixture_support import check

SRC = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
profile = False
data = [(torch.randn(8, 4), torch.randn(8, 2)) for _ in range(4)]
for step, (x, y) in enumerate(data):
    x, y = x.to(device), y.to(device)
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    if TEST:
        torch.cuda.synchronize()
"""


def _lines(test: str) -> list[int]:
    src = textwrap.dedent(SRC).replace("TEST", test)
    return [d.line for d in check(src, {"GL405"}) if d.code == "GL405"]


def test_sync_under_a_cuda_device_test_is_reported():
    assert _lines("'cuda' in device.type") == [17]
    assert _lines('device.type == "cuda"') == [17]
    assert _lines("torch.cuda.is_available()") == [17]


def test_periodic_or_flag_conditions_stay_silent():
    assert _lines("step % 10 == 0") == []
    assert _lines("profile") == []
    assert _lines("'cuda' in device.type and step % 10 == 0") == []


def test_else_of_a_device_test_stays_silent():
    src = textwrap.dedent(SRC).replace("    if TEST:\n        torch.cuda.synchronize()\n",
                                       "    if device.type == 'cpu':\n        pass\n    else:\n        torch.cuda.synchronize()\n")
    assert [d.line for d in check(src, {"GL405"}) if d.code == "GL405"] == []
