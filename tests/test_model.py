"""Unit tests of the ScriptModel, independent of any rule."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from gpulint.analysis.training import TrainingFacts
from gpulint.model import Kind, ScriptModel


def model_of(src: str) -> ScriptModel:
    src = textwrap.dedent(src)
    return ScriptModel(cst.parse_module(src), src)


def name_node(m: ScriptModel, name: str, nth: int = -1) -> cst.Name:
    """The nth occurrence (default: last) of a Name used as a value in the module."""
    found = []

    class V(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if node.value == name:
                found.append(node)

    m.module.visit(V())
    assert found, name
    return found[nth]


def kind(src: str, name: str) -> Kind:
    m = model_of(src + f"\n{name}\n")
    return m.kind_of(name_node(m, name))


# imports and qualified names --------------------------------------------------------------------

@pytest.mark.parametrize(
    "imports, expr, expected",
    [
        ("import torch.nn as nn", "nn.DataParallel", "torch.nn.DataParallel"),
        ("from torch.nn import DataParallel as DP", "DP", "torch.nn.DataParallel"),
        ("from torch import optim", "optim.Adam", "torch.optim.Adam"),
        ("import torch", "torch.cuda.amp.autocast", "torch.cuda.amp.autocast"),
        ("import torch.nn", "torch.nn.Linear", "torch.nn.Linear"),
        ("import numpy as np", "np.zeros", "numpy.zeros"),
        ("", "nn.Linear", None),
        ("from . import nn", "nn.Linear", None),
    ],
)
def test_qualname_through_imports(imports, expr, expected):
    m = model_of(f"{imports}\nx = {expr}\n")
    value = m.bindings[(m.module, "x")][0].value
    assert m.qualname(value) == expected


# kinds ------------------------------------------------------------------------------------------

HEADER = """
import torch
import torch.nn as nn
import torchvision
from torch.utils.data import DataLoader, Dataset
"""


@pytest.mark.parametrize(
    "body, name, expected",
    [
        ("m = nn.Linear(2, 2)", "m", Kind.MODULE),
        ("m = nn.CrossEntropyLoss()", "m", Kind.MODULE),
        ("m = torchvision.models.resnet18()", "m", Kind.MODULE),
        ("class Net(nn.Module): pass\nclass Deeper(Net): pass\nm = Deeper()", "m", Kind.MODULE),
        ("m = nn.Linear(2, 2).to('cuda')", "m", Kind.MODULE),
        ("m = nn.DataParallel(nn.Linear(2, 2))", "m", Kind.MODULE),
        ("o = torch.optim.SGD([], lr=0.1)", "o", Kind.OPTIMIZER),
        ("o = torch.optim.SGD([], lr=0.1)\no = nn.DataParallel(o)", "o", Kind.OPTIMIZER),
        ("s = torch.optim.lr_scheduler.StepLR(o, 1)", "s", Kind.SCHEDULER),
        ("s = torch.amp.GradScaler('cuda')", "s", Kind.SCALER),
        ("l = DataLoader(ds)", "l", Kind.DATALOADER),
        ("class D(Dataset): pass\nd = D()", "d", Kind.DATASET),
        ("d = torch.device('cuda')", "d", Kind.DEVICE),
        ("t = torch.zeros(3)", "t", Kind.TENSOR),
        ("t = torch.from_numpy(a)", "t", Kind.TENSOR),
        ("a = torch.ones(2)\nt = a * 2 + 1", "t", Kind.TENSOR),
        ("t = torch.zeros(3)\nt = t.to('cuda')", "t", Kind.TENSOR),
        ("m = nn.Linear(2, 2)\nt = m(x)", "t", Kind.TENSOR),
        ("t = torch.zeros(3).sum()", "t", Kind.TENSOR),
        ("v = torch.zeros(3).item()", "v", Kind.UNKNOWN),
        ("l = DataLoader(ds)\nfor b in l: pass", "b", Kind.BATCH),
        ("l = DataLoader(ds)\nfor x, y in l: pass", "x", Kind.TENSOR),
        ("l = DataLoader(ds)\nfor i, (x, y) in enumerate(l): pass", "y", Kind.TENSOR),
        ("l = DataLoader(ds)\nfor i, (x, y) in enumerate(l): pass", "i", Kind.UNKNOWN),
        ("l = DataLoader(ds)\nx, y = next(iter(l))", "x", Kind.TENSOR),
        ("x = something()", "x", Kind.UNKNOWN),
        ("x = torch.zeros(3)\nx = make()", "x", Kind.UNKNOWN),
    ],
)
def test_kinds(body, name, expected):
    assert kind(HEADER + body, name) is expected


def test_parameters_are_typed_from_call_sites():
    m = model_of(
        HEADER
        + """
