"""GL108's advice writes the move the fix would make, or the model's own move when there is no fix:
never a `device` name the file does not have."""

from __future__ import annotations

from fixture_support import check

CUDA_UNDER_FLAG = '''import torch
import torch.nn as nn

use_cuda = torch.cuda.is_available()
net = nn.Linear(4, 3)
weight = torch.tensor([1.0, 2.0, 3.0])
criterion = nn.CrossEntropyLoss(weight=weight)
if use_cuda:
    net.cuda()
x, t = torch.randn(8, 4), torch.randint(0, 3, (8,))
if use_cuda:
    x, t = x.cuda(), t.cuda()
loss = criterion(net(x), t)
'''

DEVICE_VARIABLE = '''import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Linear(4, 3).to(device)
criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 3.0]))
loss = criterion(net(torch.randn(8, 4).to(device)), torch.randint(0, 3, (8,)).to(device))
'''


def test_no_device_variable_the_advice_repeats_the_models_cuda_move():
    found = [d for d in check(CUDA_UNDER_FLAG, {"GL108"}) if d.code == "GL108"]
    assert [d.line for d in found] == [7]
    assert "`nn.CrossEntropyLoss(...).cuda()`" in found[0].message
    assert "device)" not in found[0].message


def test_with_a_device_variable_the_advice_is_the_fix():
    found = [d for d in check(DEVICE_VARIABLE, {"GL108"}) if d.code == "GL108"]
    assert [d.line for d in found] == [6]
    assert "`nn.CrossEntropyLoss(...).to(device)`" in found[0].message
    assert found[0].fix is not None
