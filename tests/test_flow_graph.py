"""The flow engine's `graph` fact (eighteenth session): a tensor that holds an autograd graph on
every path, and GL402 reporting such a tensor kept across the training steps when it is not the
loss (UCSD-E4E/acoustic-multiclass-training#147: `log_pred.append(F.sigmoid(outputs))` in the
training loop; the review: detach it first).

The fact must be sure: an output of a module with parameters called with gradients on, and what
differentiable operations make of it. `.detach()`, `.data`, comparisons, `argmax`, integer casts,
`~`, `//`, anything under `no_grad`, a value detached on one branch, and any module output in a file
that freezes parameters somewhere give no graph.
"""

from __future__ import annotations

import textwrap

import libcst as cst

from gpulint.engine import Options, run_text
from gpulint.model import ScriptModel
from gpulint.registry import Registry

HEAD = """
import torch
import torch.nn as nn
import torch.nn.functional as F

model = nn.Linear(4, 3)
crit = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 4)
y = torch.randint(0, 3, (8,))
"""


def value_at(src: str, code: str, pick: int = -1):
    src = textwrap.dedent(src)
    mod = cst.parse_module(src)
    m = ScriptModel(mod, src)
    hits = [n for n in m.flow.values if mod.code_for_node(n) == code]
    assert hits, code
    return m.flow.values[hits[pick]]


def graph(body: str, code: str, head: str = HEAD) -> bool:
    v = value_at(head + textwrap.dedent(body), code)
    assert v.kind == "tensor", (code, v)
    return v.graph


def test_module_outputs_and_what_differentiable_operations_make_of_them_hold_a_graph():
    body = """
    out = model(x)
    loss = crit(out, y)
    prob = F.softmax(out, dim=1)[:, 0] * 2
    scaled = out.float().sum() / 8
    moved = out.cpu()
    """
    assert graph(body, "out")
    assert graph(body, "loss")  # a loss without parameters passes on its input's graph
    assert graph(body, "prob")
    assert graph(body, "scaled")
    assert graph(body, "moved")  # `.cpu()` keeps the graph


def test_detaching_and_non_differentiable_operations_hold_none():
    body = """
    out = model(x)
    a = out.detach()
    b = out.argmax(1)
    c = out == 0
    d = out.long()
    e = out.data
    f = ~(out > 0)
    g = out // 2
    h = torch.randn(3) * 2
    """
    for name in "abcdefgh":
        assert not graph(body, name), name


def test_no_grad_and_branches():
    body = """
    with torch.no_grad():
        a = model(x)
    if x.sum() > 0:
        b = model(x)
    else:
        b = model(x).detach()
    """
    assert not graph(body, "a")
    assert not graph(body, "b")  # detached on one path: not sure


def test_a_file_that_freezes_parameters_gives_module_outputs_no_graph():
    head = HEAD + "\nfor p in model.parameters():\n    p.requires_grad = False\n"
    assert not graph("out = model(x)\n", "out", head)


def test_file_functions_return_the_graph_of_their_computation():
    body = """
    def dice(pred, target):
        inter = (pred * target).sum()
        return 2 * inter / (pred.sum() + target.sum())

    def accuracy(pred, target):
        return (pred.argmax(1) == target).float().mean()

    out = model(x)
    d = dice(torch.sigmoid(out), y)
    acc = accuracy(out, y)
    """
    assert graph(body, "d")
    assert not graph(body, "acc")


LOOP = """
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 3).to(device)
crit = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = [(torch.randn(8, 4), torch.randint(0, 3, (8,))) for _ in range(4)]


def dice(pred, target):
    return (pred * target).sum() / (pred.sum() + target.sum())


def accuracy(pred, target):
    return (pred.argmax(1) == target).float().mean()


for epoch in range(2):
    preds = []
    running = 0.0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        out = model(x)
        loss = crit(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
{keep}
"""


def gl402(keep: str, src: str = LOOP) -> list[int]:
    rule = Registry.load().by_code("GL402")()
    text = src.replace("{keep}", textwrap.indent(textwrap.dedent(keep), " " * 8))
    return [d.line for d in run_text("train.py", text, [rule], Options()).diagnostics]


def test_gl402_reports_graph_holding_values_kept_across_training_steps():
    assert gl402("preds.append(out)") != []
    assert gl402("preds.append(F.sigmoid(out))") != []
    assert gl402("running += dice(torch.sigmoid(out), F.one_hot(y, 3))") != []


def test_gl402_hard_negatives():
    assert gl402("preds.append(out.detach())") == []
    assert gl402("preds.append(out.argmax(1))") == []
    assert gl402("preds.append(F.sigmoid(out).detach().cpu())") == []
    assert gl402("running += accuracy(out, y)") == []
    assert gl402("running += (out.argmax(1) == y).sum()") == []
    assert gl402("running += accuracy(out, y).item()") == []
    # reset every iteration: one step's graph at most
    assert gl402("preds = []\npreds.append(out)") == []
    # kept to be backpropagated later (a meta-learning outer loss)
    src = LOOP.replace("for epoch in range(2):", "meta = []\nfor epoch in range(2):") + (
        "    torch.stack(meta).mean().backward()\n")
    assert gl402("meta.append(out.sum())", src) == []


