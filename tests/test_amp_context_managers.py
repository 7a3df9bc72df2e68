"""Autocast entered through a context manager of the file is an autocast region at each `with`
that uses it: a class whose `__enter__` turns autocast on with `torch.set_autocast_enabled`
(lightwood's LightwoodAutocast, mindsdb/lightwood#380) or enters `torch.autocast(...)`, and a
`@contextlib.contextmanager` function or method that yields inside `with torch.autocast(...)`.
GL201 reports float16 training under it with no GradScaler, with no fix (the autocast call and its
`enabled=` are written inside the context manager, not at the `with`)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

CLASS = """
import torch
import torch.nn as nn


class MyAutocast:
    def __init__(self, enabled=True):
        self._enabled = enabled and torch.cuda.is_available()

    def __enter__(self):
        if self._enabled:
            self.prev = torch.is_autocast_enabled()
            torch.set_autocast_enabled({args})
            torch.autocast_increment_nesting()

    def __exit__(self, *exc):
        if self._enabled:
            if torch.autocast_decrement_nesting() == 0:
                torch.clear_autocast_cache()
            torch.set_autocast_enabled(self.prev)
        return False


net = nn.Linear(4, 1).cuda()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(8, 4).cuda()
    opt.zero_grad()
    with MyAutocast():
        loss = net(x).float().pow(2).mean()
    {backward}
    opt.step()
"""

ENTER_AUTOCAST = """
import torch
import torch.nn as nn


class Precision:
    def __enter__(self):
        self.ctx = torch.autocast("cuda"{dtype})
        return self.ctx.__enter__()

    def __exit__(self, *exc):
        return self.ctx.__exit__(*exc)


net = nn.Linear(4, 1).cuda()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad()
    with Precision():
        loss = net(torch.randn(8, 4).cuda()).pow(2).mean()
    loss.backward()
    opt.step()
"""

GENERATOR = """
import contextlib
import torch
import torch.nn as nn


@contextlib.contextmanager
def maybe_amp(enabled):
    if enabled:
        with torch.autocast(device_type="cuda"{dtype}):
            yield
    else:
        yield


class Trainer:
    def __init__(self):
        self.model = nn.Linear(4, 1).cuda()
        self.opt = torch.optim.Adam(self.model.parameters())

    def train_epoch(self, batches):
        self.model.train()
        for x in batches:
            self.opt.zero_grad()
            with maybe_amp(True):
                loss = self.model(x.cuda()).pow(2).mean()
            {backward}
            self.opt.step()


Trainer().train_epoch([torch.randn(8, 4) for _ in range(3)])
"""

METHOD = """
from contextlib import contextmanager
import torch
import torch.nn as nn


class Trainer:
    def __init__(self):
        self.model = nn.Linear(4, 1).cuda()
        self.opt = torch.optim.Adam(self.model.parameters())

    @contextmanager
    def amp_context(self):
        with torch.cuda.amp.autocast():
            yield

    def step(self, x):
        self.opt.zero_grad()
        with self.amp_context():
            loss = self.model(x).pow(2).mean()
        loss.backward()
        self.opt.step()


t = Trainer()
for _ in range(3):
    t.step(torch.randn(8, 4).cuda())
"""


def findings(src: str):
    rule = Registry.load().by_code("GL201")()
    return run_text("train.py", textwrap.dedent(src), [rule], Options()).diagnostics


def lines(src: str) -> list[int]:
    return [d.line for d in findings(src)]


def test_class_turning_autocast_on_is_a_region():
    # the current signature and the legacy one-argument form (CUDA)
    assert lines(CLASS.format(args='"cuda", True', backward="loss.backward()")) == [29]
    assert lines(CLASS.format(args="True", backward="loss.backward()")) == [29]
    assert lines(CLASS.format(args='"cuda", self._enabled', backward="loss.backward()")) == [29]


def test_class_region_has_no_fix():
    found = findings(CLASS.format(args='"cuda", True', backward="loss.backward()"))
    assert len(found) == 1 and found[0].fix is None


def test_class_turning_autocast_on_hard_negatives():
    # disabled, on the CPU (bfloat16 by default), a dtype set for the file, no backward, a scaler
    assert lines(CLASS.format(args='"cuda", False', backward="loss.backward()")) == []
    assert lines(CLASS.format(args='"cpu", True', backward="loss.backward()")) == []
    src = CLASS.format(args='"cuda", True', backward="loss.backward()").replace(
        "net = nn.Linear", 'torch.set_autocast_dtype("cuda", torch.bfloat16)\nnet = nn.Linear')
    assert lines(src) == []
    assert lines(CLASS.format(args='"cuda", True', backward="print(loss.item())")) == []
    src = CLASS.format(args='"cuda", True', backward="scaler.scale(loss).backward()").replace(
        "    opt.step()", "    scaler.step(opt)\n    scaler.update()").replace(
        "opt = torch.optim", "scaler = torch.amp.GradScaler('cuda')\nopt = torch.optim")
    assert lines(src) == []


def test_class_entering_autocast_is_a_region():
    assert lines(ENTER_AUTOCAST.format(dtype="")) == [19]
    assert lines(ENTER_AUTOCAST.format(dtype=", dtype=torch.bfloat16")) == []


def test_contextmanager_function_yielding_in_autocast_is_a_region():
    assert lines(GENERATOR.format(dtype="", backward="loss.backward()")) == [25]
    assert lines(GENERATOR.format(dtype=", dtype=torch.bfloat16", backward="loss.backward()")) == []
    assert lines(GENERATOR.format(dtype="", backward="print(loss.item())")) == []


def test_contextmanager_method_yielding_in_autocast_is_a_region():
    assert lines(METHOD) == [19]


def test_a_generator_that_is_no_context_manager_is_not_a_region():
    # without @contextmanager the function is a plain generator: `with gen():` is no autocast
    assert lines(METHOD.replace("    @contextmanager\n", "")) == []
    # a function that only wraps autocast around its own work (no yield inside)
    src = GENERATOR.format(dtype="", backward="loss.backward()").replace(
        "        with torch.autocast(device_type=\"cuda\"):\n            yield",
        "        with torch.autocast(device_type=\"cuda\"):\n            pass\n        yield")
    assert lines(src) == []
