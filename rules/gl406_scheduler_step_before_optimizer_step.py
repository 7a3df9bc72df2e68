"""GL406 scheduler-step-before-optimizer-step."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.schedules import EarlyStep, ScheduleFacts, SchedulerStep
from gpulint.model import Kind, dotted
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

The deprecated explicit epoch, `scheduler.step(epoch)` with `epoch` the counter of the loop around
it, is reported (without a fix) when that counter's first value is past 0 (`for epoch in range(1,
N):`) and the step comes before the loop's first optimizer step: the schedule jumps to its value
for epoch 1 before anything trained with the value for epoch 0, and PyTorch warns. From 0
(`range(N)`) the first value is used and the rule is silent; so it is when the file steps the
optimizer once before the loop (a deliberate zero-gradient `optimizer.step()`).

Gradient accumulation: a scheduler stepped on every pass of a loop whose optimizer steps only
under a guard that is false on the loop's first pass (`if (i + 1) % k == 0: optimizer.step()` then
`scheduler.step()` outside the `if`) steps the schedule k - 1 times before the first optimizer
step (PyTorch warns) and then k times per optimizer step. Reported, without a fix, when the guard
tests the loop's own counter (`for i in range(...)`, `for i, x in enumerate(...)`) and every
optimizer step of the loop is under such a guard; step the scheduler under the same condition,
after the optimizer.

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
        early_steps = facts.early_steps()
        yield from _micro_steps(ctx, facts, {id(e.step.call) for e in early_steps})
        for early in early_steps:
            where = "epoch" if _is_epoch(facts, early) else "iteration"
            opt = f"`{early.step.optimizer}.step()`" if early.step.optimizer else "the optimizer step"
            message = self.message.format(s=early.step.text, where=where, o=opt)
            if early.event is not None:
                yield self._handler_finding(ctx, early)
                continue
            yield ctx.finding(early.step.call, message, self._fix(ctx, facts, early))
        yield from _counter_steps(ctx, facts)

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


def _micro_steps(ctx: Context, facts: ScheduleFacts, reported: set[int]):
    """A scheduler stepped on every pass of a gradient-accumulation loop whose optimizer steps
    only every k passes, under a guard false on the loop's first pass (`if (i + 1) % k == 0:`
    before `scheduler.step()`, OneVision-Encoder#82): the first k - 1 passes step the schedule
    before any optimizer step (PyTorch warns) and the schedule then runs k times per optimizer
    step. Only when every optimizer step of that loop is direct and under such a guard on the
    loop's own counter (`for i in range(...)`, `for i, b in enumerate(...)`, never re-bound in
    the loop), the scheduler step is unconditional in the loop body, and no `continue`, `break`
    or `return` comes before it. No fix: whether the schedule is sized in micro-steps is the
    author's to say."""
    m = ctx.model
    for st in facts.scheduler_steps:
        if id(st.call) in reported:
            continue
        loop, events = None, []
        for info in facts.t.loops_around(st.call):
            events = facts.events_in(info.node, st.optimizer)
            if events:
                loop = info.node
                break
        if not isinstance(loop, cst.For) or not events:
            continue
        if any(not ev.direct for ev in events) or len({ev.optimizer for ev in events}) != 1:
            continue
        counters = []
        counter, first = _counter(facts, loop)
        if counter is not None and not _rebound(m, loop, counter):
            counters.append((counter, first))
        counter, first, bump = _update_counter(m, facts, loop)
        if counter is not None and not _rebound(m, loop, counter, bump):
            counters.append((counter, first))
        if not counters:
            continue
        if _conditional_in(m, st.call, loop, st.text) or _exit_before(m, st.call, loop):
            continue
        order = m.order
        if not any(order.get(ev.node, 0) < order.get(st.call, 0) for ev in events):
            continue
        for counter, first in counters:
            guards = [_first_false_guard(m, ev.node, loop, counter, first) for ev in events]
            if not any(g is None for g in guards):
                break
        if any(g is None for g in guards):
            continue
        opt = events[0].optimizer
        yield ctx.finding(
            st.call,
            f"`{st.text}.step()` runs on every pass of this loop, but `{opt}.step()` only when "
            f"`{ctx.code(guards[0].test)}` (not on the first pass): the first passes step the schedule before "
            f"any optimizer step (PyTorch warns) and it then advances once per micro-step instead of once per "
            f"optimizer step; call `{st.text}.step()` after `{opt}.step()`, under the same condition",
        )


