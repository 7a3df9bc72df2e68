"""GL406 scheduler-step-before-optimizer-step."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.schedules import EarlyStep, ScheduleFacts
from gpulint.model import dotted
from gpulint.rule import Context, Rule

_DEFS = (cst.FunctionDef, cst.Lambda, cst.ClassDef)


class SchedulerStepBeforeOptimizerStep(Rule):
    code = "GL406"
    name = "scheduler-step-before-optimizer-step"
    summary = "`scheduler.step()` runs before the optimizer's first `step()` of its epoch or iteration."
    message = "`{s}.step()` runs before the optimizer step of its {where}: the first value of the learning-rate schedule is skipped (PyTorch warns); call `{s}.step()` after {o}"
    fix_safety = "unsafe"
    default = True
    kind = "silent"
    prefilter = r"\.step\(\s*\)"
    ast_prefilter = (r"^(?:loop|\.EPOCH_STARTED|\.ITERATION_STARTED)$", r"^\.step\($")
    explanation = '''
Since PyTorch 1.1, `scheduler.step()` must come after `optimizer.step()`: the scheduler's constructor
already sets the first learning rate of the schedule, and each `scheduler.step()` moves to the next
one. Stepping the scheduler first (at the top of the epoch, or before the optimizer in the step
loop) skips the first value: a warm-up starts at its second step, a `StepLR` decays one epoch early,
and PyTorch warns "Detected call of `lr_scheduler.step()` before `optimizer.step()`".

The rule looks at the loop around `scheduler.step()` that steps the scheduler's optimizer (directly,
through `scaler.step(optimizer)`, or through a function of the file), and reports a scheduler step
that runs before any optimizer step of that loop's iteration. It also follows functions of the file:
a per-epoch function that steps the scheduler first and then loops over batches, and a hook such as
`on_epoch_start()` that steps the scheduler and is called before training. Only schedulers the file
shows to be `torch.optim.lr_scheduler` ones (or `transformers` schedules) are checked; a step with an
argument (`ReduceLROnPlateau.step(val_loss)`, `step(epoch)`) and a guarded step
(`if epoch > 0: scheduler.step()`) are not reported, unless the guard compares the loop's counter
with a constant its first value passes (`if epoch > LR_DECAY_START:` with `LR_DECAY_START = -1`):
then the first step of the run comes before the optimizer's, as if unguarded.

With a training engine that runs the optimizer step in its update function (pytorch-ignite's
`Engine`), a handler registered for `Events.EPOCH_STARTED` or `Events.ITERATION_STARTED` that
steps a torch scheduler unconditionally runs before the optimizer step of its epoch or iteration;
the unsafe fix registers it on the matching `..._COMPLETED` event. Ignite's own parameter
schedulers, attached as handler objects, are not `.step()` calls and are not checked.

The unsafe fix moves the `scheduler.step()` statement after the optimizer step when both are in
the same block (in an epoch loop, after the inner loop that steps the optimizer). It changes the
learning rate every step from then on, and what a log line between the two reads.

Bad:

```python
for epoch in range(epochs):
    scheduler.step()
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
```

Good:

```python
for epoch in range(epochs):
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    scheduler.step()
```
'''

    def check(self, ctx: Context):
        facts = ctx.model.facts(ScheduleFacts)
        for early in facts.early_steps():
            where = "epoch" if _is_epoch(facts, early) else "iteration"
            opt = f"`{early.step.optimizer}.step()`" if early.step.optimizer else "the optimizer step"
            message = self.message.format(s=early.step.text, where=where, o=opt)
            if early.event is not None:
                yield self._handler_finding(ctx, early)
                continue
            yield ctx.finding(early.step.call, message, self._fix(ctx, facts, early))

    def _handler_finding(self, ctx: Context, early: EarlyStep):
        """A training engine's handler of `Events.EPOCH_STARTED` (`ITERATION_STARTED`) that steps
        the scheduler: it runs before that epoch's first optimizer step; the handler belongs on
        the COMPLETED event."""
        event = early.event
        started = event.attr.value if isinstance(event, cst.Attribute) else "EPOCH_STARTED"
        completed = started.replace("STARTED", "COMPLETED")
        where = "epoch" if started.startswith("EPOCH") else "iteration"
        message = (
            f"`{early.step.text}.step()` runs in a handler of `{started}`, before the optimizer step of "
            f"each {where}: the first value of the learning-rate schedule is skipped (PyTorch warns); "
            f"register the handler on `{completed}`"
        )
        fix = None
        if isinstance(event, cst.Attribute):
            fix = ctx.fix(ctx.replace(event.attr, completed), message=f"Run the handler on `{completed}`")
        return ctx.finding(early.step.call, message, fix)

    def _fix(self, ctx: Context, facts: ScheduleFacts, early: EarlyStep):
        anchor = early.anchor
        if anchor is None:
            return None
        line = ctx.model.parent(ctx.model.parent(early.step.call))
        if not isinstance(line, cst.SimpleStatementLine):
            return None
        m = ctx.model
        # something between the two reads or re-binds the scheduler: moving the step changes it
        for n in m.walk(m.parent(line)):
            if not m.precedes(line, n) or m.contains(line, n):
                continue
            if not (m.precedes(n, anchor) or m.contains(anchor, n)):
                continue
            if isinstance(n, (cst.Name, cst.Attribute)) and dotted(n) == early.step.text:
                return None
        moved = _moved_lines(ctx, line)
        if moved is None:
            return None
        start, end, lines = moved
        return ctx.fix(
            ctx.edit(start, end, ""),
            ctx.insert_after(anchor, "\n".join(lines)),
            message=f"Move `{early.step.text}.step()` after the optimizer step",
        )


def _moved_lines(ctx: Context, line: cst.SimpleStatementLine):
    """(start, end, lines): the offsets of the statement's whole lines, with the comment lines
    right above it at its indentation (they describe it and move with it), and those lines without
    their indentation. None when the statement shares a line with other code."""
    src = ctx.source
    start, end = ctx.span(line)
    line_start = src.rfind("\n", 0, start) + 1
    indent = src[line_start:start]
    if indent.strip():
        return None
    nl = src.find("\n", end)
    stop = len(src) if nl < 0 else nl + 1
    tail = src[end:stop].rstrip("\r\n")
    if tail.strip() and not tail.strip().startswith("#"):
        return None
    lines = [src[start:end] + tail.rstrip()]
    first = line_start
    while first > 0:
        prev_start = src.rfind("\n", 0, first - 1) + 1
        prev = src[prev_start:first].rstrip("\r\n")
        if not prev.startswith(indent + "#"):
            break
        lines.insert(0, prev[len(indent):])
        first = prev_start
    # it opened its block (`for epoch in ...:` then the step then a blank line): the blank line
    # goes with it, or the block would start with one (weihua916/powerful-gnns main.py)
    block = ctx.model.parent(line)
    if isinstance(block, cst.IndentedBlock) and block.body and block.body[0] is line and first == line_start:
        nxt = src.find("\n", stop)
        following = src[stop:len(src) if nxt < 0 else nxt + 1]
        if following and not following.strip() and nxt >= 0:
            stop = nxt + 1
    return first, stop, lines


def _is_epoch(facts: ScheduleFacts, early: EarlyStep) -> bool:
    """The iteration steps the optimizer inside a nested loop or a called function."""
    it = early.iteration
    info = facts.t.loop_info.get(it)
    if info is not None:
        return bool(info.nested) and any(
            facts.m.contains(n.node, ev.node) for n in info.nested for ev in facts.events_in(it, None)
        ) or any(not ev.direct for ev in facts.events_in(it, None))
    return True
