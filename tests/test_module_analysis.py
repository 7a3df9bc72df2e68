"""Unit tests for gpulint/analysis/modules.py (ModuleFacts, DeviceFlow) and the GL105-GL107 rules
built on it."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from gpulint.analysis.modules import ModuleFacts, nn_prefix, super_init_index
from gpulint.engine import Options, run_text
from gpulint.model import ScriptModel
from gpulint.registry import Registry

HEADER = "import torch\nimport torch.nn as nn\n"


def facts_of(src: str, header: str = HEADER) -> ModuleFacts:
    model = ScriptModel(cst.parse_module(header + textwrap.dedent(src)))
    return model.facts(ModuleFacts)


def cls_of(src: str, name: str | None = None, header: str = HEADER):
    facts = facts_of(src, header)
    if name is None:
        return facts.classes[-1]
    return facts.by_name[name]


def code(node) -> str:
    return cst.Module([]).code_for_node(node)


def met(src: str, header: str = HEADER) -> dict[str, bool]:
    """factory source -> whether it meets a device tensor (over all classes)."""
    out = {}
    for c in facts_of(src, header).classes:
        for call, site in c.flow.factories.items():
            out[code(call)] = site.met
    return out


def flagged(src: str, header: str = HEADER) -> set[str]:
    return {k for k, v in met(src, header).items() if v}


# ---------------------------------------------------------------------------------------------
# ModuleFacts: structure
# ---------------------------------------------------------------------------------------------


def test_module_classes_and_reachable_methods():
    c = cls_of(
        """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 2)

            def forward(self, x):
                return self._a(x)

            def _a(self, x):
                return self._b(x) + 1

            def _b(self, x):
                return self.fc(x)

            def unused(self):
                return torch.zeros(3)
        """
    )
    assert [f.name.value for f in c.reachable] == ["forward", "_a", "_b"]
    assert c.forward is not None and c.init is not None


def test_forward_inherited_from_file_base_and_init_assigns_of_base():
    facts = facts_of(
        """
        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 2)

            def forward(self, x):
                return self.fc(x)

        class Child(Base):
            def helper(self):
                pass
        """
    )
    child = facts.by_name["Child"]
    assert child.forward is facts.by_name["Base"].forward
    assert child.attr_kind("fc") == "module"


def test_non_module_classes_are_ignored():
    facts = facts_of(
        """
        class Helper:
            def forward(self, x):
                return x
        """
    )
    assert facts.classes == []


def test_attribute_kinds():
    c = cls_of(
        """
        class Net(nn.Module):
            def __init__(self, d, teacher):
                super().__init__()
                self.w = nn.Parameter(torch.zeros(d))
                w2 = nn.Parameter(torch.ones(d))
                self.w2 = w2
                self.register_buffer("mean", torch.zeros(d))
                self.register_parameter("extra", None)
                self.fc = nn.Linear(d, d)
                self.blocks = nn.ModuleList([nn.Linear(d, d)])
                self.heads = [nn.Linear(d, d)]
                self.table = torch.eye(d)
                self.scale = 0.5
                self.name = "net"
                self.cache = None
                self.teacher = teacher

            def forward(self, x):
                return x
        """
    )
    kinds = {a: c.attr_kind(a) for a in c.init_assigns}
    assert kinds == {
        "w": "parameter",
        "w2": "parameter",
        "fc": "module",
        "blocks": "module",
        "heads": "container",
        "table": "tensor",
        "scale": "scalar",
        "name": "scalar",
        "cache": "none",
        "teacher": "other",
    }
    assert c.attr_kind("mean") == "buffer"
    assert c.attr_kind("extra") == "parameter"
    assert c.attr_kind("never_assigned") == "unknown"


def test_forward_reads_and_writes():
    c = cls_of(
        """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = torch.zeros(2)
                self.b = torch.zeros(2)
                self.count = 0

            def forward(self, x):
                self.count += 1
                self.b = x.sum()
                return self._h(x)

            def _h(self, x):
                return x * self.a
        """
    )
    assert set(c.forward_reads) == {"count", "a"}
    assert set(c.forward_writes) == {"count", "b"}


@pytest.mark.parametrize(
    "signature,tensors,inputs",
    [
        ("self, x", ["x"], ["x"]),  # no evidence, but the first positional parameter
        ("self, x: torch.Tensor, n: int", ["x"], ["x"]),
        ("self, x, mask=None", ["x", "mask"], ["x", "mask"]),
        ("self, batch", [], []),  # used as a dict
        ("self, n_samples", [], []),  # used as a count
        ("self, x, scale=2.0", ["x"], ["x"]),
    ],
)
def test_forward_parameters(signature, tensors, inputs):
    body = {
        "self, x": "return self.fc(x) * 2",
        "self, x: torch.Tensor, n: int": "return x * n",
        "self, x, mask=None": "return self.fc(x).masked_fill(mask.bool(), 0)",
        "self, batch": 'return self.fc(batch["x"])',
        "self, n_samples": "return self.fc(torch.randn(n_samples, 2))",
        "self, x, scale=2.0": "return x.view(-1, 2) * scale",
    }[signature]
    c = cls_of(
        f"""
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 2)

            def forward({signature}):
                {body}
        """
    )
    assert c.tensor_params() == tensors
    assert c.input_params() == inputs


# ---------------------------------------------------------------------------------------------
# DeviceFlow
# ---------------------------------------------------------------------------------------------

NET = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.emb = nn.Embedding(8, 4)
        self.act = nn.ReLU()
        self.gru = nn.GRU(4, 4, batch_first=True)
        self.register_buffer("buf", torch.ones(4))

    def forward(self, x):
{body}
"""


