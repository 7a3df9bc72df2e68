"""Learning-rate scheduler facts (GL406): where `scheduler.step()` runs relative to the
`optimizer.step()` it follows.

    facts = ctx.model.facts(ScheduleFacts)
    for early in facts.early_steps(): ...

Vocabulary
- a *scheduler step* is `S.step()` with no argument, S known to be a `torch.optim.lr_scheduler`
  scheduler (or a `transformers` schedule function's result). A step with an argument
  (`ReduceLROnPlateau.step(val_loss)`, the deprecated `step(epoch)`) sets the schedule explicitly and
  is never reported; neither is a scheduler of unknown type (custom schedulers are often designed to
  be stepped before the optimizer);
- an *optimizer step* is `O.step(...)` on an optimizer, `S.step(O)` on a GradScaler, or a call of a
  function of the file that (transitively) does one;
- the *iteration* of a scheduler step is the innermost loop around it, in its function, whose body
  steps the scheduler's optimizer (a step loop, or an epoch loop whose inner loop or helper steps
  it); failing that, its function, when that function steps the optimizer and is itself called in a
  loop (a per-epoch or per-step function); failing that, the iterations of its function's call
  sites (a hook such as `on_epoch_start` that only steps the scheduler).

A scheduler step is *early* when, in its iteration, no optimizer step of its optimizer can run
before it and one runs after it. Conditional steps (`if epoch > 0: scheduler.step()`) are early
only when the same branch steps the optimizer after them (gradient accumulation). Static only:
never imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from gpulint.analysis.amp import AmpFacts
from gpulint.analysis.training import TrainingFacts
from gpulint.model import Kind, ScriptModel, dotted, is_scheduler_qualname

_LOOPS = (cst.For, cst.While)
_DEFS = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
# schedulers whose step() takes a metric: their order is about validation, not the optimizer
_METRIC_SCHEDULERS = frozenset({"ReduceLROnPlateau"})
_MAX_DEPTH = 3


@dataclass
class SchedulerStep:
    call: cst.Call  # `S.step()`
    receiver: cst.BaseExpression
    text: str  # source text of S
    constructor: cst.Call | None  # the scheduler's constructor, when the file shows it
    optimizer: str | None  # text of the optimizer the constructor received (same scope only)


@dataclass
class OptimizerEvent:
    """Something in a loop body that steps an optimizer: a direct step, or a call of a file
    function that does."""

    node: cst.Call
    optimizer: str | None  # the optimizer's text for a direct step; None for a helper call
    direct: bool


@dataclass
class EarlyStep:
    step: SchedulerStep
    iteration: cst.CSTNode  # the loop or function in which it runs before the optimizer step
    # for a fix: the statement of the scheduler step's own block after which it belongs, or None
    anchor: cst.CSTNode | None
    site: cst.CSTNode  # the scheduler step itself, or the call of the helper that runs it
    event: cst.Attribute | None = None  # a handler's `Events.EPOCH_STARTED` (the fix names the COMPLETED one)


class ScheduleFacts:
    def __init__(self, model: ScriptModel) -> None:
        self.m = model
        self.t: TrainingFacts = model.facts(TrainingFacts)
        self.amp: AmpFacts = model.facts(AmpFacts)
        self.order = model.order
        self._fn_steps: dict[cst.CSTNode, bool] = {}
        self._fn_busy: set[cst.CSTNode] = set()
        self.scheduler_steps: list[SchedulerStep] = []
        self.optimizer_steps: list[OptimizerEvent] = []
        self._collect()

    # collection -------------------------------------------------------------------------------
    def _collect(self) -> None:
        m = self.m
        scaler_steps = {id(sc.call): sc for sc in self.amp.scaler_calls if sc.method == "step"}
        for call, recv, meth in m.method_calls("step"):
            sc = scaler_steps.get(id(call))
            if sc is not None:
                if sc.optimizer is not None:
                    self.optimizer_steps.append(OptimizerEvent(call, sc.optimizer, True))
                continue
            kind = self.t.kind_of(recv)
            if kind is Kind.UNKNOWN and m.value_of(recv).kind == "scheduler":
                kind = Kind.SCHEDULER  # the engine's: `for scheduler in self.schedulers` filled elsewhere
            if kind is Kind.SCHEDULER:
                if call.args:
                    continue  # step(metric) / step(epoch): sets the schedule explicitly
                ctor = self._constructor(recv)
                if ctor is not None and (m.qualname(ctor.func) or "").rsplit(".", 1)[-1] in _METRIC_SCHEDULERS:
                    continue
                self.scheduler_steps.append(
                    SchedulerStep(call, recv, self._text(recv), ctor, self._optimizer_of(ctor, call))
                )
                continue
            if kind is Kind.UNKNOWN and _looks_like_scheduler(recv):
                continue
            if self.t.is_optimizer(recv):
                self.optimizer_steps.append(OptimizerEvent(call, self._text(recv), True))

    def _text(self, node: cst.CSTNode) -> str:
        return self.m.module.code_for_node(node)

    def _constructor(self, recv: cst.BaseExpression) -> cst.Call | None:
        ctor = self.m.constructor_of(recv)
        if ctor is None:
            return None
        q = self.m.qualname(ctor.func)
        if q is not None and is_scheduler_qualname(q):
            return ctor
        f = ctor.func
        if isinstance(f, cst.Name) and f.value in self.m.classes and self.m.flow._class_kind(f.value) == "scheduler":
            return ctor  # a schedule class of the file on a torch base (`class Warmup(_LRScheduler)`, G41-1)
        return None

    def _optimizer_of(self, ctor: cst.Call | None, step: cst.Call) -> str | None:
        """The optimizer text of the constructor, when it means the same in the step's scope."""
        if ctor is None:
            return None
        arg = None
        for i, a in enumerate(ctor.args):
            if a.star:
                return None
            if (a.keyword is None and i == 0) or (a.keyword is not None and a.keyword.value == "optimizer"):
                arg = a.value
                break
        if arg is None:
            return None
        text = dotted(arg)
        if text is None:
            return None
        if text.startswith("self."):
            same = self.m.class_of(ctor) is not None and self.m.class_of(ctor) is self.m.class_of(step)
        else:
            same = self.m.scope_of(ctor) is self.m.scope_of(step)
        return text if same else None

    # what a file function does --------------------------------------------------------------------
    def function_steps(self, fn: cst.CSTNode) -> bool:
        """The function (transitively, through the file's functions it calls) steps an optimizer."""
        if fn in self._fn_steps:
            return self._fn_steps[fn]
        if fn in self._fn_busy:
            return False
        self._fn_busy.add(fn)
        found = any(self.m.contains(fn, ev.node) for ev in self.optimizer_steps)
        if not found:
            for call in self.m.calls_in(fn):
                if any(self.function_steps(g) for g in self.t.file_functions(call)):
                    found = True
                    break
        self._fn_busy.discard(fn)
        self._fn_steps[fn] = found
        return found

    def events_in(self, node: cst.CSTNode, optimizer: str | None) -> list[OptimizerEvent]:
        """Optimizer steps under `node` (nested functions excluded) that may step `optimizer`
        (None: any optimizer), and calls of file functions that step one."""
        out = []
        for ev in self.optimizer_steps:
            if not self.m.contains(node, ev.node) or self._in_nested_def(ev.node, node):
                continue
            if optimizer is None or ev.optimizer == optimizer:
                out.append(ev)
        for call in self.m.calls_in(node, _DEFS):
            if any(self.function_steps(g) for g in self.t.file_functions(call)):
                out.append(OptimizerEvent(call, None, False))
        return out

    def _in_nested_def(self, inner: cst.CSTNode, outer: cst.CSTNode) -> bool:
        for anc in self.m.ancestors(inner):
            if anc is outer:
                return False
            if isinstance(anc, _DEFS):
                return True
        return False

    # early steps ------------------------------------------------------------------------------
    def early_steps(self) -> list[EarlyStep]:
        out = []
        for st in self.scheduler_steps:
            found = self._early_at(st, st.call, st.optimizer, 0)
            if found is not None:
                iteration, anchor, site = found
                out.append(EarlyStep(st, iteration, anchor if site is st.call else None, site))
                continue
            handler = self._started_handler(st.call)
            if handler is not None:
                out.append(EarlyStep(st, handler[0], None, st.call, handler[1]))
        return out

    def _started_handler(self, call: cst.Call):
        """An event handler of a training engine that runs at the start of each epoch or
        iteration (ignite's `@trainer.on(Events.EPOCH_STARTED)`, or `trainer.add_event_handler(
        Events.ITERATION_STARTED, fn)`) and steps the scheduler unconditionally, in a file that
        steps an optimizer elsewhere (the engine's update function): each epoch's scheduler step
        comes before its first optimizer step (reid-strong-baseline#190). Returns (the handler,
        the event expression) or None."""
        m = self.m
        fn = m.enclosing(call, cst.FunctionDef)
        if fn is None or not self.optimizer_steps:
            return None
        if any(self.m.contains(fn, ev.node) for ev in self.optimizer_steps):
            return None
        stmt = m.enclosing(call, cst.SimpleStatementLine)
        if stmt is None or m.parents.get(m.parents.get(stmt)) is not fn:
            return None  # under an `if`, a loop, a `with` of the handler
        for d in fn.decorators:
            if _started_event(m, d.decorator, on=True):
                return fn, d.decorator.args[0].value
        for c in m.calls:
            f = c.func
            if (isinstance(f, cst.Attribute) and f.attr.value == "add_event_handler" and len(c.args) >= 2
                    and _started_event(m, c.args[0].value) and isinstance(c.args[1].value, cst.Name)
                    and c.args[1].value.value == fn.name.value):
                return fn, c.args[0].value
        return None

    def _early_at(self, st: SchedulerStep, point: cst.CSTNode, optimizer: str | None, depth: int):
        """Is `point` (the scheduler step, or a call that runs it) reached before the first
        optimizer step of its iteration? Returns (iteration, fix anchor, point) or None."""
        m = self.m
        scope = m.scope_of(point)
        for info in self.t.loops_around(point):
            events = self.events_in(info.node, optimizer)
            if events:
                return self._judge(info.node, point, events)
        # no loop of its function steps the optimizer around it
        if isinstance(scope, cst.FunctionDef):
            events = self.events_in(scope, optimizer)
            if events:
                # a per-epoch / per-step function: its body is the iteration when a loop calls it
                if self._called_in_loop(scope, optimizer):
                    return self._judge(scope.body, point, events)
                return None
            if depth >= _MAX_DEPTH:
                return None
            # a hook that only steps the scheduler: judge the places that call it
            keep = optimizer if optimizer is not None and optimizer.startswith("self.") else None
            for site in self.t.call_sites(scope):
                found = self._early_at(st, site, keep, depth + 1)
                if found is not None:
                    return found[0], None, point
        return None

    def _called_in_loop(self, fn: cst.FunctionDef, optimizer: str | None = None, depth: int = 0) -> bool:
        """A loop calls `fn`, directly or through a function of the file whose only optimizer
        event is that call (`train_step()` -> `self.update_params()`, ParlAI's TorchAgent, E45-1):
        each of the loop's iterations runs `fn`'s body once."""
        for site in self.t.call_sites(fn):
            if self.t.loops_around(site):
                return True
            caller = self.m.enclosing(site, cst.FunctionDef)
            if (depth < 1 and caller is not None and caller is not fn
                    and all(ev.node is site for ev in self.events_in(caller, optimizer))
                    and self._called_in_loop(caller, optimizer, depth + 1)):
                return True
        return False

    def _before(self, a: cst.CSTNode, b: cst.CSTNode) -> bool:
        return self.order.get(a, 0) < self.order.get(b, 0)

    def _judge(self, iteration: cst.CSTNode, point: cst.CSTNode, events: list[OptimizerEvent]):
        amp = self.amp
        events = [ev for ev in events if ev.node is not point and not self.m.contains(ev.node, point)]
        earlier = [ev for ev in events if self._before(ev.node, point) and not amp.exclusive(ev.node, point)]
        if earlier:
            return None
        later = [ev for ev in events if self._before(point, ev.node) and not amp.exclusive(point, ev.node)]
        if not later:
            return None
        branch = self._branch_of(point, iteration)
        if branch is not None and not self._guards_pass_first(point, iteration):
            # a guarded scheduler step (`if epoch > 0:`): early only when its own branch steps
            later = [ev for ev in later if self.m.contains(branch, ev.node)]
            if not later:
                return None
        if self._exits_between(point, later[0].node, iteration):
            return None
        return iteration, self._anchor(point, later), point

    def _branch_of(self, node: cst.CSTNode, top: cst.CSTNode) -> cst.CSTNode | None:
        """The innermost `if` branch (body or orelse suite) between `node` and `top`, or a `try`
        handler / `while` condition that makes `node` conditional."""
        child = node
        for anc in self.m.ancestors(node):
            if anc is top:
                return None
            if isinstance(anc, cst.If):
                return child  # the IndentedBlock / Else / If (elif) that holds node
            if isinstance(anc, (cst.ExceptHandler, cst.Finally, cst.IfExp, cst.BooleanOperation)):
                return anc
            child = anc
        return None

    def _guards_pass_first(self, point: cst.CSTNode, iteration: cst.CSTNode) -> bool:
        """Every `if` between `point` and the iteration loop lets its first pass through: its test
        compares the loop's counter (`for epoch in range(...)`) with a constant that the first
        value passes (`if epoch > LR_DECAY_START:` with `LR_DECAY_START = -1`, or with the range's
        own start). Then the guarded scheduler step runs before any optimizer step of the run,
        as an unguarded one would. Anything else that makes `point` conditional: False."""
        counted = isinstance(iteration, cst.For) and isinstance(iteration.target, cst.Name)
        counter = iteration.target.value if counted else None
        first = self._first_value(iteration) if counted else None
        child = point
        seen = False
        for anc in self.m.ancestors(point):
            if anc is iteration:
                return seen
            if isinstance(anc, cst.If):
                if child is not anc.body:
                    return False
                if not self._exists_test(anc.test, point) and not (
                        counted and self._passes(anc.test, counter, first)):
                    return False
                seen = True
            elif isinstance(anc, (cst.Else, cst.ExceptHandler, cst.Finally, cst.IfExp, cst.BooleanOperation,
                                  cst.While, cst.For) + _DEFS):
                return False
            child = anc
        return False

    def _exists_test(self, test: cst.BaseExpression, point: cst.CSTNode) -> bool:
        """`if self.scheduler is not None:` (or `if self.scheduler:`) around `self.scheduler.step()`:
        the step runs whenever there is a scheduler to step (ParlAI's TorchAgent, E45-1)."""
        if not (isinstance(point, cst.Call) and isinstance(point.func, cst.Attribute)):
            return False
        recv = dotted(point.func.value)
        if recv is None:
            return False
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            c = test.comparisons[0]
            return (isinstance(c.operator, cst.IsNot) and isinstance(c.comparator, cst.Name)
                    and c.comparator.value == "None" and dotted(test.left) == recv)
        return isinstance(test, (cst.Name, cst.Attribute)) and dotted(test) == recv

    def _first_value(self, loop: cst.For) -> int | str | None:
        """The first value of `for x in range(...)` when the file gives it, or the first element of
        a literal list/tuple of constants (`for phase in ["train", "val"]:`); None otherwise."""
        it = loop.iter
        if isinstance(it, (cst.List, cst.Tuple)) and it.elements:
            consts = [_constant(e.value) if isinstance(e, cst.Element) else None for e in it.elements]
            return consts[0] if all(c is not None for c in consts) else None
        if not (isinstance(it, cst.Call) and self.m.qualname(it.func) in ("range", "builtins.range")
                or isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range"):
            return None
        args = [a for a in it.args if a.keyword is None and not a.star]
        if len(args) != len(it.args) or not args:
            return None
        if len(args) == 1:
            return 0
        return self._int_constant(args[0].value)

    def _int_constant(self, node: cst.BaseExpression) -> int | None:
        """An int literal (`3`, `-1`) or a module-level name bound once, to one."""
        if isinstance(node, cst.Integer):
            return int(node.value, 0)
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            inner = self._int_constant(node.expression)
            return -inner if inner is not None and isinstance(node.expression, cst.Integer) else None
        if isinstance(node, cst.Name):
            bindings = self.m.bindings.get((self.m.module, node.value), [])
            if len(bindings) == 1 and bindings[0].how == "assign" and bindings[0].value is not None:
                value = bindings[0].value
                if isinstance(value, (cst.Integer, cst.UnaryOperation)):
                    return self._int_constant(value)
        return None

    def _passes(self, test: cst.BaseExpression, counter: str, first: int | str | None) -> bool:
        """`counter > C` / `counter >= C` / `C < counter` / `C <= counter` holds for the loop's first
        value: the range's start when known, else any non-negative counter (epochs, steps).
        `counter == C` / `counter != C` holds when the first value is known and equals (differs
        from) the constant C (`for phase in ["train", "val"]: if phase == "train":`)."""
        if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
            return False
        op = test.comparisons[0].operator
        left, right = test.left, test.comparisons[0].comparator
        if isinstance(op, (cst.Equal, cst.NotEqual)):
            if isinstance(right, cst.Name) and right.value == counter:
                left, right = right, left
            if not (isinstance(left, cst.Name) and left.value == counter) or first is None:
                return False
            c = _constant(right)
            if c is None or type(c) is not type(first):
                return False
            return (c == first) if isinstance(op, cst.Equal) else (c != first)
        if isinstance(first, str):
            return False
        if isinstance(op, (cst.LessThan, cst.LessThanEqual)):
            left, right = right, left
            op = cst.GreaterThan() if isinstance(op, cst.LessThan) else cst.GreaterThanEqual()
        if not isinstance(op, (cst.GreaterThan, cst.GreaterThanEqual)):
            return False
        if not (isinstance(left, cst.Name) and left.value == counter):
            return False
        c = self._int_constant(right)
        if c is None:
            return False
        low = first if first is not None else 0
        if first is None and c >= 0:
            return False  # an unknown start: only a threshold below every counter is known to pass
        return low > c if isinstance(op, cst.GreaterThan) else low >= c

    def _exits_between(self, a: cst.CSTNode, b: cst.CSTNode, iteration: cst.CSTNode) -> bool:
        """A `continue`/`break`/`return` between the scheduler step and the optimizer step (at the
        iteration's level) can skip the optimizer step after an early scheduler step: then the
        order within one pass is not what decides. Stay silent."""
        lo, hi = self.order.get(a, 0), self.order.get(b, 0)
        for n in self.m.walk(iteration, _DEFS):
            o = self.order.get(n, 0)
            if not (lo < o < hi):
                continue
            if isinstance(n, cst.Return):
                return True
            if isinstance(n, (cst.Continue, cst.Break)):
                loop = self.m.enclosing(n, *_LOOPS)
                if loop is iteration or (loop is not None and self.m.contains(loop, a)):
                    return True
        return False

    def _anchor(self, point: cst.CSTNode, later: list[OptimizerEvent]) -> cst.CSTNode | None:
        """The statement of `point`'s own block that contains the last later optimizer step of
        that block (the scheduler step moves right after it), when `point` is a lone statement."""
        line = self.amp.lone_call_statement(point) if isinstance(point, cst.Call) else None
        if line is None:
            return None
        block = self.m.parent(line)
        body = getattr(block, "body", None)
        if not isinstance(body, (list, tuple)):
            return None
        anchor = None
        for ev in later:
            stmt = _child_statement(self.m, block, ev.node)
            if stmt is not None and (anchor is None or self._before(anchor, stmt)):
                anchor = stmt
        if anchor is None:
            return None
        # after `scaler.step(opt)` comes `scaler.update()`: keep the scheduler step after both
        index = list(body).index(anchor)
        while index + 1 < len(body) and _is_scaler_update(self, body[index + 1]):
            index += 1
        return body[index]


def _constant(node: cst.BaseExpression) -> int | str | None:
    """A plain string or int literal's value; None for anything else (f-strings, concatenations)."""
    if isinstance(node, cst.SimpleString):
        try:
            value = node.evaluated_value
        except Exception:
            return None
        return value if isinstance(value, str) else None
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    return None


def _child_statement(m: ScriptModel, block: cst.CSTNode, node: cst.CSTNode) -> cst.CSTNode | None:
    child = node
    for anc in m.ancestors(node):
        if anc is block:
            return child
        child = anc
    return None


def _is_scaler_update(facts: ScheduleFacts, stmt: cst.CSTNode) -> bool:
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return False
    expr = stmt.body[0]
    if not isinstance(expr, cst.Expr) or not isinstance(expr.value, cst.Call):
        return False
    return any(sc.call is expr.value and sc.method == "update" for sc in facts.amp.scaler_calls)


_STARTED_EVENTS = frozenset({"EPOCH_STARTED", "ITERATION_STARTED"})


def _started_event(m: ScriptModel, e: cst.BaseExpression, on: bool = False) -> bool:
    """`Events.EPOCH_STARTED` / `Events.ITERATION_STARTED` of `ignite.engine` (with `on`: the
    decorator `X.on(<that event>)`)."""
    if on:
        if not (isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) and e.func.attr.value == "on"
                and e.args and e.args[0].keyword is None):
            return False
        e = e.args[0].value
    q = m.qualname(e) or ""
    return q.startswith("ignite.") and q.rsplit(".", 1)[-1] in _STARTED_EVENTS


def _looks_like_scheduler(expr: cst.BaseExpression) -> bool:
    text = dotted(expr) or ""
    last = text.rsplit(".", 1)[-1].lower()
    return "sched" in last or last in ("lr_policy", "warmup")
