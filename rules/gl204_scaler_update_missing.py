"""GL204 scaler-update-missing."""

from __future__ import annotations

from gpulint.analysis.amp import AmpFacts
from gpulint.rule import Context, Rule


class ScalerUpdateMissing(Rule):
    code = "GL204"
    name = "scaler-update-missing"
    summary = "`scaler.step(optimizer)` in a training iteration that never calls `scaler.update()`."
    message = "`{s}.step(...)` without `{s}.update()` in the iteration: the loss scale never adapts; call `{s}.update()` after the last `{s}.step(...)`"
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


def update_missing(ctx: Context, facts: AmpFacts, it, scaler: str, step_call) -> bool:
    """Whether a step of `scaler` made at `step_call` (a `scaler.step(...)`, or an
    `optimizer.step()` that GL203 turns into one) in the training iteration `it` is never followed
    by `scaler.update()`: no update in the iteration on the step's path, and none in a caller that
    could do it (a step helper whose caller updates, an update in another function). GL203 asks it
    too, so that its fix adds the update that a step through the scaler then needs."""
    updates = [u for u in facts.scaler_calls_in(it, scaler, "update") if not facts.exclusive(u.call, step_call)]
    if updates:
        return False
    others = [u for u in facts.scaler_calls if u.method == "update" and u.scaler == scaler]
    if not _is_loop(it) and others:
        return False  # a step helper: its caller may update
    # updated in another function, which the iteration may call
    return all(ctx.model.scope_of(u.call) is ctx.model.scope_of(step_call) for u in others)


def update_edit(ctx: Context, facts: AmpFacts, it, scaler: str, step_calls):
    """The edit that inserts `scaler.update()` after the last of `step_calls` (statement lines of
    one block of the iteration), or None when there is no such single place."""
    anchor = facts.update_anchor(step_calls, it)
    if anchor is None:
        return None
    return ctx.insert_after(anchor, f"{scaler}.update()")


def _is_loop(node) -> bool:
    import libcst as cst

    return isinstance(node, (cst.For, cst.While))