def net(body: str) -> str:
    return NET.format(body=textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 8))


@pytest.mark.parametrize(
    "body,expected",
    [
        # meetings
        ("return x + torch.zeros(4)", {"torch.zeros(4)"}),
        ("return self.emb(torch.arange(4))", {"torch.arange(4)"}),
        ("return torch.cat([x, torch.ones(x.size(0), 1)], dim=1)", {"torch.ones(x.size(0), 1)"}),
        ("m = torch.ones(4)\nreturn x.masked_fill(m > 0, 0.0)", {"torch.ones(4)"}),
        ("return torch.zeros(4) * self.buf", {"torch.zeros(4)"}),
        ("return self.fc.weight @ torch.eye(4)", {"torch.eye(4)"}),
        ("return x + torch.zeros(4).to(torch.float16)", {"torch.zeros(4)"}),
        ("return x + torch.zeros(4).to(x.dtype)", {"torch.zeros(4)"}),
        ("h = torch.zeros(1, x.size(0), 4)\nout, h = self.gru(x, h)\nreturn out", {"torch.zeros(1, x.size(0), 4)"}),
        ("h = torch.zeros(x.size(0), 4)\nfor t in range(3):\n    h = self.fc(h) + x\nreturn h", {"torch.zeros(x.size(0), 4)"}),
        ("y = x\nif y.sum() > 0:\n    y = torch.zeros(4)\nreturn self.fc(x) - y", {"torch.zeros(4)"}),
        ("w = torch.tensor([1.0, 2.0, 3.0, 4.0])\nreturn x * w", {"torch.tensor([1.0, 2.0, 3.0, 4.0])"}),
        ("w = torch.FloatTensor([1.0, 2.0, 3.0, 4.0])\nreturn x * w", {"torch.FloatTensor([1.0, 2.0, 3.0, 4.0])"}),
        ("return x + torch.randn(x.shape)", {"torch.randn(x.shape)"}),
        ("x += torch.ones(4)\nreturn x", {"torch.ones(4)"}),
        # no meeting
        ("return x + torch.zeros(4, device=x.device)", set()),
        ("return x + torch.zeros(4).to(x.device)", set()),
        ("return x + torch.zeros(4).to(x)", set()),
        ("return x + torch.zeros(4).cuda()", set()),
        ("return x + torch.zeros(4).type_as(x)", set()),
        ("return x + torch.zeros_like(x)", set()),
        ("return x + x.new_zeros(4)", set()),
        ("return x[torch.arange(x.size(0))]", set()),
        ("return x * torch.zeros(3, 4).shape[0]", set()),
        ("return x * torch.ones(3).sum().item()", set()),
        ("return x * len(torch.ones(3).tolist())", set()),
        ("return x * torch.tensor(2.0)", set()),
        ("return x * torch.zeros(())", set()),
        ("return self.act(torch.zeros(4))", set()),
        ("t = torch.zeros(4)\nreturn t", set()),
        ("return x, torch.zeros(4)", set()),
        ("m = torch.zeros(4)\nif m.device != x.device:\n    m = m.to(x.device)\nreturn x + m", set()),
        ("return x + torch.zeros(4, **{})", set()),
        ("return x + torch.zeros(4, device='cpu').cuda()", set()),
        ("with torch.device('meta'):\n    z = torch.zeros(4)\nreturn x + z", set()),
    ],
)
def test_device_flow_meetings(body, expected):
    assert flagged(net(body)) == expected


