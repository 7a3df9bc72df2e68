"""Unit tests for gpulint.analysis.devices.DeviceFacts."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from gpulint.analysis.devices import DeviceFacts
from gpulint.model import ScriptModel


def facts_of(src: str) -> DeviceFacts:
    model = ScriptModel(cst.parse_module(textwrap.dedent(src)))
    return model.facts(DeviceFacts)


def call_named(f: DeviceFacts, text: str, nth: int = 0) -> cst.Call:
    found = [c for c in f.m.calls if f.m.module.code_for_node(c) == text]
    return found[nth]


def name_use(f: DeviceFacts, name: str, nth: int = -1) -> cst.Name:
    uses = [n for n in f._names[name] if f._is_read(n)]
    return uses[nth]


def test_facts_are_computed_once():
    model = ScriptModel(cst.parse_module("x = 1\n"))
    assert model.facts(DeviceFacts) is model.facts(DeviceFacts)


def test_runs_before_same_block_and_nested():
    f = facts_of(
        """
        a()
        if cond:
            b()
        c()
        for i in it():
            d()
        """
    )
    a, b, c, d, it = (call_named(f, s) for s in ("a()", "b()", "c()", "d()", "it()"))
    assert f.runs_before(a, c)
    assert f.runs_before(a, b)  # a dominates the if body
    assert not f.runs_before(c, a)
    assert not f.runs_before(b, c)  # b is conditional
    assert f.runs_before(b, c, a_always=False)  # ... but when it runs, c follows
    assert f.runs_before(it, d)  # a loop's iterable runs before its body
    assert f.runs_before(c, d, b_always=False)


def test_runs_before_needs_the_same_scope():
    f = facts_of(
        """
        a()
        def g():
            b()
        """
    )
    assert not f.runs_before(call_named(f, "a()"), call_named(f, "b()"))


def test_reaching_bindings_straight_line_and_loops():
    f = facts_of(
        """
        out = model(x)
        out = out.cpu()
        use(out)
        for step in range(3):
            use(y)
            y = step
        y = 0
        """
    )
    reach = f.reaching_bindings(name_use(f, "out"))
    assert [f.m.module.code_for_node(b.value) for b in reach] == ["out.cpu()"]
    # y is read in the loop before any binding in the loop: falls back to every binding
    ys = f.reaching_bindings(name_use(f, "y", 0))
    assert len(ys) == 2


def test_optimizer_models_through_groups_and_names():
    f = facts_of(
        """
        import torch
        import torch.nn as nn
        model = nn.Linear(2, 2)
        head = nn.Linear(2, 2)
        params = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.Adam([{"params": params}, {"params": head.parameters(), "lr": 1e-3}])
        other = torch.optim.SGD(unknown, lr=0.1)
        """
    )
    opt = f.m.bindings[(f.m.module, "opt")][0].node
    assert [f.m.module.code_for_node(n) for n in f.optimizer_models(opt)] == ["model", "head"]
    other = f.m.bindings[(f.m.module, "other")][0].node
    assert f.optimizer_models(other) == []


@pytest.mark.parametrize(
    "expr,expected",
    [
        ("model(x)", True),
        ("model(x).argmax(1)", True),
        ("model(x).detach().cpu()", False),
        ("cpu_model(x)", False),
        ("x.to(device) * 2", True),
        ("x", False),
        ("torch.softmax(model(x), dim=1)", True),
        ("x.to(torch.float16)", False),
        ("back(x)", False),
    ],
)
def test_on_accelerator(expr, expected):
    f = facts_of(
        f"""
        import torch
        import torch.nn as nn
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        x = torch.randn(2, 3)
        model = nn.Linear(3, 2).to(device)
        cpu_model = nn.Linear(3, 2)
        back = nn.Linear(3, 2).to(device)
        back.cpu()
        probe = {expr}
        """
    )
    value = f.m.bindings[(f.m.module, "probe")][0].value
    assert f.on_accelerator(value) is expected


def test_device_may_be_accelerator_follows_names_defaults_and_constructors():
    f = facts_of(
        """
        import torch
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        cpu = torch.device("cpu")

        class DS:
            def __init__(self, where="cpu"):
                self.where = where

        a = DS()
        b = DS(where="cuda:1")
        """
    )
    dev = f.m.bindings[(f.m.module, "device")][0].node
    cpu = f.m.bindings[(f.m.module, "cpu")][0].node
    assert f.device_may_be_accelerator(dev)
    assert not f.device_may_be_accelerator(cpu)
    assert f.device_is_cpu(cpu)
    where = f.m.functions["__init__"][0].params.params[1].name
    assert f.device_may_be_accelerator(where)  # a call site passes "cuda:1"


def test_visible_at_respects_order_and_scopes():
    f = facts_of(
        """
        import torch
        early = make()
        device = torch.device("cuda")
        late = make()

        def g():
            make()
        """
    )
    dev = f.m.bindings[(f.m.module, "device")][0].node
    early, late, inner = (call_named(f, "make()", i) for i in range(3))
    assert not f.visible_at(dev, early)
    assert f.visible_at(dev, late)
    assert f.visible_at(dev, inner)  # module-level name, read when g() runs
    expr = f.m.bindings[(f.m.module, "device")][0].value
    assert f.visible_at(expr, early)  # torch.device("cuda") only needs the import


def test_references_resolve_to_the_binding_list():
    f = facts_of(
        """
        sd = load()
        model.load_state_dict(sd)

        def h(sd):
            return sd
        """
    )
    bindings = f.m.bindings[(f.m.module, "sd")]
    refs = f.references("sd", bindings)
    assert len(refs) == 1
