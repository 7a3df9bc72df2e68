"""GL401 missing-zero-grad."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.devices import DeviceFacts
from gpulint.analysis.training import TrainingFacts, walk
from gpulint.model import Kind
from gpulint.rule import Context, Rule
from gpulint.sites import line_ref


class MissingZeroGrad(Rule):
    code = "GL401"
    name = "missing-zero-grad"
    summary = "A training loop calls backward() and step() but never clears the gradients."
    message = (
        "gradients are never cleared in this training loop, so every step adds this batch's gradients "
        "to all previous ones; call `{opt}.zero_grad(set_to_none=True)` once per step"
    )
    fix_safety = "safe"
    fix_partial = True  # a branch without a clear, split steps and another module's clear get no fix
    default = True
    kind = "silent"
    prefilter = r"\.step\("
    ast_prefilter = (r"^loop$", r"backward", r"^\.step\($")
    explanation = '''
`loss.backward()` *adds* the new gradients to `param.grad`; it does not overwrite them. A loop
that calls `backward()` and `optimizer.step()` without clearing the gradients in between makes
step *n* use the sum of the gradients of batches 1..n: the effective learning rate grows every
step and training diverges or stalls, silently.

The rule stays silent on gradient accumulation (the step sits under an `if ... % k == 0` or an
`accum` condition), on closures (`optimizer.step(closure)`, as LBFGS needs), and when the loop
clears gradients any other way: `model.zero_grad()`, `param.grad = None`, a helper function of the
file that does it, or `zero_grad()` of the object that holds the stepped optimizer (a project's
wrapper: `self.optim.zero_grad()`, then `scaler.step(self.optim.optimizer)`) or of the optimizer a
stepped wrapper holds (`opt.optimizer.zero_grad()`, then `opt.step()`). A loop iteration or a step function that builds its own optimizer before the
step (a one-step check in a test helper) is not a training loop. Nor is a loop over another
framework's optimizer (`paddle.optimizer.AdamW`, cleared with `optimizer.clear_grad()`).

A step function whose only clears are `M.zero_grad()` on other modules, stepping an optimizer that
a module of the file builds over its own parameters (`self.discriminator.optimizer`, set in
`Discriminator.__init__` from `self.parameters()`), leaves that module's gradients to pile up (a GAN
step clearing the generator only): reported at that step, without a fix.

The fix inserts `optimizer.zero_grad(set_to_none=True)` as the first statement of the loop body
(plain `optimizer.zero_grad()` when the optimizer is built by a class from outside torch, such as
apex's `FP16_Optimizer`, whose `zero_grad` takes no `set_to_none`). An optimizer that is a parameter
of the training function, when the file's callers pass an object of a class from outside torch that
the file cannot see (a project's own wrapper with `step()` only) or of a class of the file without
`zero_grad`, gets the finding without a fix.

A clear that can never run does not count: when every `zero_grad()` of the file sits under a
condition `i % k == r` (alone or in an `and`) with `r` not 0 and `k` known to be 1 (a literal, a name
assigned only 1, or a config field every definition of which in the file is 1, such as
`SimpleNamespace(iteration_per_update=1)` or `add_argument("--iteration_per_update", default=1)`),
the steps next to it are reported without a fix: `x % 1` is always 0, so nothing is ever cleared
(simple-nmt#22; its hotfix adds `or k == 1`). With `k` unknown, or any other clear, it stays silent.

Bad:

```python
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
```

Good:

```python
for x, y in loader:
    optimizer.zero_grad(set_to_none=True)
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
```
'''

    def check(self, ctx: Context):
        facts: TrainingFacts = ctx.model.facts(TrainingFacts)
        for loop in facts.loops:
            if not loop.is_step_loop or loop.clears_all:
                continue
            if any(s.closure for s in loop.steps):
                continue
            if any(self._accumulation_guard(ctx, s.call, loop.node) for s in loop.steps):
                continue
            reported = set()
            for step in loop.steps:
                opt = ctx.code(step.optimizer)
                if opt in reported:
                    continue
                if _other_framework_optimizer(ctx, step.optimizer):
                    continue  # PaddlePaddle's `AdamW(...)`: its gradients are cleared by `clear_grad()`
                if opt in loop.cleared_optimizers:
                    branch = _loop_branch_without_clear(ctx, loop, step, opt)
                    if branch is not None:
                        reported.add(opt)
                        yield ctx.finding(
                            step.call,
                            f"`{opt}.zero_grad()` is only called on another branch of the `if`: on this one every "
                            f"step adds this batch's gradients to all previous ones; call "
                            f"`{opt}.zero_grad(set_to_none=True)` once per step on this branch too",
                            _zero_grad_above(ctx, branch.body[0], opt, "the branch",
                                             _foreign_optimizer(ctx, step.optimizer)),
                        )
                    continue
                if _cleared_through_others(ctx, step.optimizer, loop.node):
                    continue  # its modules' gradients are cleared by the other optimizers' zero_grad
                if _cleared_through_holder(ctx, loop, step, opt):
                    continue  # `self.optim.zero_grad()` of the wrapper holding the stepped `self.optim.optimizer`
                if _built_in_loop(ctx, step.optimizer, loop.node):
                    continue  # a fresh optimizer every iteration: a one-step check, not a training loop
                if _single_pass_at(ctx.model, loop.node, step.call) and _cleared_elsewhere(ctx, opt):
                    continue  # one step per call (`...; opt.step(); break`), cleared by another step of the file
                reported.add(opt)
                yield ctx.finding(
                    step.call, self._message(ctx, opt, step.optimizer), self._fix(ctx, loop.node, opt, step.optimizer)
                )

        yield from self._step_functions(ctx, facts)
        yield from self._split_steps(ctx, facts)
        yield from self._dead_clears(ctx, facts)

    def _dead_clears(self, ctx: Context, facts: TrainingFacts):
        """Every gradient clear of the file sits under a condition that never holds (simple-nmt#22:
        `if engine.state.iteration % engine.config.iteration_per_update == 1: optimizer.zero_grad()`
        with `iteration_per_update` 1: `x % 1` is always 0), so the steps of the functions (or the
        module) that hold those clears, next to their backward, accumulate every gradient. Reported
        at the step, without a fix (the hotfix adds `or k == 1`; another shape may suit the code).
        Silent when any clear can run (`.grad` written or zeroed, a `zero_grad` not called or under a
        condition that may hold), when the divisor is not known to be a constant, or when the step
        never runs either."""
        m = ctx.model
        refs = [n for n in m.nodes if isinstance(n, cst.Attribute) and n.attr.value == "zero_grad"]
        if not refs or facts.grad_attributes_in(m.module):
            return
        dead = {}
        for ref in refs:
            call = m.parent(ref)
            if not (isinstance(call, cst.Call) and call.func is ref):
                return  # `zero_grad` handed on (a hook, a callback): it may run
            guard = _dead_guard(ctx, call)
            if guard is None:
                return
            dead[call] = guard
        scopes = {}
        for call, guard in dead.items():
            scopes.setdefault(m.enclosing(call, cst.FunctionDef) or m.module, (call, guard))
        cleared = {ctx.code(c.func.value) for c in dead}  # type: ignore[union-attr]
        reported = set()
        for scope, (clear, (test, divisor, where)) in scopes.items():
            if isinstance(scope, cst.FunctionDef):
                steps = list(facts.steps_of_function(scope))
            else:
                steps = []
            for loop in facts.loops:
                if loop.is_step_loop and (m.enclosing(loop.node, cst.FunctionDef) or m.module) is scope:
                    steps.extend(loop.steps)
            for st in steps:
                if st.closure or st.call in reported or _dead_guard(ctx, st.call) is not None:
                    continue
                if ctx.code(st.optimizer) not in cleared:
                    continue  # an optimizer the file never clears at all: the other findings' business
                if (m.enclosing(st.call, cst.FunctionDef) or m.module) is not scope:
                    continue
                if any(m.exclusive(c, st.call) for c in dead):
                    continue  # `if i % k == 1: zero_grad() else: step()`: the branch findings' shape
                reported.add(st.call)
                opt = ctx.code(st.optimizer)
                yield ctx.finding(
                    st.call,
                    f"gradients are never cleared: the only `zero_grad()` ({line_ref(ctx, clear)}) runs when "
                    f"`{ctx.code(test)}`, which never holds because `{ctx.code(divisor)}` is 1 ({where}) and "
                    f"`x % 1` is always 0; every step adds this batch's gradients to all previous ones; clear "
                    f"them also when `{ctx.code(divisor)} == 1` (or call `{opt}.zero_grad(set_to_none=True)` "
                    f"after each step)",
                )

    def _split_steps(self, ctx: Context, facts: TrainingFacts):
        """A loop whose iteration runs backward in one function of the file and the optimizer
        step in another (`self.training_step(batch)` then `self.optimizer_step()`, tt-blacksmith's
        LoRA trainer), each called unconditionally once per iteration, with no gradient clearing
        anywhere: in the loop, in any function it calls, in the two functions. Reported at the
        loop's call of the stepping function, without a fix (where to clear is the author's choice)."""
        m = ctx.model
        for loop in facts.loops:
            if loop.backward or loop.steps or loop.clears or loop.clears_all or loop.nested:
                continue
            if facts.grad_attributes_in(loop.node):
                continue
            back, step, bad = [], [], False
            for c in m.calls_in(loop.node):
                for fn in facts.file_functions(c):
                    eff = facts.effects(fn)
                    if "zero_grad" in eff or facts.grad_attributes_in(fn):
                        bad = True
                    if "backward" in eff or "step" in eff:
                        if self._conditional(m, c, loop.node) or ("backward" in eff and "step" in eff):
                            bad = True  # conditional, or one step function (_step_functions' case)
                        (back if "backward" in eff else step).append((c, fn))
            if bad or len(back) != 1 or len(step) != 1 or back[0][1] is step[0][1]:
                continue
            fn = step[0][1]
            found = None
            for c in m.calls_in(fn):
                f = c.func
                if isinstance(f, cst.Attribute) and f.attr.value == "step" and m.enclosing(c, cst.FunctionDef) is fn:
                    st = facts.as_step(c, f.value)
                    if st is not None:
                        if found is not None or st.closure or self._conditional(m, c, fn):
                            found = None
                            break
                        found = st
            if found is None or _built_in_loop(ctx, found.optimizer, loop.node):
                continue
            opt = ctx.code(found.optimizer)
            yield ctx.finding(
                step[0][0],
                f"nothing clears the gradients between steps: this loop runs backward in "
                f"`{ctx.code(back[0][0].func)}(...)` and `{opt}.step()` ({line_ref(ctx, found.call)}) in "
                f"`{ctx.code(step[0][0].func)}(...)`, so every step adds this batch's gradients to all previous "
                f"ones; call `{opt}.zero_grad(set_to_none=True)` once per step",
            )

    def _step_functions(self, ctx: Context, facts: TrainingFacts):
        """A function of the file that is one training step (backward and optimizer step in its
        body, unconditionally, no loop of its own) and never clears gradients, called from loops
        that do not clear them either (a trainer's `train_step`)."""
        m = ctx.model
        for defs in m.functions.values():
            for fn in defs:
                branch = None
                other_module = None
                if "zero_grad" in facts.effects(fn):
                    branch = self._branch_without_clear(ctx, facts, fn)
                    if branch is None:
                        branch = other_module = self._other_module_cleared(ctx, facts, fn)
                    if branch is None:
                        continue
                    steps = [branch]
                else:
                    steps = facts.steps_of_function(fn)
                if not steps or any(s.closure for s in steps):
                    continue
                if all(_built_in_loop(ctx, s.optimizer, fn) for s in steps):
                    continue  # a fresh optimizer every call steps once: a one-step check (trlx's test helper)
                if branch is None and any(self._conditional(m, s.call, fn) for s in steps) and not (
                        _every_branch_steps(ctx, steps, fn)
                        and not any(self._accumulation_guard(ctx, s.call, fn) for s in steps)):
                    continue
                if facts.grad_attributes_in(fn):
                    continue  # gradients handled by hand
                sites = facts.call_sites(fn)
                if not sites:
                    continue
                ok = True
                for c in sites:
                    loop = facts.enclosing_loop(c)
                    if loop is not None and branch is not None:
                        # the loop "clears" through this very function: only its own clears count
                        clears = bool(facts.grad_attributes_in(loop)) or any(
                            (isinstance(x.func, cst.Attribute) and x.func.attr.value == "zero_grad")
                            or any(g is not fn and "zero_grad" in facts.effects(g) for g in facts.file_functions(x))
                            for x in m.calls_in(loop))
                    else:
                        clears = loop is not None and facts.loop_info[loop].clears
                    if loop is None or clears or self._accumulation_guard(ctx, c, loop):
                        ok = False
                        break
                    if self._conditional(m, c, loop):
                        ok = False
                        break
                if not ok:
                    continue
                opt = ctx.code(steps[0].optimizer)
                if other_module is not None:
                    owner = ctx.code(steps[0].optimizer.value)
                    yield ctx.finding(
                        steps[0].call,
                        f"`{opt}` steps `{owner}`'s parameters, but this step function clears only other "
                        f"modules' gradients: every step adds this batch's gradients to all previous ones "
                        f"(also those of the other backward passes that reach `{owner}`); call "
                        f"`{opt}.zero_grad(set_to_none=True)` once per step",
                    )
                    continue
                if branch is not None:
                    yield ctx.finding(
                        steps[0].call,
                        f"`{opt}.zero_grad()` is only called on another branch of the `if`: on this one every "
                        f"step adds this batch's gradients to all previous ones; call "
                        f"`{opt}.zero_grad(set_to_none=True)` once per step on this branch too",
                    )
                    continue
                yield ctx.finding(
                    steps[0].call, self._message(ctx, opt, steps[0].optimizer),
                    self._fix_function(ctx, fn, opt, steps[0].optimizer)
                )

    def _message(self, ctx: Context, opt: str, optimizer) -> str:
        if _foreign_optimizer(ctx, optimizer) in (_PASSED_UNSEEN, _PASSED_WITHOUT_ZERO_GRAD):
            return (
                "gradients are never cleared in this training loop, so every step adds this batch's gradients "
                f"to all previous ones; clear them once per step (the callers pass for `{opt}` an object of a class "
                "from outside torch, which may have no `zero_grad()`: no automatic fix)"
            )
        return self.message.format(opt=opt)

    @staticmethod
    def _branch_without_clear(ctx: Context, facts: TrainingFacts, fn: cst.FunctionDef):
        """A step function that clears gradients on one branch of an `if` and steps on another
        that never does (`if not bf16: zero_grad(); ...; step() else: ...; backward(); step()`):
        the step of that branch, with its backward in the same branch, or None."""
        m = ctx.model
        clears = [c for c in m.calls_in(fn) if isinstance(c.func, cst.Attribute) and c.func.attr.value == "zero_grad"]
        if not clears or any(m.enclosing(c, cst.FunctionDef) is not fn for c in clears):
            return None
        for st in facts.steps_of_function(fn):
            branch = _branch_block(m, st.call, fn)
            if branch is None or any(not m.exclusive(c, st.call) for c in clears):
                continue
            if not any(isinstance(c.func, cst.Attribute) and c.func.attr.value == "backward"
                       for c in m.calls_in(branch)):
                continue
            if ctx.code(st.optimizer) not in {ctx.code(c.func.value) for c in clears}:
                continue  # another optimizer is cleared: not the same training step
            return st
        return None

    @staticmethod
    def _other_module_cleared(ctx: Context, facts: TrainingFacts, fn: cst.FunctionDef):
        """A step function whose only clears are `M.zero_grad()` on modules, stepping an optimizer
        that another module of the file's classes owns (`self.discriminator.optimizer`, built in
        `Discriminator.__init__` from `self.parameters()`) and that none of those clears covers
        (code-soup#73's GAN step: `self.generator.zero_grad()` only). The step, or None."""
        m = ctx.model
        clears = [c for c in m.calls_in(fn) if isinstance(c.func, cst.Attribute) and c.func.attr.value == "zero_grad"]
        if not clears or any(m.enclosing(c, cst.FunctionDef) is not fn for c in clears):
            return None
        receivers = []
        for c in clears:
            if c.args or m.value_of(c.func.value).kind != "module":
                return None  # an optimizer's zero_grad: which parameters it clears is not known here
            receivers.append(ctx.code(c.func.value))
        if facts.grad_attributes_in(fn):
            return None
        for c in m.calls_in(fn):
            if any(g is not fn and "zero_grad" in facts.effects(g) for g in facts.file_functions(c)):
                return None
        for st in facts.steps_of_function(fn):
            o = st.optimizer
            if not isinstance(o, cst.Attribute) or MissingZeroGrad._conditional(m, st.call, fn):
                continue
            owner = m.value_of(o.value)
            code = ctx.code(o.value)
            if owner.kind != "module" or owner.cls is None or not _owns_optimizer(m, owner.cls, o.attr.value):
                continue
            if any(r == code or r.startswith(code + ".") or code.startswith(r + ".") for r in receivers):
                continue
            return st
        return None

    @staticmethod
    def _conditional(m, node, stop) -> bool:
        for anc in m.ancestors(node):
            if anc is stop:
                return False
            if isinstance(anc, (cst.If, cst.Try, cst.While, cst.For)):
                return True
        return True

    @staticmethod
    def _fix_function(ctx: Context, fn: cst.FunctionDef, opt: str, optimizer=None):
        body = fn.body
        if not isinstance(body, cst.IndentedBlock) or not body.body:
            return None
        first = body.body[0]
        if isinstance(first, cst.SimpleStatementLine) and isinstance(first.body[0], cst.Expr) and isinstance(
                first.body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
            if len(body.body) < 2:
                return None
            first = body.body[1]  # after the docstring
        return _zero_grad_above(ctx, first, opt, "the step function", _foreign_optimizer(ctx, optimizer))

    @staticmethod
    def _accumulation_guard(ctx: Context, call: cst.Call, loop: cst.CSTNode) -> bool:
        """The step only runs every k iterations: `if (i + 1) % k == 0`, `if step % accum == 0`,
        `if ... accumulat...`, `if (i + 1) == len(loader)`."""
        for anc in ctx.model.ancestors(call):
            if anc is loop:
                return False
            if isinstance(anc, (cst.If, cst.While)):
                for n in walk(anc.test):
                    if isinstance(n, cst.Modulo):
                        return True
                    if isinstance(n, cst.Name) and ("accum" in n.value.lower() or n.value.lower() in ("len",)):
                        return True
                text = ctx.code(anc.test).lower()
                if "accum" in text or "%" in text:
                    return True
        return False

    @staticmethod
    def _fix(ctx: Context, loop: cst.CSTNode, opt: str, optimizer=None):
        body = loop.body
        if not isinstance(body, cst.IndentedBlock) or not body.body:
            return None
        return _zero_grad_above(ctx, body.body[0], opt, "the loop body", _foreign_optimizer(ctx, optimizer))


def _every_branch_steps(ctx: Context, steps, fn: cst.FunctionDef) -> bool:
    """The step function's steps are the branches of one `if`/`elif`/`else` of its body, each
    branch running its own backward and one step of the same optimizer (my-kaggle-template's
    `step()`: `if scaler is not None: scaler.scale(loss).backward(); scaler.step(optimizer) ...
    else: loss.backward(); optimizer.step()`): every call steps once, as an unconditional step
    would. An `if` without `else`, a branch with no step or two, a step under a further `if`,
    loop or `try`, or steps of different optimizers: False."""
    m = ctx.model
    if len({ctx.code(s.optimizer) for s in steps}) != 1:
        return False
    tops = set()
    for s in steps:
        top = None
        for anc in m.ancestors(s.call):
            if anc is fn:
                break
            if isinstance(anc, cst.If):
                top = anc
        if top is None:
            return False
        tops.add(id(top))
    if len(tops) != 1:
        return False
    for anc in m.ancestors(top):
        if anc is fn:
            break
        if isinstance(anc, (cst.If, cst.Try, cst.While, cst.For, cst.FunctionDef, cst.Lambda)):
            return False
    blocks = []
    node = top
    while isinstance(node, cst.If):
        blocks.append(node.body)
        orelse = node.orelse
        if orelse is None:
            return False  # a path that does not step
        if isinstance(orelse, cst.Else):
            blocks.append(orelse.body)
            break
        node = orelse
    seen = 0
    for block in blocks:
        inside = [s for s in steps if m.contains(block, s.call)]
        if len(inside) != 1:
            return False
        seen += 1
        for anc in m.ancestors(inside[0].call):
            if anc is block:
                break
            if isinstance(anc, (cst.If, cst.Try, cst.While, cst.For, cst.IfExp, cst.BooleanOperation)):
                return False
        if not any(isinstance(c.func, cst.Attribute) and c.func.attr.value == "backward" for c in m.calls_in(block)):
            return False
    return seen == len(steps)


def _owns_optimizer(m, cls: str, attr: str) -> bool:
    """The file's class `cls` builds `self.<attr>` in `__init__` as a torch optimizer over its own
    `self.parameters()`."""
    info = m.classes.get(cls)
    init = info.methods.get("__init__") if info is not None else None
    if init is None:
        return False
    for node in m.walk(init):
        if not (isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.value, cst.Call)):
            continue
        t = node.targets[0].target
        if not (isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self"
                and t.attr.value == attr):
            continue
        if not (m.qualname(node.value.func) or "").startswith("torch.optim."):
            return False
        first = node.value.args[0].value if node.value.args else None
        return (isinstance(first, cst.Call) and isinstance(first.func, cst.Attribute)
                and first.func.attr.value == "parameters" and isinstance(first.func.value, cst.Name)
                and first.func.value.value == "self")
    return False


def _zero_grad_above(ctx: Context, first: cst.CSTNode, opt: str, where: str, foreign=False):
    """The fix: `opt.zero_grad(set_to_none=True)` on its own line above `first` and above its own
    comment lines (right under the loop header, or under the step function's docstring). For an
    optimizer built by a class from outside torch, plain `opt.zero_grad()`: wrappers such as apex's
    `FP16_Optimizer.zero_grad(set_grads_to_None=True)` take no `set_to_none` (TypeError).
    `foreign` is what `_foreign_optimizer` answers: False / True, or `_PASSED_UNSEEN` /
    `_PASSED_WITHOUT_ZERO_GRAD` (an object handed in by the callers, of a class the file cannot
    see or of a class of the file without `zero_grad`): no fix, since `opt.zero_grad()` may raise
    AttributeError."""
    if foreign in (_PASSED_UNSEEN, _PASSED_WITHOUT_ZERO_GRAD):
        return None
    start, _ = ctx.span(first)
    line = ctx.location(start)[0] - len(first.leading_lines)
    offset = ctx.line_starts()[line - 1]
    call = f"{opt}.zero_grad()" if foreign else f"{opt}.zero_grad(set_to_none=True)"
    text = f"{ctx.indent_of(first)}{call}{ctx.newline}"
    return ctx.fix(ctx.insert_text(offset, text), message=f"Insert `{call}` at the top of {where}")


_PASSED_UNSEEN = "passed-unseen"
_PASSED_WITHOUT_ZERO_GRAD = "passed-without-zero-grad"


def _foreign_optimizer(ctx: Context, optimizer):
    """Some binding of the optimizer expression is a call of a class from outside torch (apex's
    `FP16_Optimizer(opt)`, a class of the file) whose `zero_grad` may not take `set_to_none`.

    A parameter of the step function is followed to the arguments its callers in the file pass
    (nnzhan/MTGNN train_single_step.py: `def train(data, X, Y, model, criterion, optim, batch_size)`
    called with `optim = Optim(model.parameters(), ...)` of `from trainer import Optim`, a wrapper
    with `step()` and no `zero_grad`): an object of a class the file cannot see may have no
    `zero_grad` at all (`_PASSED_UNSEEN`), nor has a class of the file that neither defines nor
    inherits one (`_PASSED_WITHOUT_ZERO_GRAD`): the finding gets no fix.""" 
    if not isinstance(optimizer, (cst.Name, cst.Attribute)):
        return False
    m = ctx.model
    for b in m.bindings_of(optimizer):
        value = b.value
        if not isinstance(value, cst.Call):
            continue
        q = m.qualname(value.func)
        if q is not None and not q.startswith("torch."):
            if _zero_grad_takes_set_to_none(m, q):
                continue
            return True
    if isinstance(optimizer, cst.Name):
        passed = _passed_optimizer_classes(m, optimizer)
        if any(q in m.classes and not _has_zero_grad(m, q) for q in passed):
            return _PASSED_WITHOUT_ZERO_GRAD
        if any(q not in m.classes for q in passed):
            return _PASSED_UNSEEN
        if any(not _zero_grad_takes_set_to_none(m, q) for q in passed):
            return True
    return False


def _passed_optimizer_classes(m, name: cst.Name) -> set[str]:
    """The classes (qualified names; torch's left out) whose calls build what the callers of the
    file pass for the parameter `name` (`train(..., optim, ...)` with `optim = Optim(...)`): a
    class of the file, or an imported name spelled as a class (`trainer.Optim`). A function's
    result (`build_optimizer(...)`) is left out: what it returns is not known here."""
    classes: set[str] = set()
    for b in m.bindings_of(name):
        if b.how != "param":
            continue
        for arg in m.param_arguments(b):
            values = [arg]
            if isinstance(arg, cst.Name):
                values = [ab.value for ab in m.bindings_of(arg) if ab.how == "assign"]
            for v in values:
                if not isinstance(v, cst.Call):
                    continue
                q = m.qualname(v.func)
                if q is None and isinstance(v.func, cst.Name) and v.func.value in m.classes:
                    q = v.func.value
                if q is None or q.startswith("torch.") or q in m.functions:
                    continue
                if q in m.classes or ("." in q and q.rsplit(".", 1)[1][:1].isupper()):
                    classes.add(q)
    return classes


def _has_zero_grad(m, q: str, _seen: frozenset = frozenset()) -> bool:
    """A class of the file that defines `zero_grad` or inherits one from a torch class or from such
    a class of the file (a base the file cannot see may define it: counted as having one)."""
    info = m.classes.get(q)
    if info is None or q in _seen:
        return True
    if "zero_grad" in info.methods:
        return True
    return any(b.startswith("torch.") or b not in ("object", "builtins.object") and _has_zero_grad(m, b, _seen | {q})
               for b in info.bases)


def _zero_grad_takes_set_to_none(m, q: str, _seen: frozenset = frozenset()) -> bool:
    """`q` names a class of the file whose own `zero_grad` takes `set_to_none` (or `**kwargs`), or
    that inherits `zero_grad` from bases that do (torch optimizers, such classes of the file)."""
    info = m.classes.get(q)
    if info is None or q in _seen:
        return False
    fn = info.methods.get("zero_grad")
    if fn is None:
        return bool(info.bases) and all(
            b.startswith("torch.optim.") or _zero_grad_takes_set_to_none(m, b, _seen | {q}) for b in info.bases
        )
    ps = fn.params
    return any(p.name.value == "set_to_none" for p in (*ps.params, *ps.kwonly_params)) or isinstance(
        ps.star_kwarg, cst.Param
    )


def _built_in_loop(ctx: Context, optimizer, loop) -> bool:
    """`opt = optim.SGD(...)` assigned inside the loop body before its `step()` (torch's
    fx_passes/numeric_utils.py builds an optimizer per iteration to compare one step of two models):
    each iteration's optimizer steps once, so there is no training loop whose gradients pile up."""
    m = ctx.model
    if not isinstance(optimizer, cst.Name):
        return False
    bindings = m.bindings_of(optimizer)
    return bool(bindings) and all(
        m.contains(loop, b.node) and isinstance(b.value, cst.Call) and m.kind_of(b.value) is Kind.OPTIMIZER
        for b in bindings
    )


def _loop_branch_without_clear(ctx: Context, loop, step, opt: str):
    """The `if`/`else` block of the loop body that holds `step` when the loop clears `opt` only on
    another branch (DAB-DETR#58: `if args.amp: optimizer.zero_grad(); scaler.scale(losses).backward();
    ...; scaler.step(optimizer) else: losses.backward(); optimizer.step()`): every clear of the loop
    is a direct `opt.zero_grad()` exclusive with the step, the block runs a backward, and no backward
    outside it reaches the step. None otherwise (any other clearing, backward in a helper)."""
    m = ctx.model
    if loop.clears_all or loop.backward_via or not loop.clears or not loop.backward:
        return None
    branch = _branch_block(m, step.call, loop.node)
    if branch is None or not isinstance(branch, cst.IndentedBlock) or not branch.body:
        return None
    for c in loop.clears:
        if not (isinstance(c, cst.Call) and isinstance(c.func, cst.Attribute) and c.func.attr.value == "zero_grad"
                and ctx.code(c.func.value) == opt and m.exclusive(c, step.call)):
            return None
    inside = [b for b in loop.backward if m.contains(branch, b)]
    if not inside or any(not m.contains(branch, b) and not m.exclusive(b, step.call) for b in loop.backward):
        return None
    return branch


def _branch_block(m, node, fn):
    """The block of the innermost `if`/`else` branch holding node inside fn, when only `if`s,
    `with`s and plain blocks lie between them (no loop, no try); None otherwise."""
    block = None
    for anc in m.ancestors(node):
        if anc is fn:
            return block
        if isinstance(anc, (cst.For, cst.While, cst.Try, cst.FunctionDef, cst.Lambda)):
            return None
        if block is None and isinstance(anc, cst.IndentedBlock) and isinstance(m.parent(anc), (cst.If, cst.Else)):
            block = anc
    return None


def _cleared_through_others(ctx: Context, optimizer, loop) -> bool:
    """Every module whose parameters built `optimizer` has its gradients cleared in the loop by
    another call: `O2.zero_grad()` of an optimizer built from that module, or `module.zero_grad()`.
    InfoGAN's `info_optimizer` over `chain(G.parameters(), D.parameters())` steps after
    `D_optimizer.zero_grad()` and `G_optimizer.zero_grad()` ran in the same iteration
    (pytorch-generative-model-collections, PRECISION7.md): nothing accumulates across steps."""
    m = ctx.model
    dev = m.facts(DeviceFacts)
    mods = dev.optimizer_models(optimizer)
    if not mods:
        return False
    cleared: set[str] = set()
    for c in m.calls_in(loop):
        f = c.func
        if not (isinstance(f, cst.Attribute) and f.attr.value == "zero_grad"):
            continue
        recv = f.value
        if not isinstance(recv, (cst.Name, cst.Attribute)):
            continue
        if m.kind_of(recv) is Kind.MODULE:
            cleared.add(ctx.code(recv))
        else:
            cleared.update(ctx.code(x) for x in dev.optimizer_models(recv))
    return all(ctx.code(x) in cleared for x in mods)


def _cleared_through_holder(ctx: Context, loop, step, opt: str) -> bool:
    """The loop clears, on the step's path, an object that holds the stepped optimizer or that the
    stepped object holds: `self.optim.zero_grad()` then `self.scaler.step(self.optim.optimizer)`
    (omnivore's OmniVision trainer, PRECISION54: `self.optim` is the project's `OmniOptimizer`,
    built by an imported `construct_optimizer`, whose `zero_grad()` clears its `.optimizer`), or
    `W.optimizer.zero_grad()` then `W.step()` (a wrapper whose `step()` steps its `.optimizer`).
    The two spellings are one attribute chain: the same parameters. A clear on another branch
    of an `if` than the step does not count."""
    m = ctx.model
    for c in loop.clears:
        if not (isinstance(c, cst.Call) and isinstance(c.func, cst.Attribute) and c.func.attr.value == "zero_grad"):
            continue
        recv = ctx.code(c.func.value)
        if not (opt.startswith(recv + ".") or recv.startswith(opt + ".")):
            continue
        if not m.exclusive(c, step.call):
            return True
    return False


def _dead_guard(ctx: Context, node: cst.CSTNode):
    """(test, divisor, where) for the innermost `if` around `node` (in its function) whose test
    never holds, `node` in its body: `a % k == r` (alone, or a conjunct of an `and`) with r an
    integer literal other than 0 and k known to be 1 (`_constant_one`); None when every test
    around `node` may hold."""
    m = ctx.model
    prev = node
    for anc in m.ancestors(node):
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return None
        if isinstance(anc, cst.If) and prev is anc.body:
            found = _never_holds(ctx, anc.test)
            if found is not None:
                return (anc.test, *found)
        prev = anc
    return None


def _never_holds(ctx: Context, test: cst.BaseExpression):
    if isinstance(test, cst.BooleanOperation):
        if isinstance(test.operator, cst.And):
            return _never_holds(ctx, test.left) or _never_holds(ctx, test.right)
        return None
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.Equal)):
        return None
    left, right = test.left, test.comparisons[0].comparator
    if isinstance(left, cst.Integer):
        left, right = right, left
    if not (isinstance(right, cst.Integer) and isinstance(left, cst.BinaryOperation)
            and isinstance(left.operator, cst.Modulo)):
        return None
    if int(right.value, 0) == 0:
        return None
    where = _constant_one(ctx, left.right)
    return (left.right, where) if where is not None else None


