"""GL402: a loss name rebound to a Python number from a helper that divides by its loop counter
(PRECISION30 A6).

rasbt/stat453-deep-learning-ss21 (tests/fixtures/GL402/ok_stat453_epoch_cost_float_from_no_grad_helper.py):
after each epoch `cost = compute_loss(model, loader)`, which returns `float(curr_loss) / cnt` with
`cnt` the counter of `for cnt, (x, y) in enumerate(loader)`; then `epoch_cost.append(cost)` stores a
float. The rule did not count an `enumerate` counter as a number, so it reported the append, and its
safe fix (`cost.item()`) raised "AttributeError: 'float' object has no attribute 'item'".
"""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SRC = """
import torch
import torch.nn.functional as F


def compute_loss(net, data):
    curr = 0.0
    with torch.no_grad():
        for {target} in {iterate}:
            curr += F.mse_loss(net(x), y)
        return float(curr) / cnt


model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(3)]
epoch_cost = []
for epoch in range(2):
    for x, y in data:
        cost = F.mse_loss(model(x), y)
        opt.zero_grad()
        cost.backward()
        opt.step()
    cost = compute_loss(model, data)
    epoch_cost.append(cost)
"""


def _lines(target: str, iterate: str) -> list[int]:
    rule = Registry.load().by_code("GL402")()
    src = textwrap.dedent(SRC.format(target=target, iterate=iterate))
    return [d.line for d in run_text("train.py", src, [rule], Options()).diagnostics]


def test_a_float_divided_by_an_enumerate_counter_is_a_number():
    assert _lines("cnt, (x, y)", "enumerate(data)") == []


def test_a_counter_of_another_iterable_is_not_known():
    # `cnt` bound by zip(...): not known to be a number, the append stays reported
    assert _lines("cnt, (x, y)", "zip(range(3), data)") == [25]
