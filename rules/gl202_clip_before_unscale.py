"""GL202 clip-before-unscale."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.amp import SCALER_QUALNAMES, AmpFacts
from gpulint.analysis.training import argument_for
from gpulint.rule import Context, Rule


class ClipBeforeUnscale(Rule):
    code = "GL202"
    name = "clip-before-unscale"
    summary = "Gradients clipped while still multiplied by the GradScaler's loss scale."
    message = "gradients are clipped while still scaled by `{s}`: the threshold applies to scaled gradients; call {calls} before clipping"
    fix_safety = "safe"
    default = True
    kind = "silent"
    prefilter = r"clip_grad"
    ast_prefilter = r"clip_grad"
    explanation = '''
Between `scaler.scale(loss).backward()` and `scaler.step(optimizer)` the gradients are multiplied
by the loss scale (65536 at the start). `clip_grad_norm_(params, 1.0)` at that point compares the
*scaled* norm with the threshold, so it clips nearly every step by a huge factor (or, with
`clip_grad_value_`, clamps scaled values), which silently shrinks the effective learning rate.

Unscale first: `scaler.unscale_(optimizer)` divides the gradients in place, and the following
`scaler.step(optimizer)` knows not to unscale them again. With several optimizers, unscale each
one whose parameters are clipped. If the iteration already calls `unscale_` after the clip, the
fix moves it before the clip (a second `unscale_` before `update()` raises an error). A scaler
built with `enabled=False` (kept for a later move to native AMP) scales nothing, and its clips are
not reported.

Bad:

```python
scaler.scale(loss).backward()
torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
scaler.step(optimizer)
scaler.update()
```

Good:

```python
scaler.scale(loss).backward()
scaler.unscale_(optimizer)
torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
scaler.step(optimizer)
scaler.update()
```
'''

    def check(self, ctx: Context):
        facts = ctx.model.facts(AmpFacts)
        groups: dict = {}
        for clip in facts.clips:
            it = facts.iteration_of(clip)
            if it is None:
                found = self._clip_in_step_helper(ctx, facts, clip)
                if found is None:
                    found = self._clip_helper_before_step(ctx, facts, clip)
                if found is not None:
                    yield found
                continue
            last = facts.last_backward_before(it, clip)
            if last is None or last.scaler is None:
                last = facts.scaled_backward_before(it, clip)
            if last is None or last.scaler is None:
                continue
            if _disabled_scaler(ctx, last):
                continue  # `GradScaler(enabled=False)` scales nothing: the clip sees true gradients
            s = last.scaler
            later = [b.call for b in facts.backwards if facts.contains(it, b.call) and facts.may_follow(clip, b.call)]
            steps = [
                st
                for st in facts.scaler_calls_in(it, s, "step")
                if facts.may_follow(clip, st.call) and not any(facts.before(b, st.call) for b in later)
            ]
            if not steps:
                continue
            unscaled = [
                u
                for u in facts.scaler_calls_in(it, s, "unscale_")
                if facts.may_follow(last.call, u.call) and facts.may_follow(u.call, clip)
            ]
            if unscaled:
                continue
            if any(
                u.scaler == s and u.method == "unscale_" and ctx.model.scope_of(u.call) is not ctx.model.scope_of(clip)
                for u in facts.scaler_calls
            ):
                continue  # unscaled in a helper function the iteration may call
            groups.setdefault((id(it), id(last.call)), []).append((clip, last, steps))
        for members in groups.values():
            fix = self._fix(ctx, facts, members)
            for clip, last, steps in members:
                opts = _optimizers(steps) or ["optimizer"]
                calls = " and ".join(f"`{last.scaler}.unscale_({o})`" for o in opts)
                yield ctx.finding(clip, self.message.format(s=last.scaler, calls=calls), fix)

    def _clip_in_step_helper(self, ctx: Context, facts: AmpFacts, clip: cst.Call):
        """A function or method of the file that clips and then calls `S.step(O)` (S one of its
        parameters, no backward of its own), called from a training iteration after
        `S'.scale(L).backward()` with S' passed for S, and no `unscale_` anywhere in the file: the
        clip acts on scaled gradients. A method's calls are those the flow engine resolved to it
        (`self._updater.step(grad_scaler=self._grad_scaler)`)."""
        m = ctx.model
        if any(u.method == "unscale_" for u in facts.scaler_calls) or any(True for _ in m.method_calls("unscale_")):
            return None
        fn = m.enclosing(clip, cst.FunctionDef)
        if fn is None or m.enclosing(clip, cst.For, cst.While) is not None:
            return None
        if any(facts.contains(fn, b.call) for b in facts.backwards):
            return None
        method = m.class_of(fn) is not None
        p = fn.params
        params = [x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)]
        if method:
            params = params[1:] if params and params[0] in ("self", "cls") else []
        steps = []
        for call, recv, _meth in m.method_calls("step"):
            if (isinstance(recv, cst.Name) and recv.value in params
                    and m.enclosing(call, cst.FunctionDef) is fn and facts.may_follow(clip, call)):
                pos = [a for a in call.args if a.keyword is None and not a.star]
                opt = ctx.code(pos[0].value) if pos else None
                steps.append((call, recv.value, opt))
        if not steps or len({st[1] for st in steps}) != 1:
            return None
        s = steps[0][1]
        sites = m.resolved_sites(fn) if method else m.call_sites(fn)
        if not sites:
            return None
        for site in sites:
            it = facts.iteration_of(site)
            arg = argument_for(fn, site, s)
            if it is None or arg is None:
                return None
            last = facts.last_backward_before(it, site)
            if last is None or last.scaler is None:
                last = facts.scaled_backward_before(it, site)
            if last is None or last.scaler is None or last.scaler != ctx.code(arg) or _disabled_scaler(ctx, last):
                return None
        opts = []
        for st in steps:
            if st[2] not in opts:
                opts.append(st[2])
        fix = None
        stmt = facts.statement(clip)
        if opts and None not in opts and stmt is not None and all(_visible(o, params, method) for o in opts):
            code = "\n".join(f"{s}.unscale_({o})" for o in opts)
            if _may_be_none(m, fn, s, [st[0] for st in steps]):
                # the helper steps through the scaler only when one is given: so does the unscale
                unit = m.module.default_indent
                code = f"if {s} is not None:\n" + "\n".join(unit + line for line in code.split("\n"))
            fix = ctx.fix(ctx.insert_before(stmt, code), message=f"Insert `{s}.unscale_(...)` before clipping")
        calls = " and ".join(f"`{s}.unscale_({o})`" for o in (opts if None not in opts else ["optimizer"]))
        return ctx.finding(clip, self.message.format(s=s, calls=calls), fix)

    def _clip_helper_before_step(self, ctx: Context, facts: AmpFacts, clip: cst.Call):
        """A function or method of the file that only clips (no backward, no scaler call, no loop
        around the clip) and is called from training iterations between `S.scale(L).backward()`
        and `S.step(O)` with no `S.unscale_` in between (allennlp's `rescale_gradients()`): the
        clip acts on scaled gradients. Every call site must be such a place. The fix unscales
        before the single call site, under `if S is not None:` when the steps are guarded so."""
        m = ctx.model
        fn = m.enclosing(clip, cst.FunctionDef)
        if fn is None or m.enclosing(clip, cst.For, cst.While) is not None:
            return None
        if any(facts.contains(fn, b.call) for b in facts.backwards):
            return None
        if any(facts.contains(fn, u.call) for u in facts.scaler_calls):
            return None
        method = m.class_of(fn) is not None
        sites = m.resolved_sites(fn) if method else m.call_sites(fn)
        if not sites:
            return None
        found = []
        for site in sites:
            it = facts.iteration_of(site)
            if it is None:
                return None
            last = facts.last_backward_before(it, site)
            if last is None or last.scaler is None:
                last = facts.scaled_backward_before(it, site)
            if last is None or last.scaler is None or _disabled_scaler(ctx, last):
                return None
            s = last.scaler
            steps = [st for st in facts.scaler_calls_in(it, s, "step") if facts.may_follow(site, st.call)]
            if not steps:
                return None
            if any(facts.may_follow(last.call, u.call) and facts.may_follow(u.call, site)
                   for u in facts.scaler_calls_in(it, s, "unscale_")):
                return None
            found.append((site, it, last, steps))
        if len({f[2].scaler for f in found}) != 1:
            return None
        s = found[0][2].scaler
        opts = []
        for _site, _it, _last, steps in found:
            for o in _optimizers(steps):
                if o not in opts:
                    opts.append(o)
        fix = None
        if len(found) == 1 and opts and None not in opts:
            site, it, last, steps = found[0]
            stmt = facts.statement(site)
            guard = _none_guard(ctx, facts, it, stmt, steps, s)
            if stmt is not None and not facts.contains(stmt, last.call) and guard is not None:
                code = "\n".join(f"{s}.unscale_({o})" for o in opts)
                if guard:
                    unit = m.module.default_indent
                    code = f"if {s} is not None:\n" + "\n".join(unit + line for line in code.split("\n"))
                fix = ctx.fix(ctx.insert_before(stmt, code), message=f"Insert `{s}.unscale_(...)` before clipping")
        calls = " and ".join(f"`{s}.unscale_({o})`" for o in (opts if opts and None not in opts else ["optimizer"]))
        return ctx.finding(clip, self.message.format(s=s, calls=calls), fix)

    def _fix(self, ctx: Context, facts: AmpFacts, members):
        clip, last, steps = min(members, key=lambda m: facts.order[m[0]])
        s = last.scaler
        opts = _optimizers(steps)
        if not opts or None in opts:
            return None
        stmt = facts.statement(clip)
        if stmt is None or facts.contains(stmt, last.call):
            return None
        edits = []
        it = facts.iteration_of(clip)
        if not _same_iterations(ctx, facts, it, stmt, steps):
            return None  # e.g. clip every micro-batch, step under an accumulation test
        # an unscale_ after the clip (wrong order) moves up instead of being called twice
        first_step = min(steps, key=lambda st: facts.order[st.call])
        for u in facts.scaler_calls_in(it, s, "unscale_"):
            if facts.may_follow(clip, u.call) and facts.before(u.call, first_step.call) and u.optimizer in opts:
                line = facts.lone_call_statement(u.call)
                if line is None:
                    return None
                edits.append(ctx.remove_statement(line))
        code = "\n".join(f"{s}.unscale_({o})" for o in opts)
        edits.append(ctx.insert_before(stmt, code))
        return ctx.fix(*edits, message=f"Insert `{s}.unscale_(...)` before clipping")


def _disabled_scaler(ctx: Context, last) -> bool:
    """The scaler of `S.scale(L).backward()` is a name (or `self.S`) whose every binding is
    `GradScaler(..., enabled=False)`: a disabled scaler returns the loss unchanged from `scale`
    and just calls `optimizer.step()` from `step`, so gradients are never scaled and clipping them
    is right (NVIDIA DeepLearningExamples' wav2vec2 `train.py` keeps one "future-proof for
    adoption of native AMP" beside its fairseq-style optimizer's `clip_grad_norm`, PRECISION47 P47-2)."""
    m = ctx.model
    node = last.scaler_node
    if not isinstance(node, (cst.Name, cst.Attribute)):
        return False
    bindings = m.bindings_of(node)
    if not bindings:
        return False
    for b in bindings:
        v = b.value
        if b.how != "assign" or not isinstance(v, cst.Call) or m.qualname(v.func) not in SCALER_QUALNAMES:
            return False
        if not any(a.keyword is not None and a.keyword.value == "enabled"
                   and isinstance(a.value, cst.Name) and a.value.value == "False" for a in v.args):
            return False
    return True


def _same_iterations(ctx: Context, facts: AmpFacts, it, stmt, steps) -> bool:
    """An `unscale_` inserted before the clip statement runs at most once per `scaler.step`: every
    `if` around a step (within the iteration) is also around the clip, on the same branch; no loop
    around the clip that the steps are not in; no `continue`/`break`/`return` of the iteration
    between the clip and the steps. Otherwise a second pass would unscale again before `update()`
    ("unscale_() has already been called on this optimizer since the last update()")."""
    m = ctx.model
    clip_conds = facts.conditions_between(stmt, it)
    if clip_conds is None:
        return False
    clip_set = {(id(c), body) for c, body in clip_conds}
    for st in steps:
        conds = facts.conditions_between(st.call, it)
        if conds is None or any((id(c), body) not in clip_set for c, body in conds):
            return False
    for anc in m.ancestors(stmt):
        if anc is it:
            break
        if isinstance(anc, (cst.For, cst.While)) and not all(facts.contains(anc, st.call) for st in steps):
            return False
    last = max(facts.order[st.call] for st in steps)
    start = facts.order[stmt]
    for node in facts.order:
        if not isinstance(node, (cst.Continue, cst.Break, cst.Return)):
            continue
        if not (start < facts.order[node] < last) or not facts.contains(it, node):
            continue
        if m.scope_of(node) is not m.scope_of(stmt):
            continue  # in a nested function
        return False
    return True


def _none_guard(ctx: Context, facts: AmpFacts, it, stmt, steps, scaler: str) -> bool | None:
    """Can an `unscale_` go before `stmt` (a call of a clipping helper)? False: as it is (the steps
    run whenever `stmt` does, `_same_iterations`); True: under `if S is not None:`, when the only
    `if`s around the steps that are not around `stmt` test `S is not None` (their body holds the
    step); None: neither."""
    if stmt is None:
        return None
    if _same_iterations(ctx, facts, it, stmt, steps):
        return False
    stmt_conds = facts.conditions_between(stmt, it)
    if stmt_conds is None:
        return None
    around = {(id(c), body) for c, body in stmt_conds}
    guarded = False
    for st in steps:
        conds = facts.conditions_between(st.call, it)
        if conds is None:
            return None
        for c, body in conds:
            if (id(c), body) in around:
                continue
            if not (body and _is_not_none_test(ctx, c.test, scaler)):
                return None
            guarded = True
    if not guarded:
        return None
    # the same checks as `_same_iterations` on loops and exits, with the guard taken away
    for anc in ctx.model.ancestors(stmt):
        if anc is it:
            break
        if isinstance(anc, (cst.For, cst.While)) and not all(facts.contains(anc, st.call) for st in steps):
            return None
    last = max(facts.order[st.call] for st in steps)
    start = facts.order[stmt]
    for node in facts.order:
        if isinstance(node, (cst.Continue, cst.Break, cst.Return)) and start < facts.order[node] < last:
            if facts.contains(it, node) and ctx.model.scope_of(node) is ctx.model.scope_of(stmt):
                return None
    return True


def _is_not_none_test(ctx: Context, test: cst.BaseExpression, scaler: str) -> bool:
    """`S is not None` for the scaler's source text S."""
    return (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.IsNot)
            and isinstance(test.comparisons[0].comparator, cst.Name) and test.comparisons[0].comparator.value == "None"
            and ctx.code(test.left) == scaler)


def _optimizers(steps) -> list:
    out = []
    for st in steps:
        if st.optimizer not in out:
            out.append(st.optimizer)
    return out


def _visible(opt: str, params: list, method: bool) -> bool:
    """The optimizer expression of the helper's step names something the clip's line can read:
    one of its parameters, or an attribute of `self` in a method."""
    root = opt.split(".", 1)[0]
    return (root in params and root == opt) or (method and root == "self")


def _may_be_none(m, fn: cst.FunctionDef, name: str, steps: list) -> bool:
    """The scaler parameter defaults to None, or a step through it is under an `if` that tests it."""
    p = fn.params
    for x in (*p.posonly_params, *p.params, *p.kwonly_params):
        if x.name.value == name and isinstance(x.default, cst.Name) and x.default.value == "None":
            return True
    for call in steps:
        for anc in m.ancestors(call):
            if anc is fn:
                break
            if isinstance(anc, cst.If) and any(
                isinstance(n, cst.Name) and n.value == name for n in (anc.test, *m.walk(anc.test))
            ):
                return True
    return False