def _counter_steps(ctx: Context, facts: ScheduleFacts):
    """`scheduler.step(epoch)` with `epoch` the counter of the loop around it, whose first value
    is past the scheduler's initial epoch 0 (`for epoch in range(1, 20):`), reached before the
    first optimizer step of that loop's pass (pytorch-gradual-warmup-lr#8): the explicit epoch
    sets the schedule to epoch 1's value before anything was trained with epoch 0's, so the first
    value is skipped, and PyTorch warns as for `step()`. Silent when the counter starts at 0 (or
    its start is unknown), when the argument is anything but the counter, for a scheduler whose
    class the file does not show to be a torch one, and for ReduceLROnPlateau (`step(metric)`).
    No fix: where the explicit-epoch step belongs depends on what the author meant by the epoch."""
    m = ctx.model
    for call, recv, _meth in m.method_calls("step"):
        if len(call.args) != 1:
            continue
        arg = call.args[0]
        if arg.star or (arg.keyword is not None and arg.keyword.value != "epoch"):
            continue
        if not isinstance(arg.value, cst.Name):
            continue
        kind = facts.t.kind_of(recv)
        if kind is Kind.UNKNOWN and m.value_of(recv).kind == "scheduler":
            kind = Kind.SCHEDULER
        if kind is not Kind.SCHEDULER:
            continue
        ctor = facts._constructor(recv)
        if ctor is None or (m.qualname(ctor.func) or "").rsplit(".", 1)[-1] == "ReduceLROnPlateau":
            continue
        loop = _counter_loop(m, call, arg.value.value)
        if loop is None:
            continue
        counter, first = _counter(facts, loop)
        if counter != arg.value.value or first is None or first <= 0 or _rebound(m, loop, counter):
            continue
        st = SchedulerStep(call, recv, facts._text(recv), ctor, facts._optimizer_of(ctor, call))
        if _stepped_before(m, facts, loop, st.optimizer):
            continue  # `optim.zero_grad(); optim.step()` before the loop (the workaround of #8's README)
        found = facts._early_at(st, call, st.optimizer, 0)
        if found is None:
            continue
        iteration = found[0]
        if not (iteration is loop or m.contains(loop, iteration)):
            continue
        opt = f"`{st.optimizer}.step()`" if st.optimizer else "the optimizer step"
        where = "epoch" if _is_epoch(facts, EarlyStep(st, iteration, None, call)) else "iteration"
        yield ctx.finding(
            call,
            f"`{st.text}.step({counter})` runs before the optimizer step of its {where}, and `{counter}` starts "
            f"at {first}: the schedule jumps to its value for {counter} {first} before any step used the first "
            f"value (PyTorch warns); call `{st.text}.step()` after {opt}",
        )


def _stepped_before(m, facts: ScheduleFacts, loop: cst.For, optimizer: str | None) -> bool:
    """A direct step of the optimizer (any optimizer when unknown) in the loop's own scope, ahead
    of the loop and outside it: the schedule's first value was used by that step (a deliberate
    zero-gradient `optim.step()` so that the warm-up starts at epoch 1 without PyTorch's warning,
    pytorch-gradual-warmup-lr's README after #8)."""
    scope = m.scope_of(loop)
    for ev in facts.optimizer_steps:
        if not ev.direct or (optimizer is not None and ev.optimizer != optimizer):
            continue
        if m.scope_of(ev.node) is scope and m.precedes(ev.node, loop) and not m.contains(loop, ev.node):
            return True
    return False


def _counter_loop(m, node: cst.CSTNode, name: str) -> cst.For | None:
    """The innermost `for` of `node`'s function whose target binds `name` (alone or first of a
    pair), or None."""
    for anc in m.ancestors(node):
        if isinstance(anc, _DEFS):
            return None
        if isinstance(anc, cst.For):
            t = anc.target
            if isinstance(t, (cst.Tuple, cst.List)) and t.elements:
                t = t.elements[0].value
            if isinstance(t, cst.Name) and t.value == name:
                return anc
    return None


