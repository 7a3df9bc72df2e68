"""Mismatches that only one call's arguments produce (gpulint/flow.py, `Mismatch.site`).

The recorded pass of a helper joins the values of all its calls: a tensor moved at the training
loop's call and not at the evaluation loop's is "host or device" there, and nothing is reported.
The summary of each call runs with that call's own arguments; what fails there is reported once,
with the call (in a recorded function) that supplied the arguments."""

from __future__ import annotations

import textwrap

import libcst as cst

from gpulint.model import ScriptModel
from fixture_support import check, fix

HEAD = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 3).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
train_loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randint(0, 3, (8,))), batch_size=4)
val_loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randint(0, 3, (8,))), batch_size=4)


def compute_loss(model, x, y):
    out = model(x)
    return F.cross_entropy(out, y)


for x, y in train_loader:
    x, y = x.to(device), y.to(device)
    loss = compute_loss(model, x, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""

# the evaluation loop forgets the labels (the training loop moves both)
EVAL_UNMOVED = HEAD + """
model.eval()
with torch.no_grad():
    for x, y in val_loader:
        x = x.to(device)
        loss = compute_loss(model, x, y)
"""

EVAL_MOVED = HEAD + """
model.eval()
with torch.no_grad():
    for x, y in val_loader:
        x, y = x.to(device), y.to(device)
        loss = compute_loss(model, x, y)
"""


def model_of(src: str) -> ScriptModel:
    src = textwrap.dedent(src)
    return ScriptModel(cst.parse_module(src), src)


def line_of(src: str, text: str) -> int:
    return next(i for i, line in enumerate(src.splitlines(), 1) if text in line)


def test_a_helper_called_with_one_unmoved_tensor_mismatches_at_that_call():
    m = model_of(EVAL_UNMOVED)
    found = [mm for mm in m.mismatches() if mm.site is not None]
    assert len(found) == 1
    mm = found[0]
    code = m.module.code_for_node
    assert code(mm.node) == "F.cross_entropy(out, y)"  # the operation, in the helper
    assert code(mm.host) == "y"
    assert mm.function.name.value == "compute_loss"
    # the call in the evaluation loop, not the training loop's
    assert m.enclosing(mm.site, cst.For).iter.value == "val_loader"


def test_no_call_site_mismatch_when_every_call_moves_its_tensors():
    assert model_of(EVAL_MOVED).mismatches() == []


def test_a_call_under_a_cpu_only_branch_gives_none():
    src = HEAD + """
if not torch.cuda.is_available():
    for x, y in val_loader:
        x = x.to(device)
        loss = compute_loss(model, x, y)
"""
    assert model_of(src).mismatches() == []


def test_gl101_reports_the_call_and_moves_the_batch_in_its_loop():
    src = textwrap.dedent(EVAL_UNMOVED)
    found = [d for d in check(src, {"GL101"}) if d.code == "GL101"]
    want_line = [i for i, line in enumerate(src.splitlines(), 1) if "compute_loss(model, x, y)" in line][-1]
    assert [d.line for d in found] == [want_line]
    assert "`y`" in found[0].message and "`compute_loss()`" in found[0].message
    out = fix(src, {"GL101"}, unsafe=True).text
    cst.parse_module(out)
    assert "    for x, y in val_loader:\n        y = y.to(device)\n        x = x.to(device)\n" in out
    assert out.count("y = y.to(device)") == 1  # nothing added to the training loop
    assert [d for d in check(out, {"GL101"}) if d.code == "GL101"] == []


def test_gl101_dict_batch_handed_to_the_model_whose_forward_delegates():
    # m-bain/frozen-in-time#4: the validation loop moves batch["text"] only; forward hands
    # batch["video"] to a method of the model
    src = textwrap.dedent("""
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, Dataset

    class Clips(Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            return {"text": torch.randn(4), "video": torch.randn(4)}

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.text = nn.Linear(4, 2)
            self.video = nn.Linear(4, 2)

        def compute_video(self, v):
            return self.video(v)

        def forward(self, data):
            return self.text(data["text"]) + self.compute_video(data["video"])

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    train_loader = DataLoader(Clips(), batch_size=4)
    val_loader = DataLoader(Clips(), batch_size=4)
    for data in train_loader:
        data["text"] = data["text"].to(device)
        data["video"] = data["video"].to(device)
        model(data).sum().backward()
    with torch.no_grad():
        for data in val_loader:
            data["text"] = data["text"].to(device)
            out = model(data)
    """)
    found = [d for d in check(src, {"GL101"}) if d.code == "GL101"]
    assert [d.line for d in found] == [line_of(src, "out = model(data)")]
    assert "`compute_video()`" in found[0].message and found[0].fix is None
    # moving the video in the validation loop too: silent
    moved = src.replace(
        '        data["text"] = data["text"].to(device)\n        out',
        '        data["text"] = data["text"].to(device)\n        data["video"] = data["video"].to(device)\n        out')
    assert moved != src
    assert [d for d in check(moved, {"GL101"}) if d.code == "GL101"] == []
