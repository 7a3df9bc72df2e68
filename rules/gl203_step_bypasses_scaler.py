"""GL203 step-bypasses-scaler."""

from __future__ import annotations

from gpulint.analysis.amp import AmpFacts
from gpulint.rule import Context, Rule


class StepBypassesScaler(Rule):
    code = "GL203"
    name = "step-bypasses-scaler"
    summary = "`optimizer.step()` called directly after `scaler.scale(loss).backward()`."
    message = "`{o}.step()` after `{s}.scale(loss).backward()` applies scaled gradients and skips the inf/NaN check; call `{s}.step({o})`"
    fix_safety = "safe"
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
already calls `scaler.step(optimizer)` (the optimizer would otherwise step twice). It stays silent
when the most recent backward before the step is an unscaled one (e.g. a second loss trained
without the scaler) and when the direct step is the non-AMP branch of an `if`/`else` whose other
branch calls `scaler.step`.

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
        for ds in facts.direct_steps:
            it = facts.iteration_of(ds.call)
            if it is None:
                continue
            last = facts.last_backward_before(it, ds.call)
            if last is None or last.scaler is None:
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
                fix = ctx.fix(ctx.replace(ds.call, f"{s}.step({ds.optimizer})"), message=f"Use `{s}.step({ds.optimizer})`")
            yield ctx.finding(ds.call, msg, fix)
