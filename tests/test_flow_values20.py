"""Flow engine shapes from the sixteenth session: a base class's method dispatching to a
subclass's override, extra positional arguments taken by `*args`, and a submodule of a moved
model called through the model (chemprop's metric-as-criterion)."""

from __future__ import annotations

import textwrap

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from gpulint.engine import Options, run_text
from gpulint.model import ScriptModel
from gpulint.registry import Registry

HOST_WEIGHTS = [(14, "binary", "weights.view(-1, 1)")]


def findings(src: str, select=("GL101", "GL105", "GL112", "GL116")) -> list[tuple[str, int]]:
    reg = Registry.load()
    rules = [reg.by_code(c)() for c in select]
    res = run_text("t.py", textwrap.dedent(src), rules, Options())
    return sorted((d.code, d.line) for d in res.diagnostics)


def engine_mismatches(src: str) -> list[tuple[int, str, str]]:
    """The flow engine's own answer (GL105 also has the older class-local analysis)."""
    src = textwrap.dedent(src)
    mod = cst.parse_module(src)
    pos = MetadataWrapper(mod, unsafe_skip_copy=True).resolve(PositionProvider)
    m = ScriptModel(mod, src)
    return sorted((pos[mm.node].start.line, mm.op, mod.code_for_node(mm.host)) for mm in m.mismatches())


# chemprop's metric: the base class's `update` computes the loss with the subclass's override and
# weights it by a CPU tensor made when no weights are given
_METRIC = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Metric(nn.Module):
    def forward(self, preds, targets, weights=None):
        return self.update(preds, targets, weights)

    def update(self, preds, targets, weights=None):
        weights = torch.ones(targets.shape[0]) if weights is None else weights
        L = self._loss(preds, targets, weights)
        return (L * weights.view(-1, 1)).mean()

    def _loss(self, preds, targets, weights):
        raise NotImplementedError


class BCE(Metric):
    def _loss({params}):
        return F.binary_cross_entropy_with_logits(preds, targets, reduction="none")


class Net(nn.Module):
    def __init__(self, criterion):
        super().__init__()
        self.ffn = nn.Linear(8, 3)
        self.criterion = criterion

    def forward(self, z):
        return self.ffn(z)


device = "cuda" if torch.cuda.is_available() else "cpu"
net = Net(BCE()).to(device)
for step in range(3):
    z = torch.randn(4, 8).to(device)
    y = torch.rand(4, 3).to(device)
    loss = {call}(net(z), y)
    loss.backward()
"""


def test_override_with_star_args_called_through_the_moved_model():
    src = _METRIC.format(params="self, preds, targets, *args", call="net.criterion")
    assert engine_mismatches(src) == HOST_WEIGHTS
    assert findings(src) == [("GL105", 12)]


def test_override_with_named_parameters():
    src = _METRIC.format(params="self, preds, targets, weights", call="net.criterion")
    assert engine_mismatches(src) == HOST_WEIGHTS
    assert findings(src) == [("GL105", 12)]


def test_subclass_instance_called_directly_after_its_move():
    src = _METRIC.format(params="self, preds, targets, *args", call="crit").replace(
        "for step in range(3):", "crit = BCE().to(device)\nfor step in range(3):")
    assert engine_mismatches(src) == HOST_WEIGHTS
    assert findings(src) == [("GL105", 12)]


def test_submodule_of_a_model_left_on_the_host_is_not_placed():
    # the model is never moved: where its criterion is is not taken from it
    src = _METRIC.format(params="self, preds, targets, *args", call="net.criterion").replace(
        "net = Net(BCE()).to(device)", "net = Net(BCE())")
    assert engine_mismatches(src) == [(40, "module-host", "net")]  # the model's own mismatch only


def test_submodule_reassigned_outside_init_is_not_followed():
    # another assignment of `.criterion` anywhere in the file: what the call runs is not known
    src = _METRIC.format(params="self, preds, targets, *args", call="net.criterion").replace(
        "for step in range(3):", "net.criterion = nn.BCEWithLogitsLoss()\nfor step in range(3):")
    assert engine_mismatches(src) == []


def test_weights_given_by_the_caller_on_the_device_are_silent():
    src = _METRIC.format(params="self, preds, targets, *args", call="net.criterion").replace(
        "loss = net.criterion(net(z), y)", "loss = net.criterion(net(z), y, torch.ones(4, device=z.device))")
    assert engine_mismatches(src) == []


# jsonformer#9 / BadAgent#7: a tokenizer stand-in returns a tensor or a list depending on a string
# argument the call passes as a literal
_TOKENIZER = """
import torch
import torch.nn as nn


