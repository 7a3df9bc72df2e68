"""Engine reach, seventeenth session: the fastai-course Runner of deep_tabular_augmentation#11
(fixtures23's F23-1 in the report's own shape).

- a `self` attribute set, used by the methods this one calls, then dropped (`self.learn = None` at
  the end of `fit`) holds, for the other methods, the earlier value or None;
- `data.train_dl` of a plain holder of loaders (a DataBunch whose `__init__` alone stores them) is
  the loader every construction handed it;
- `f(*xs)` with a sequence of known length binds its items to the next parameters in order;
- GL101 reports a batch met by the model in a callee when the recorded call hands the callee the
  loader itself (`self.all_batches(self.data.train_dl)`) and a function down the chain iterates it.
"""

from __future__ import annotations

import textwrap

import libcst as cst
import libcst.matchers as M

from gpulint.engine import Options, run_text
from gpulint.model import ScriptModel
from gpulint.registry import Registry

RUNNER = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class DataBunch:
    def __init__(self, train_dl, valid_dl):
        self.train_dl, self.valid_dl = train_dl, valid_dl


class Learner:
    def __init__(self, model, data):
        self.model, self.data = model, data


class Runner:
    @property
    def model(self):
        return self.learn.model

    @property
    def data(self):
        return self.learn.data

    def one_batch(self, xb, yb):
        self.xb, self.yb = xb, yb
        self.pred = self.model(self.xb)
        self.loss = (self.pred - self.yb).pow(2).mean()

    def all_batches(self, dl):
        for xb, yb in dl:
            {move}
            self.one_batch(xb, yb)

    def fit(self, epochs, learn):
        self.learn = learn
        for epoch in range(epochs):
            self.all_batches(self.data.train_dl)
        {reset}


def get_dls(train_ds, valid_ds, bs):
    return DataLoader(train_ds, batch_size=bs, shuffle=True), DataLoader(valid_ds, batch_size=bs)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
ds = TensorDataset(torch.randn(16, 3), torch.randn(16, 1))
data = DataBunch({bunch})
model = nn.Linear(3, 1).to(device)
learn = Learner(model, data)
Runner().fit(2, learn)
"""


def gl101(src: str) -> list[int]:
    rule = Registry.load().by_code("GL101")()
    return [d.line for d in run_text("train.py", textwrap.dedent(src), [rule], Options()).diagnostics]


def runner(move="pass", reset="self.learn = None", bunch="*get_dls(ds, ds, 4)") -> str:
    return RUNNER.format(move=move, reset=reset, bunch=bunch)


def value_at(src: str, code: str, pick: int = 0):
    src = textwrap.dedent(src)
    mod = cst.parse_module(src)
    m = ScriptModel(mod, src)
    hits = [n for n in m.flow.values if mod.code_for_node(n) == code]
    assert hits, code
    return m.flow.values[hits[pick]]


def test_the_runner_reports_the_unmoved_batch_where_it_meets_the_model():
    assert gl101(runner()) == [28]


def test_a_reset_to_none_keeps_the_earlier_value_for_other_methods():
    # without the reset the runner was already followed; with it, `self.learn` was None for them
    assert gl101(runner(reset="pass")) == [28]
    src = runner()
    assert value_at(src, "self.model", -1).kind == "module"


def test_loaders_of_a_holder_and_star_arguments():
    v = value_at(runner(), "self.data.train_dl")
    assert v.kind == "loader" and v.elem is not None and v.elem.dev is not None and v.elem.dev.is_host
    # the loaders handed one by one give the same
    assert gl101(runner(bunch="*(DataLoader(ds, batch_size=4), DataLoader(ds, batch_size=4))")) == [28]
    assert gl101(runner(bunch="DataLoader(ds, batch_size=4), DataLoader(ds, batch_size=4)")) == [28]


def test_hard_negatives():
    # the batches are moved where they are bound
    assert gl101(runner(move="xb, yb = xb.to(device), yb.to(device)")) == []
    # a sequence of unknown length: nothing is bound, nothing is known
    assert gl101(runner(bunch="*sys_loaders")) == []
    # the holder's loader is replaced from outside: which loader it holds is not known
    src = runner().replace("learn = Learner(model, data)",
                           "data.train_dl = make_device_loader()\nlearn = Learner(model, data)")
    assert gl101(src) == []


def test_star_arguments_of_known_length_bind_in_order():
    src = """
    import torch

    def pair():
        return torch.zeros(2), torch.ones(2).cuda()

    def add(a, b):
        return a + b

    add(*pair())
    """
    assert value_at(src, "a + b").kind == "tensor"
    rule = Registry.load().by_code("GL116")()
    found = run_text("train.py", textwrap.dedent(src), [rule], Options()).diagnostics
    assert [d.line for d in found] == [8]
    # more items than parameters: not bound
    assert value_at(src.replace("def add(a, b)", "def add(a)").replace("a + b", "a + 1"), "a + 1").kind is None
