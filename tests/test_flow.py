"""The flow engine (gpulint/flow.py): abstract values per expression, through the ScriptModel."""

from __future__ import annotations

import textwrap

import libcst as cst

from gpulint.model import Kind, ScriptModel


def model_of(src: str) -> ScriptModel:
    src = textwrap.dedent(src)
    return ScriptModel(cst.parse_module(src), src)


def node(m: ScriptModel, code: str, nth: int = 0):
    """The nth expression node (in source order) whose code is exactly `code`."""
    found = [n for n in m.nodes if isinstance(n, cst.BaseExpression) and m.module.code_for_node(n) == code]
    return found[nth]


def where(m, code, nth=0):
    d = m.value_of(node(m, code, nth)).dev
    return None if d is None else d.where


HEAD = """
import torch
import torch.nn as nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
"""


def test_factories_methods_and_moves():
    m = model_of(HEAD + """
x = torch.zeros(4, 3)
y = x.unsqueeze(0).float()
z = y.to(device)
w = z.cpu()
n = z.item()
e = torch.ones(2, device=device)
""")
    assert m.value_of(node(m, "x", 0)).kind == "tensor"
    assert where(m, "y") == "host"
    assert where(m, "z") == "acc"
    assert where(m, "w") == "host"
    assert m.value_of(node(m, "n")).kind == "hostval"
    assert where(m, "e") == "acc"
    # the device expression is kept as written, for fixes
    d = m.device_of(node(m, "z"))
    assert isinstance(d.expr, cst.Name) and d.expr.value == "device"


def test_torch_functions_follow_their_tensor_operands():
    m = model_of(HEAD + """
a = torch.randn(3).to(device)
b = torch.cat([a, a])
c = torch.softmax(a, dim=0)
h = torch.randn(3)
s = torch.where(h > 0, h, h)
""")
    assert where(m, "b") == "acc"
    assert where(m, "c") == "acc"
    assert where(m, "s") == "host"


def test_branch_join_is_either_and_unknown_to_rules():
    m = model_of(HEAD + """
import random
t = torch.zeros(3)
if random.random() > 0.5:
    t = t.to(device)
u = t
""")
    assert where(m, "u") == "either"
    assert m.device_of(node(m, "u")) is None  # rules see "unknown"


def test_loop_rebinding_reaches_a_fixed_point():
    m = model_of(HEAD + """
x = torch.zeros(3)
for i in range(3):
    y = x
    x = x.to(device)
z = x
""")
    assert where(m, "y", 0) == "either"  # host on the first iteration, device after
    assert where(m, "z") == "either"  # zero iterations keep it on the host


def test_summaries_of_the_files_functions():
    m = model_of(HEAD + """
def make(n):
    return torch.arange(n)

def place(t, dev):
    return t.to(dev)

a = make(5)
b = place(a, device)
""")
    assert where(m, "a") == "host"
    assert where(m, "b") == "acc"


def test_self_attributes_across_methods_and_parameters_from_call_sites():
    m = model_of(HEAD + """
class Trainer:
    def __init__(self, model):
        self.model = model
        self.device = device
        self.model.to(self.device)
        self._cpu_device = torch.device("cpu")

    def step(self, x):
        out = self.model(x.to(self.device))
        back = out.to(self._cpu_device)
        return back

t = Trainer(nn.Linear(3, 3))
t.step(torch.zeros(2, 3))
""")
    assert m.value_of(node(m, "self.model", 2)).kind == "module"
    assert where(m, "out") == "acc"
    assert where(m, "back") == "host"


def test_kinds_from_the_knowledge_base_mro():
    m = model_of("""
import torch
from torch.optim.swa_utils import AveragedModel
net = torch.nn.Linear(2, 2)
ema = AveragedModel(net)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
""")
    assert m.kind_of(node(m, "ema", 0)) is Kind.MODULE
    assert m.kind_of(node(m, "opt", 0)) is Kind.OPTIMIZER


def test_tensor_through_unknown_callables_by_tensor_only_methods():
    m = model_of(HEAD + """
img = transform(raw).unsqueeze(0)
arr = other(raw).reshape(3)
""")
    assert m.kind_of(node(m, "img")) is Kind.TENSOR
    assert m.kind_of(node(m, "arr")) is Kind.UNKNOWN  # numpy arrays have reshape too


def test_no_grad_regions_including_exit_stack():
    m = model_of(HEAD + """
import contextlib
net = nn.Linear(2, 2)
with torch.no_grad():
    a = net(torch.zeros(1, 2))
with contextlib.ExitStack() as stack:
    stack.enter_context(torch.no_grad())
    b = net(torch.zeros(1, 2))
c = net(torch.zeros(1, 2))
""")
    assert m.value_of(node(m, "a")).nograd
    assert m.value_of(node(m, "b")).nograd
    assert not m.value_of(node(m, "c")).nograd


def test_half_module_across_functions():
    m = model_of("""
import torch
def train(model):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

def main():
    model = torch.nn.Linear(2, 2)
    model.half()
    train(model)

main()
""")
    v = m.value_of(node(m, "model", 1))  # the parameter read in train()
    assert v.kind == "module" and v.half and v.half_at is not None


def test_mismatch_query_index_and_binary_and_scalar_exemption():
    m = model_of(HEAD + """
table = torch.linspace(0, 1, 10)
idx = torch.randint(0, 10, (4,), device=device)
a = table[idx]
b = idx.float() * torch.tensor(2.0)
c = idx.float() + torch.ones(4)
ok = idx[torch.arange(2)]
""")
    ops = {(mm.op, m.module.code_for_node(mm.node)) for mm in m.mismatches()}
    assert ("index", "table[idx]") in ops
    assert ("binary", "idx.float() + torch.ones(4)") in ops
    assert not any("torch.tensor(2.0)" in code for _, code in ops)  # 0-dim CPU tensors may meet device tensors
    assert not any(code == "idx[torch.arange(2)]" for _, code in ops)  # CPU indices into a device tensor


def test_bounded_on_deep_recursion_and_mutual_calls():
    m = model_of("""
import torch
def f(x, n):
    return g(x, n - 1) if n else x
def g(x, n):
    return f(x, n)
y = f(torch.zeros(2), 50)
""")
    assert m.value_of(node(m, "y")) is not None  # terminates; the value may be unknown


def test_module_api_kept():
    m = model_of(HEAD + """
model = nn.Linear(2, 2)
model.to(device)
""")
    assert m.kind_of(node(m, "model", 1)) is Kind.MODULE
    assert m.moves_of(node(m, "model", 1))
