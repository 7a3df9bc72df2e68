"""GL304 through a list or tuple literal bound once to a name and then saved (luping-liu/PNDM#3:
`train_state = [model.state_dict(), optim.state_dict(), epoch, step]`, `th.save(train_state, path)`
after `model = th.nn.DataParallel(model)`), reported at the save with the fix on the element;
silent when the list holds the unwrapped module's state dict or no model state at all."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

SRC = """
import torch as th
import torch.nn as nn


def train(model, path):
    model = th.nn.DataParallel(model)
    optim = th.optim.Adam(model.parameters())
    for step in range(1, 3):
        optim.zero_grad()
        model(th.randn(2, 4)).sum().backward()
        optim.step()
        train_state = OPENSAVED.state_dict(), optim.state_dict(), stepCLOSE
        th.save(train_state, path)


train(nn.Linear(4, 2), "train.ckpt")
"""


def _src(saved: str, brackets: str = "[]") -> str:
    return textwrap.dedent(SRC).replace("SAVED", saved).replace("OPEN", brackets[0]).replace("CLOSE", brackets[1])


def test_wrapper_state_in_a_saved_list_is_reported_at_the_save():
    src = _src("model")
    assert [d.line for d in check(src, {"GL304"}) if d.code == "GL304"] == [14]
    out = fix(src, {"GL304"}, unsafe=True).text
    assert 'train_state = [getattr(model, "module", model).state_dict(), optim.state_dict(), step]' in out


def test_wrapper_state_in_a_saved_tuple_is_reported_at_the_save():
    src = _src("model", "()")
    assert [d.line for d in check(src, {"GL304"}) if d.code == "GL304"] == [14]


def test_unwrapped_module_state_in_the_list_is_silent():
    assert [d for d in check(_src("model.module"), {"GL304"}) if d.code == "GL304"] == []


def test_list_without_model_state_is_silent():
    src = _src("model").replace("model.state_dict(), optim", "optim")
    assert [d for d in check(src, {"GL304"}) if d.code == "GL304"] == []
