"""GL202 clip-before-unscale."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.amp import AmpFacts
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
fix moves it before the clip (a second `unscale_` before `update()` raises an error).

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
                if found is not None:
                    yield found
                continue
            last = facts.last_backward_before(it, clip)
            if last is None or last.scaler is None:
                continue
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
        """A helper of the file that clips and then calls `S.step(O)` (S, O its parameters, no
        backward of its own), called in a training iteration after `S'.scale(L).backward()` with S'
        passed for S, and no `unscale_` anywhere in the file: the clip acts on scaled gradients."""
        m = ctx.model
        if any(u.method == "unscale_" for u in facts.scaler_calls):
            return None
        fn = m.enclosing(clip, cst.FunctionDef)
        if fn is None or m.class_of(fn) is not None or m.enclosing(clip, cst.For, cst.While) is not None:
            return None
        params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
        steps = [st for st in facts.scaler_calls
                 if st.method == "step" and m.enclosing(st.call, cst.FunctionDef) is fn
                 and st.scaler in params and facts.may_follow(clip, st.call)]
        if not steps:
            return None
        s = steps[0].scaler
        sites = m.call_sites(fn)
        if not sites:
            return None
        for site in sites:
            it = facts.iteration_of(site)
            arg = argument_for(fn, site, s)
            if it is None or arg is None:
                return None
            last = facts.last_backward_before(it, site)
            if last is None or last.scaler is None or last.scaler != ctx.code(arg):
                return None
        opts = _optimizers(steps)
        fix = None
        stmt = facts.statement(clip)
        if opts and None not in opts and all(o in params for o in opts) and stmt is not None:
            fix = ctx.fix(ctx.insert_before(stmt, "\n".join(f"{s}.unscale_({o})" for o in opts)),
                          message=f"Insert `{s}.unscale_(...)` before clipping")
        calls = " and ".join(f"`{s}.unscale_({o})`" for o in opts or ["optimizer"])
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


def _optimizers(steps) -> list:
    out = []
    for st in steps:
        if st.optimizer not in out:
            out.append(st.optimizer)
    return out