def _constant_one(ctx: Context, expr: cst.BaseExpression) -> str | None:
    """Where the file makes `expr` the integer 1 on every path, or None: the literal; a name every
    binding of which assigns the literal 1; an attribute `cfg.k` whose field `k` every definition
    in the file sets to the literal 1 (`SimpleNamespace(k=1)`, `cfg.k = 1`, `{"k": 1}`,
    `add_argument("--k", default=1)`, at least one of them) and whose name is written as a string
    nowhere else (a config read from a file, `getattr(cfg, "k", 4)`)."""
    m = ctx.model

    def one(v) -> bool:
        return isinstance(v, cst.Integer) and v.value == "1"

    if one(expr):
        return "the literal"
    if isinstance(expr, cst.Name):
        bs = m.bindings_of(expr)
        if bs and all(b.how == "assign" and one(b.value) for b in bs):
            return line_ref(ctx, bs[0].node)
        return None
    if not isinstance(expr, cst.Attribute):
        return None
    field = expr.attr.value
    defs, strings = [], 0
    for n in m.nodes:
        if isinstance(n, cst.Arg) and n.keyword is not None and n.keyword.value == field:
            defs.append((n, n.value))
        elif isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target]
            for t in targets:
                for x in [t, *m.walk(t)]:
                    if isinstance(x, cst.Attribute) and x.attr.value == field and (
                            x is t or isinstance(m.parent(x), (cst.Element, cst.StarredElement))):
                        # `cfg.k = 1`; unpacked or augmented: not known
                        defs.append((n, n.value if x is t and not isinstance(n, cst.AugAssign) else None))
        elif isinstance(n, cst.SimpleString):
            text = n.evaluated_value
            if not isinstance(text, str) or text.lstrip("-").replace("-", "_") != field:
                continue
            parent = m.parent(n)
            if isinstance(parent, cst.DictElement) and parent.key is n:
                defs.append((n, parent.value))
                continue
            arg = parent if isinstance(parent, cst.Arg) else None
            call = m.parent(arg) if arg is not None else None
            if (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                    and call.func.attr.value == "add_argument" and text.startswith("--")):
                default = next((a.value for a in call.args if a.keyword and a.keyword.value == "default"), None)
                if any(a.keyword and a.keyword.value == "dest" for a in call.args):
                    return None
                defs.append((call, default))
                continue
            strings += 1
    if strings or not defs or not all(one(v) for _, v in defs):
        return None
    return line_ref(ctx, defs[0][0])


