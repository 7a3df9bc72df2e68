"""TrainingFacts follows a loop's backward and optimizer step through two method levels
(loop -> train_step -> forward_backward), bounded: three levels are not followed."""

from __future__ import annotations

import textwrap

import libcst as cst

from gpulint.analysis.training import TrainingFacts
from gpulint.model import ScriptModel

HEAD = """
import torch
from torch import nn

class Recipe:
    def __init__(self):
        self.model = nn.Linear(4, 4)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
"""

TWO = HEAD + """
    def forward_backward(self, x):
        loss = self.model(x).sum()
        loss.backward()
        return loss

    def train_step(self, x):
        loss = self.forward_backward(x)
        self.opt.step()
        return loss

    def train(self, batches):
        for x in batches:
            self.train_step(x)
"""

THREE = HEAD + """
    def compute(self, x):
        loss = self.model(x).sum()
        loss.backward()
        return loss

    def forward_backward(self, x):
        return self.compute(x)

    def train_step(self, x):
        loss = self.forward_backward(x)
        self.opt.step()
        return loss

    def train(self, batches):
        for x in batches:
            self.train_step(x)
"""

IN_LOOP = HEAD + """
    def forward_backward(self, xs):
        for x in xs:
            self.model(x).sum().backward()

    def train_step(self, xs):
        self.forward_backward(xs)
        self.opt.step()

    def train(self, batches):
        for xs in batches:
            self.train_step(xs)
"""


def facts_of(src: str) -> tuple[TrainingFacts, ScriptModel]:
    model = ScriptModel(cst.parse_module(textwrap.dedent(src)))
    return model.facts(TrainingFacts), model


def method(model: ScriptModel, name: str) -> cst.FunctionDef:
    return model.functions[name][0]


def outer_loop(facts: TrainingFacts, model: ScriptModel):
    train = method(model, "train")
    return next(i for i in facts.loops if facts.function_of(i.node) is train)


def test_backward_two_calls_deep_makes_a_step_function_and_a_training_loop():
    facts, model = facts_of(TWO)
    assert facts.runs_backward(method(model, "forward_backward"), deep=False)
    assert not facts.runs_backward(method(model, "train_step"), deep=False)
    assert facts.runs_backward(method(model, "train_step"))
    steps = facts.steps_of_function(method(model, "train_step"))
    assert [model.module.code_for_node(s.call) for s in steps] == ["self.opt.step()"]
    loop = outer_loop(facts, model)
    assert [model.module.code_for_node(c) for c in loop.backward_via] == ["self.train_step(x)"]
    assert [model.module.code_for_node(c) for c in loop.steps_via] == ["self.train_step(x)"]
    assert not loop.steps and loop.is_training and loop.is_step_loop


def test_three_levels_are_not_followed():
    facts, model = facts_of(THREE)
    assert facts.runs_backward(method(model, "forward_backward"))
    assert not facts.steps_of_function(method(model, "train_step"))
    loop = outer_loop(facts, model)
    assert not loop.backward_via and not loop.steps_via and not loop.is_training


def test_backward_accumulated_in_a_loop_of_the_callee_is_one_step():
    # `forward_backward` accumulates gradients over the micro-batches `xs` (its loop makes no
    # optimizer step), for `train_step`'s step: one training step per call (E58-1, twenty-eighth
    # session; this test asserted the opposite before, reviewed)
    facts, model = facts_of(IN_LOOP)
    assert facts.steps_of_function(method(model, "train_step"))
    loop = outer_loop(facts, model)
    assert loop.is_training


def test_backward_inside_a_stepping_loop_of_the_callee_is_not_one_per_call():
    facts, model = facts_of(IN_LOOP.replace(
        "self.model(x).sum().backward()", "self.model(x).sum().backward()\n            self.opt.step()"))
    assert not facts.steps_of_function(method(model, "train_step"))
    loop = outer_loop(facts, model)
    assert not loop.is_training
