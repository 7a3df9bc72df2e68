"""GL111: `optimizer.load_state_dict(...)` on an optimizer that the file binds only later
(dvgodoy/PyTorchStepByStep Chapter02.ipynb: a `%run -i model_configuration/v3.py` cell builds
`model = nn.Sequential(...).to(device)` and its optimizer, a later cell restores the checkpoint
into them, and a cell after that rebuilds both from a `# %load` copy of the same file). The
optimizer restored there is not the one the later statements build and move: nothing in the file
says where its model is. An optimizer bound before the load, with the model moved after it, keeps
the finding, also when the file rebuilds it later."""

from __future__ import annotations

import textwrap

from fixture_support import check

NOTEBOOK_ORDER = """
import torch
import torch.nn as nn
import torch.optim as optim

checkpoint = torch.load("model_checkpoint.pth", weights_only=False)
model.load_state_dict(checkpoint["model_state_dict"])
optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
model.train()

device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Sequential(nn.Linear(1, 1)).to(device)
optimizer = optim.SGD(model.parameters(), lr=0.1)
"""

BUILT_FIRST = """
import torch
import torch.nn as nn
import torch.optim as optim

device = "cuda" if torch.cuda.is_available() else "cpu"
checkpoint = torch.load("model_checkpoint.pth", map_location="cpu")
model = nn.Sequential(nn.Linear(1, 1))
optimizer = optim.SGD(model.parameters(), lr=0.1)
model.load_state_dict(checkpoint["model_state_dict"])
optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
model.to(device)
{later}
"""


def _lines(src: str):
    return [d.line for d in check(textwrap.dedent(src), ["GL111"]) if d.code == "GL111"]


def test_optimizer_bound_only_after_the_load_is_not_reported():
    assert _lines(NOTEBOOK_ORDER) == []


def test_optimizer_built_before_the_load_is_reported():
    assert _lines(BUILT_FIRST.format(later="")) == [11]


def test_optimizer_built_before_and_rebuilt_later_is_reported():
    later = "model = nn.Sequential(nn.Linear(1, 1)).to(device)\noptimizer = optim.SGD(model.parameters(), lr=0.1)"
    assert _lines(BUILT_FIRST.format(later=later)) == [11]