def _counter(facts: ScheduleFacts, loop: cst.For):
    """(counter name, its first value) of `for i in range(...)` or `for i, x in enumerate(xs[, start])`;
    (None, None) otherwise or when the first value is not a known int."""
    target, it = loop.target, loop.iter
    if isinstance(target, cst.Name):
        first = facts._first_value(loop)
        return (target.value, first) if isinstance(first, int) else (None, None)
    if (isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2
            and isinstance(target.elements[0].value, cst.Name)
            and isinstance(it, cst.Call) and (facts.m.qualname(it.func) in ("enumerate", "builtins.enumerate")
                                               or isinstance(it.func, cst.Name) and it.func.value == "enumerate")):
        args = it.args
        if len(args) == 1 and args[0].keyword is None and not args[0].star:
            return target.elements[0].value.value, 0
        if len(args) == 2 and not any(a.star for a in args):
            start = facts._int_constant(args[1].value)
            if start is not None:
                return target.elements[0].value.value, start
    return None, None


def _update_counter(m, facts: ScheduleFacts, loop: cst.For):
    """(name, its value on the first pass, the `+= 1`) of a counter the loop body bumps first thing
    (`num_updates += 1` as a statement of the body itself, before any other use of it), every
    other binding of which in the loop's scope is an assignment of the same int before the loop
    (`num_updates = 0`; h2o-llmstudio#663, fixtures68 G68-6); (None, None, None) otherwise."""
    body = loop.body
    if not isinstance(body, cst.IndentedBlock):
        return None, None, None
    for st in body.body:
        if not (isinstance(st, cst.SimpleStatementLine) and len(st.body) == 1
                and isinstance(st.body[0], cst.AugAssign)):
            continue
        aug = st.body[0]
        if not (isinstance(aug.operator, cst.AddAssign) and isinstance(aug.target, cst.Name)
                and isinstance(aug.value, cst.Integer) and aug.value.value == "1"):
            continue
        name = aug.target.value
        earlier = body.body[:body.body.index(st)]
        if any(isinstance(x, cst.Name) and x.value == name for e in earlier for x in m.walk(e)):
            return None, None, None
        values = set()
        for b in m.bindings_of(aug.target):
            if b.node is aug.target or b.value is aug.value:
                continue
            if (b.how != "assign" or not isinstance(b.value, cst.Integer) or m.contains(loop, b.node)
                    or not m.precedes(b.node, loop)):
                return None, None, None
            values.add(int(b.value.value, 0))
        if len(values) != 1:
            return None, None, None
        return name, values.pop() + 1, aug
    return None, None, None


def _rebound(m, loop: cst.For, counter: str, allowed: cst.CSTNode | None = None) -> bool:
    for n in m.walk(loop.body):
        if n is allowed:
            continue
        if isinstance(n, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.WithItem)):
            t = n.target if not isinstance(n, cst.WithItem) else (n.asname.name if n.asname else None)
            if t is not None and any(isinstance(x, cst.Name) and x.value == counter for x in (t, *m.walk(t))):
                return True
        if isinstance(n, cst.NamedExpr) and isinstance(n.target, cst.Name) and n.target.value == counter:
            return True
        if isinstance(n, (cst.Global, cst.Nonlocal)):
            return True
    return False


def _conditional_in(m, node: cst.CSTNode, loop: cst.CSTNode, present: str | None = None) -> bool:
    """`node` sits under a condition inside `loop`; `if <present> is not None:` (or `if <present>:`)
    around it does not count (a scheduler that exists steps on every pass: h2o-llmstudio#663)."""
    for anc in m.ancestors(node):
        if anc is loop:
            return False
        if present is not None and isinstance(anc, cst.If) and anc.orelse is None and _presence_test(
                m, anc.test, present):
            continue
        if isinstance(anc, (cst.If, cst.Try, cst.While, cst.For, cst.IfExp, cst.BooleanOperation) + _DEFS):
            return True
    return True


def _presence_test(m, test: cst.BaseExpression, text: str) -> bool:
    if dotted(test) == text:
        return True
    return (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.IsNot)
            and isinstance(test.comparisons[0].comparator, cst.Name) and test.comparisons[0].comparator.value == "None"
            and dotted(test.left) == text)


