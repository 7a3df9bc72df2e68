"""AmpFacts: `torch.autocast(device_type=self.device.type, ...)` where `self.device` is a
constructor's device argument (oumi-ai/oumi#342's trainer) may be CUDA: the flow engine's device
value of `self.device` decides, instead of "cannot tell"."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SRC = """
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model, device):
        self.device = device
        self.model = model.to(device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def train(self, data):
        for x, y in data:
            self.optimizer.zero_grad()
            with torch.autocast(device_type=self.device.type, dtype=torch.float16):
                loss = ((self.model(x.to(self.device)) - y.to(self.device)) ** 2).mean()
            loss.backward()
            self.optimizer.step()


device = DEVICE
data = [(torch.randn(4, 4), torch.randn(4, 1))]
Trainer(nn.Linear(4, 1), device).train(data)
"""


def codes(src):
    reg = Registry.load()
    res = run_text("t.py", textwrap.dedent(src), [reg.by_code("GL201")()], Options())
    return [(d.code, d.line) for d in res.diagnostics]


def test_float16_autocast_on_a_configured_device_attribute():
    src = SRC.replace("DEVICE", 'torch.device("cuda" if torch.cuda.is_available() else "cpu")')
    assert codes(src) == [("GL201", 15)]


def test_bfloat16_is_silent():
    src = SRC.replace("DEVICE", 'torch.device("cuda" if torch.cuda.is_available() else "cpu")')
    assert codes(src.replace("torch.float16", "torch.bfloat16")) == []


def test_cpu_device_attribute_is_silent():
    assert codes(SRC.replace("DEVICE", 'torch.device("cpu")')) == []


STORED = """
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.amp = torch.autocast(device_type="cuda", dtype=torch.float16)

    def train(self, data):
        for x, y in data:
            self.optimizer.zero_grad()
            with self.amp:
                loss = ((self.model(x.to(self.device)) - y.to(self.device)) ** 2).mean()
            loss.backward()
            self.optimizer.step()
"""


def test_autocast_context_kept_in_an_attribute():
    # oumi-ai/oumi#342's second gap: the context is made in __init__ and entered in a method
    assert codes(STORED) == [("GL201", 16)]


def test_autocast_context_kept_in_an_attribute_bfloat16_is_silent():
    assert codes(STORED.replace("torch.float16", "torch.bfloat16")) == []


def test_attribute_rebound_elsewhere_is_not_followed():
    src = STORED.replace("    def train(self, data):", "    def eval_mode(self):\n        self.amp = None\n\n    def train(self, data):")
    assert codes(src) == []
