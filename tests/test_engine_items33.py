"""Engine items, twenty-sixth session (each test checked to fail with its change stashed)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def _run(src: str, *codes: str, fix: bool = False):
    rules = [Registry.load().by_code(c)() for c in codes]
    opts = Options(fix=True, unsafe_fixes=True, write=False) if fix else Options()
    return run_text("train.py", textwrap.dedent(src), rules, opts)


def _lines(src: str, *codes: str) -> list[tuple[int, str]]:
    return sorted((d.line, d.code) for d in _run(src, *codes).diagnostics)


# E50-6 (PyG's clique-pool issue #5028): a DataLoader whose `collate_fn` of the file returns an
# instance of a batch class of the file yields that instance, its tensors the loader's batches; a
# list of samples is a dataset whose samples the engine knows.
GRAPH_BATCH = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader


class Graph:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def to(self, device):
{to_body}


def collate(items):
    return Graph(torch.stack([i[0] for i in items]){collate_move}, torch.stack([i[1] for i in items]){collate_move})


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)

    def forward(self, data):
        return self.lin(data.x)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
loader = DataLoader([(torch.randn(4), torch.tensor(1)) for _ in range(8)], batch_size=4, collate_fn=collate)
for data in loader:
{loop}
"""
NEW_INSTANCE = "        return Graph(self.x.to(device), self.y.to(device))"
IN_PLACE = "        self.x = self.x.to(device)\n        self.y = self.y.to(device)\n        return self"
IN_PLACE_NO_RETURN = "        self.x = self.x.to(device)\n        self.y = self.y.to(device)"


def _graph(to_body=NEW_INSTANCE, loop="    pred = model(data)", collate_move=""):
    return GRAPH_BATCH.format(to_body=to_body, loop=loop, collate_move=collate_move)


def test_a_collated_batch_object_reaching_the_model_unmoved_is_reported_at_the_call():
    assert _lines(_graph(), "GL101", "GL116") == [(32, "GL101")]
    # a class whose `to` re-assigns its attributes in place: `data.x` may be either (silent)
    assert _lines(_graph(to_body=IN_PLACE), "GL101", "GL116") == []


def test_the_fix_rebinds_the_batch_with_its_own_to_when_it_returns_the_instance():
    out = _run(_graph(), "GL101", fix=True)
    assert "for data in loader:\n    data = data.to(device)\n    pred = model(data)" in out.text
    # a `to` whose last statement is not `return self` / a new instance: no fix (it could bind None)
    body = "        if device is None:\n            return self\n        self.x, self.y = self.x.to(device), self.y.to(device)"
    assert _lines(_graph(to_body=body.replace("self.x, self.y = ", "return Graph(").replace(
        "self.y.to(device)", "self.y.to(device))")), "GL101") == [(34, "GL101")]
    out = _run(_graph(to_body=body + "\n        print(device)"), "GL101", fix=True)
    assert "data = data.to(device)" not in out.text


def test_batch_objects_moved_before_the_model_are_silent():
    for to_body, loop in [
        (NEW_INSTANCE, "    data = data.to(device)\n    pred = model(data)"),
        (NEW_INSTANCE, "    pred = model(data.to(device))"),
        (IN_PLACE, "    data.to(device)\n    pred = model(data)"),
        (IN_PLACE, "    data.x = data.x.to(device)\n    pred = model(data)"),
        (IN_PLACE, "    pred = model(data.to(device))"),
    ]:
        assert _lines(_graph(to_body=to_body, loop=loop), "GL101", "GL116") == [], loop
    # a collate function that moves the batch itself
    assert _lines(_graph(collate_move=".to(device)"), "GL101", "GL116") == []


def test_a_dataset_the_engine_cannot_see_leaves_the_collated_batch_unknown():
    src = _graph().replace(
        "loader = DataLoader([(torch.randn(4), torch.tensor(1)) for _ in range(8)], batch_size=4, collate_fn=collate)\n"
        "for data in loader:\n    pred = model(data)",
        "def evaluate(samples):\n"
        "    loader = DataLoader(samples, batch_size=4, collate_fn=collate)\n"
        "    for data in loader:\n        pred = model(data)")
    assert "def evaluate(samples)" in src
    assert _lines(src, "GL101", "GL116") == []


