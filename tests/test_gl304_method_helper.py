"""GL304 through a method of the file that saves its parameter (3DMPPE_POSENET#41:
`self.save_model({"network": self.model.state_dict(), ...}, epoch)` with
`save_model(self, state, epoch): torch.save(state, path)`), reported at the call with the wrapper's
state dict; silent when the state comes from an unwrapped module."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

SRC = """
import torch
import torch.nn as nn


class Trainer:
    def __init__(self):
        self.model = nn.DataParallel(nn.Linear(4, 2))
        self.head = nn.Linear(2, 2)

    def save_model(self, state, epoch):
        torch.save(state, "snapshot_%d.pth" % epoch)

    def train(self):
        for epoch in range(2):
            self.save_model({"epoch": epoch, "network": self.SAVED.state_dict()}, epoch)
"""


def _src(saved: str) -> str:
    return textwrap.dedent(SRC).replace("SAVED", saved)


def test_wrapper_state_saved_through_a_method_is_reported_at_the_call():
    src = _src("model")
    assert [d.line for d in check(src, {"GL304"}) if d.code == "GL304"] == [16]
    out = fix(src, {"GL304"}, unsafe=True).text
    assert '"network": getattr(self.model, "module", self.model).state_dict()' in out


def test_unwrapped_module_state_saved_through_a_method_is_silent():
    assert [d for d in check(_src("head"), {"GL304"}) if d.code == "GL304"] == []
