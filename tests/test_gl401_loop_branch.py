"""GL401 in a training loop that clears the gradients on one branch of an `if` only
(IDEA-Research/DAB-DETR#58): `if args.amp: optimizer.zero_grad(); scaler.scale(losses).backward();
...; scaler.step(optimizer)` / `else: losses.backward(); optimizer.step()`. The loop "clears"
`optimizer`, but never on the path that steps it directly."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

HEAD = """
import torch
import torch.nn as nn

model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda", enabled=False)
data = [(torch.randn(2, 4), torch.randn(2, 1)) for _ in range(3)]


def train_one_epoch(amp):
    for x, y in data:
"""


def _run(body: str):
    src = textwrap.dedent(HEAD) + textwrap.indent(textwrap.dedent(body), " " * 8)
    return [d.line for d in check(src, {"GL401"}) if d.code == "GL401"], src


def test_fp32_branch_without_zero_grad():
    lines, src = _run("""
        losses = ((model(x) - y) ** 2).mean()
        if amp:
            optimizer.zero_grad()
            scaler.scale(losses).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            losses.backward()
            optimizer.step()
        """)
    assert lines == [22]
    out = fix(src, {"GL401"}, False).text
    assert "        else:\n            optimizer.zero_grad(set_to_none=True)\n            losses.backward()\n" in out
    assert [d.line for d in check(out, {"GL401"}) if d.code == "GL401"] == []


def test_amp_branch_without_zero_grad():
    lines, _ = _run("""
        losses = ((model(x) - y) ** 2).mean()
        if amp:
            scaler.scale(losses).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.zero_grad()
            losses.backward()
            optimizer.step()
        """)
    assert lines == [17]


def test_both_branches_clear():
    lines, _ = _run("""
        losses = ((model(x) - y) ** 2).mean()
        if amp:
            optimizer.zero_grad()
            scaler.scale(losses).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.zero_grad()
            losses.backward()
            optimizer.step()
        """)
    assert lines == []


def test_clear_after_the_step_on_each_branch():
    lines, _ = _run("""
        losses = ((model(x) - y) ** 2).mean()
        if amp:
            scaler.scale(losses).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
        else:
            losses.backward()
            optimizer.step()
            optimizer.zero_grad()
        """)
    assert lines == []


def test_clear_before_the_if():
    lines, _ = _run("""
        optimizer.zero_grad()
        losses = ((model(x) - y) ** 2).mean()
        if amp:
            scaler.scale(losses).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            losses.backward()
            optimizer.step()
        """)
    assert lines == []


def test_backward_outside_the_branch_is_left_alone():
    # where the clear would go is not the branch's first line: stay silent
    lines, _ = _run("""
        losses = ((model(x) - y) ** 2).mean()
        losses.backward()
        if amp:
            optimizer.zero_grad()
        else:
            optimizer.step()
        """)
    assert lines == []


def test_model_zero_grad_on_the_other_branch_is_left_alone():
    lines, _ = _run("""
        losses = ((model(x) - y) ** 2).mean()
        if amp:
            model.zero_grad()
            scaler.scale(losses).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.zero_grad()
            losses.backward()
            optimizer.step()
        """)
    assert lines == []