def train(model, loader, optimizer, device):
    model
    loader
    optimizer

net = nn.Linear(2, 2).to("cuda")
train(net, DataLoader(ds), torch.optim.SGD(net.parameters(), lr=0.1), "cuda")
"""
    )
    assert m.kind_of(name_node(m, "model")) is Kind.MODULE
    assert m.kind_of(name_node(m, "loader")) is Kind.DATALOADER
    assert m.kind_of(name_node(m, "optimizer")) is Kind.OPTIMIZER


def test_parameters_disagreeing_call_sites_are_unknown():
    m = model_of(
        HEADER
        + """
def f(x):
    x
f(nn.Linear(2, 2))
f(torch.zeros(3))
"""
    )
    assert m.kind_of(name_node(m, "x")) is Kind.UNKNOWN


def test_annotations_give_kinds():
    m = model_of(HEADER + "def f(m: nn.Module, t: torch.Tensor):\n    m\n    t\n")
    assert m.kind_of(name_node(m, "m")) is Kind.MODULE
    assert m.kind_of(name_node(m, "t")) is Kind.TENSOR


def test_self_attributes_resolve_within_the_class():
    m = model_of(
        HEADER
        + """
class Net(nn.Module):
    def __init__(self):
        self.fc = nn.Linear(2, 2)
        self.mask = torch.ones(2)
    def forward(self, x):
        return self.fc(x) * self.mask
"""
    )
    fc = [n for n in m.calls if isinstance(n.func, cst.Attribute) and n.func.attr.value == "fc"][0]
    assert m.kind_of(fc.func) is Kind.MODULE
    cls = m.module_classes()
    assert [c.node.name.value for c in cls] == ["Net"]
    assert set(cls[0].methods) == {"__init__", "forward"}


# moves ------------------------------------------------------------------------------------------

def moves_text(m: ScriptModel, expr) -> list[str]:
    return [m.module.code_for_node(mv.device) if mv.device is not None else mv.method for mv in m.moves_of(expr)]


def test_module_moves_in_place_and_by_assignment():
    m = model_of(
        HEADER
        + """
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
a = nn.Linear(2, 2)
a.to(device)
b = nn.Linear(2, 2).cuda()
c = nn.Linear(2, 2, device=device)
d = nn.Linear(2, 2)
a; b; c; d
"""
    )
    assert moves_text(m, name_node(m, "a")) == ["device"]
    assert moves_text(m, name_node(m, "b")) == ["cuda"]
    assert moves_text(m, name_node(m, "c")) == ["device"]
    assert moves_text(m, name_node(m, "d")) == []


def test_tensor_to_statement_is_not_a_move():
    m = model_of(HEADER + "t = torch.zeros(2)\nt.to('cuda')\nt\n")
    assert m.moves_of(name_node(m, "t")) == []


def test_dtype_casts_are_not_moves():
    m = model_of(HEADER + "t = torch.zeros(2).to(torch.float16)\nu = torch.zeros(2).to(dtype)\nt; u\n")
    assert m.moves_of(name_node(m, "t")) == []
    assert m.moves_of(name_node(m, "u")) == []


def test_cpu_device_names_are_known():
    m = model_of(HEADER + "cpu = 'cpu'\nnet = nn.Linear(2, 2)\nnet.to(cpu)\nnet\n")
    assert m.device_moves(name_node(m, "net")) == []
    m = model_of(HEADER + "dev = torch.device('cuda')\nnet = nn.Linear(2, 2)\nnet.to(dev)\nnet\n")
    assert len(m.device_moves(name_node(m, "net"))) == 1


def test_model_moved_through_a_parameter():
    m = model_of(
        HEADER
        + """
def train(model):
    model