def test_unused_and_unreachable_factories_are_seen_but_not_met():
    src = net("n = torch.zeros(3).numel()\nreturn self.fc(x) * n")
    assert met(src) == {"torch.zeros(3)": False}
    src = NET.format(body="        return self.fc(x)") + "\n    def init_hidden(self, b):\n        return torch.zeros(b, 4)\n"
    assert met(src) == {}  # init_hidden is not reachable from forward


def test_helper_methods_propagate_inputs_and_returns():
    src = """
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def _mask(self, t):
            n = t.size(-1)
            return torch.triu(torch.ones(n, n), diagonal=1).bool()

        def _bias(self, n):
            return torch.zeros(n)

        def forward(self, x):
            scores = self.fc(x) @ x.transpose(-2, -1)
            scores = scores.masked_fill(self._mask(scores), 0.0)
            return scores + self._bias(4)
    """
    c = cls_of(src)
    sites = {code(call): site for call, site in c.flow.factories.items()}
    assert sites["torch.ones(n, n)"].met and sites["torch.ones(n, n)"].fix_param == "t"
    assert sites["torch.zeros(n)"].met and sites["torch.zeros(n)"].fix_param is None


def test_fix_needs_a_parameter_known_to_be_a_tensor():
    (site,) = cls_of(net("return x + torch.zeros(4)")).flow.factories.values()
    assert site.met and site.fix_param is None  # x is only taken as an input: no `x.device` fix
    (site,) = cls_of(net("return self.fc(x) + torch.zeros(4)")).flow.factories.values()
    assert site.fix_param == "x"


def test_fix_param_is_an_evidenced_tensor_parameter():
    src = """
    class Gen(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, n_samples):
            return self.fc(torch.randn(n_samples, 4))
    """
    (site,) = cls_of(src).flow.factories.values()
    assert site.met and site.random and site.fix_param is None


def test_nested_module_calls_are_device_values():
    src = """
    class Inner(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(4))

        def forward(self, x):
            return x * self.w

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()
            self.norm = nn.Sequential(nn.LayerNorm(4))
            self.drop = nn.Sequential(nn.Dropout(0.1))

        def forward(self, x):
            a = self.inner(torch.zeros(4))
            b = self.norm(torch.ones(4))
            c = self.drop(torch.full((4,), 2.0))
            return a + b + c
    """
    assert met(src) == {"torch.zeros(4)": True, "torch.ones(4)": True, "torch.full((4,), 2.0)": True}
    src2 = src.replace("return a + b + c", "return c")
    assert met(src2)["torch.full((4,), 2.0)"] is False  # a parameter-free module alone is no meeting


def test_unregistered_tensor_attributes_meet():
    src = """
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.pe = torch.zeros(8, 4)
            self.idx = torch.arange(4)
            self.moved = torch.ones(4)
            self.cache = torch.zeros(4)

        def forward(self, x):
            self.cache = x.detach()
            h = self.fc(x)[:, self.idx] + self.pe[: x.size(0)]
            return h * self.moved.to(h.device) + self.cache
    """
    assert set(cls_of(src).flow.attr_meets) == {"pe"}


# ---------------------------------------------------------------------------------------------
# helpers for fixes
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "header,expected",
    [
        ("import torch.nn as nn\n", "nn.ModuleList"),
        ("from torch import nn\n", "nn.ModuleList"),
        ("import torch\n", "torch.nn.ModuleList"),
        ("import torch as th\n", "th.nn.ModuleList"),
        ("from torch.nn import ModuleList\nimport torch\n", "ModuleList"),
        ("import numpy\n", None),
    ],
)
def test_nn_prefix(header, expected):
    model = ScriptModel(cst.parse_module(header))
    assert nn_prefix(model, "ModuleList") == expected


def test_super_init_index():
    src = """
    class A(nn.Module):
        def __init__(self):
            self.x = 1
            super().__init__()

    class B(nn.Module):
        def __init__(self):
            nn.Module.__init__(self)

    class C(nn.Module):
        def __init__(self):
            self.x = 1
    """
    model = ScriptModel(cst.parse_module(HEADER + textwrap.dedent(src)))
    inits = {n: model.classes[n].methods["__init__"] for n in "ABC"}
    assert super_init_index(model, inits["A"]) == 1
    assert super_init_index(model, inits["B"]) == 0
    assert super_init_index(model, inits["C"]) is None


