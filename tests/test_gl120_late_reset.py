"""GL120 and a default-type reset: one made before the shuffling loader is iterated undoes the
CUDA default for it (silent); one made after the loop, at the end of the script, comes too late
(the tenth batch's note on RTFM: the loader ran while CUDA was the default)."""

from __future__ import annotations

from fixture_support import check

SRC = """
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.set_default_tensor_type("torch.cuda.FloatTensor")
ds = TensorDataset(torch.randn(16, 4), torch.randn(16))
loader = DataLoader(ds, batch_size=4, shuffle=True)
BEFORE
for x, y in loader:
    print(x.sum())
AFTER
"""
RESET = 'torch.set_default_tensor_type("torch.FloatTensor")'


def lines(before: str, after: str) -> list[int]:
    src = SRC.replace("BEFORE", before).replace("AFTER", after)
    return [d.line for d in check(src, {"GL120"}) if d.code == "GL120"]


def test_a_reset_after_the_training_loop_comes_too_late():
    assert lines("pass", RESET) == [5]


def test_a_reset_before_the_loop_is_silent():
    assert lines(RESET, "pass") == []