def _exit_before(m, node: cst.CSTNode, loop: cst.For) -> bool:
    """A `continue`/`break`/`return` of the loop's body ahead of `node`: the first passes might
    not reach the scheduler step."""
    here = m.order.get(node, 0)
    for n in m.walk(loop.body, _DEFS):
        if isinstance(n, (cst.Continue, cst.Break, cst.Return)) and m.order.get(n, 0) < here:
            return True
    return False


def _first_false_guard(m, node: cst.CSTNode, loop: cst.For, counter: str, first: int):
    """The `if` between `node` and `loop` that holds `node` in its body and whose test is false on
    the loop's first pass, or None."""
    child = node
    for anc in m.ancestors(node):
        if anc is loop:
            return None
        if isinstance(anc, _DEFS):
            return None
        if isinstance(anc, cst.If) and child is anc.body and _false_first(anc.test, counter, first):
            return anc
        child = anc
    return None


def _false_first(test: cst.BaseExpression, counter: str, first: int) -> bool:
    """`(i + c) % k == r` (or `i % k == k - 1`) false when `i` is the first value, for every k >= 2
    (or the literal k); an `and` with such a side; an `or` of such a side with `i == E` / `i + 1 == E`
    where E is not a constant (the last batch: only a one-pass loop meets it first)."""
    if isinstance(test, cst.BooleanOperation):
        left, right = _false_first(test.left, counter, first), _false_first(test.right, counter, first)
        if isinstance(test.operator, cst.And):
            return left or right
        return (left and (right or _last_pass(test.right, counter))) or (right and _last_pass(test.left, counter))
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.Equal)):
        return False
    mod, rhs = test.left, test.comparisons[0].comparator
    if not (isinstance(mod, cst.BinaryOperation) and isinstance(mod.operator, cst.Modulo)):
        return False
    value = _counter_plus(mod.left, counter)
    if value is None:
        return False
    v = first + value
    k = mod.right
    if isinstance(k, cst.Integer):
        kk = int(k.value, 0)
        if kk < 2:
            return False
        if isinstance(rhs, cst.Integer):
            return v % kk != int(rhs.value, 0)
        return False
    if not isinstance(k, (cst.Name, cst.Attribute)):
        return False
    if isinstance(rhs, cst.Integer):
        return int(rhs.value, 0) == 0 and v == 1  # 1 % k == 1 for every k >= 2
    if (isinstance(rhs, cst.BinaryOperation) and isinstance(rhs.operator, cst.Subtract)
            and isinstance(rhs.right, cst.Integer) and rhs.right.value == "1" and dotted(rhs.left) == dotted(k)):
        return v == 0  # 0 % k == 0 != k - 1 for every k >= 2
    return False


def _counter_plus(expr: cst.BaseExpression, counter: str) -> int | None:
    """`i` -> 0, `i + c` / `c + i` -> c (c an int literal); None otherwise."""
    if isinstance(expr, cst.Name) and expr.value == counter:
        return 0
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        a, b = expr.left, expr.right
        if isinstance(b, cst.Name) and b.value == counter:
            a, b = b, a
        if isinstance(a, cst.Name) and a.value == counter and isinstance(b, cst.Integer):
            return int(b.value, 0)
    return None


def _last_pass(test: cst.BaseExpression, counter: str) -> bool:
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.Equal)):
        return False
    left, right = test.left, test.comparisons[0].comparator
    if _counter_plus(right, counter) is not None:
        left, right = right, left
    if _counter_plus(left, counter) is None:
        return False
    return not isinstance(right, (cst.Integer, cst.Float, cst.UnaryOperation))


def _is_epoch(facts: ScheduleFacts, early: EarlyStep) -> bool:
    """The iteration steps the optimizer inside a nested loop or a called function."""
    it = early.iteration
    info = facts.t.loop_info.get(it)
    if info is not None:
        return bool(info.nested) and any(
            facts.m.contains(n.node, ev.node) for n in info.nested for ev in facts.events_in(it, None)
        ) or any(not ev.direct for ev in facts.events_in(it, None))
    return True