# ---------------------------------------------------------------------------------------------
# the rules, end to end (cases the fixture scripts do not cover)
# ---------------------------------------------------------------------------------------------


def _rules(*codes):
    reg = Registry.load()
    return [reg.by_code(c)() for c in codes]


def run(src: str, *codes: str, fix: bool = False, unsafe: bool = False):
    return run_text("t.py", textwrap.dedent(src), _rules(*codes), Options(fix=fix, unsafe_fixes=unsafe, write=False))


def test_gl105_random_factory_fix_is_unsafe():
    src = HEADER + textwrap.dedent(net("return self.fc(x) + torch.randn(4)"))
    safe = run(src, "GL105", fix=True)
    assert safe.text == src
    unsafe = run(src, "GL105", fix=True, unsafe=True)
    assert "torch.randn(4, device=x.device)" in unsafe.text
    assert run(unsafe.text, "GL105").diagnostics == []


def test_gl105_silent_with_default_device():
    src = HEADER + "torch.set_default_device('cuda')\n" + textwrap.dedent(net("return x + torch.zeros(4)"))
    assert run(src, "GL105").diagnostics == []


def test_gl105_fix_is_idempotent_and_keeps_comments():
    src = HEADER + textwrap.dedent(net("w = torch.ones(  # weights\n    4,\n)\nreturn self.fc(x) * w"))
    out = run(src, "GL105", fix=True).text
    assert "torch.ones(  # weights\n            4, device=x.device,\n        )" in out
    assert run(out, "GL105", fix=True).text == out


def test_gl106_no_fix_when_reassigned_with_non_tensor():
    src = HEADER + textwrap.dedent(
        """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
                self.bias = torch.zeros(4)

            def reset(self):
                self.bias = [0.0] * 4

            def forward(self, x):
                return self.fc(x) + self.bias
        """
    )
    (d,) = run(src, "GL106").diagnostics
    assert d.fix is None
    ok = src.replace("[0.0] * 4", "torch.zeros(4)")
    (d,) = run(ok, "GL106").diagnostics
    assert d.fix is not None


def test_gl106_skips_placed_and_scalar_tensors():
    src = HEADER + textwrap.dedent(
        """
        class Net(nn.Module):
            def __init__(self, device):
                super().__init__()
                self.fc = nn.Linear(4, 4)
                self.a = torch.zeros(4, device=device)
                self.b = torch.zeros(4).to(device)
                self.c = torch.tensor(0.5)
                self.d = torch.sqrt(torch.tensor(4.0))

            def forward(self, x):
                return self.fc(x) * self.a + self.b - self.c / self.d
        """
    )
    assert run(src, "GL106").diagnostics == []


def test_gl107_import_by_name_and_tuple_without_parens():
    src = textwrap.dedent(
        """
        import torch
        from torch.nn import Linear, Module, ModuleList

        class Net(Module):
            def __init__(self):
                super().__init__()
                self.pair = Linear(2, 2), Linear(2, 2)

            def forward(self, x):
                return self.pair[1](self.pair[0](x))
        """
    )
    out = run(src, "GL107", fix=True, unsafe=True).text
    assert "self.pair = ModuleList((Linear(2, 2), Linear(2, 2)))" in out
    assert run(out, "GL107").diagnostics == []


@pytest.mark.parametrize(
    "value,fixable",
    [
        ('{"a": nn.Linear(2, 2)}', True),
        ('{"a.b": nn.Linear(2, 2)}', False),
        ('{"train": nn.Linear(2, 2)}', False),
        ('{f"head{i}": nn.Linear(2, 2) for i in range(2)}', True),
        ("{str(i): nn.Linear(2, 2) for i in range(2)}", False),
        ("{1: nn.Linear(2, 2)}", False),
    ],
)
def test_gl107_dict_keys(value, fixable):
    src = HEADER + textwrap.dedent(
        f"""
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.heads = {value}

            def forward(self, x):
                return x
        """
    )
    (d,) = run(src, "GL107").diagnostics
    assert (d.fix is not None) == fixable


def test_gl107_silent_on_hidden_and_referenced_modules():
    src = HEADER + textwrap.dedent(
        """
        class Net(nn.Module):
            def __init__(self, teacher):
                super().__init__()
                self.fc1 = nn.Linear(2, 2)
                layer = nn.Linear(2, 2)
                self.fc2 = layer
                self.refs = [self.fc1, layer]
                self.hidden = [teacher]
                self.nested = [[nn.Linear(2, 2)]]

            def forward(self, x):
                return x
        """
    )
    assert run(src, "GL107").diagnostics == []
