"""GL102 (G48-1, wjmaddox/swa_gaussian#12): a device chosen by an `if`/`else` statement on
`torch.cuda.is_available()` (CUDA on one branch, the CPU on the other), or by a CPU default that an
`if` overrides with CUDA, is the same run-time choice as the one-line conditional expression: an
unguarded `.cuda()` whose tensor meets a model moved there fails on the CPU run. Hard negatives: a
name bound to CUDA on both branches, a CUDA binding not made conditional, a guarded `.cuda()`, and
batches moved to the chosen device stay silent."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

HELPER = """
import torch
import torch.nn as nn
import torch.nn.functional as F


def train_epoch(loader, model, optimizer):
    for input, target in loader:
        input = input.cuda()
        target = target.cuda()
        loss = F.cross_entropy(model(input), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


CHOICE
model = nn.Linear(4, 2)
model.to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = [(torch.randn(8, 4), torch.randint(0, 2, (8,))) for _ in range(3)]
train_epoch(loader, model, optimizer)
"""

IF_ELSE = """if torch.cuda.is_available():
    device = torch.device("cuda")
else:
    device = torch.device("cpu")"""

DEFAULT_THEN_IF = """device = "cpu"
if torch.cuda.is_available():
    device = "cuda" """

NOT_AVAILABLE_FIRST = """if not torch.cuda.is_available():
    device = torch.device("cpu")
else:
    device = torch.device("cuda:0")"""


def src(choice: str, body: str = HELPER) -> str:
    return textwrap.dedent(body).replace("CHOICE", choice)


def gl102(choice: str, body: str = HELPER) -> list[int]:
    return [d.line for d in check(src(choice, body), ["GL102"])]


def line_of(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


def test_if_else_on_availability_is_a_run_time_choice():
    assert gl102(IF_ELSE) == [line_of(src(IF_ELSE), "input.cuda()")]


def test_cpu_default_overridden_under_an_if_is_a_run_time_choice():
    assert gl102(DEFAULT_THEN_IF) == [line_of(src(DEFAULT_THEN_IF), "input.cuda()")]


def test_negated_test_with_cuda_in_the_else_branch():
    assert gl102(NOT_AVAILABLE_FIRST) == [line_of(src(NOT_AVAILABLE_FIRST), "input.cuda()")]


def test_the_fix_moves_the_batches_to_the_chosen_device():
    out = fix(src(IF_ELSE), ["GL102"], unsafe=True).text
    assert "input = input.to(device)" in out and "target = target.to(device)" in out and ".cuda()" not in out


# hard negatives ----------------------------------------------------------------------------------

def test_cuda_on_both_branches_is_no_choice():
    choice = IF_ELSE.replace('torch.device("cpu")', 'torch.device("cuda:0")')
    assert gl102(choice) == []


def fallback(choice: str, body: str = HELPER) -> list[int]:
    """The run-time-fallback findings only (a file without an availability test gets the file-level one)."""
    return [d.line for d in check(src(choice, body), ["GL102"]) if "also runs without CUDA" in d.message]


def test_cpu_then_cuda_unconditionally_is_no_choice():
    choice = 'print(torch.cuda.is_available())\ndevice = "cpu"\ndevice = "cuda"'
    assert fallback(choice) == []


def test_batches_moved_to_the_chosen_device_are_silent():
    body = HELPER.replace("input.cuda()", "input.to(device)").replace("target.cuda()", "target.to(device)")
    assert gl102(IF_ELSE, body) == []


def test_cuda_under_an_availability_test_is_silent():
    body = HELPER.replace(
        "        input = input.cuda()\n        target = target.cuda()\n",
        "        if torch.cuda.is_available():\n            input = input.cuda()\n            target = target.cuda()\n",
    )
    assert gl102(IF_ELSE, body) == []


def test_a_third_device_on_an_elif_is_not_followed():
    choice = """if torch.cuda.is_available():
    device = torch.device("cuda")
elif torch.backends.mps.is_available():
    device = torch.device("mps")
else:
    device = torch.device("cpu")"""
    assert gl102(choice) == []
