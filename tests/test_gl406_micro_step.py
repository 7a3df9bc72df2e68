"""GL406 on a scheduler stepped every micro-step of a gradient-accumulation loop whose
`optimizer.step()` runs only under a guard false on the loop's first pass (G37-1,
EvolvingLMMs-Lab/OneVision-Encoder#82): the first k - 1 passes step the schedule before any
optimizer step (PyTorch warns), and the schedule then advances k times per optimizer step."""

from __future__ import annotations

import textwrap

from fixture_support import check

HEAD = """\
import torch
import torch.nn as nn

model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10)
accum = 4
loader = [torch.randn(8, 4) for _ in range(40)]
"""


def _lines(body: str):
    src = HEAD + textwrap.dedent(body)
    return [(d.line, d.message) for d in check(src, {"GL406"}) if d.code == "GL406"]


def _sched_line(body: str) -> int:
    src = HEAD + textwrap.dedent(body)
    return next(i for i, line in enumerate(src.splitlines(), 1) if line.strip().startswith("sched.step()"))


def test_range_counter_plus_one_modulo():
    body = """
        for step in range(40):
            loss = model(loader[step]).pow(2).mean() / accum
            loss.backward()
            if (step + 1) % accum == 0:
                opt.step()
                opt.zero_grad()
            sched.step()
        """
    got = _lines(body)
    assert [line for line, _ in got] == [_sched_line(body)]
    assert "`(step + 1) % accum == 0`" in got[0][1] and "once per micro-step" in got[0][1]


def test_enumerate_last_of_window_or_last_batch():
    body = """
        for epoch in range(2):
            for i, x in enumerate(loader):
                model(x).pow(2).mean().backward()
                if i % accum == accum - 1 or i == len(loader) - 1:
                    opt.step()
                    opt.zero_grad()
                sched.step()
        """
    assert [line for line, _ in _lines(body)] == [_sched_line(body)]


def test_enumerate_from_one_modulo_and_literal_k():
    body = """
        for i, x in enumerate(loader, 1):
            model(x).pow(2).mean().backward()
            if i % 4 == 0:
                opt.step()
                opt.zero_grad()
            sched.step()
        """
    assert [line for line, _ in _lines(body)] == [_sched_line(body)]


def test_scheduler_under_the_guard_silent():
    # the PR's fix
    assert _lines("""
        for step in range(40):
            model(loader[step]).pow(2).mean().backward()
            if (step + 1) % accum == 0:
                opt.step()
                opt.zero_grad()
                sched.step()
        """) == []


def test_guard_true_on_first_pass_silent():
    # `step % accum == 0` steps the optimizer on the first pass: no step before it
    assert _lines("""
        for step in range(40):
            model(loader[step]).pow(2).mean().backward()
            if step % accum == 0:
                opt.step()
                opt.zero_grad()
            sched.step()
        """) == []


def test_plain_per_step_loop_silent():
    assert _lines("""
        for step in range(40):
            opt.zero_grad()
            model(loader[step]).pow(2).mean().backward()
            opt.step()
            sched.step()
        """) == []


def test_scheduler_under_its_own_guard_silent():
    assert _lines("""
        for step in range(40):
            model(loader[step]).pow(2).mean().backward()
            if (step + 1) % accum == 0:
                opt.step()
                opt.zero_grad()
            if (step + 1) % accum == 0:
                sched.step()
        """) == []


def test_counter_not_the_loops_own_silent():
    # a hand-made counter: its first value is not known here
    assert _lines("""
        global_step = 0
        for x in loader:
            model(x).pow(2).mean().backward()
            if (global_step + 1) % accum == 0:
                opt.step()
                opt.zero_grad()
            global_step += 1
            sched.step()
        """) == []


def test_counter_rebound_in_loop_silent():
    assert _lines("""
        for step in range(40):
            step = step * accum
            model(loader[0]).pow(2).mean().backward()
            if (step + 1) % accum == 0:
                opt.step()
                opt.zero_grad()
            sched.step()
        """) == []


def test_continue_before_scheduler_silent():
    assert _lines("""
        for step in range(40):
            model(loader[step]).pow(2).mean().backward()
            if (step + 1) % accum != 0:
                continue
            opt.step()
            opt.zero_grad()
            sched.step()
        """) == []


def test_k_of_one_silent():
    assert _lines("""
        for step in range(40):
            model(loader[step]).pow(2).mean().backward()
            if (step + 1) % 1 == 0:
                opt.step()
                opt.zero_grad()
            sched.step()
        """) == []


def test_optimizer_step_through_helper_silent():
    assert _lines("""
        def update():
            opt.step()
            opt.zero_grad()

        for step in range(40):
            model(loader[step]).pow(2).mean().backward()
            if (step + 1) % accum == 0:
                update()
            sched.step()
        """) == []
