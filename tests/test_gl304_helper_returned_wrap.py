"""GL304's conditional round trip when the wrapper comes back from a loader helper
(aks2203/deep-thinking#5): `load_model_from_checkpoint` wraps the net in DataParallel when
`device == "cuda"` and loads the checkpoint back into it; the caller unpacks the returned net and
saves `{"net": net.state_dict()}`. No binding of `net` in the caller is a wrap, only the flow
engine follows the returned value to it."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

SRC = """
import torch
import torch.nn as nn

device = "cuda" if torch.cuda.is_available() else "cpu"


def load_model_from_checkpoint(path):
    net = nn.Linear(4, 2).to(device)
    {wrap}
    if path is not None:
        state = torch.load(path, map_location=device)
        net.load_state_dict(state["net"])
    return net, 0


def main(path=None):
    net, start = load_model_from_checkpoint(path)
    for epoch in range(start, 2):
        state = {{"net": net.state_dict(), "epoch": epoch}}
        torch.save(state, "ckpt.pth")
"""


def _lines(wrap: str):
    src = textwrap.dedent(SRC.format(wrap=wrap))
    return [d.line for d in check(src, {"GL304"}) if d.code == "GL304"], src


def test_machine_dependent_wrap_returned_by_loader_helper():
    lines, src = _lines('if device == "cuda":\n        net = nn.DataParallel(net)')
    assert lines == [22]
    out = fix(src, {"GL304"}, unsafe=True).text
    assert 'getattr(net, "module", net).load_state_dict(state["net"])' in out
    assert '{"net": getattr(net, "module", net).state_dict(), "epoch": epoch}' in out


def test_unconditional_wrap_returned_by_loader_helper_is_left_alone():
    lines, _ = _lines("net = nn.DataParallel(net)")
    assert lines == []


def test_wrap_chosen_by_a_flag_returned_by_loader_helper_is_left_alone():
    lines, _ = _lines("if path == 'dp':\n        net = nn.DataParallel(net)")
    assert lines == []
