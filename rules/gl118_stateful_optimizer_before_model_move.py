"""GL118 stateful-optimizer-before-model-move."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.training import argument_for
from gpulint.rule import Context, Rule
from gpulint.sites import line_ref

# optimizers that create per-parameter state in their constructor (torch 2.x): the state is made
# where the parameters are at that moment
_STATEFUL_AT_INIT = frozenset({"torch.optim.Adagrad", "torch.optim.adagrad.Adagrad"})
_OPTIMIZER_BASES = frozenset({"torch.optim.Optimizer", "torch.optim.optimizer.Optimizer"})
# calls that make a new tensor from a parameter, on the parameter's device: `p.clone()`,
# `torch.zeros_like(p)`, `p.new_zeros(...)`
_COPY_METHODS = frozenset({"clone", "new_zeros", "new_ones", "new_full", "new_empty", "new_tensor"})
_COPY_FUNCTIONS = frozenset({"torch.zeros_like", "torch.ones_like", "torch.full_like", "torch.empty_like",
                             "torch.rand_like", "torch.randn_like", "torch.clone"})
_FRAMEWORKS = {"lightning", "accelerate", "hf-trainer", "deepspeed"}


class StatefulOptimizerBeforeModelMove(Rule):
    code = "GL118"
    name = "stateful-optimizer-before-model-move"
    summary = "An optimizer that builds its state at construction (Adagrad) is made before the model moves to the GPU."
    message = "`{opt}` creates its state on the CPU here, but `{model}` is moved to `{device}` on {line}; build the optimizer after the move"
    fix_safety = "unsafe"
    default = True
    kind = "crash"
    prefilter = r"Adagrad|Optimizer"
    ast_prefilter = r"Adagrad|^base Optimizer$"
    explanation = '''
Most optimizers create their per-parameter state lazily, at the first `step()`, where the
parameters are then. `torch.optim.Adagrad` creates its `sum` accumulators in its constructor, on
the parameters' device at that moment. Built from a model still on the CPU, then the model moved
to the GPU, the first `step()` mixes devices:
`RuntimeError: Expected all tensors to be on the same device`. The same holds for an optimizer class
of the file (a `torch.optim.Optimizer` subclass) whose `__init__` keeps copies of the parameters, as
Lookahead and Ranger keep their "slow weights" (`[p.clone().detach() for p in group["params"]]`).

The fix (unsafe: it reorders statements) moves the model-move statement above the optimizer
construction.

Bad:

```python
model = Net()
optimizer = torch.optim.Adagrad(model.parameters(), lr=0.01)
model.to(device)
```

Good:

```python
model = Net()
model.to(device)
optimizer = torch.optim.Adagrad(model.parameters(), lr=0.01)
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        if m.frameworks & _FRAMEWORKS:
            return
        reported: set = set()
        stateful = _STATEFUL_AT_INIT | _file_optimizers_with_state_at_init(m)
        for call in m.calls:
            q = m.qualname(call.func)
            if q is None and isinstance(call.func, cst.Name):
                q = _passed_class(m, call.func)  # `optimizer_fn(...)`, given `torch.optim.Adagrad`
                if q is None and call.func.value in stateful and m.qualname(call.func) is None:
                    q = call.func.value  # `Ranger(...)`, an optimizer class of the file
            if q not in stateful or not call.args:
                continue
            first = call.args[0].value
            if not (
                isinstance(first, cst.Call)
                and isinstance(first.func, cst.Attribute)
                and first.func.attr.value == "parameters"
            ):
                continue
            recv = first.func.value
            if not isinstance(recv, (cst.Name, cst.Attribute)):
                continue
            v = m.value_of(recv)
            if v.kind not in ("module",) or v.dev is None or not v.dev.is_host:
                continue
            move = self._later_move(ctx, call, recv)
            if move is None:
                continue
            move_call, move_stmt = move
            opt_stmt = m.statement_of(call)
            fix = None
            if (
                isinstance(move_stmt, cst.SimpleStatementLine)
                and isinstance(opt_stmt, cst.SimpleStatementLine)
                and m.parent(move_stmt) is m.parent(opt_stmt)
                and len(move_stmt.body) == 1
                and self._movable_statement(ctx, move_stmt.body[0], move_call, recv)
                and self._only_uses_before(ctx, move_call, opt_stmt, move_stmt)
            ):
                line = ctx.code(move_stmt).strip()
                fix = ctx.fix(
                    ctx.remove_statement(move_stmt),
                    ctx.insert_before(opt_stmt, line),
                    message="Move the model before building the optimizer",
                )
            dev = self._device_text(ctx, move_call)
            reported.add(call)
            yield ctx.finding(
                call,
                self.message.format(opt=ctx.code(call.func), model=ctx.code(recv), device=dev, line=line_ref(ctx, move_call)),
                fix,
            )

        yield from self._engine(ctx, reported, stateful)

    def _engine(self, ctx: Context, reported: set, stateful=_STATEFUL_AT_INIT):
        """The flow engine: the optimizer was built (in one function) over the parameters of a
        module on the CPU, and a training function steps it while calling that module on an
        accelerator (moved in between, elsewhere in the file). Constructors the statement-order
        check already reported (`reported`) are not reported again."""
        m = ctx.model
        done = set(reported)
        for call in m.calls:
            f = call.func
            if not isinstance(f, cst.Attribute) or f.attr.value != "step" or call.args:
                continue
            ov = m.value_of(f.value)
            ctor = ov.origin
            if ov.kind != "optimizer" or ov.dev is None or not ov.dev.is_host or ov.source is None:
                continue
            name = m.qualname(ctor.func) if isinstance(ctor, cst.Call) else None
            if name is None and isinstance(ctor, cst.Call) and isinstance(ctor.func, cst.Name):
                name = ctor.func.value
            if not isinstance(ctor, cst.Call) or name not in stateful or ctor in done:
                continue
            if m.scope_of(ctor) is m.scope_of(call):
                continue  # the same function: the statement-order check above
            fn = m.scope_of(call)
            used = None
            for c in self._step_calls(m, fn) if fn is not None else ():
                mv = m.value_of(c.func)
                if mv.kind == "module" and mv.origin is ov.source and mv.dev is not None and mv.dev.where in ("acc", "either"):
                    used = (c, mv)
                    break
            if used is None:
                later = self._moved_by_a_later_method(ctx, ctor, fn)
                if later is not None:
                    done.add(ctor)
                    model, move = later
                    yield ctx.finding(ctor, self.message.format(
                        opt=ctx.code(ctor.func), model=ctx.code(model), device=self._device_text(ctx, move),
                        line=line_ref(ctx, move)) + " (the constructor runs before any method that moves it)")
                continue
            done.add(ctor)
            c, mv = used
            device = ctx.code(mv.dev.expr) if mv.dev.expr is not None else "the accelerator"
            placed = mv.placed if isinstance(mv.placed, cst.Call) else c
            yield ctx.finding(
                ctor,
                self.message.format(opt=ctx.code(ctor.func), model=ctx.code(ov.placed) if ov.placed is not None
                                    else "the model", device=device, line=line_ref(ctx, placed)),
            )

    @staticmethod
    def _moved_by_a_later_method(ctx: Context, ctor: cst.Call, fn):
        """`self.opt = Adagrad(self.model.parameters())` in a class's `__init__` (over a model the
        engine knows is on the host there) and `self.model.to(device)` in another method of that
        class, which the method stepping `self.opt` belongs to: every method runs after the
        constructor, so the state stays behind (a fastai-style Learner that moves the model in
        `fit()`, madgrad#4, E61-2). The optimizer attribute set only in `__init__`, the model
        attribute never re-bound outside it; the move is the first such in-place one."""
        m = ctx.model
        init = m.scope_of(ctor)
        if not isinstance(init, cst.FunctionDef) or init.name.value != "__init__":
            return None
        cls = m.class_of(init)
        if cls is None or m.class_of(fn) is not cls or fn is init:
            return None
        first = ctor.args[0].value if ctor.args else None
        if not (isinstance(first, cst.Call) and isinstance(first.func, cst.Attribute)
                and first.func.attr.value == "parameters"):
            return None
        model = first.func.value
        if not (isinstance(model, cst.Attribute) and isinstance(model.value, cst.Name) and model.value.value == "self"):
            return None
        stmt = m.parent(m.parent(ctor)) if isinstance(m.parent(ctor), cst.Assign) else None
        target = m.parent(ctor).targets[0].target if stmt is not None and len(m.parent(ctor).targets) == 1 else None
        if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self"):
            return None
        opt_attr, model_attr = target.attr.value, model.attr.value
        for attr in (opt_attr, model_attr):
            if any(not m.contains(init, b.node) for b in m.bindings.get((cls, "self." + attr), [])):
                return None  # re-bound elsewhere: which optimizer, which model, is not this one
        moves = []
        for node, recv, _ in m.method_calls("to", "cuda"):
            if not (isinstance(m.parent(node), cst.Expr) and isinstance(recv, cst.Attribute)
                    and isinstance(recv.value, cst.Name) and recv.value.value == "self"
                    and recv.attr.value == model_attr):
                continue
            if m.class_of(node) is not cls or m.contains(init, node) or m.enclosing(node, cst.FunctionDef) is None:
                continue
            after = m.value_of(node)
            if after.kind == "module" and after.dev is not None and after.dev.where == "acc":
                moves.append(node)
        if not moves:
            return None
        return model, min(moves, key=lambda c: ctx.span(c)[0])

    @staticmethod
    def _step_calls(m, fn) -> list:
        """The calls of the function that steps the optimizer, then those of the file's functions
        and methods it calls (one level, as the engine resolved them): a trainer's `train` that
        gets its loss from `self._batch_loss(batch)`, the method that calls the model
        (AllenNLP's Trainer, allennlp#205)."""
        own = m.calls_in(fn)
        mine = set(own)
        out = list(own)
        for defs in m.functions.values():
            for f in defs:
                if f is fn or m.scope_of(f) is fn:
                    continue
                if any(s in mine for s in m.resolved_sites(f)):
                    out.extend(m.calls_in(f))
        return out

    @staticmethod
    def _device_text(ctx, mv: cst.Call) -> str:
        meth = mv.func.attr.value
        if meth == "cuda" and not mv.args:
            return "cuda"
        return ctx.code(mv.args[0].value) if mv.args else "the device"

    @staticmethod
    def _later_move(ctx: Context, opt: cst.Call, recv):
        """The first move of the same module to an accelerator after the optimizer, same function."""
        m = ctx.model
        scope = m.scope_of(opt)
        text = ctx.code(recv)
        for c in m.calls_in(scope, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda)) if scope is not m.module else m.calls:
            if not m.precedes(opt, c) or m.scope_of(c) is not scope:
                continue
            f = c.func
            if not isinstance(f, cst.Attribute) or f.attr.value not in ("to", "cuda"):
                continue
            if ctx.code(f.value) != text:
                continue
            after = m.value_of(c)
            # to an accelerator, or to one on some paths (a constructor's `device` some calls give
            # as "cuda" and others leave to "cpu"): the state made before it stays behind there
            if after.kind == "module" and after.dev is not None and after.dev.where in ("acc", "either"):
                return c, m.statement_of(c)
        return None

    @staticmethod
    def _movable_statement(ctx: Context, small, move_call: cst.Call, recv) -> bool:
        """The move is the whole statement: `model.to(d)`, or the reassigning `model = model.to(d)`
        (the same name or attribute the optimizer read; `.to()` of a module returns the module, so
        the optimizer's parameters are the moved ones). Not `net = model.to(d)` (a new name bound
        earlier) nor `model = Wrapper(model.to(d))`."""
        if isinstance(small, cst.Expr):
            return small.value is move_call
        if isinstance(small, cst.Assign):
            return (small.value is move_call and len(small.targets) == 1
                    and ctx.code(small.targets[0].target) == ctx.code(recv))
        return False

    @staticmethod
    def _only_uses_before(ctx: Context, move_call: cst.Call, opt_stmt, move_stmt) -> bool:
        """The names the move statement reads are bound before the optimizer statement (other
        than by the move statement itself: `model = model.to(d)`), and never between it and the
        move."""
        m = ctx.model
        scope = m.scope_of(opt_stmt)
        for n in m.walk(move_call):
            if isinstance(n, cst.Name):
                for b in m.bindings_of(n):
                    if m.contains(move_stmt, b.node):
                        continue
                    if b.how in ("assign", "unpack", "for", "with") and not m.precedes(b.node, opt_stmt):
                        return False
            elif isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) and n.value.value == "self":
                # `self.model.to(self.device)` with `self.device = ...` set after the optimizer
                for b in m.bindings_of(n):
                    if m.contains(move_stmt, b.node):
                        continue
                    if m.scope_of(b.node) is scope and not m.precedes(b.node, opt_stmt):
                        return False
        return True


