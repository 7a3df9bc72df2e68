"""GL113's distributed advice names what makes the file distributed, and where: the site itself
may sit on a path that runs in one process (transformers' training_args single-process branch)."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.distributed as dist


def setup(distributed):
    if distributed:
        dist.init_process_group("nccl")
        return None
    return torch.device("cuda:0")
'''


def test_the_distributed_advice_names_the_call_and_its_line():
    found = [d for d in check(TEXT, {"GL113"}) if d.code == "GL113"]
    assert [d.line for d in found] == [9]
    assert "`init_process_group` on line 7" in found[0].message
    assert "under DDP" not in found[0].message
