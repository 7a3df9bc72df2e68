"""GL401: the only gradient clear sits under `if i % k == 1:` with k known to be 1, a condition
that never holds (`x % 1` is always 0): nothing is ever cleared (fixtures43 G43-2,
kh-kim/simple-nmt#22, rules43).

The accumulation guard of the step (`if i % k == 0:`) and the existence of a `zero_grad()` kept the
rule silent. Now, when every `zero_grad` of the file is under such a dead condition and nothing
else clears (`.grad` untouched), the steps next to it are reported (no fix). k must be known to be
1: a literal, a name every binding of which assigns 1, or a config field every definition of which
in the file is 1 (`SimpleNamespace(k=1)`, `add_argument("--k", default=1)`). The hotfix's
`... == 1 or k == 1`, an unknown k, k == 2 and a second live clear stay silent.
"""

from __future__ import annotations

from fixture_support import check

# the README's repro
REPRO = '''
import torch
import torch.nn as nn

iteration_per_update = 1  # update every batch
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for iteration in range(1, 21):
    if iteration % iteration_per_update == 1:  # never true when iteration_per_update == 1
        opt.zero_grad()
    model(torch.randn(8, 4)).pow(2).mean().div(iteration_per_update).backward()
    if iteration % iteration_per_update == 0:
        opt.step()
'''

# simple-nmt's shape: a step function handed to an engine, k a config field set once in the file
ENGINE = '''
import argparse
import torch
import torch.nn as nn


class Engine:
    def __init__(self, func, model, optimizer, config):
        self.func, self.model, self.optimizer, self.config = func, model, optimizer, config
        self.iteration = 0

    @staticmethod
    def train(engine, batch):
        if engine.iteration % engine.config.iteration_per_update == 1:
            engine.optimizer.zero_grad()
        engine.model(batch).pow(2).mean().backward()
        if engine.iteration % engine.config.iteration_per_update == 0 and engine.iteration > 0:
            engine.optimizer.step()

    def run(self, data):
        for batch in data:
            self.iteration += 1
            self.func(self, batch)


p = argparse.ArgumentParser()
p.add_argument("--iteration_per_update", type=int, default=1)
config = p.parse_args()
model = nn.Linear(4, 1)
engine = Engine(Engine.train, model, torch.optim.SGD(model.parameters(), lr=0.1), config)
engine.run([torch.randn(8, 4) for _ in range(10)])
'''


def _lines(src):
    return [(d.code, d.line) for d in check(src, ["GL401"])]


def test_module_constant_one_is_reported():
    diags = check(REPRO, ["GL401"])
    assert [(d.code, d.line) for d in diags] == [("GL401", 13)]
    assert "never holds" in diags[0].message and diags[0].fix is None


def test_config_field_default_one_is_reported():
    assert _lines(ENGINE) == [("GL401", 18)]
    ns = ENGINE.replace('p = argparse.ArgumentParser()\np.add_argument("--iteration_per_update", type=int, default=1)\n'
                        'config = p.parse_args()', "config = argparse.Namespace(iteration_per_update=1)")
    assert _lines(ns) == [("GL401", 18)]


# controls (silent on the base and on the branch)

def test_hotfix_or_clause_stays_silent():
    src = REPRO.replace("if iteration % iteration_per_update == 1:",
                        "if iteration % iteration_per_update == 1 or iteration_per_update == 1:")
    assert _lines(src) == []
    src = ENGINE.replace("== 1:\n", "== 1 or engine.config.iteration_per_update == 1:\n")
    assert _lines(src) == []


def test_divisor_not_one_or_unknown_stays_silent():
    assert _lines(REPRO.replace("iteration_per_update = 1 ", "iteration_per_update = 2 ")) == []
    assert _lines(REPRO.replace("iteration_per_update = 1 ", "import sys\niteration_per_update = int(sys.argv[1]) ")) == []
    # a second definition of the field, or one read from a file
    assert _lines(ENGINE.replace("default=1)", "default=4)")) == []
    assert _lines(ENGINE.replace("config = p.parse_args()",
                                 'config = p.parse_args()\nconfig.iteration_per_update = int(open("k").read())')) == []
    assert _lines(ENGINE.replace("config = p.parse_args()",
                                 'config = p.parse_args()\nk = getattr(config, "iteration_per_update", 4)')) == []


def test_another_clear_stays_silent():
    src = REPRO.replace("        opt.step()\n", "        opt.step()\n        model.zero_grad()\n")
    assert _lines(src) == []
    src = REPRO.replace("        opt.step()\n", "        opt.step()\n        for p in model.parameters():\n"
                        "            p.grad = None\n")
    assert _lines(src) == []


def test_remainder_zero_clear_stays_silent():
    # `% k == 0` holds every time when k is 1: the usual accumulation loop
    assert _lines(REPRO.replace("if iteration % iteration_per_update == 1:",
                                "if (iteration - 1) % iteration_per_update == 0:")) == []


def test_one_finding_per_step_with_an_optimizer_never_cleared():
    # a second optimizer with no clear at all: reported as before, once; the dead clear's optimizer too
    src = REPRO.replace("opt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
                        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nhead = nn.Linear(1, 1)\n"
                        "opt2 = torch.optim.SGD(head.parameters(), lr=0.1)\n").replace(
        "    model(torch.randn(8, 4))", "    head(model(torch.randn(8, 4)))").replace(
        "        opt.step()\n", "        opt.step()\n        opt2.step()\n")
    lines = _lines(src)
    assert len(lines) == len(set(lines)) and ("GL401", 15) in lines
