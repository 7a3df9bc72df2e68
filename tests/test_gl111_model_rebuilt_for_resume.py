"""GL111 when the script first trains a moved model, then rebuilds `model = Net()` for the resume
and loads the optimizer state before `model.to(device)` (dev-solve.com/posts/3f078da's shape): the
first run's `model = Net().to(device)` moved the old object, not the rebuilt one. A rebinding that
wraps the moved model (`model = nn.DataParallel(model)`) keeps its moved parameters."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
first_opt = torch.optim.Adam(model.parameters())
torch.save({"opt": first_opt.state_dict()}, "ckpt.pth")
REBIND
optimizer = torch.optim.Adam(model.parameters())
checkpoint = torch.load("ckpt.pth", map_location="cpu")
optimizer.load_state_dict(checkpoint["opt"])
model.to(device)
'''


def codes(rebind):
    return [(f.code, f.line) for f in check(TEXT.replace("REBIND", rebind), ["GL111"])]


def test_state_loaded_before_the_rebuilt_model_is_moved():
    assert codes("model = nn.Linear(4, 2)") == [("GL111", 11)]


def test_wrapping_the_moved_model_is_silent():
    assert codes("model = nn.DataParallel(model)") == []


def test_no_rebinding_is_silent():
    assert codes("pass") == []
