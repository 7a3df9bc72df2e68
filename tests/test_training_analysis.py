"""Unit tests for gpulint.analysis.training (TrainingFacts)."""

from __future__ import annotations

import textwrap

import libcst as cst

from gpulint.analysis.training import TrainingFacts
from gpulint.model import ScriptModel


def facts_of(src: str) -> tuple[TrainingFacts, ScriptModel]:
    model = ScriptModel(cst.parse_module(textwrap.dedent(src)))
    return model.facts(TrainingFacts), model


def code(model: ScriptModel, node) -> str:
    return model.module.code_for_node(node).strip()


def test_facts_are_computed_once():
    _, model = facts_of("import torch\n")
    assert model.facts(TrainingFacts) is model.facts(TrainingFacts)


TRAIN = """
import torch
from torch import nn
model = nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        loss = (model(x) - y).pow(2).mean()
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        for x, y in val_loader:
            model(x)
"""


def test_training_step_and_epoch_loops():
    f, m = facts_of(TRAIN)
    epoch, step, val = f.loops
    assert epoch.is_epoch_loop and not epoch.is_step_loop
    assert step.is_training and step.is_step_loop
    assert not val.is_training
    assert [code(m, s.call) for s in step.steps] == ["optimizer.step()"]
    assert step.cleared_optimizers == {"optimizer"}


def test_no_grad_regions_and_mode():
    f, m = facts_of(TRAIN)
    val = f.loops[2]
    call = f.model_calls(val.node)[0]
    assert f.grad_mode_at(call) == "off"
    # nothing precedes the loop inside `with`; the epoch body before the `with` has model.eval()
    assert f.mode_before(val.node) == "eval"
    assert f.mode_before(f.loops[1].node) == "train"


def test_decorators_set_grad_enabled_and_callers():
    f, m = facts_of(
        """
        import torch
        @torch.no_grad()
        def a(model, xs):
            for x in xs:
                model(x)
        @torch.inference_mode
        def b(model, xs):
            for x in xs:
                model(x)
        def c(model, xs):
            for x in xs:
                model(x)
        def d(model, xs, train):
            with torch.set_grad_enabled(train):
                for x in xs:
                    model(x)
        with torch.no_grad():
            c(net, data)
        torch.set_grad_enabled(False)
        for x in data:
            net(x)
        """
    )
    modes = [f.grad_mode_at(loop.node) for loop in f.loops]
    assert modes == ["off", "off", "off", "dynamic", "off"]


def test_gradient_use_detection():
    f, _ = facts_of(
        """
        import torch
        def helper(m, x):
            return torch.autograd.grad(m(x).sum(), x)[0]
        for x in xs:
            x.requires_grad_()
            model(x).sum().backward()
        for x in xs:
            helper(model, x)
        for x in xs:
            model(x)
        for x in xs:
            x.requires_grad_(False)
        """
    )
    assert [f.grad_use(l.node) for l in f.loops] == [True, True, False, False]


def test_zero_grad_via_helper_model_and_grad_none():
    f, _ = facts_of(
        """
        import torch
        optimizer = torch.optim.Adam(params)
        def clear(net):
            for p in net.parameters():
                p.grad = None
        for x in xs:
            clear(model)
            loss(x).backward()
            optimizer.step()
        for x in xs:
            model.zero_grad()
            loss(x).backward()
            optimizer.step()
        for x in xs:
            for p in params:
                p.grad.zero_()
            loss(x).backward()
            optimizer.step()
        for x in xs:
            loss(x).backward()
            optimizer.step()
        """
    )
    step_loops = [l for l in f.loops if l.is_training]
    assert [l.clears_all for l in step_loops] == [True, True, True, False]


def test_optimizer_parameters_resolved_through_call_sites():
    f, m = facts_of(
        """
        import torch
        def train(net, opt, sched, scaler):
            for x in xs:
                scaler.scale(net(x).sum()).backward()
                scaler.step(opt)
                sched.step()
        train(model, torch.optim.SGD(model.parameters(), lr=1), torch.optim.lr_scheduler.StepLR(o, 1), torch.amp.GradScaler())
        """
    )
    (loop,) = f.loops
    assert [code(m, s.optimizer) for s in loop.steps] == ["opt"]
    assert loop.steps[0].via_scaler and loop.is_training


