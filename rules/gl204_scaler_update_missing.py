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
            if it is None:
                continue
            updates = [
                u for u in facts.scaler_calls_in(it, sc.scaler, "update") if not facts.exclusive(u.call, sc.call)
            ]
            if updates:
                continue
            others = [u for u in facts.scaler_calls if u.method == "update" and u.scaler == sc.scaler]
            if not _is_loop(it) and others:
                continue  # a step helper: its caller may update
            if any(ctx.model.scope_of(u.call) is not ctx.model.scope_of(sc.call) for u in others):
                continue  # updated in another function, which the iteration may call
            key = (id(it), sc.scaler)
            if key not in fixes:
                fixes[key] = self._fix(ctx, facts, it, sc.scaler)
            yield ctx.finding(sc.call, self.message.format(s=sc.scaler), fixes[key])

    def _fix(self, ctx: Context, facts: AmpFacts, it, scaler: str):
        calls = [c.call for c in facts.scaler_calls_in(it, scaler, "step")]
        anchor = facts.update_anchor(calls, it)
        if anchor is None:
            return None
        return ctx.fix(ctx.insert_after(anchor, f"{scaler}.update()"), message=f"Insert `{scaler}.update()`")


def _is_loop(node) -> bool:
    import libcst as cst

    return isinstance(node, (cst.For, cst.While))
