"""GL504 and a copy under `if <counter> == <number>:` (precision45, R1; RexYing/gnn-model-explainer
explainer/explain.py: `if epoch == 0: ... node_adj_att = adj_att * adj.float().cuda()` in the
explainer's `for epoch in range(num_epochs)` loop). The branch runs on one iteration at most: the
copy is made once, not on every iteration. Only a counter whose values do not repeat is trusted
(the target of `range(...)`, the index of `enumerate(...)`), only the `if` body (not its `else`),
only a branch between the call and its innermost loop, and not when the loop re-binds the counter."""

from __future__ import annotations

from fixture_support import check

HEAD = '''import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
adj = torch.ones(4, 4)
mask = torch.zeros(4, 4, device=device, requires_grad=True)
'''


def _lines(body):
    return sorted(d.line for d in check(HEAD + body, {"GL504"}) if d.code == "GL504")


def test_first_epoch_branch_of_range_loop_is_silent():
    assert _lines('''for epoch in range(10):
    if epoch == 0:
        att = mask * adj.float().to(device)
''') == []


def test_first_batch_branch_of_enumerate_and_reversed_or_conjunct_forms_are_silent():
    assert _lines('''for i, b in enumerate([1, 2, 3]):
    if 0 == i and b > 0:
        first = adj.to(device)
''') == []


def test_every_iteration_copy_and_else_branch_still_reported():
    assert _lines('''for epoch in range(10):
    every = adj.to(device)
    if epoch == 0:
        pass
    else:
        later = adj.cuda()
''') == [7, 11]


def test_non_counter_loop_variable_still_reported():
    assert _lines('''for label in [0, 1, 0, 1]:
    if label == 0:
        w = adj.to(device)
''') == [8]


def test_rebound_counter_and_outer_loop_counter_still_reported():
    assert _lines('''for k in range(6):
    k = k // 3
    if k == 0:
        w = adj.to(device)
for k in range(3):
    for j in range(4):
        if k == 0:
            w = adj.to(device)
''') == [9, 13]
