"""The flow engine: an item of a loop over data of unknown kind, moved to an accelerator, is on
the accelerator (a training function of a library file whose loader is a parameter: nothing in
the file says what the loader yields). Checked through GL112 (model-not-moved) and the engine's
values; a parameter or attribute moved with `.to()` stays unknown (it may be a module)."""

from __future__ import annotations

import textwrap

import libcst as cst

from gpulint.engine import Options, run_text
from gpulint.model import ScriptModel
from gpulint.registry import Registry


def codes(src: str, select=("GL112", "GL116", "GL101")) -> list[tuple[str, int]]:
    reg = Registry.load()
    rules = [reg.by_code(c)() for c in select]
    res = run_text("t.py", textwrap.dedent(src), rules, Options())
    return sorted((d.code, d.line) for d in res.diagnostics)


def value(src: str, code: str):
    src = textwrap.dedent(src)
    m = ScriptModel(cst.parse_module(src), src)
    found = [n for n in m.nodes if isinstance(n, cst.BaseExpression) and m.module.code_for_node(n) == code]
    return m.value_of(found[-1])


# the shape of a `train.py` whose `train()` a separate `main.py` calls (never called here)
LIBRARY_TRAIN = """
import torch
import torch.nn as nn


def train(loader, epochs):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(3, 2)
    opt = torch.optim.Adam(model.parameters())
    for epoch in range(epochs):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
"""


def test_uncalled_training_function_model_never_moved():
    assert codes(LIBRARY_TRAIN) == [("GL112", 13)]


def test_uncalled_trainer_class_model_never_moved():
    src = """
    import torch
    import torch.nn as nn


    class Trainer:
        def __init__(self, lr):
            self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            self.model = nn.Linear(3, 2)
            self.opt = torch.optim.SGD(self.model.parameters(), lr=lr)

        def train(self, loader):
            for batch in loader:
                inputs = batch[0].to(self.device)
                out = self.model(inputs)
    """
    assert codes(src) == [("GL112", 15)]


def test_moved_model_is_silent():
    assert codes(LIBRARY_TRAIN.replace("model = nn.Linear(3, 2)", "model = nn.Linear(3, 2).to(device)")) == []


def test_model_parameter_is_silent():
    # the model comes from the caller: where it is is not known here
    src = """
    import torch


    def train(model, loader, device):
        for x, y in loader:
            x = x.to(device)
            out = model(x)
    """
    assert codes(src) == []


def test_cpu_device_is_silent():
    assert codes(LIBRARY_TRAIN.replace('torch.device("cuda" if torch.cuda.is_available() else "cpu")',
                                       'torch.device("cpu")')) == []


def test_item_value_and_non_items_stay_unknown():
    src = """
    import torch


    def f(loader, model, device):
        for x in loader:
            a = x.to(device)
            b = model.to(device)
            c = x[0].cuda()
    """
    assert value(src, "x.to(device)").dev.where == "acc"
    assert value(src, "x.to(device)").kind is None  # what it is stays unknown
    assert value(src, "x[0].cuda()").dev.where == "acc"
    # a parameter of a function the file never calls, moved: there, whatever it is (a module
    # or a tensor; its kind stays unknown: calling it makes it a module, see test_flow_values18)
    assert value(src, "model.to(device)").dev.where == "acc"
    assert value(src, "model.to(device)").kind is None
    # a parameter the file's calls give: its value comes from those calls (here a module the
    # call site builds), not from the move of an unknown value
    called = src + "\n\n    f([torch.zeros(2)], torch.nn.Linear(2, 2), torch.device('cpu'))\n"
    assert value(called, "model.to(device)").kind == "module"
