"""ScheduleFacts (gpulint/analysis/schedules.py): which scheduler steps run before the first
optimizer step of their iteration."""

from __future__ import annotations

import textwrap

import libcst as cst

from gpulint.analysis.schedules import ScheduleFacts
from gpulint.model import ScriptModel

HEADER = """\
import torch
from torch.optim.lr_scheduler import StepLR, ReduceLROnPlateau
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = StepLR(optimizer, step_size=1)
"""


def facts(body: str) -> tuple[ScriptModel, ScheduleFacts]:
    src = HEADER + textwrap.dedent(body)
    m = ScriptModel(cst.parse_module(src), src)
    return m, m.facts(ScheduleFacts)


def early_lines(body: str) -> list[int]:
    m, f = facts(body)
    positions = cst.metadata.MetadataWrapper(m.module, unsafe_skip_copy=True).resolve(cst.metadata.PositionProvider)
    return sorted(positions[e.step.call].start.line for e in f.early_steps())


def expected_lines(body: str) -> list[int]:
    src = HEADER + textwrap.dedent(body)
    return [i + 1 for i, l in enumerate(src.splitlines()) if "expect" in l]


def test_step_loop_and_epoch_loop():
    body = """
    for epoch in range(3):
        scheduler.step()  # expect
        for x in range(4):
            optimizer.step()
    for x in range(4):
        scheduler.step()  # expect
        optimizer.step()
    """
    assert early_lines(body) == expected_lines(body)


def test_after_the_optimizer_is_not_early():
    _, f = facts(
        """
    for epoch in range(3):
        for x in range(4):
            optimizer.step()
        scheduler.step()
    for x in range(4):
        optimizer.step()
        scheduler.step()
    """
    )
    assert f.early_steps() == []


def test_guarded_step_is_early_only_when_its_branch_steps_after_it():
    body = """
    for epoch in range(3):
        if epoch > 0:
            scheduler.step()
        for x in range(4):
            optimizer.step()
    for i in range(8):
        if i % 2 == 0:
            scheduler.step()  # expect
            optimizer.step()
    """
    assert early_lines(body) == expected_lines(body)


def test_steps_with_arguments_and_plateau_are_ignored():
    _, f = facts(
        """
    plateau = ReduceLROnPlateau(optimizer)
    for epoch in range(3):
        scheduler.step(epoch)
        plateau.step()
        for x in range(4):
            optimizer.step()
    """
    )
    assert f.early_steps() == []


def test_unknown_scheduler_type_is_ignored():
    _, f = facts(
        """
    custom = make_schedule(optimizer)
    for x in range(4):
        custom.step()
        optimizer.step()
    """
    )
    assert f.early_steps() == []


def test_scaler_step_counts_as_an_optimizer_step():
    body = """
    scaler = torch.amp.GradScaler()
    for x in range(4):
        scaler.step(optimizer)
        scaler.update()
        scheduler.step()
    for x in range(4):
        scheduler.step()  # expect
        scaler.step(optimizer)
        scaler.update()
    """
    assert early_lines(body) == expected_lines(body)
    m, f = facts(body)
    (early,) = f.early_steps()
    # the fix anchor is the scaler.update() that follows the step
    assert m.module.code_for_node(early.anchor).strip() == "scaler.update()"


def test_helper_functions_and_hooks():
    body = """
    def train_one_epoch():
        for x in range(4):
            optimizer.step()

    def on_epoch_start():
        scheduler.step()  # expect

    for epoch in range(3):
        on_epoch_start()
        train_one_epoch()
    """
    assert early_lines(body) == expected_lines(body)
    _, f = facts(body)
    assert f.early_steps()[0].anchor is None  # not a move within one block


def test_per_epoch_function_called_in_a_loop_but_not_main():
    body = """
    def train(epoch):
        scheduler.step()  # expect
        for x in range(4):
            optimizer.step()

    def main():
        scheduler.step()
        for epoch in range(3):
            for x in range(4):
                optimizer.step()

    for epoch in range(3):
        train(epoch)
    main()
    """
    assert early_lines(body) == expected_lines(body)


def test_continue_between_steps_is_not_judged():
    _, f = facts(
        """
    for x in range(4):
        scheduler.step()
        if x == 2:
            continue
        optimizer.step()
    """
    )
    assert f.early_steps() == []


def test_other_optimizer_steps_do_not_count_as_its_own():
    body = """
    other = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in range(4):
        other.step()
        scheduler.step()  # expect
        optimizer.step()
    """
    assert early_lines(body) == expected_lines(body)


def test_guard_that_the_first_pass_passes_is_no_guard():
    body = """
    DECAY_START = -1
    LATE = 2
    for epoch in range(4):
        if epoch > DECAY_START:
            scheduler.step()  # expect
        for x in range(3):
            optimizer.step()
    for epoch in range(4):
        if epoch >= 0:
            scheduler.step()  # expect
        optimizer.step()
    for epoch in range(1, 4):
        if 0 < epoch:
            scheduler.step()  # expect
        optimizer.step()
    for epoch in range(4):
        if epoch > 0:
            scheduler.step()
        optimizer.step()
    for epoch in range(4):
        if epoch > LATE:
            scheduler.step()
        optimizer.step()
    for epoch in range(start_epoch, 4):
        if epoch > 0:
            scheduler.step()
        optimizer.step()
    for epoch in range(start_epoch, 4):
        if epoch > DECAY_START:
            scheduler.step()  # expect
        optimizer.step()
    for epoch in range(4):
        if epoch > DECAY_START and epoch % 2 == 0:
            scheduler.step()
        optimizer.step()
    for epoch in range(4):
        if epoch > DECAY_START:
            pass
        else:
            scheduler.step()
        optimizer.step()
    """
    assert early_lines(body) == expected_lines(body)
