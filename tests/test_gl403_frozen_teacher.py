"""GL403: a model whose parameters are frozen records no graph, so its evaluation loop needs no
`no_grad` (benchmarks/PRECISION32.md, fanyun-sun/InfoGraph semi-supervised/mean_teacher.py: the
mean teacher is built in the `__main__` block, frozen there with
`for param in teacher_model.parameters(): param.detach_()`, and evaluated by a module-level
`def test(loader)` that reads the global `teacher_model`). Two gaps on the base: the loop over
`.parameters()` only counted `p.requires_grad = False` (not `p.detach_()` or
`p.requires_grad_(False)`), and a freeze at module level did not count for a loop in a function.
The function must be called only after the freeze, at module level, and the model not rebuilt
after it; otherwise the loop stays reported."""

from __future__ import annotations

import textwrap

from fixture_support import check

SRC = """
import torch
import torch.nn as nn


def evaluate(loader):
    teacher.eval()
    err = 0.0
    for x, y in loader:
        err += (teacher(x) - y).abs().sum().item()
    return err


if __name__ == "__main__":
    student = nn.Linear(4, 1)
    teacher = nn.Linear(4, 1)
{early}    for p in teacher.parameters():
        {freeze}
{rebuild}    opt = torch.optim.SGD(student.parameters(), lr=0.1)
    data = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(3)]
    for x, y in data:
        loss = (student(x) - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(evaluate(data))
"""

LOOP_LINE = 10  # `err += (teacher(x) - y)...`


def _lines(freeze: str, early: str = "", rebuild: str = ""):
    text = textwrap.dedent(SRC).format(freeze=freeze, early=early, rebuild=rebuild)
    return sorted(d.line for d in check(text, ["GL403"]) if d.code == "GL403")


def test_detach_in_place_freezes_a_global_teacher():
    assert _lines("p.detach_()") == []


def test_requires_grad_false_method_freezes_a_global_teacher():
    assert _lines("p.requires_grad_(False)") == []


def test_requires_grad_false_assignment_freezes_a_global_teacher():
    assert _lines("p.requires_grad = False") == []


def test_requires_grad_true_is_no_freeze():
    assert _lines("p.requires_grad_(True)") == [LOOP_LINE]


def test_called_before_the_freeze_stays_reported():
    assert _lines("p.detach_()", early="    print(evaluate([]))\n") == [LOOP_LINE]


def test_model_rebuilt_after_the_freeze_stays_reported():
    assert _lines("p.detach_()", rebuild="    teacher = nn.Linear(4, 1)\n") == [LOOP_LINE]
