"""GL305: a read in the `else:` of an `if` on the same side-effect-free test as the `if` that
wraps the model (or the same flag, not re-bound in between) is on the unwrapped path (the fix given
in ultralytics/yolov5#90). A different test, a re-bound flag or a test calling a function of the
file keeps the finding."""

from __future__ import annotations

from fixture_support import check

HEAD = '''import torch
import torch.distributed as dist
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(x)


def use_ddp(d):
    return d.type != "cpu"


def train(device):
    model = Model().to(device)
'''

SAME = HEAD + '''    if device.type != "cpu" and torch.cuda.device_count() > 1 and dist.is_available():
        model = nn.parallel.DistributedDataParallel(model)
    print("wrapped")
    if device.type != "cpu" and torch.cuda.device_count() > 1 and dist.is_available():
        w = model.module.head.weight
    else:
        w = model.head.weight
    return w
'''

FLAG = HEAD + '''    ddp = device.type != "cpu" and torch.cuda.device_count() > 1
    if ddp:
        model = nn.parallel.DistributedDataParallel(model)
    REBIND
    if ddp:
        w = model.module.head.weight
    else:
        w = model.head.weight
    return w
'''


def _lines(text):
    return [d.line for d in check(text, {"GL305"}) if d.code == "GL305"]


def test_same_test_as_the_wrap_is_the_unwrapped_path():
    assert _lines(SAME) == []


def test_same_flag_not_rebound_is_the_unwrapped_path():
    assert _lines(FLAG.replace("REBIND", "pass")) == []


def test_flag_rebound_in_between_keeps_the_finding():
    assert _lines(FLAG.replace("REBIND", "ddp = False")) == [28]


def test_other_test_keeps_the_finding():
    text = SAME.replace('if device.type != "cpu" and torch.cuda.device_count() > 1 and dist.is_available():\n'
                        '        model = nn', 'if torch.cuda.device_count() > 1:\n        model = nn', 1)
    assert _lines(text) == [27]


def test_test_calling_a_function_of_the_file_keeps_the_finding():
    text = SAME.replace('device.type != "cpu" and torch.cuda.device_count() > 1 and dist.is_available()', "use_ddp(device)")
    assert _lines(text) == [27]
