"""GL505 empty-cache-in-loop."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.training import TrainingFacts
from gpulint.flow import gpu_guard
from gpulint.rule import Context, Rule


class EmptyCacheInLoop(Rule):
    code = "GL505"
    name = "empty-cache-in-loop"
    summary = "`torch.cuda.empty_cache()` is called on every training step."
    message = (
        "`torch.cuda.empty_cache()` every step hands cached GPU memory back to the driver only for "
        "the next step to allocate it again (slow, and a synchronisation); remove it from the loop"
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
`torch.cuda.is_available()` guard does not count as a condition. An occasional call (once per
epoch, or under another condition) is left alone. No automatic fix: removing it is the fix.

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
        for call in m.iter_calls("torch.cuda.empty_cache", "torch.cuda.memory.empty_cache"):
            if self._every_step(m, facts, call, 0):
                yield ctx.finding(call)

    def _every_step(self, m, facts: TrainingFacts, node, depth: int) -> bool:
        """`node` runs once per step: unconditionally in the innermost training loop, or
        unconditionally in a function of the file that such a loop calls unconditionally (a
        trainer's `training_step`). A `torch.cuda.is_available()` guard does not count as a
        condition: on a GPU it always holds."""
        loop = facts.step_loop_of(node)
        if loop is not None:
            return facts.enclosing_loop(node) is loop.node and not _conditional(m, node, loop.node)
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
        return all(self._every_step(m, facts, c, depth + 1) for c in sites)


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
            if not (child is anc.body and (gpu_guard(m, anc.test) is True or _steps_here(m, anc.body))):
                return True
        elif isinstance(anc, (cst.Else, cst.IfExp, cst.BooleanOperation, cst.Try, cst.ExceptHandler, cst.Lambda)):
            return True
        elif isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
            return True
        child = anc
    return True
