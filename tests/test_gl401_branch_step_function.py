"""GL401 on a step function whose `if`/`else` branches each run a backward and step the same
optimizer (daikichiba9511/my-kaggle-template before PR #12, G35-2): `if scaler is not None:
scaler.scale(loss).backward(); scaler.step(optimizer); scaler.update()` / `else: loss.backward();
optimizer.step()`, called once per batch of a loop that never clears the gradients. Every call
steps once, as an unconditional step would."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

LOOP = """
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    for _ in range(4):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        step(model, optimizer, loss)
"""


def _lines(step_fn: str, loop: str = LOOP):
    src = "import torch\nimport torch.nn as nn\n\n\n" + textwrap.dedent(step_fn) + "\n" + textwrap.dedent(loop)
    return [d.line for d in check(src, {"GL401"}) if d.code == "GL401"], src


def test_scaler_and_plain_branches_never_cleared():
    lines, src = _lines("""
        def step(model, optimizer, loss, scaler=None):
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                optimizer.step()
        """)
    assert lines == [9]  # scaler.step(optimizer)
    out = fix(src, {"GL401"}, False).text
    assert "def step(model, optimizer, loss, scaler=None):\n    optimizer.zero_grad(set_to_none=True)\n    if scaler" in out
    assert [d.line for d in check(out, {"GL401"}) if d.code == "GL401"] == []


def test_two_statement_scaled_backward_and_elif():
    lines, _ = _lines("""
        def step(model, optimizer, loss, scaler=None, clip=False):
            if scaler is not None:
                scaled = scaler.scale(loss)
                scaled.backward()
                scaler.step(optimizer)
                scaler.update()
            elif clip:
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
            else:
                loss.backward()
                optimizer.step()
        """)
    assert lines == [10]  # scaler.step(optimizer)


def test_branch_clears_after_step_silent():
    # the repository's fix (PR #12): each branch zeroes the gradients after its step
    lines, _ = _lines("""
        def step(model, optimizer, loss, scaler=None):
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
            else:
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
        """)
    assert lines == []


def test_caller_loop_clears_silent():
    lines, _ = _lines("""
        def step(model, optimizer, loss, scaler=None):
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                optimizer.step()
        """, LOOP.replace("        step(model", "        optimizer.zero_grad()\n        step(model"))
    assert lines == []


def test_if_without_else_silent():
    # a path that does not step (the finite check of wekws-like code): not every call steps
    lines, _ = _lines("""
        def step(model, optimizer, loss, scaler=None):
            loss.backward()
            if torch.isfinite(loss):
                optimizer.step()
        """)
    assert lines == []


def test_accumulation_branches_silent():
    lines, _ = _lines("""
        def step(model, optimizer, loss, i, k=2):
            if (i + 1) % k == 0:
                loss.backward()
                optimizer.step()
            else:
                loss.backward()
                optimizer.step()
        """)
    assert lines == []


def test_branch_with_nested_condition_silent():
    lines, _ = _lines("""
        def step(model, optimizer, loss, scaler=None, ok=True):
            if scaler is not None:
                scaler.scale(loss).backward()
                if ok:
                    scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                optimizer.step()
        """)
    assert lines == []


def test_branches_step_different_optimizers_silent():
    lines, _ = _lines("""
        other = torch.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1)

        def step(model, optimizer, loss, scaler=None):
            if scaler is not None:
                loss.backward()
                other.step()
            else:
                loss.backward()
                optimizer.step()
        """)
    assert lines == []
