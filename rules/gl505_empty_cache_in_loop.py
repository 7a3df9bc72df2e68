"""GL505 empty-cache-in-loop."""

from __future__ import annotations

from gpulint.analysis.training import TrainingFacts
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
    explanation = '''
PyTorch's caching allocator keeps freed GPU memory to reuse it for the next allocation.
`torch.cuda.empty_cache()` returns the unused cached blocks to the driver; it does not make more
memory available to PyTorch itself, and it does not fix a leak. Called on every training step, it
forces the next step to allocate everything again through `cudaMalloc`, which is slow and
synchronising.

The rule reports unconditional calls in the innermost training loop; an occasional call (once per
epoch, or under a condition) is left alone. No automatic fix: removing it is the fix.

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
            loop = facts.step_loop_of(call)
            if loop is None or facts.is_conditional_in(call, loop.node):
                continue
            if facts.enclosing_loop(call) is not loop.node:
                continue
            yield ctx.finding(call)
