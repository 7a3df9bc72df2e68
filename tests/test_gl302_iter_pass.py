"""GL302's fix when each epoch re-creates the loader's iterator: `for epoch in range(...):
batches = iter(loader)` as a statement of the epoch loop's body is one pass per epoch, so
`set_epoch(epoch)` goes first in the loop (distributed-training-guide#40, whose epoch is
`state["epoch"]`); a `StopIteration` refill inside a step loop has no epoch number: no fix."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

HEAD = """
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
data = TensorDataset(torch.randn(32, 4))
loader = DataLoader(data, batch_size=4, sampler=DistributedSampler(data))
"""


def _fixed(body: str) -> tuple[list[int], str]:
    src = textwrap.dedent(HEAD) + textwrap.dedent(body)
    lines = [d.line for d in check(src, {"GL302"}) if d.code == "GL302"]
    out = fix(src, {"GL302"}, unsafe=False).text
    return lines, out[len(textwrap.dedent(HEAD)):]


def test_state_dict_epoch_with_iter_per_epoch_gets_the_fix():
    lines, out = _fixed("""
        state = {"epoch": 0}
        for state["epoch"] in range(state["epoch"], 3):
            batches = iter(loader)
            for _ in range(len(loader)):
                next(batches)
        """)
    assert lines == [9]
    assert 'for state["epoch"] in range(state["epoch"], 3):\n    loader.sampler.set_epoch(state["epoch"])\n    batches = iter(loader)' in out


def test_plain_epoch_with_iter_per_epoch_gets_the_fix():
    lines, out = _fixed("""
        for epoch in range(3):
            batches = iter(loader)
            next(batches)
        """)
    assert lines == [9]
    assert "for epoch in range(3):\n    loader.sampler.set_epoch(epoch)\n    batches = iter(loader)" in out


def test_stop_iteration_refill_in_a_step_loop_gets_no_fix():
    lines, out = _fixed("""
        batches = iter(loader)
        for step in range(20):
            try:
                x = next(batches)
            except StopIteration:
                batches = iter(loader)
                x = next(batches)
        """)
    assert lines == [9]
    assert "set_epoch" not in out