# P42-2 (PyContrast's MoCo memory): a tensor assigned to the name of a registered buffer is kept in
# `_buffers` by `nn.Module.__setattr__`: still the buffer, moved with its module.
MEMORY = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Base(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def push(self, keys, queue):
        with torch.no_grad():
            ids = torch.arange(keys.shape[0]).cuda()
            queue.index_copy_(0, ids, keys)


class Memory(Base):
    def __init__(self, k, dim):
        super().__init__(k)
{init}

    def forward(self, q, k):
        queue = self.memory.clone().detach()
        logits = torch.mm(q, queue.t())
        self.push(k, self.memory)
        return logits


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
mem = Memory(16, 4).to(device)
out = mem(torch.randn(2, 4, device=device), torch.randn(2, 4, device=device))
"""


def test_a_tensor_assigned_to_a_registered_buffer_name_stays_the_buffer():
    init = '        self.register_buffer("memory", torch.randn(k, dim))\n        self.memory = F.normalize(self.memory)'
    assert _lines(MEMORY.format(init=init), "GL106", "GL116") == []


def test_a_plain_tensor_attribute_normalized_in_init_is_still_reported():
    init = "        self.memory = torch.randn(k, dim)\n        self.memory = F.normalize(self.memory)"
    assert _lines(MEMORY.format(init=init), "GL106", "GL116") != []
    # a buffer registered under another name does not make `memory` one
    init = ('        self.register_buffer("bank", torch.randn(k, dim))\n'
            "        self.memory = F.normalize(self.bank)")
    assert _lines(MEMORY.format(init=init), "GL106", "GL116") != []


# E51-2 (a) (d3rlpy#363): a method of a dataclass of the file reads its fields as the construction
# gave them, so a field wrapped by DDP there holds a wrapper of the field's class.
RECORD = """
import dataclasses

import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Temperature(nn.Module):
    def __init__(self):
        super().__init__()
        self.log_alpha = nn.Parameter(torch.zeros(1))


@dataclasses.dataclass(frozen=True)
class Modules:
    q_func: nn.Module
    temp: Temperature

    def wrap_models_by_ddp(self):
        return Modules(q_func=DDP(self.q_func), temp={temp})


def train(modules):
    modules = modules.wrap_models_by_ddp()
    return {read}.exp()


train(Modules(nn.Linear(2, 1), Temperature()))
"""


def test_a_dataclass_field_wrapped_by_ddp_in_its_method_is_a_wrapper_of_the_field_class():
    assert _lines(RECORD.format(temp="DDP(self.temp)", read="modules.temp.log_alpha"), "GL305") == [(26, "GL305")]


def test_dataclass_fields_read_through_module_or_not_wrapped_are_silent():
    assert _lines(RECORD.format(temp="DDP(self.temp)", read="modules.temp.module.log_alpha"), "GL305") == []
    assert _lines(RECORD.format(temp="self.temp", read="modules.temp.log_alpha"), "GL305") == []
    # wrapped on some paths only
    assert _lines(RECORD.format(temp="DDP(self.temp) if dist_ok() else self.temp",
                                read="modules.temp.log_alpha"), "GL305") == []


# E54-2 (DETA#14's assigner reached through a dict of outputs): a module whose forward returns a
# dict display of known tensors gives that dict, so a forward parameter that receives it is no
# tensor, and GL105's safe fix never writes `device=<that dict>.device` (AttributeError).
def test_gl105_never_names_a_dict_of_outputs_in_its_device_fix():
    from pathlib import Path

    src = (Path(__file__).parent / "fixtures_pending" / "GL105" /
           "e54_2_assigner_dict_parameter_named_in_device_fix.py").read_text(encoding="utf-8")
    out = _run(src, "GL105", fix=True)
    assert "arange(len(anchors), device=outputs.device)" not in out.text
    assert all("outputs.device" not in d.message for d in _run(src, "GL105").diagnostics)


def test_a_dict_of_outputs_filled_in_later_keeps_its_tensor_reading():
    src = '''
import numpy as np
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        out = {"losses": {}}
        out["losses"]["l1"] = self.fc(x).abs().mean()
        return out


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = Net().to(device)
losses = []
with torch.no_grad():
    for _ in range(2):
        losses.append(net(torch.randn(3, 4, device=device))["losses"]["l1"])
print(np.sum(losses))
'''
    assert _lines(src, "GL109") == [(24, "GL109")]


# E56-2 (dgl#486): the labels a file's `collate_fn` batches with `torch.tensor(labels)` are the
# loader's batch, with a dimension: one that reaches the loss unmoved is GL101's.
COLLATED_LABELS = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader


def collate(samples):
    feats, labels = map(list, zip(*samples))
    return torch.stack(feats), torch.tensor(labels)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
loss_func = nn.CrossEntropyLoss()
loader = DataLoader([(torch.randn(4), i % 2) for i in range(8)], batch_size=4, collate_fn=collate)
for x, label in loader:
    x = x.to(device)
{move}    loss = loss_func(model(x), label)
"""


def test_labels_batched_by_a_collate_function_reaching_the_loss_unmoved():
    assert _lines(COLLATED_LABELS.format(move=""), "GL101", "GL116") == [(18, "GL101")]
    assert _lines(COLLATED_LABELS.format(move="    label = label.to(device)\n"), "GL101", "GL116") == []
