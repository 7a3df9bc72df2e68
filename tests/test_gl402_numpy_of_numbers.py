"""GL402: a loss name rebound to a NumPy call of a list display before it is accumulated holds no
graph (PRECISION43: pyod's MO_GAAL averages its sub-generators' `.item()` losses with
`generator_loss = np.mean([...])` and appends that; NumPy converts the list, and a tensor holding a
graph would raise there). A NumPy call of a bare name (it may be a tensor) keeps the report."""

from __future__ import annotations

from fixture_support import check

SRC = """
import numpy as np
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
history = []
for epoch in range(3):
    losses = {}
    for i in range(2):
        x = torch.randn(8, 4, device=device)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses[i] = loss.item()
    loss = REBIND
    history.append(loss)
"""


def _codes(rebind: str) -> list[str]:
    return [d.code for d in check(SRC.replace("REBIND", rebind), ["GL402"])]


def test_numpy_mean_of_list_comprehension_is_silent():
    assert _codes("np.mean([losses[i] for i in range(2)])") == []


def test_numpy_call_of_list_and_tuple_display_is_silent():
    assert _codes("np.average([losses[0], losses[1]])") == []
    assert _codes("np.sum((losses[0], losses[1]))") == []


def test_numpy_call_of_a_bare_name_keeps_the_report():
    # `np.mean(loss)` of the loss tensor: NumPy may hand it to `loss.mean(...)`, a tensor with a graph
    assert _codes("np.mean(loss)") == ["GL402"]


def test_the_loss_itself_keeps_the_report():
    assert _codes("loss * 1") == ["GL402"]
