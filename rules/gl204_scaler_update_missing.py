"""GL204 scaler-update-missing."""

from __future__ import annotations

from gpulint.analysis.amp import AmpFacts, unscale_left_pending, update_edit, update_missing
from gpulint.rule import Context, Rule
from gpulint.sites import line_ref


class ScalerUpdateMissing(Rule):
    code = "GL204"
    name = "scaler-update-missing"
    summary = "`scaler.step(optimizer)` in a training iteration that never calls `scaler.update()`."
    message = "`{s}.step(...)` without `{s}.update()` in the iteration: the loss scale never adapts; call `{s}.update()` after the last `{s}.step(...)`"
    unscaled_message = (
        "`{s}.unscale_(...)` runs, but `{s}.update()` only under the `if` on {line} (with the step): when that "
        "step is skipped the optimizer stays unscaled and the next `{s}.unscale_(...)` raises \"unscale_() has already "
        "been called on this optimizer since the last update()\"; call `{s}.update()` whenever the gradients were unscaled"
    )
    fix_safety = "safe"
    default = True
    kind = "silent"
    prefilter = r"\.step\("
    ast_prefilter = r"^\.step\($"
    explanation = '''
`GradScaler.update()` adjusts the loss scale once per iteration: it lowers the scale after a step
that found inf/NaN gradients and raises it again after a run of good steps. Without it the scale
stays at its initial value forever: when it is too high every step with overflowing gradients is
silently skipped (`scaler.step` does nothing), and the model may stop training without any error.

Call `scaler.update()` once per iteration, after the last `scaler.step(...)` (once for all
optimizers). The rule looks at the training iteration around `scaler.step(...)` (the innermost loop
that also runs `.backward()`); a step in a helper function without a loop is only reported when
the file never calls `update()` on that scaler.

It also reports an explicit `scaler.unscale_(optimizer)` whose `update()` runs only together with
the step, under an `if` the unscale is not under (a step skipped when the clipped gradient norm is
too large): on that path the optimizer stays unscaled, and the next iteration's `unscale_` raises
"unscale_() has already been called on this optimizer since the last update()". Call `update()`
whenever the gradients were unscaled, stepped or not. The other branch may be an `else` that only
logs "Skipping updating the model" (espnet#2362). Not reported when that other branch steps an
optimizer or the scaler, updates the scaler (a disabled scaler's `else: optimizer.step()`), or
leaves the loop (`raise`, `return`, `break`), nor when the `if` repeats a test the unscale is
under.

Bad:

```python
for x, y in loader:
    optimizer.zero_grad()
    with torch.autocast("cuda", dtype=torch.float16):
        loss = criterion(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
```

Good:

```python
for x, y in loader:
    optimizer.zero_grad()
    with torch.autocast("cuda", dtype=torch.float16):
        loss = criterion(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
```
'''

    def check(self, ctx: Context):
        facts = ctx.model.facts(AmpFacts)
        steps = [c for c in facts.scaler_calls if c.method == "step"]
        fixes = {}
        for sc in steps:
            it = facts.iteration_of(sc.call)
            if it is None or not update_missing(ctx, facts, it, sc.scaler, sc.call):
                continue
            key = (id(it), sc.scaler)
            if key not in fixes:
                calls = [c.call for c in facts.scaler_calls_in(it, sc.scaler, "step")]
                edit = update_edit(ctx, facts, it, sc.scaler, calls)
                fixes[key] = None if edit is None else ctx.fix(edit, message=f"Insert `{sc.scaler}.update()`")
            yield ctx.finding(sc.call, self.message.format(s=sc.scaler), fixes[key])
        for uc in facts.scaler_calls:
            if uc.method != "unscale_":
                continue
            it = facts.iteration_of(uc.call)
            guard = unscale_left_pending(ctx, facts, it, uc) if it is not None else None
            if guard is None:
                continue
            yield ctx.finding(uc.call, self.unscaled_message.format(s=uc.scaler, line=line_ref(ctx, guard)))
