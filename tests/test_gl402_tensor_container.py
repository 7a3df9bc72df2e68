"""GL402: a loss stored by index into a tensor made for the purpose (`losses = torch.zeros(n)`,
`torch.empty(n)`, `torch.Tensor(n)`) kept across iterations. The store records a `CopySlices`
node holding the stored loss's graph, and the tensor gets a `grad_fn` that chains every
iteration's (`losses.requires_grad` is True after the first store). Before, only lists and dicts
were followed. Stores of `.item()`/`.detach()`, a tensor made with `requires_grad`, a container
backpropagated as a whole, NumPy arrays and stores under no_grad stay silent."""

from __future__ import annotations

import torch
import torch.nn as nn

from fixture_support import check, fix

HEAD = '''import numpy as np
import torch
import torch.nn as nn

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 4), torch.randn(8, 1)
N = 4
'''

LOOP = HEAD + '''losses = torch.zeros(N)
for i in range(N):
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses[i] = loss
print(losses.mean().item())
'''


def _gl402(text):
    return [(d.line, d.code) for d in check(text, {"GL402"}) if d.code == "GL402"]


def _line(text, needle):
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_the_store_keeps_a_graph():
    # the fact the rule stands on (CPU, this torch)
    model = nn.Linear(4, 1)
    losses = torch.zeros(3)
    for i in range(3):
        loss = model(torch.randn(2, 4)).pow(2).mean()
        loss.backward()
        losses[i] = loss
    assert losses.requires_grad and type(losses.grad_fn).__name__ == "CopySlices"


def test_zeros_store_by_loop_index_detach_fix():
    assert _gl402(LOOP) == [(_line(LOOP, "losses[i] = loss"), "GL402")]
    out = fix(LOOP, {"GL402"}, unsafe=False).text
    assert "    losses[i] = loss.detach()\n" in out
    assert _gl402(out) == []


def test_empty_with_device_and_torch_tensor_and_self_attr():
    src = LOOP.replace("losses = torch.zeros(N)", 'losses = torch.empty(N, device="cpu")')
    assert _gl402(src) == [(_line(src, "losses[i] = loss"), "GL402")]
    src = LOOP.replace("losses = torch.zeros(N)", "losses = torch.Tensor(N)")
    assert _gl402(src) == [(_line(src, "losses[i] = loss"), "GL402")]
    src = HEAD + '''class Trainer:
    def __init__(self):
        self.losses = torch.zeros(N)

    def fit(self):
        for epoch in range(N):
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            self.losses[epoch] = loss


Trainer().fit()
'''
    assert _gl402(src) == [(_line(src, "self.losses[epoch] = loss"), "GL402")]


def test_item_and_detach_stores_silent():
    assert _gl402(LOOP.replace("losses[i] = loss", "losses[i] = loss.item()")) == []
    assert _gl402(LOOP.replace("losses[i] = loss", "losses[i] = loss.detach()")) == []


def test_requires_grad_container_silent():
    assert _gl402(LOOP.replace("losses = torch.zeros(N)", "losses = torch.zeros(N, requires_grad=True)")) == []


def test_container_backpropagated_as_a_whole_silent():
    src = LOOP.replace("print(losses.mean().item())", "losses.sum().backward()")
    assert _gl402(src) == []


def test_numpy_container_silent():
    assert _gl402(LOOP.replace("losses = torch.zeros(N)", "losses = np.zeros(N)")) == []


def test_store_under_no_grad_silent():
    src = HEAD + '''losses = torch.zeros(N)
for i in range(N):
    opt.zero_grad()
    nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    with torch.no_grad():
        loss = nn.functional.mse_loss(model(x), y)
        losses[i] = loss
'''
    assert _gl402(src) == []


def test_constant_index_silent():
    assert _gl402(LOOP.replace("losses[i] = loss", "losses[0] = loss")) == []