def test_closure_step():
    f, _ = facts_of(
        """
        import torch
        optimizer = torch.optim.LBFGS(params)
        for i in range(3):
            def closure():
                optimizer.zero_grad()
                l = f(x)
                l.backward()
                return l
            optimizer.step(closure)
        """
    )
    (loop,) = f.loops
    assert loop.is_training and loop.steps[0].closure


def test_eval_function_names():
    f, m = facts_of(
        """
        def validate(): pass
        def evaluate_model(): pass
        def run_test(): pass
        def train_one_epoch(): pass
        def interval(): pass
        """
    )
    names = {fn.name.value: f.is_eval_function(fn) for fns in m.functions.values() for fn in fns}
    assert names == {"validate": True, "evaluate_model": True, "run_test": True, "train_one_epoch": False, "interval": False}
    f2, m2 = facts_of("import pytest\ndef test_forward(): pass\n")
    assert not f2.is_eval_function(m2.functions["test_forward"][0])


def test_mode_sensitivity():
    f, m = facts_of(
        """
        import torch.nn as nn
        class Plain(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 2)
        class WithDrop(nn.Module):
            def __init__(self):
                super().__init__()
                self.d = nn.Dropout(0.1)
        a = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
        b = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
        c = Plain().to("cpu")
        d = WithDrop()
        e = load_somehow()
        """
    )
    names = {}
    for stmt in m.module.body:
        if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Assign):
            target = stmt.body[0].targets[0].target
            names[target.value] = f.mode_sensitive(target)
    assert names == {"a": False, "b": True, "c": False, "d": True, "e": True}


def test_frameworks_drive_loop():
    f, _ = facts_of("import lightning as L\n")
    assert f.frameworks_drive_loop()
    f, _ = facts_of("from accelerate import Accelerator\n")
    assert not f.frameworks_drive_loop()


def _mode_src(filler: int) -> str:
    lines = ["import torch", "model = torch.nn.Linear(2, 1)", "model.eval()"]
    lines += [f"v{i} = {i}" for i in range(filler)]
    lines += ["for x in loader:", "    model(x)", "model.train()"]
    lines += [f"w{i} = {i}" for i in range(filler)]
    lines += ["for x in loader:", "    model(x)", "def evaluate():", "    for x in loader:", "        model(x)"]
    lines += [f"u{i} = {i}" for i in range(filler)]
    lines += ["model.eval()", "evaluate()", "model.train()", "evaluate()"]
    return "\n".join(lines) + "\n"


def test_mode_before_far_back_and_in_any_order():
    # the nearest mode call before a statement decides, however many statements lie between;
    # answers are the same whichever statement is asked first (the scan back is memoised)
    for filler in (0, 3, 400):
        f, m = facts_of(_mode_src(filler))
        loops = [info.node for info in f.loops]
        expected = ["eval", "train", None]  # evaluate() is called in eval and train mode: unknown
        assert [f.mode_before(n) for n in loops] == expected
        g, _ = facts_of(_mode_src(filler))
        assert [g.mode_before(n) for n in reversed([info.node for info in g.loops])] == expected[::-1]


def test_gl403_same_findings_with_many_statements_between():
    from fixture_support import check

    def src(filler: int) -> str:
        body = "".join(f"v{i} = {i}\n" for i in range(filler))
        return (
            "import torch\nmodel = torch.nn.Linear(2, 1)\nmodel.eval()\n" + body
            + "for x in val_loader:\n    out = model(x)\n"
        )

    small = check(src(0), {"GL403"})
    large = check(src(3000), {"GL403"})
    assert [(d.line, d.message) for d in small] == [(d.line - 3000, d.message) for d in large]
    assert len(small) == 1


def test_grad_mode_through_call_sites_in_any_order():
    # helper() runs only from no_grad call sites (through run()): "off" for every node in it,
    # whichever node is asked first; mixed() is called with and without: "dynamic"
    src = """
    import torch
    def helper(m, x):
        y = m(x)
        return y
    def run(m, x):
        return helper(m, x)
    def mixed(m, x):
        return m(x)
    with torch.no_grad():
        run(model, a)
        run(model, b)
        mixed(model, c)
    mixed(model, d)
    """
    f, m = facts_of(src)
    calls = [c for c in m.calls if code(m, c) in ("m(x)", "helper(m, x)")]
    assert len(calls) == 3
    expected = [("m(x)", "off"), ("helper(m, x)", "off"), ("m(x)", "dynamic")]
    assert [(code(m, c), f.grad_mode_at(c)) for c in calls] == expected
    g, m2 = facts_of(src)
    calls2 = [c for c in m2.calls if code(m2, c) in ("m(x)", "helper(m, x)")]
    assert [(code(m2, c), g.grad_mode_at(c)) for c in reversed(calls2)] == expected[::-1]


