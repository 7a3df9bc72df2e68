"""GL120 and a CUDA default set after the shuffling loaders were built and used up (a tutorial
notebook that demonstrates `set_default_tensor_type` in a late cell, chenyuntc/pytorch-book
Chapter5): no loader draws under the CUDA default, so the rule stays silent. Any use of a loader
the file does not show to be over before the setter keeps the finding."""

from __future__ import annotations

from fixture_support import check

HEAD = """
import torch
from torch.utils.data import DataLoader, TensorDataset

ds = TensorDataset(torch.randn(16, 4), torch.randn(16))
loader = DataLoader(ds, batch_size=4, shuffle=True)
"""
SET = 'torch.set_default_tensor_type("torch.cuda.FloatTensor")\n'


def lines(body: str) -> list[int]:
    return [d.line for d in check(HEAD + body, {"GL120"}) if d.code == "GL120"]


def test_loop_and_one_batch_before_the_setter_are_silent():
    body = "for x, y in loader:\n    print(x.sum())\nb = next(iter(loader))\nprint(len(loader))\n" + SET
    assert lines(body) == []


def test_an_iterator_used_up_before_the_setter_is_silent():
    body = "it = iter(loader)\nx, y = next(it)\n" + SET
    assert lines(body) == []


def test_enumerate_loop_before_the_setter_is_silent():
    body = "for i, (x, y) in enumerate(loader):\n    print(i)\n" + SET
    assert lines(body) == []


def test_a_loop_after_the_setter_fires():
    body = "for x, y in loader:\n    pass\n" + SET + "for x, y in loader:\n    pass\n"
    assert lines(body) == [9]


def test_an_iterator_drawn_from_after_the_setter_fires():
    body = "it = iter(loader)\nx, y = next(it)\n" + SET + "x, y = next(it)\n"
    assert lines(body) == [9]


def test_a_loader_handed_to_a_function_fires():
    body = "def train(dl):\n    for x, y in dl:\n        pass\ntrain(loader)\n" + SET
    assert lines(body) == [11]


def test_a_setter_inside_the_epoch_loop_fires():
    body = "for epoch in range(2):\n    for x, y in loader:\n        pass\n    " + SET
    assert lines(body) == [10]


def test_a_loader_read_inside_a_function_fires():
    body = "def peek():\n    return next(iter(loader))\npeek()\n" + SET
    assert lines(body) == [10]
