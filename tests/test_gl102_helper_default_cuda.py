"""GL102 reports a torch call placed on a helper's parameter whose default is `"cuda"` when no call
in the file passes another device, in a file with a CPU path (G57-2, timm's `one_hot(...,
device='cuda')`, huggingface/pytorch-image-models#1222). A caller passing the device (by keyword,
by position, or on through a parameter of its own that callers pass), a reassigned parameter, a
helper handed around as a value, or an availability-guarded call stay silent."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.nn as nn


def one_hot(x, num_classes, device="cuda"):
    BODY
    return torch.full((x.size(0), num_classes), 0.0, device=device).scatter_(1, x.view(-1, 1), 1.0)


def mixup_target(target, num_classes, device="cuda"):
    return one_hot(target, num_classes, INNER)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 3).to(device)
x = torch.randn(8, 4).to(device)
y = torch.randint(0, 3, (8,)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    loss = -(mixup_target(OUTER) * model(x).log_softmax(-1)).sum(-1).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
EXTRA
'''


def _lines(body="pass", inner="device=device", outer="y, 3", extra=""):
    text = TEXT.replace("BODY", body).replace("INNER", inner).replace("OUTER", outer).replace("EXTRA", extra)
    return [f.line for f in check(text, {"GL102"})]


def test_default_never_overridden_is_reported():
    assert _lines() == [7]


def test_inner_call_leaving_it_out_is_reported():
    assert _lines(inner="") == [7]


def test_caller_passing_the_device_by_keyword_is_silent():
    assert _lines(outer="y, 3, device=x.device") == []


def test_caller_passing_the_device_by_position_is_silent():
    assert _lines(outer="y, 3, x.device") == []


def test_inner_call_passing_another_device_is_silent():
    assert _lines(inner="device=target.device") == []


def test_reassigned_parameter_is_silent():
    assert _lines(body="device = x.device") == []


def test_helper_handed_around_is_silent():
    assert _lines(extra="helpers = {'one_hot': one_hot}") == []


def test_helper_testing_availability_is_silent():
    assert _lines(body="if not torch.cuda.is_available():\n        return torch.zeros(1)") == []
