"""GL301 (fixtures51, thu-coai/CDial-GPT#20): a DataParallel wrap made in a process that joined a
process group, in the same function after `init_process_group` and under the same tests (`if
args.distributed:`), is one rank of a distributed run whose model is never synchronised: reported
without a fix. Hard negatives: the DataParallel of the non-distributed branch (`else:`), a wrap
under a different test than the init's, an unguarded init and wrap (a script may join a process
group for its collectives alone: test_dist_analysis keeps that silent), and a file that also wraps
in DistributedDataParallel stay silent."""

from __future__ import annotations

from fixture_support import check

SRC = """import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DataParallel


def train(args):
    if args.distributed:
        dist.init_process_group(backend="gloo", init_method="env://")
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    WRAP
    for x in [torch.randn(8, 4)]:
        model(x).sum().backward()
        optimizer.step()


class Args:
    distributed = True
    local_rank = 0


train(Args())
"""

SAME_TEST = """if args.distributed:
        model = DataParallel(model, device_ids=[args.local_rank], output_device=args.local_rank)"""

ELSE_BRANCH = """if args.distributed:
        pass
    else:
        model = DataParallel(model)"""

OTHER_TEST = """if torch.cuda.device_count() > 1:
        model = DataParallel(model)"""

UNGUARDED = """model = DataParallel(model)"""

WITH_DDP = """if args.distributed:
        model = nn.parallel.DistributedDataParallel(model)
    if args.distributed:
        model = DataParallel(model)"""


def _lines(text):
    return [d.line for d in check(text, {"GL301"}) if d.code == "GL301"]


def test_dataparallel_under_the_init_test_is_reported():
    diags = [d for d in check(SRC.replace("WRAP", SAME_TEST), {"GL301"}) if d.code == "GL301"]
    assert [d.line for d in diags] == [13]
    assert "init_process_group` on line 9" in diags[0].message and diags[0].fix is None


def test_dataparallel_of_the_else_branch_is_silent():
    assert _lines(SRC.replace("WRAP", ELSE_BRANCH)) == []


def test_dataparallel_under_another_test_is_silent():
    assert _lines(SRC.replace("WRAP", OTHER_TEST)) == []


def test_unguarded_init_and_wrap_stay_silent():
    text = SRC.replace("    if args.distributed:\n        dist.init_process_group", "    dist.init_process_group")
    assert "    dist.init_process_group" in text
    assert _lines(text.replace("WRAP", UNGUARDED)) == []


def test_file_with_a_ddp_wrap_is_silent():
    assert _lines(SRC.replace("WRAP", WITH_DDP)) == []
