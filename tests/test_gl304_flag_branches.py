"""GL304 and a wrap guarded by a plain flag (ssl-wearables#2's repair, as real checkpoint code writes
it): `if multi_gpu: model = nn.DataParallel(model)` and later `if multi_gpu: torch.save(
model.module.state_dict(), p) else: torch.save(model.state_dict(), p)`. Where the `else` save runs
the same unchanged flag kept the wrap from running: no finding there. The same branch, an
unconditional save, or a flag rebound in between are still reported."""

from __future__ import annotations

import textwrap

from fixture_support import check

SRC = """
import torch
import torch.nn as nn


def main(multi_gpu, path):
    model = nn.Linear(4, 2)
    if multi_gpu:
        model = nn.DataParallel(model)
    REBIND
    for epoch in range(2):
        model(torch.randn(2, 4)).sum().backward()
        SAVE
"""


def _lines(save: str, rebind: str = "pass") -> list[int]:
    src = textwrap.dedent(SRC).replace("REBIND", rebind)
    save = textwrap.indent(textwrap.dedent(save).strip("\n"), " " * 8).lstrip()
    src = src.replace("SAVE", save)
    return [d.line for d in check(src, {"GL304"}) if d.code == "GL304"]


def test_save_in_the_branch_where_the_flag_kept_the_wrap_from_running_is_silent():
    assert _lines("""
        if multi_gpu:
            torch.save(model.module.state_dict(), path)
        else:
            torch.save(model.state_dict(), path)
    """) == []


def test_negated_flag_branch_is_silent():
    assert _lines("""
        if not multi_gpu:
            torch.save(model.state_dict(), path)
    """) == []


def test_save_in_the_same_branch_as_the_wrap_is_reported():
    assert _lines("""
        if multi_gpu:
            torch.save(model.state_dict(), path)
    """) == [14]


def test_unconditional_save_is_reported():
    assert _lines("torch.save(model.state_dict(), path)") == [13]


def test_flag_rebound_after_the_wrap_is_reported():
    assert _lines("""
        if multi_gpu:
            torch.save(model.module.state_dict(), path)
        else:
            torch.save(model.state_dict(), path)
    """, rebind="multi_gpu = False") == [16]


def test_another_wrap_in_the_same_if_elif_chain_is_reported():
    # mtl.py's own shape: `if distributed: DDP(...) elif multi_gpu: DataParallel(...)`; the `else`
    # of a later `if multi_gpu:` may hold the DDP wrapper
    src = textwrap.dedent("""
    import torch
    import torch.nn as nn


    def main(distributed, multi_gpu, path):
        model = nn.Linear(4, 2)
        if distributed:
            model = nn.parallel.DistributedDataParallel(model)
        elif multi_gpu:
            model = nn.DataParallel(model)
        for epoch in range(2):
            model(torch.randn(2, 4)).sum().backward()
            if multi_gpu:
                torch.save(model.module.state_dict(), path)
            else:
                torch.save(model.state_dict(), path)
    """)
    assert [d.line for d in check(src, {"GL304"}) if d.code == "GL304"] == [17]