net = nn.Linear(2, 2)
train(net.to("cuda"))
"""
    )
    assert moves_text(m, name_node(m, "model", 0)) == ['"cuda"']


@pytest.mark.parametrize(
    "loop_body, moved",
    [
        ("x, y = x.to(d), y.to(d)\n        model(x)", True),
        ("model(x.to(d))", True),
        ("x = x.cuda(non_blocking=True)\n        model(x)", True),
        ("inputs = x.to(d)\n        model(inputs)", True),
        ("model(x)", False),
    ],
)
def test_batch_moves_in_loader_loops(loop_body, moved):
    m = model_of(
        HEADER
        + f"""
d = torch.device("cuda")
model = nn.Linear(2, 2).to(d)
ds = torch.utils.data.TensorDataset(torch.randn(8, 2), torch.randn(8, 2))
loader = DataLoader(ds)
for epoch in range(2):
    for x, y in loader:
        {loop_body}
"""
    )
    # the engine: the model call meets a host batch only when the batch was not moved
    host_inputs = [mm for mm in m.mismatches() if mm.op == "module-call"]
    assert bool(host_inputs) is not moved


@pytest.mark.parametrize(
    "rebind",
    [
        "batch = {k: v.to(d) for k, v in batch.items()}",
        "batch = tuple(t.to(d) for t in batch)",
        "batch = [t.to(d) for t in batch]",
    ],
)
def test_whole_batch_rebinding_moves(rebind):
    m = model_of(
        HEADER
        + f"""
d = torch.device("cuda")
model = nn.Linear(2, 2).to(d)
ds = torch.utils.data.TensorDataset(torch.randn(8, 2), torch.randn(8, 2))
loader = DataLoader(ds)
for batch in loader:
    {rebind}
    model(batch[0])
"""
    )
    assert m.mismatches() == []
    # and without the re-binding, the batch meets the model on the host
    unmoved = model_of(HEADER + """
d = torch.device("cuda")
model = nn.Linear(2, 2).to(d)
ds = torch.utils.data.TensorDataset(torch.randn(8, 2), torch.randn(8, 2))
loader = DataLoader(ds)
for batch in loader:
    model(batch[0])
""")
    assert [mm.op for mm in unmoved.mismatches()] == ["module-call"]


def test_loader_with_collate_fn_batches_have_no_known_device():
    m = model_of(HEADER + "loader = DataLoader(ds, collate_fn=c)\nfor x in loader:\n    x\n")
    x = [n for n in m.nodes if isinstance(n, cst.Name) and n.value == "x"][-1]
    assert m.device_of(x) is None


def test_loops_see_through_enumerate_tqdm_zip():
    m = model_of(
        HEADER
        + """
from tqdm import tqdm
a = DataLoader(ds)
for i, (x, y) in enumerate(tqdm(a)):
    x
for (x1, y1), (x2, y2) in zip(a, a):
    x1
"""
    )
    assert m.kind_of(name_node(m, "x")) is Kind.TENSOR
    assert m.kind_of(name_node(m, "x1")) is Kind.TENSOR
    assert m.loader_of_loop(m.fors[0]) is not None


# whole-file facts -------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "src, expected",
    [
        ("import torch\nif torch.cuda.is_available(): pass\n", True),
        ("import torch\nn = torch.cuda.device_count()\n", True),
        ("import torch\ntorch.accelerator.is_available()\n", True),
        ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--device')\n", True),
        ("import torch\nx = torch.zeros(2).cuda()\n", False),
    ],
)
def test_checks_availability(src, expected):
    assert model_of(src).checks_availability is expected


@pytest.mark.parametrize(
    "src, expected",
    [
        ("import lightning as L\n", {"lightning"}),
        ("import pytorch_lightning as pl\n", {"lightning"}),
        ("from accelerate import Accelerator\n", {"accelerate"}),
        ("from transformers import Trainer\n", {"hf-trainer"}),
        ("import deepspeed\n", {"deepspeed"}),
        ("import torch\nfrom transformers import AutoModel\n", set()),
    ],
)
def test_frameworks(src, expected):
    assert model_of(src).frameworks == expected


def test_facts_are_computed_once():
    m = model_of(HEADER)
    assert m.facts(TrainingFacts) is m.facts(TrainingFacts)