def _passed_class(m, name: cst.Name) -> str | None:
    """The qualified name a parameter stands for when the function's every call the file shows
    (for a method, every call the flow engine resolved to it) passes, or defaults to, the same
    qualified name: `optimizer_fn` of `__init__(self, model, optimizer_fn=torch.optim.Adam)` called
    as `CTRTrainer(m, optimizer_fn=torch.optim.Adagrad)`."""
    bs = m.bindings_of(name)
    if len(bs) != 1 or bs[0].how != "param":
        return None
    fn = m.enclosing(bs[0].node, cst.FunctionDef)
    if fn is None:
        return None
    p = fn.params
    param = next((x for x in (*p.posonly_params, *p.params, *p.kwonly_params) if x.name.value == name.value), None)
    if param is None:
        return None
    sites = m.resolved_sites(fn) if m.class_of(fn) is not None else m.call_sites(fn)
    if not sites:
        return None
    found = set()
    for site in sites:
        if any(a.star for a in site.args):
            return None  # `f(*args)`: what it passes is not known
        given = argument_for(fn, site, name.value)
        if given is None:
            given = param.default
        q = m.qualname(given) if given is not None else None
        if q is None:
            return None
        found.add(q)
    return found.pop() if len(found) == 1 else None


def _file_optimizers_with_state_at_init(m) -> set[str]:
    """The optimizer classes of the file (subclasses of `torch.optim.Optimizer`, through the file's
    own bases) whose `__init__` (their own or a file base's) keeps a copy of each parameter: a
    `p.clone()`, `torch.zeros_like(p)`, `p.new_zeros(...)` of a name bound by a `for` or a
    comprehension over `group["params"]`, stored on `self` (`self.slow_weights = [[p.clone().detach()
    for p in group["params"]] for group in self.param_groups]`, Ranger / Lookahead) or in
    `self.state`. Such a copy is made where the parameter is at construction."""
    out: set[str] = set()
    for name in m.classes:
        if not m.class_is(name, _OPTIMIZER_BASES):
            continue
        found = m.method_of_class(name, "__init__")
        if found is not None and _copies_params(m, found[0]):
            out.add(name)
    return out


