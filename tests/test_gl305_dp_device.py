"""GL305: `device` is an attribute of DistributedDataParallel but not of DataParallel. A model class
of the file that defines `device` (a property here) read through a DataParallel wrapper raises
AttributeError (TraceBERT#10); through DistributedDataParallel it is the wrapper's own attribute."""

from __future__ import annotations

import textwrap

from fixture_support import check

SRC = """
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    @property
    def device(self):
        return next(self.parameters()).device

    def forward(self, x):
        return self.fc(x)


model = WRAP(Net())
x = torch.randn(2, 4).to(model.device)
ids = model.device_ids
"""


def lines(wrap: str) -> list[int]:
    src = textwrap.dedent(SRC).replace("WRAP", wrap)
    return sorted(d.line for d in check(src, {"GL305"}) if d.code == "GL305")


def test_device_through_dataparallel_is_reported():
    assert lines("nn.DataParallel") == [21]  # `x = ...to(model.device)`; `model.device_ids` is the wrapper's


def test_device_through_ddp_is_the_wrappers_own():
    assert lines("DistributedDataParallel") == []


RUNNER = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def features(self, x):
        return self.fc(x)

    def forward(self, x):
        return self.fc(x)


class Runner:
BODY

    def feats(self, x):
        return self.model.features(x)
"""


def _runner_lines(body: str, tail: str) -> list[int]:
    src = textwrap.dedent(RUNNER).replace("BODY", textwrap.indent(textwrap.dedent(body), "    ")) + textwrap.dedent(tail)
    return sorted(d.line for d in check(src, {"GL305"}) if d.code == "GL305")


def test_wrapper_made_before_the_constructor_and_stored_in_init_is_reported():
    # dnn-topology#3: `if ...: net = DataParallel(net)`, `Runner(net)`, `self.model.features(x)`
    body = """
    def __init__(self, model):
        self.model = model
    """
    tail = """
    net = Net()
    if torch.cuda.device_count() > 1:
        net = nn.DataParallel(net)
    Runner(net).feats(torch.randn(2, 4))
    """
    assert len(_runner_lines(body, tail)) == 1


def test_wrapper_attached_by_another_method_later_is_silent():
    # the attribute is also set outside __init__: a wrap passed there may come after the read
    body = """
    def __init__(self):
        self.model = Net()

    def attach(self, model):
        self.model = model
    """
    tail = """
    r = Runner()
    r.feats(torch.randn(2, 4))
    if torch.cuda.device_count() > 1:
        r.attach(nn.DataParallel(Net()))
    """
    assert _runner_lines(body, tail) == []


HELPER = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def features(self, x):
        return self.fc(x)

    def forward(self, x):
        return self.fc(x)


def switch(model, iscuda):
WRAP
    return model


iscuda = torch.cuda.is_available()
net = switch(Net(), iscuda)
x = torch.randn(2, 4)
READ
"""


def _helper_lines(wrap: str, read: str) -> list[int]:
    src = textwrap.dedent(HELPER).replace("WRAP", wrap).replace("READ", textwrap.dedent(read))
    return sorted(d.line for d in check(src, {"GL305"}) if d.code == "GL305")


def test_wrapper_returned_by_a_file_function_is_reported():
    # deep-image-retrieval#5: `net = switch_model_to_cuda(net, iscuda)`, then `net.pca`
    assert _helper_lines("    model = nn.DataParallel(model)", "f = net.features(x)") == [26]
    assert _helper_lines("    if iscuda:\n        model = nn.DataParallel(model)", "f = net.features(x)") == [27]


def test_maybe_wrapper_from_a_helper_read_in_a_branch_is_silent():
    read = """
    if iscuda:
        f = net.module.features(x)
    else:
        f = net.features(x)
    """
    assert _helper_lines("    if iscuda:\n        model = nn.DataParallel(model)", read) == []
