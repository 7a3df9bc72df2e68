"""GL403: a model kept on `self` whose every stored value is frozen right after it is stored, in
another method than the evaluation loop, records no graph (tests/fixtures_pending/README.md
P34-A2, joansj/hat src/approaches/lwf.py: `train()` ends with `self.model_old =
deepcopy(self.model)`, `self.model_old.eval()`, `utils.freeze_model(self.model_old)`; `eval()`
runs `self.model_old.forward(images)` outside `no_grad`). On the base the freeze counted only in
the loop's own function or at module level. The freeze must follow each store unconditionally
(not on one branch, not after another method call), through a helper that freezes its argument
unconditionally; nothing may unfreeze the attribute or hand it to a call; otherwise the loop
stays reported."""

from __future__ import annotations

import textwrap

from fixture_support import check

SRC = """
import copy
import torch
import torch.nn as nn


def freeze_model(model):
{helper}


class Appr:
    def __init__(self, model):
        self.model, self.model_old = model, None
{init}
    def train(self, t, x):
        self.model_old = copy.deepcopy(self.model)
        self.model_old.eval()
{freeze}
{extra}
    def eval(self, batches):
        self.model.eval()
        total = 0.0
        for x in batches:
            total += self.model_old(x).sum().item()
        return total


appr = Appr(nn.Linear(4, 1))
appr.train(0, None)
print(appr.eval([torch.randn(2, 4)]))
"""

HELPER = "    for p in model.parameters():\n        p.requires_grad = False"


def _lines(freeze: str, helper: str = HELPER, init: str = "", extra: str = ""):
    text = textwrap.dedent(SRC).format(freeze=textwrap.indent(textwrap.dedent(freeze), " " * 8),
                                       helper=helper, init=init, extra=extra)
    lines = sorted(d.line for d in check(text, ["GL403"]) if d.code == "GL403")
    loop_line = next(i for i, ln in enumerate(text.splitlines(), 1) if "total += self.model_old(x)" in ln)
    return ["loop" if ln == loop_line else ln for ln in lines]


def test_freeze_helper_in_another_method():
    assert _lines("freeze_model(self.model_old)") == []


def test_inline_parameter_loop_in_another_method():
    assert _lines("for p in self.model_old.parameters():\n    p.requires_grad_(False)") == []


def test_requires_grad_false_in_another_method():
    assert _lines("self.model_old.eval().requires_grad_(False)") == []


def test_frozen_where_stored_in_init():
    init = "        self.model_old = copy.deepcopy(model).requires_grad_(False)\n"
    assert _lines("self.model_old.requires_grad_(False)", init=init) == []


def test_freeze_on_one_branch_stays_reported():
    assert _lines("if t > 0:\n    freeze_model(self.model_old)") == ["loop"]


def test_helper_that_freezes_on_one_branch_stays_reported():
    helper = "    if model is not None:\n        for p in model.parameters():\n            p.requires_grad = False"
    assert _lines("freeze_model(self.model_old)", helper=helper) == ["loop"]


def test_helper_that_does_not_freeze_stays_reported():
    helper = "    for p in model.parameters():\n        p.requires_grad = True"
    assert _lines("freeze_model(self.model_old)", helper=helper) == ["loop"]


def test_no_freeze_stays_reported():
    assert _lines("pass") == ["loop"]


def test_another_call_before_the_freeze_stays_reported():
    assert _lines("print(self.eval([]))\nfreeze_model(self.model_old)") == ["loop"]


def test_unfrozen_in_another_method_stays_reported():
    extra = "    def thaw(self):\n        self.model_old.requires_grad_(True)\n"
    assert _lines("freeze_model(self.model_old)", extra=extra) == ["loop"]


def test_stored_unfrozen_elsewhere_stays_reported():
    extra = "    def set_old(self, model):\n        self.model_old = model\n"
    assert _lines("freeze_model(self.model_old)", extra=extra) == ["loop"]


def test_handed_to_an_optimizer_stays_reported():
    extra = "    def tune(self):\n        return torch.optim.SGD(self.model_old.parameters(), lr=0.1)\n"
    assert _lines("freeze_model(self.model_old)", extra=extra) == ["loop"]


def _imported(freeze: str, imports: str):
    text = textwrap.dedent(SRC).format(freeze=" " * 8 + freeze, helper=HELPER, init="", extra="")
    text = text.replace("def freeze_model(model):\n" + HELPER + "\n", imports + "\n")
    assert "def freeze_model" not in text
    lines = sorted(d.line for d in check(text, ["GL403"]) if d.code == "GL403")
    loop_line = next(i for i, ln in enumerate(text.splitlines(), 1) if "total += self.model_old(x)" in ln)
    return ["loop" if ln == loop_line else ln for ln in lines]


def test_freeze_helper_of_another_module_by_its_name():
    # joansj/hat: `import utils` ... `utils.freeze_model(self.model_old)` (utils.py sets
    # `requires_grad = False` on every parameter)
    assert _imported("utils.freeze_model(self.model_old)", "import utils") == []
    assert _imported("freeze_model(self.model_old)", "from utils import freeze_model") == []


def test_other_imported_freeze_names_stay_reported():
    # `freeze_bn` freezes normalisation statistics, not the parameters
    assert _imported("utils.freeze_bn(self.model_old)", "import utils") == ["loop"]
    # a method of an object, not a helper of a module
    assert _imported("self.freeze_model(self.model_old)", "import utils") == ["loop"]
    # a part of the model only
    assert _imported("utils.freeze_model(self.model_old, 2)", "import utils") == ["loop"]


MIXED = """
import copy
import torch
import torch.nn as nn


def freeze_model(model):
    for p in model.parameters():
        p.requires_grad = False


class Appr:
    def __init__(self, model):
        self.model, self.model_old = model, None

    def train(self):
        self.model_old = copy.deepcopy(self.model)
        self.model_old.eval()
        freeze_model(self.model_old)

    def eval(self, batches):
        self.model.eval()
        total = 0.0
        for x in batches:
            old = self.model_old(x)
            total += (self.model(x) - old).sum().item()
        return total


appr = Appr(nn.Linear(4, 1))
appr.train()
print(appr.eval([torch.randn(2, 4)]))
"""


def test_loop_reported_at_the_unfrozen_model_only():
    # lwf.py's `eval()`: the old model is frozen, the current one is not; the loop is reported at
    # the current model's call (before: at both)
    found = [(d.line, d.message) for d in check(MIXED, ["GL403"]) if d.code == "GL403"]
    line = next(i for i, ln in enumerate(MIXED.splitlines(), 1) if "total += (self.model(x)" in ln)
    assert len(found) == 1 and found[0][0] == line and "`self.model`" in found[0][1]
