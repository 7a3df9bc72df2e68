"""GL505 empty-cache-in-loop."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.training import TrainingFacts, walk
from gpulint.flow import gpu_guard
from gpulint.analysis.training import argument_for
from gpulint.model import MODULE_BASES
from gpulint.rule import Context, Rule
from gpulint.sites import line_ref


class EmptyCacheInLoop(Rule):
    code = "GL505"
    name = "empty-cache-in-loop"
    summary = "`torch.cuda.empty_cache()` is called on every training step."
    message = (
        "`torch.cuda.empty_cache()` every step hands cached GPU memory back to the driver only for "
        "the next step to allocate it again (slow, and a synchronisation); remove it from the loop"
    )
    forward_message = (
        "`torch.cuda.empty_cache()` in `{fn}()` runs in the model's forward pass, which the training "
        "loop runs every step (the model call on {line}): each call hands cached GPU memory back to the "
        "driver only for the next allocation to take it again (slow, and a synchronisation); remove it"
    )
    fix_safety = "none"
    default = True
    kind = "slow"
    prefilter = r"empty_cache"
    ast_prefilter = r"empty_cache"
    explanation = '''
PyTorch's caching allocator keeps freed GPU memory to reuse it for the next allocation.
`torch.cuda.empty_cache()` returns the unused cached blocks to the driver; it does not make more
memory available to PyTorch itself, and it does not fix a leak. Called on every training step, it
forces the next step to allocate everything again through `cudaMalloc`, which is slow and
synchronising.

The rule reports unconditional calls in the innermost training loop, also inside a function of
the file that the loop calls on every step (a trainer's `training_step`); a
`torch.cuda.is_available()` guard does not count as a condition, nor does a flag the file sets
only to `True` (`if config.empty_cache:` with `empty_cache: bool = True` in a config class that no
construction overrides). The accelerator's module picked at run time with CUDA as the fallback
(`acc = getattr(torch, device_type, torch.cuda)`, then `acc.empty_cache()`) counts as
`torch.cuda`. The same holds for a call in a module's `forward` (or in a method or function of the file that
`forward` always calls), also inside a loop there (pocket's `masked_roi_align` empties the cache
after every chunk of RoI clones), when an instance of that module class, or of one that holds it
and calls it from its own `forward`, is called unconditionally on every training step. Calls in
`__init__`, in evaluation or export helpers, in a forward under a test (`if not self.training:`),
and in modules the file never calls in a training step are left alone. An occasional call (once per
epoch, under another condition, or after `if step % k != 0: continue` skips the rest of the
iteration) is left alone. No automatic fix: removing it is the fix.

Bad:

```python
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    torch.cuda.empty_cache()
```

Good:

```python
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        facts: TrainingFacts = m.facts(TrainingFacts)
        calls = list(m.iter_calls("torch.cuda.empty_cache", "torch.cuda.memory.empty_cache"))
        seen = {id(c) for c in calls}
        for call, recv, _ in m.method_calls("empty_cache"):
            if id(call) not in seen and _cuda_module_alias(m, recv):
                calls.append(call)
        for call in calls:
            if self._every_step(m, facts, call, 0):
                yield ctx.finding(call)
                continue
            found = _every_forward(m, facts, call)
            if found is not None:
                fn, site = found
                yield ctx.finding(call, self.forward_message.format(fn=fn.name.value, line=line_ref(ctx, site)))

    def _every_step(self, m, facts: TrainingFacts, node, depth: int) -> bool:
        return _every_step(m, facts, node, depth)


def _every_step(m, facts: TrainingFacts, node, depth: int) -> bool:
    """`node` runs once per step: unconditionally in the innermost training loop, or
    unconditionally in a function of the file that such a loop calls unconditionally (a
    trainer's `training_step`). A `torch.cuda.is_available()` guard does not count as a
    condition: on a GPU it always holds."""
    loop = facts.step_loop_of(node)
    if loop is not None:
        return (facts.enclosing_loop(node) is loop.node and not _conditional(m, node, loop.node)
                and not _after_periodic_skip(m, node, loop.node))
    if depth >= 2 or facts.enclosing_loop(node) is not None:
        return False
    fn = m.enclosing(node, cst.FunctionDef)
    if fn is None or _conditional(m, node, fn):
        return False
    sites = facts.call_sites(fn)
    if not sites:
        return False
    if depth == 0 and facts.steps_of_function(fn):
        # the function is one training step (backward and optimizer step, no loop): every
        # loop that calls it unconditionally runs it once per step
        return all(
            facts.enclosing_loop(c) is not None and not _conditional(m, c, facts.enclosing_loop(c))
            for c in sites
        )
    return all(_every_step(m, facts, c, depth + 1) for c in sites)


def _every_forward(m, facts: TrainingFacts, node):
    """`node` runs unconditionally (loops allowed) in a module's `forward`, or in a function or
    method that such a forward always calls, and an instance of that module is called on every
    training step (pocket#10): (the function `node` is in, the model call in the training step);
    None otherwise."""
    fn = m.enclosing(node, cst.FunctionDef)
    if fn is None or m.enclosing(fn, cst.FunctionDef) is not None or _conditional(m, node, fn):
        return None
    site = _forward_every_step(m, facts, fn, 0, set())
    return (fn, site) if site is not None else None


def _forward_every_step(m, facts: TrainingFacts, fn: cst.FunctionDef, depth: int, busy: set):
    """The model call of a training step that runs `fn` on every step, through `forward`s and the
    functions they always call; None when none is known."""
    if depth > 4 or fn in busy:
        return None
    busy = busy | {fn}
    cls = m.class_of(fn)
    name = fn.name.value
    if cls is not None and name == "forward":
        if not m.class_is(cls.name.value, MODULE_BASES):
            return None
        return _module_called_every_step(m, facts, fn, depth, busy)
    if name.startswith("__") or name in ("train", "eval", "to", "cuda", "cpu"):
        return None  # `__init__`, dunders and module methods of torch's own
    sites = facts.call_sites(fn)
    if not sites:
        return None
    for site in sites:
        caller = m.enclosing(site, cst.FunctionDef)
        if caller is None or m.enclosing(caller, cst.FunctionDef) is not None or _conditional(m, site, caller):
            continue
        found = _forward_every_step(m, facts, caller, depth + 1, busy)
        if found is not None:
            return found
    return None


def _module_called_every_step(m, facts: TrainingFacts, forward: cst.FunctionDef, depth: int, busy: set):
    """A call of an instance of a module class whose `forward` is `forward` that runs on every
    training step: in the innermost training loop or a step function (`_every_step`'s sense), or
    unconditionally in the `forward` of another module that runs so."""
    for c in m.calls:
        f = c.func
        if not isinstance(f, (cst.Name, cst.Attribute)):
            continue
        v = m.value_of(f)
        if v.kind != "module" or v.cls is None:
            continue
        found = m.method_of_class(v.cls, "forward")
        if found is None or found[0] is not forward:
            continue
        if _every_step(m, facts, c, 0):
            return c
        caller = m.enclosing(c, cst.FunctionDef)
        if caller is None or m.enclosing(caller, cst.FunctionDef) is not None or _conditional(m, c, caller):
            continue
        if caller is forward:
            continue
        outer = _forward_every_step(m, facts, caller, depth + 1, busy)
        if outer is not None:
            return outer
    return None


def _cuda_module_alias(m, recv) -> bool:
    """`acc.empty_cache()` where `acc` is bound once to the accelerator's torch module picked at run
    time with CUDA as the fallback: `acc = getattr(torch, device_type, torch.cuda)` (peft#2894's
    `torch_accelerator_module`), or to `torch.cuda` itself."""
    if not isinstance(recv, cst.Name):
        return False
    bindings = m.bindings_of(recv)
    if len(bindings) != 1 or bindings[0].how != "assign" or bindings[0].value is None:
        return False
    v = bindings[0].value
    if m.qualname(v) == "torch.cuda":
        return True
    if (isinstance(v, cst.Call) and isinstance(v.func, cst.Name) and v.func.value == "getattr"
            and "getattr" not in m.functions and len(v.args) == 3
            and all(a.keyword is None and not a.star for a in v.args)):
        return m.qualname(v.args[0].value) == "torch" and m.qualname(v.args[2].value) == "torch.cuda"
    return False


def _steps_here(m, body) -> bool:
    """The block calls an optimizer's `.step()` itself: its condition is the step's own (gradient
    accumulation: `if (i + 1) % accum == 0: optimizer.step(); ...`), so what it runs runs once
    per optimizer step."""
    for stmt in getattr(body, "body", ()):
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            e = small.value if isinstance(small, cst.Expr) else None
            if (isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) and e.func.attr.value == "step"
                    and not e.args and m.value_of(e.func.value).kind == "optimizer"):
                return True  # not a scheduler's epoch-boundary step
    return False


def _conditional(m, node, stop) -> bool:
    """Something other than a device-availability check decides whether `node` runs, between it
    and `stop` (a loop or the function)."""
    child = node
    for anc in m.ancestors(node):
        if anc is stop:
            return False
        if isinstance(anc, cst.If):
            if not (child is anc.body and (gpu_guard(m, anc.test) is True or _steps_here(m, anc.body)
                                           or _flag_on(m, anc.test))):
                return True
        elif isinstance(anc, (cst.Else, cst.IfExp, cst.BooleanOperation, cst.Try, cst.ExceptHandler, cst.Lambda)):
            return True
        elif isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
            return True
        child = anc
    return True


def _after_periodic_skip(m, node, stop) -> bool:
    """An earlier statement of the loop body skips the rest of the step unless the step counter is
    a multiple of k: `if not step or step % eval_steps != 0: continue` and then `empty_cache()`
    before an evaluation (seamless_communication's m4t finetune trainer, PRECISION53): the call
    runs every k steps, not every step. Only a test with a `%` counts: `if batch is None:
    continue` skips a bad batch and the call still runs at every other step."""
    child = node
    for anc in m.ancestors(node):
        if anc is stop:
            return False
        if isinstance(anc, cst.IndentedBlock):
            stmt = child
            for prev in anc.body:
                if prev is stmt:
                    break
                if isinstance(prev, cst.If) and _periodic(prev.test) and _ends_in_exit(prev.body):
                    return True
        child = anc
    return False


def _periodic(test) -> bool:
    for n in walk(test):
        if isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Modulo):
            return True
    return False


def _ends_in_exit(body) -> bool:
    stmts = getattr(body, "body", ())
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(s, (cst.Continue, cst.Return)) for s in last.body)
    return False


def _flag_on(m, test: cst.BaseExpression) -> bool:
    """`if config.empty_cache:` where the file shows the flag is on in every run it can see: an
    attribute of an instance of a class of the file (`config`, or `self` in its methods) that the
    file sets only to `True`: a class-level default (`empty_cache: bool = True`, a dataclass
    field), or in `__init__` a literal `True` or a parameter that defaults to `True` and that no
    construction of the class passes otherwise. Any other assignment to an attribute of that name
    in the file, or the class used other than by calling it, and the flag is not known."""
    if not isinstance(test, cst.Attribute) or not isinstance(test.value, cst.Name):
        return False
    attr = test.attr.value
    if test.value.value == "self":
        owner = m.class_of(test)
        cls = owner.name.value if owner is not None else None
    else:
        cls = m.value_of(test.value).cls
    info = m.classes.get(cls) if cls is not None else None
    if info is None:
        return False
    node = info.node
    sites = []
    for n in m.nodes:
        if isinstance(n, cst.Name) and n.value == cls and n is not node.name:
            parent = m.parent(n)
            if not (isinstance(parent, cst.Call) and parent.func is n):
                return False  # the class handed around: its constructions are not all here
            sites.append(parent)
    init = info.methods.get("__init__") or next(
        (st for st in node.body.body if isinstance(st, cst.FunctionDef) and st.name.value == "__init__"), None
    )
    found = False
    # class-level default: `empty_cache = True` / `empty_cache: bool = True`
    for st in node.body.body:
        if not isinstance(st, cst.SimpleStatementLine):
            continue
        for small in st.body:
            target = value = None
            if isinstance(small, cst.AnnAssign):
                target, value = small.target, small.value
            elif isinstance(small, cst.Assign) and len(small.targets) == 1:
                target, value = small.targets[0].target, small.value
            if isinstance(target, cst.Name) and target.value == attr:
                if not _is_true(value):
                    return False
                found = True
                # a dataclass field can be given at construction
                for site in sites:
                    given = next((a.value for a in site.args if a.keyword is not None and a.keyword.value == attr), None)
                    if any(a.star for a in site.args) or (given is not None and not _is_true(given)):
                        return False
                    if init is None and any(a.keyword is None for a in site.args):
                        return False  # positional fields: which one is not followed
    # every assignment of an attribute of that name in the file
    for n in m.nodes:
        targets = []
        if isinstance(n, cst.Assign):
            targets = [t.target for t in n.targets]
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign)):
            targets = [n.target]
        for t in targets:
            if not (isinstance(t, cst.Attribute) and t.attr.value == attr):
                if isinstance(t, (cst.Tuple, cst.List)) and any(
                    isinstance(e.value, cst.Attribute) and e.value.attr.value == attr for e in t.elements
                ):
                    return False
                continue
            if isinstance(n, cst.AugAssign):
                return False
            value = n.value
            fn = m.enclosing(n, cst.FunctionDef)
            if not (isinstance(t.value, cst.Name) and t.value.value == "self" and fn is init and fn is not None
                    and m.class_of(fn) is node):
                return False
            if _is_true(value):
                found = True
                continue
            if not isinstance(value, cst.Name):
                return False
            param = next((p for p in (*fn.params.params, *fn.params.kwonly_params) if p.name.value == value.value), None)
            if param is None or not _is_true(param.default):
                return False
            if any(b.node is not param.name and b.how != "param" for b in m.bindings_of(value)):
                return False  # the parameter is re-bound in __init__
            for site in sites:
                if any(a.star for a in site.args):
                    return False
                given = argument_for(fn, site, value.value)
                if given is not None and not _is_true(given):
                    return False
            found = True
    return found


def _is_true(node) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"
