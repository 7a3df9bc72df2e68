"""GL406 through a training engine's event handlers (ignite): a torch scheduler stepped in a handler
of EPOCH_STARTED / ITERATION_STARTED runs before that epoch's (iteration's) first optimizer step
(reid-strong-baseline#190). Static: ignite is not imported."""

from __future__ import annotations

from fixture_support import check, fix

SRC = """
import torch
import torch.nn as nn
from ignite.engine import Engine, Events


def train(model, loader):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2)

    def update(engine, batch):
        x, y = batch
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    trainer = Engine(update)
{register}
    trainer.run(loader, max_epochs=3)
"""


def src(register: str) -> str:
    return SRC.replace("{register}", register)


DECORATED = """
    @trainer.on(Events.{event})
    def adjust(engine):
{body}
"""


def decorated(event: str, body: str = "        scheduler.step()") -> str:
    return src(DECORATED.replace("{event}", event).replace("{body}", body))


def test_a_handler_of_epoch_started_is_reported_and_moved_to_epoch_completed():
    text = decorated("EPOCH_STARTED")
    found = check(text, ["GL406"])
    assert [d.code for d in found] == ["GL406"]
    assert "EPOCH_COMPLETED" in found[0].message
    out = fix(text, ["GL406"], unsafe=True).text
    assert "@trainer.on(Events.EPOCH_COMPLETED)" in out and "EPOCH_STARTED" not in out
    assert fix(text, ["GL406"], unsafe=False).text == text  # unsafe only


def test_a_handler_added_for_iteration_started_is_reported():
    text = src("""
    def adjust(engine):
        scheduler.step()

    trainer.add_event_handler(Events.ITERATION_STARTED, adjust)
""")
    found = check(text, ["GL406"])
    assert [d.code for d in found] == ["GL406"] and "ITERATION_COMPLETED" in found[0].message


def test_completed_handlers_guarded_steps_and_other_events_are_silent():
    assert check(decorated("EPOCH_COMPLETED"), ["GL406"]) == []
    assert check(decorated("EPOCH_STARTED", "        if engine.state.epoch > 1:\n            scheduler.step()"),
                 ["GL406"]) == []
    # a class of the user's own named Events is not a training engine's
    own = decorated("EPOCH_STARTED").replace("from ignite.engine import Engine, Events",
                                             "from myloop import Engine, Events")
    assert check(own, ["GL406"]) == []