def test_gl402_stays_silent_in_loops_without_a_backward():
    # an evaluation loop without no_grad is GL403's; the flag alone reports nothing here
    src = LOOP.replace("        loss.backward()\n", "").replace("        opt.step()\n", "")
    assert gl402("preds.append(out)", src) == []


SHARED = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 1).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
train_dl = [(torch.randn(8, 4), torch.rand(8, 1)) for _ in range(4)]
val_dl = train_dl[:2]


def dice(pred, target):
    return 2 * (pred * target).sum() / (pred.sum() + target.sum())


def loss_batch(output, target, opt=None):
    loss = nn.functional.binary_cross_entropy_with_logits(output, target)
    {metric}
    if opt is not None:
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item(), metric_b


def loss_epoch(model, dl, opt=None):
    running = 0.0
    for xb, yb in dl:
        out = model(xb.to(device))
        loss_b, metric_b = loss_batch(out, yb.to(device), opt)
        running += metric_b
    return running


for epoch in range(2):
    loss_epoch(model, train_dl, opt)
    {val}
"""


def test_gl402_a_shared_epoch_function_called_to_train_and_under_no_grad():
    # PyTorch-Computer-Vision-Cookbook#11: the training call (given the optimizer) keeps every
    # batch's dice graph in `running`; the validation call under no_grad does not
    def shared(metric="metric_b = dice(torch.sigmoid(output), target)",
               val="with torch.no_grad():\n        loss_epoch(model, val_dl)"):
        return SHARED.replace("{metric}", metric).replace("{val}", val)

    assert gl402("", shared()) != []
    # the author's fix: the metric computed under no_grad
    assert gl402("", shared(metric="with torch.no_grad():\n        metric_b = dice(torch.sigmoid(output), target)")) == []
    assert gl402("", shared(metric="metric_b = dice(torch.sigmoid(output), target).item()")) == []
    # only ever called under no_grad: nothing keeps a graph
    only_eval = shared().replace("    loss_epoch(model, train_dl, opt)\n", "")
    assert gl402("", only_eval) == []


def test_a_python_number_plus_a_tensor_is_a_tensor():
    # fixtures27's F27-2 (VocGAN#24): `adv_loss = 0.0; adv_loss += criterion(...)` was a host value
    body = """
    total = 0.0
    total += crit(model(x), y)
    count = 0
    count += (model(x).argmax(1) == y).sum()
    plain = 0.0
    plain += 1.5
    """
    v = value_at(HEAD + textwrap.dedent(body), "total")
    assert v.kind == "tensor" and v.graph
    v = value_at(HEAD + textwrap.dedent(body), "count")
    assert v.kind == "tensor" and not v.graph
    assert value_at(HEAD + textwrap.dedent(body), "plain").kind == "hostval"


def test_fields_of_a_record_computed_under_no_grad_hold_no_graph():
    # the module's forward returns a dataclass (its summary is made once, with gradients on, for
    # the training call): read under no_grad, its fields hold no graph
    head = """
import torch
import torch.nn as nn
from dataclasses import dataclass


@dataclass
class Output:
    loss: torch.Tensor
    logits: torch.Tensor


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x, y):
        logits = self.fc(x)
        return Output(((logits - y) ** 2).mean(), logits)


model = Net()
x = torch.randn(8, 4)
y = torch.randn(8, 1)
"""
    body = """
    train_out = model(x, y)
    a = train_out.loss
    with torch.no_grad():
        eval_out = model(x, y)
    b = eval_out.loss
    """
    assert graph(body, "a", head)
    assert not graph(body, "b", head)


PHASES = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
crit = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loaders = {"train": [(torch.randn(8, 4), torch.randint(0, 2, (8,)))], "val": [(torch.randn(8, 4), torch.randint(0, 2, (8,)))]}

for epoch in range(2):
    for phase in ["train", "val"]:
        running_loss = 0.0
        for x, y in loaders[phase]:
            x, y = x.to(device), y.to(device)
            opt.zero_grad()
            with torch.set_grad_enabled(phase == "train"):
                out = model(x)
                loss = crit(out, y)
                if phase == "train":
                    loss.backward()
                    opt.step()
                running_loss += {acc}
        print(phase, running_loss)
"""


def test_gl402_the_loss_accumulated_under_set_grad_enabled_of_the_phase():
    # the transfer-learning tutorial's phase loop with the loss itself accumulated: in the training
    # phase every batch's graph is kept (the tutorial accumulates `loss.item() * inputs.size(0)`)
    assert gl402("", PHASES.replace("{acc}", "loss * x.size(0)")) == [23]
    assert gl402("", PHASES.replace("{acc}", "loss.item() * x.size(0)")) == []
    assert gl402("", PHASES.replace("{acc}", "loss.detach() * x.size(0)")) == []
