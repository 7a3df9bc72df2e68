"""GL112 on `self.forward(x.to(self.device))` inside a module class: silent when the file moves an
instance of the class to a device (`bc.to(bc.device)`, a device expression the flow engine does not
evaluate; IL-Datasets#21's look-alike), still reported when the instance is never moved or is
moved to the CPU."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.nn as nn


class BC(nn.Module):
    def __init__(self):
        super().__init__()
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.policy = nn.Linear(4, 3)

    def forward(self, x):
        return self.policy(x)

    def step(self, x):
        return CALLEE(x.to(self.device))


bc = BC()
MOVE
bc.step(torch.randn(2, 4))
'''


def _found(move, callee="self.forward"):
    text = TEXT.replace("MOVE", move).replace("CALLEE", callee)
    return [d for d in check(text, {"GL112"}) if d.code == "GL112"]


def test_instance_moved_with_its_own_device_attribute():
    assert _found("bc.to(bc.device)") == []
    assert _found("bc = bc.to(bc.device)") == []
    assert _found("bc.to(bc.device)", callee="self") == []


def test_instance_never_moved_or_moved_to_cpu_still_reported():
    assert len(_found("pass")) == 1
    # put on the CPU on purpose: the input is the wrong one, reported by GL116 since the twentieth
    # session (GL112's "never moved" and its `.to(device)` advice would undo the choice; E34-4)
    for move in ('bc.to("cpu")', "bc.cpu()"):
        assert _found(move) == []
        text = TEXT.replace("MOVE", move).replace("CALLEE", "self.forward")
        assert [d.code for d in check(text, {"GL116"})] == ["GL116"]
