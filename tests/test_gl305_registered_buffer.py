"""GL305 (fixtures51, facebookresearch/multihop_dense_retrieval 96a0df6): a buffer or parameter a
class of the file registers by name (`self.register_buffer("queue", ...)`) is one of the class's
own attributes, which DataParallel does not forward: `model.queue` through the wrapper is reported
like a method. Hard negatives: the read through `model.module`, and a name registered by another
class of the file (not the wrapped one) stay silent."""

from __future__ import annotations

from fixture_support import check

SRC = """import torch
import torch.nn as nn


class Queue(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("other", torch.zeros(4, 4))


class Retriever(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 4)
        self.register_buffer("queue", torch.zeros(8, 4))
        self.register_parameter("scale", nn.Parameter(torch.ones(1)))

    def forward(self, x):
        return self.enc(x) * self.scale


model = Retriever()
if torch.cuda.device_count() > 1:
    model = nn.DataParallel(model)
q = model(torch.randn(2, 4))
READ
"""


def _lines(text):
    return [d.line for d in check(text, {"GL305"}) if d.code == "GL305"]


def test_registered_buffer_through_the_wrapper_is_reported():
    assert _lines(SRC.replace("READ", "s = q @ model.queue.t()")) == [26]


def test_registered_parameter_through_the_wrapper_is_reported():
    assert _lines(SRC.replace("READ", "s = model.scale * 2")) == [26]


def test_buffer_read_through_module_is_silent():
    assert _lines(SRC.replace("READ", "s = q @ model.module.queue.t()")) == []


def test_buffer_of_another_class_is_silent():
    assert _lines(SRC.replace("READ", "s = model.other")) == []