class Tok:
    def encode(self, text, return_tensors={default}):
        ids = [ord(c) % 16 for c in text]
        {body}


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Embedding(16, 4)
model.to(device)
x = Tok().encode("abc"{arg})
print(model(x))
"""

_TERNARY = 'return torch.tensor([ids]) if return_tensors == "pt" else ids'
_IF = 'if return_tensors == "pt":\n            return torch.tensor([ids])\n        return ids'
_IF_NE = 'if return_tensors != "pt":\n            return ids\n        return torch.tensor([ids])'


def _tok(body, arg=', return_tensors="pt"', default="None"):
    return _TOKENIZER.format(body=body, arg=arg, default=default)


def _model_call(src):
    return textwrap.dedent(src).splitlines().index("print(model(x))") + 1


def test_branch_chosen_by_a_string_literal_argument():
    for body in (_TERNARY, _IF, _IF_NE):
        assert findings(_tok(body)) == [("GL116", _model_call(_tok(body)))], body


def test_string_default_decides_too():
    src = _tok(_TERNARY, arg="", default='"pt"')
    assert findings(src) == [("GL116", _model_call(src))]


def test_other_literal_or_default_none_takes_the_list_branch():
    # `return_tensors="np"` or left to None: a list reaches the model (not a device mismatch)
    for arg in (', return_tensors="np"', ""):
        for body in (_TERNARY, _IF, _IF_NE):
            assert findings(_tok(body, arg=arg)) == [], (arg, body)


def test_calls_passing_different_literals_decide_nothing_in_the_shared_body():
    src = _tok(_IF).replace('print(model(x))', 'y = Tok().encode("abc", return_tensors="np")\nprint(model(x.to(device)))')
    assert findings(src) == []


def test_moved_tensor_after_the_literal_branch_is_silent():
    src = _tok(_TERNARY).replace("print(model(x))", "print(model(x.to(device)))")
    assert findings(src) == []


# deep_tabular_augmentation#11 (F23-1): a plain holder keeps the moved model; the loop calls it
# through the holder
_HOLDER = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Learner:
    def __init__(self, model, data):
        self.model = model
        self.data = data


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(3, 1){move}
loader = DataLoader(TensorDataset(torch.randn(32, 3), torch.randn(32, 1)), batch_size=8)
learn = Learner(model, loader)
{after}
for xb, yb in loader:
    {xmove}loss = nn.functional.mse_loss(learn.model(xb), yb)
    loss.backward()
"""


def _holder(move=".to(device)", after="", xmove=""):
    return _HOLDER.format(move=move, after=after, xmove=xmove)


def test_model_called_through_a_plain_holder():
    src = _holder()
    line = next(i for i, t in enumerate(textwrap.dedent(src).splitlines(), 1) if "learn.model(xb)" in t)
    assert findings(src) == [("GL101", line)]


def test_holder_of_a_model_moved_only_after_construction_is_silent():
    # the stored value is the host model; where it is when called is not taken from construction
    assert findings(_holder(move="", after="model.to(device)")) == []


def test_holder_attribute_assigned_elsewhere_is_silent():
    assert findings(_holder(after="learn.model = nn.Linear(3, 1)")) == []


def test_batches_moved_before_the_holder_call_are_silent():
    assert findings(_holder(xmove="xb, yb = xb.to(device), yb.to(device)\n    ")) == []


_CHOICE = """
import sys
import torch
import torch.nn as nn

use_gpu = len(sys.argv) > 1
device = {choice}
model = nn.Linear(3, 1).to(device)
x = torch.randn(2, 3)
print(model(x))
"""


def test_device_objects_chosen_by_a_flag_read_like_a_string_choice():
    # both spellings of one choice are the accelerator on a run that has one (helper rulemiss18's report)
    for choice in ('torch.device("cuda" if use_gpu else "cpu")',
                   'torch.device("cuda") if use_gpu else torch.device("cpu")'):
        assert findings(_CHOICE.format(choice=choice)) == [("GL116", 10)], choice


def test_two_host_devices_chosen_by_a_flag_are_the_host():
    assert findings(_CHOICE.format(choice='torch.device("cpu") if use_gpu else torch.device("cpu")')) == []
