"""GL402: loss components summed in a loop inside the update loop (no backward there) while the
update loop backpropagates another accumulator (fixtures43 G43-3, qbx2/PAAC.pytorch#1, rules43).

Only statements whose innermost loop is the loop with the backward were checked against the
engine's graph facts; a sum kept across updates but grown in an inner loop (`for t in
range(t_max): ... loss_sum += loss; loss_p_sum += loss_p`) was not. Now an inner loop that neither
backpropagates nor steps counts as part of the update loop around it, when that loop is a step loop
with a backward of its own; an accumulator assigned again in the update loop's body before it
(`values = []` per update) holds one update's values and stays silent, as does the differentiated
accumulator itself (`loss_sum`).
"""

from __future__ import annotations

from fixture_support import check, fix

# the README's repro
REPRO = '''
import torch
import torch.nn as nn

def get_loss(pred, target):
    loss_p = (pred - target).abs().mean()
    loss_v = (pred - target).pow(2).mean()
    return loss_p, loss_v, loss_p + loss_v

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss_p_sum = 0
for n in range(20):
    loss_sum = 0
    for t in range(3):
        loss_p, loss_v, loss = get_loss(model(torch.randn(8, 4)), torch.zeros(8, 1))
        loss_sum += loss
        loss_p_sum += loss_p  # GL402 expected: printed sum, never differentiated
    opt.zero_grad()
    loss_sum.backward()
    opt.step()
print(float(loss_p_sum))
'''


def _lines(src):
    return [(d.code, d.line) for d in check(src, ["GL402"])]


def test_inner_loop_component_sum_is_reported_and_fixed():
    assert _lines(REPRO) == [("GL402", 18)]
    fixed = fix(REPRO, ["GL402"], unsafe=False).text
    assert "loss_p_sum += loss_p.item()" in fixed and "        loss_sum += loss\n" in fixed
    assert _lines(fixed) == []


def test_inner_loop_sum_of_the_loss_itself_is_reported():
    assert _lines(REPRO.replace("loss_p_sum += loss_p ", "loss_p_sum += loss ")) == [("GL402", 18)]


def test_append_in_inner_loop_is_reported():
    src = REPRO.replace("loss_p_sum = 0\n", "history = []\n").replace(
        "loss_p_sum += loss_p ", "history.append(loss_p) ").replace("float(loss_p_sum)", "len(history)")
    assert _lines(src) == [("GL402", 18)]


# controls (silent on the base and on the branch)

def test_reset_in_each_update_stays_silent():
    src = REPRO.replace("    loss_sum = 0\n", "    loss_sum = 0\n    loss_p_sum = 0\n")
    assert _lines(src) == []


def test_detached_component_stays_silent():
    assert _lines(REPRO.replace("loss_p_sum += loss_p ", "loss_p_sum += loss_p.item() ")) == []


def test_inner_loop_under_no_grad_stays_silent():
    src = REPRO.replace("    for t in range(3):\n", "    with torch.no_grad():\n        probe = 0\n"
                        "        for _ in range(2):\n            probe += model(torch.randn(8, 4)).mean()\n"
                        "    for t in range(3):\n").replace("print(float(loss_p_sum))", "print(float(probe))")
    assert _lines(src.replace("loss_p_sum += loss_p ", "loss_p_sum += loss_p.item() ")) == []


def test_epoch_loop_around_batches_stays_silent():
    # the update loop is the inner one; a validation sum in the epoch loop is another rule's business
    src = '''
import torch
import torch.nn as nn

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
val_total = 0
for epoch in range(3):
    for step in range(5):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    for step in range(2):
        val_total += model(torch.randn(8, 4)).pow(2).mean()
print(float(val_total))
'''
    assert _lines(src) == []


def test_test_loop_after_the_backward_reset_per_epoch_is_reported():
    # a reset per outer iteration does not help a loop grown after the backward: nothing frees those
    # graphs (the same verdict test_gl402_per_iteration_heads gives a backpropagated name)
    src = '''
import torch
import torch.nn as nn

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    loss = model(torch.randn(8, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    test_loss = 0.0
    for step in range(2):
        test_loss += model(torch.randn(8, 4)).pow(2).mean()
    print(float(test_loss))
'''
    assert _lines(src) == [("GL402", 14)]
