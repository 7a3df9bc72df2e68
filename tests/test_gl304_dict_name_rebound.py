"""GL304 through a checkpoint dict held in a name that has another binding (StyleGAN2_PyTorch#6's
train.py: `state = torch.load(opts.resume)` in the resume branch, then `state = {"G":
G.state_dict(), "D": D.state_dict(), ...}` and `torch.save(state, path)` each epoch after `G =
DataParallel(G)`): the binding that reaches the save on every path is the dict. Hard negatives: the
dict holds the unwrapped modules' state, and a dict bound only in a branch the save is not in
(another binding may reach the save) stays silent."""

from __future__ import annotations

from fixture_support import check, fix

SRC = """import os

import torch
import torch.nn as nn


def main(resume, path):
    G = nn.Linear(4, 4)
    if os.path.exists(resume):
        state = torch.load(resume, map_location="cpu")
        G.load_state_dict(state["G"])
    if torch.cuda.device_count() > 1:
        G = nn.DataParallel(G)
    opt = torch.optim.SGD(G.parameters(), lr=0.1)
    for ep in range(2):
        opt.zero_grad()
        G(torch.randn(2, 4)).sum().backward()
        opt.step()
        BIND
        torch.save(state, path)


main("missing.pt", "latest.pth")
"""


def _lines(text):
    return [d.line for d in check(text, {"GL304"}) if d.code == "GL304"]


def test_dict_rebound_after_a_load_is_reported_at_the_save():
    text = SRC.replace("BIND", 'state = {"G": G.state_dict(), "start_epoch": ep}')
    assert _lines(text) == [20]
    out = fix(text, {"GL304"}, unsafe=True).text
    assert 'state = {"G": getattr(G, "module", G).state_dict(), "start_epoch": ep}' in out


def test_dict_of_the_unwrapped_module_is_silent():
    text = SRC.replace("BIND", 'state = {"G": getattr(G, "module", G).state_dict(), "start_epoch": ep}')
    assert _lines(text) == []


def test_dict_bound_in_another_branch_is_silent():
    text = SRC.replace("BIND", 'if ep == 1:\n            state = {"G": G.state_dict(), "start_epoch": ep}')
    assert _lines(text) == []