def _params_loop_targets(m, fn: cst.FunctionDef) -> set[str]:
    """Names bound by a `for` or a comprehension whose iterable is `<x>["params"]`."""
    names: set[str] = set()
    for n in m.walk(fn):
        if isinstance(n, (cst.For, cst.CompFor)):
            it = n.iter
            if (
                isinstance(it, cst.Subscript)
                and len(it.slice) == 1
                and isinstance(it.slice[0].slice, cst.Index)
                and isinstance(it.slice[0].slice.value, cst.SimpleString)
                and it.slice[0].slice.value.evaluated_value == "params"
                and isinstance(n.target, cst.Name)
            ):
                names.add(n.target.value)
    return names


def _copy_source(m, call: cst.Call) -> cst.BaseExpression | None:
    f = call.func
    if isinstance(f, cst.Attribute) and f.attr.value in _COPY_METHODS:
        return f.value
    if m.qualname(f) in _COPY_FUNCTIONS and call.args:
        return call.args[0].value
    return None


def _root_name(expr) -> str | None:
    """`p`, `p.data`, `p.detach()`, `p.data.float()` -> "p"."""
    while True:
        if isinstance(expr, cst.Name):
            return expr.value
        if isinstance(expr, cst.Attribute):
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and not expr.args:
            expr = expr.func.value
        else:
            return None


def _kept(m, call: cst.Call) -> bool:
    """The copy ends up on `self` or in the optimizer's `self.state`: the statement holding it
    assigns to `self.<attr>`, to `self.state[...]...`, or to a subscript of a name bound from
    `self.state[...]`."""
    stmt = m.statement_of(call)
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    if not isinstance(small, cst.Assign):
        return False
    for t in small.targets:
        code = m.module.code_for_node(t.target)
        if code.startswith("self."):  # `self.slow_weights = ...`, `self.state[p]["sum"] = ...`
            return True
        if isinstance(t.target, cst.Subscript) and isinstance(t.target.value, cst.Name):
            for b in m.bindings_of(t.target.value):
                v = getattr(b, "value", None)
                if v is not None and m.module.code_for_node(v).startswith("self.state["):
                    return True
    return False


def _copies_params(m, init: cst.FunctionDef) -> bool:
    targets = _params_loop_targets(m, init)
    if not targets:
        return False
    for n in m.walk(init):
        if isinstance(n, cst.Call):
            src = _copy_source(m, n)
            if src is not None and _root_name(src) in targets and _kept(m, n):
                return True
    return False
