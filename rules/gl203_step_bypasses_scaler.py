"""GL203 step-bypasses-scaler."""

from __future__ import annotations

from gpulint.analysis.amp import AmpFacts, update_edit, update_missing
from gpulint.rule import Context, Rule
from gpulint.sites import line_ref


class StepBypassesScaler(Rule):
    code = "GL203"
    name = "step-bypasses-scaler"
    summary = "`optimizer.step()` called directly after `scaler.scale(loss).backward()`."
    message = "`{o}.step()` after `{s}.scale(loss).backward()` applies scaled gradients and skips the inf/NaN check; call `{s}.step({o})`"
    fix_safety = "safe"
    fix_partial = True  # a step after both branches of an AMP `if` gets no fix
    default = True
    kind = "silent"
    prefilter = r"\.scale\("
    ast_prefilter = r"^\.scale\($"
    explanation = '''
After `scaler.scale(loss).backward()` the gradients are multiplied by the loss scale (65536 at the
start). `scaler.step(optimizer)` divides them back (unless `scaler.unscale_(optimizer)` already
did), skips the step when they contain inf/NaN, and records what `scaler.update()` needs. A direct
`optimizer.step()` applies gradients thousands of times too large, steps on inf/NaN gradients, and
leaves `update()` with nothing to check.

The fix replaces `optimizer.step()` with `scaler.step(optimizer)`, or removes it when the iteration
already calls `scaler.step(optimizer)` (the optimizer would otherwise step twice). When nothing
updates the scaler (GL204's test), the fix also inserts `scaler.update()` after the last new step:
a second `scaler.step(optimizer)` without an update in between raises. It stays silent
when the most recent backward before the step is an unscaled one (e.g. a second loss trained
without the scaler) and when the direct step is the non-AMP branch of an `if`/`else` whose other
branch calls `scaler.step`. A step written after both branches of such an `if`/`else` (the AMP
branch already ran `scaler.step(optimizer)`, the other a plain `loss.backward()`) steps twice on
the AMP path: it is reported without a fix, since it belongs in the plain branch.

Bad:

```python
scaler.scale(loss).backward()
optimizer.step()
scaler.update()
```

Good:

```python
scaler.scale(loss).backward()
scaler.step(optimizer)
scaler.update()
```
'''

    def check(self, ctx: Context):
        facts = ctx.model.facts(AmpFacts)
        found = []  # (direct step, iteration, scaler, message, fix or "replace")
        for ds in facts.direct_steps:
            it = facts.iteration_of(ds.call)
            if it is None:
                continue
            last = facts.last_backward_before(it, ds.call)
            if last is None:
                continue
            if last.scaler is None:
                # `if fp16: scaler.scale(loss).backward(); scaler.step(opt); scaler.update()`
                # `else: loss.backward()`, then `opt.step()` after the `if` for both paths
                # (FlyEgle/imageclassification#1): the fp16 path steps twice
                yield from self._step_after_branches(ctx, facts, it, ds, last)
                continue
            s = last.scaler
            scaler_steps = facts.scaler_calls_in(it, s, "step")
            if any(facts.exclusive(st.call, ds.call) for st in scaler_steps):
                continue  # `if amp: scaler.step(opt) else: opt.step()`
            msg = self.message.format(o=ds.optimizer, s=s)
            fix = None
            duplicate = [st for st in scaler_steps if st.optimizer == ds.optimizer]
            if duplicate:
                line = facts.lone_call_statement(ds.call)
                if line is not None:
                    msg = f"`{ds.optimizer}.step()` steps again after `{s}.step({ds.optimizer})` with scaled gradients; remove it"
                    fix = ctx.fix(ctx.remove_statement(line), message=f"Remove the duplicate `{ds.optimizer}.step()`")
            elif not ds.call.args:
                fix = "replace"
            found.append((ds, it, s, msg, fix))
        fixes = {}
        for ds, it, s, msg, fix in found:
            if fix == "replace":
                key = (id(it), s)
                if key not in fixes:
                    group = [d for d, i, sc, _, f in found if f == "replace" and i is it and sc == s]
                    fixes[key] = self._step_fix(ctx, facts, it, s, group)
                fix = fixes[key]
            yield ctx.finding(ds.call, msg, fix)

    @staticmethod
    def _step_after_branches(ctx: Context, facts: AmpFacts, it, ds, plain):
        """A direct `o.step()` after an `if`/`else` whose one branch runs `s.scale(L).backward()`
        and `s.step(o)` and whose other runs a plain `L.backward()` (the last backward before the
        step): on the scaled path the optimizer steps twice per iteration, the second time also
        when the scaler skipped its step for inf/NaN gradients. Reported without
        a fix: replacing or removing the step would break the plain path; it belongs in the plain
        branch."""
        scaled = facts.scaled_backward_before(it, ds.call)
        if scaled is None or not facts.exclusive(scaled.call, plain.call):
            return
        s = scaled.scaler
        own = [st for st in facts.scaler_calls_in(it, s, "step")
               if st.optimizer == ds.optimizer and facts.may_follow(scaled.call, st.call)
               and facts.before(st.call, ds.call) and not facts.exclusive(st.call, ds.call)
               and facts.exclusive(st.call, plain.call)]
        if not own:
            return
        yield ctx.finding(
            ds.call,
            f"`{ds.optimizer}.step()` runs after both branches: on the `{s}.scale(...).backward()` path it steps "
            f"a second time after `{s}.step({ds.optimizer})` ({line_ref(ctx, own[0].call)}), with the same gradients "
            f"(inf/NaN ones when the scaler skipped its step); call it only in the branch without the scaler",
        )

    @staticmethod
    def _step_fix(ctx: Context, facts: AmpFacts, it, s: str, group):
        """`o.step()` -> `s.step(o)` for the iteration's direct steps after `s.scale(...)` (one fix,
        shared by their findings); when nothing updates the scaler (GL204's test), also
        `s.update()` after the last: a second `s.step(o)` without an update in between raises
        "step() has already been called since the last update()"."""
        edits = [ctx.replace(ds.call, f"{s}.step({ds.optimizer})") for ds in group]
        names = ", ".join(f"`{s}.step({ds.optimizer})`" for ds in group)
        missing = [update_missing(ctx, facts, it, s, ds.call) for ds in group]
        if not any(missing):
            return ctx.fix(*edits, message=f"Use {names}")
        if not all(missing):
            return None  # updated on some of these steps' paths only
        if facts.scaler_calls_in(it, s, "step"):
            # GL204 reports those steps and inserts the update after them (a fix of this rule
            # inserting another one in the same round would update twice): fixed next round
            return None
        update = update_edit(ctx, facts, it, s, [ds.call for ds in group])
        if update is None:
            return None
        return ctx.fix(*edits, update, message=f"Use {names} and call `{s}.update()` after it")