def test_backward_in_a_called_method_makes_a_training_loop():
    # transformers#31530's shape: the batch loop steps the optimizer, the backward runs in
    # `self.training_step(...)` (once per call, outside any loop of its own)
    facts, model = facts_of(
        """
        import torch
        class Trainer:
            def training_step(self, model, inputs):
                loss = model(inputs).sum()
                loss.backward()
                return loss.detach()

            def train_epochs(self, model, inputs):
                for _ in range(2):
                    loss = model(inputs).sum()
                    loss.backward()

            def train(self):
                for epoch in range(3):
                    for x in self.loader:
                        self.training_step(self.model, x)
                        self.optimizer.step()
                        self.optimizer.zero_grad()
                for x in self.loader:
                    self.train_epochs(self.model, x)
                    self.optimizer.step()
                for x in self.loader:
                    self.training_step(self.model, x)
        """
    )
    loops = [i for i in facts.loops if facts.function_of(i.node).name.value == "train"]
    epoch, batch, other, no_step = loops
    assert batch.backward == [] and [code(model, c) for c in batch.backward_via] == ["self.training_step(self.model, x)"]
    assert batch.is_step_loop and epoch.is_epoch_loop and not epoch.is_step_loop
    # a function whose backward runs in a loop of its own that makes no optimizer step
    # accumulates gradients for its caller's step (E58-1, the twenty-eighth session): one
    # training step's backward per call
    assert [code(model, c) for c in other.backward_via] == ["self.train_epochs(self.model, x)"]
    assert other.is_training
    # backward without an optimizer step in the loop: not a training loop
    assert not no_step.is_training


def test_a_called_function_that_steps_in_its_own_loop_is_no_backward_of_the_caller():
    facts, model = facts_of(
        """
        import torch
        class Trainer:
            def train_epoch(self, model, loader):
                for x in loader:
                    loss = model(x).sum()
                    loss.backward()
                    self.optimizer.step()

            def train(self):
                for epoch in range(3):
                    self.train_epoch(self.model, self.loader)
                    self.optimizer.step()
        """
    )
    loops = [i for i in facts.loops if facts.function_of(i.node).name.value == "train"]
    (epoch,) = loops
    assert epoch.backward_via == [] and not epoch.is_training


def test_argument_for_skips_the_receiver_of_methods_and_constructors():
    from gpulint.analysis.training import argument_for

    src = """
    import mod

    class Trainer(Base):
        def __init__(self, model, optimizer_fn=None, *, lr=0.1):
            super().__init__(model, optimizer_fn)
            Base.__init__(self, model, optimizer_fn)

        def step(self, x, y):
            pass

        @classmethod
        def build(cls, model):
            pass

    def helper(model, opt):
        pass

    t = Trainer(net, adam, lr=0.5)
    u = mod.Trainer(net, adam)
    t.step(a, b)
    Trainer.build(net)
    helper(net, adam)
    helper(*pair)
    """
    _, m = facts_of(src)
    fns = {f.name.value: f for fs in m.functions.values() for f in fs}
    init, step, build, helper = fns["__init__"], fns["step"], fns["build"], fns["helper"]
    calls = {code(m, c.func): c for c in m.calls}

    def arg(fn, func, param):
        got = argument_for(fn, calls[func], param)
        return None if got is None else code(m, got)

    # a constructor call does not pass self, whatever the form of its callee
    assert arg(init, "Trainer", "model") == "net"
    assert arg(init, "Trainer", "optimizer_fn") == "adam"
    assert arg(init, "Trainer", "lr") == "0.5"
    assert arg(init, "mod.Trainer", "optimizer_fn") == "adam"
    assert arg(init, "super().__init__", "model") == "model"
    # an unbound `Base.__init__(self, ...)` passes the receiver itself
    assert arg(init, "Base.__init__", "model") == "model"
    assert arg(init, "Base.__init__", "optimizer_fn") == "optimizer_fn"
    assert arg(step, "t.step", "x") == "a"
    assert arg(build, "Trainer.build", "model") == "net"
    by_text = {code(m, c): c for c in m.calls}
    assert code(m, argument_for(helper, by_text["helper(net, adam)"], "opt")) == "adam"
    assert argument_for(helper, by_text["helper(*pair)"], "opt") is None
