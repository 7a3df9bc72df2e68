"""GL402: a loss stored by index into a list or dict kept across iterations (`losses[i] = loss`,
`history[epoch] = loss`, `self.losses[step] = loss`) keeps every iteration's graph, like
`losses.append(loss)` (StanfordASL/neural-network-lyapunov#140: `losses = [None] * n`, and each
iteration backpropagates `losses[iter_count - 1]` and stores the next loss at `losses[iter_count]`).
Before, only `acc += loss` and `acc.append(loss)` were followed. The backward of one element in the
loop (`losses[k - 1].backward()`) does not count as differentiating the whole list; a list stacked
and backpropagated later does. A constant key, a key of an inner loop over names, a tensor or numpy
container, values detached or `.item()`ed, stores under no_grad and slots cleared in the loop stay
silent."""

from __future__ import annotations

from fixture_support import check, fix

HEAD = '''import numpy as np
import torch
import torch.nn as nn

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 4), torch.randn(8, 1)
N = 4
'''


def _gl402(text):
    return [(d.line, d.code) for d in check(text, {"GL402"}) if d.code == "GL402"]


def _line(text, needle):
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


LIST = HEAD + '''losses = [None] * N
for i in range(N):
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses[i] = loss
print(sum(l.item() for l in losses))
'''


def test_list_store_by_loop_index():
    assert _gl402(LIST) == [(_line(LIST, "losses[i] = loss"), "GL402")]
    out = fix(LIST, {"GL402"}, unsafe=False).text
    # its elements are used as tensors (`l.item()`): detach, do not turn them into floats
    assert "    losses[i] = loss.detach()\n" in out
    assert _gl402(out) == []


DICT = HEAD + '''history = {}
for epoch in range(N):
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    history[epoch] = loss
print(history)
'''


def test_dict_store_by_epoch():
    assert _gl402(DICT) == [(_line(DICT, "history[epoch] = loss"), "GL402")]
    out = fix(DICT, {"GL402"}, unsafe=False).text
    assert "    history[epoch] = loss.item()\n" in out
    assert _gl402(out) == []


SELF = HEAD + '''

class Trainer:
    def __init__(self):
        self.losses = [0.0] * N

    def fit(self):
        step = 0
        for xb, yb in [(x, y)] * N:
            loss = nn.functional.mse_loss(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            self.losses[step] = loss
            step += 1


Trainer().fit()
'''


def test_self_attribute_store_by_counter():
    assert _gl402(SELF) == [(_line(SELF, "self.losses[step] = loss"), "GL402")]
    out = fix(SELF, {"GL402"}, unsafe=False).text
    assert "self.losses[step] = loss.item()\n" in out
    assert _gl402(out) == []


LINE_SEARCH = HEAD + '''

def closure():
    return nn.functional.mse_loss(model(x), y), 0.0


losses = [None] * N
costs = [None] * N
losses[0], costs[0] = closure()
k = 1
while k < N:
    opt.zero_grad()
    losses[k - 1].backward()
    opt.step()
    (losses[k], costs[k]) = closure()
    k += 1
print([l.item() for l in losses])
'''


def test_elements_backpropagated_one_by_one_report_without_fix():
    # neural-network-lyapunov#140: the backward of the previous element is not a backward of the list
    assert _gl402(LINE_SEARCH) == [(_line(LINE_SEARCH, "(losses[k], costs[k]) = closure()"), "GL402")]
    out = fix(LINE_SEARCH, {"GL402"}, unsafe=False).text
    assert out == LINE_SEARCH  # `.item()` there would break `losses[k - 1].backward()`


def test_list_stacked_and_backpropagated_later_is_silent():
    text = LIST.replace("print(sum(l.item() for l in losses))",
                        "torch.stack(losses).sum().backward()")
    assert _gl402(text) == []


def test_window_cleared_after_its_backward_is_silent():
    text = LINE_SEARCH.replace("    opt.step()\n    (losses", "    opt.step()\n    losses[k - 1] = losses[k - 1].item()\n    (losses")
    assert _gl402(text) == []


def test_constant_key_overwrites_is_silent():
    assert _gl402(DICT.replace("history[epoch] = loss", 'history["last"] = loss')) == []


def test_key_of_inner_loop_over_names_is_silent():
    text = DICT.replace("    history[epoch] = loss\n",
                        "    for name, part in {'mse': loss}.items():\n        history[name] = part\n")
    assert _gl402(text) == []


def test_detached_values_are_silent():
    assert _gl402(DICT.replace("history[epoch] = loss", "history[epoch] = loss.item()")) == []
    assert _gl402(LIST.replace("losses[i] = loss", "losses[i] = loss.detach()")) == []


def test_tensor_and_numpy_containers_are_silent():
    # `torch.zeros(n)[i] = loss.item()` (MDN/PINN training scripts), `np.zeros(n)[i] = ...`:
    # not a list or dict; left alone
    assert _gl402(LIST.replace("losses = [None] * N", "losses = torch.zeros(N)")
                  .replace("losses[i] = loss", "losses[i] = loss.item()")) == []
    assert _gl402(LIST.replace("losses = [None] * N", "losses = np.zeros(N)")
                  .replace("losses[i] = loss", "losses[i] = loss.item()")) == []


def test_store_under_no_grad_is_silent():
    text = HEAD + '''losses = [None] * N
for i in range(N):
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        val = nn.functional.mse_loss(model(x), y)
    losses[i] = val
print(losses)
'''
    assert _gl402(text) == []


def test_container_made_in_the_loop_is_silent():
    text = LIST.replace("losses = [None] * N\nfor i in range(N):\n",
                        "for i in range(N):\n    losses = [None] * N\n")
    assert _gl402(text) == []


def test_dict_list_append_still_reported():
    text = HEAD + '''hist = {"train": [], "val": []}
for epoch in range(N):
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    hist["train"].append(loss)
print(hist)
'''
    assert _gl402(text) == [(_line(text, 'hist["train"].append(loss)'), "GL402")]


def test_one_slot_per_head_overwritten_every_batch_is_silent():
    # a loop over heads, each stepping its own optimizer, inside the data loop: slot i holds the
    # last batch's loss of head i, not a growing history
    text = HEAD + '''heads = [nn.Linear(4, 1) for _ in range(3)]
optimizers = [torch.optim.SGD(h.parameters(), lr=0.1) for h in heads]
losses = [None] * len(heads)
for step in range(N):
    for i, (head, optimizer) in enumerate(zip(heads, optimizers)):
        loss = nn.functional.mse_loss(head(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses[i] = loss
print([l.item() for l in losses])
'''
    assert _gl402(text) == []