def _single_pass_at(m, loop: cst.CSTNode, node: cst.CSTNode) -> bool:
    """`node` runs at most once per entry into `loop`: the loop's body ends with an unconditional
    `break`, `node` is the loop's own statement (not a nested loop's), and every `continue` of the
    loop comes before it (`for idx, batch in enumerate(loader): if idx < k: continue; ...; break`,
    openfl's vertical-FL flow steps, PRECISION43)."""
    if not isinstance(loop, (cst.For, cst.While)) or not isinstance(loop.body, cst.IndentedBlock) or not loop.body.body:
        return False
    last = loop.body.body[-1]
    if not (isinstance(last, cst.SimpleStatementLine) and any(isinstance(s, cst.Break) for s in last.body)):
        return False
    if m.enclosing(node, cst.For, cst.While) is not loop:
        return False
    own = (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)
    return all(m.order[c] < m.order[node] for c in m.walk(loop.body, skip=own) if isinstance(c, cst.Continue))


def _cleared_elsewhere(ctx: Context, opt: str) -> bool:
    """`opt.zero_grad()` (the same spelling) somewhere in the file: the flow step that zeroes the
    gradients before the one-step loop runs (openfl's `start` step, PRECISION43)."""
    for call, recv, _meth in ctx.model.method_calls("zero_grad"):
        if ctx.code(recv) == opt:
            return True
    return False


# deep-learning frameworks other than PyTorch whose optimizers share `step()` but clear gradients
# their own way (PaddlePaddle's `optimizer.clear_grad()`, MindSpore's functional gradients)
_OTHER_FRAMEWORKS = ("paddle", "mindspore", "jittor", "oneflow", "tensorflow", "keras", "mxnet")


def _other_framework_optimizer(ctx: Context, opt: cst.BaseExpression) -> bool:
    """The optimizer is built by another framework's class (OpenPrompt's ERNIE tutorial for
    PaddlePaddle: `from paddle.optimizer import AdamW`, `optimizer = AdamW(learning_rate=...,
    parameters=...)`, then `loss.backward(); optimizer.step(); optimizer.clear_grad()`), or, when
    the file builds it out of sight, the file imports such a framework and not torch: not a
    PyTorch training loop, and its clears are not `zero_grad`."""
    m = ctx.model

    def other(q: str | None) -> bool:
        return q is not None and q.split(".", 1)[0] in _OTHER_FRAMEWORKS

    if isinstance(opt, cst.Name):
        bindings = m.bindings_of(opt)
        values = [b.value for b in bindings if b.how == "assign" and isinstance(b.value, cst.Call)]
        if values and len(values) == len(bindings):
            return all(other(m.qualname(v.func)) for v in values)
    imported = {q.split(".", 1)[0] for q in m.imported_modules}
    return bool(imported & set(_OTHER_FRAMEWORKS)) and "torch" not in imported and not m.frameworks
