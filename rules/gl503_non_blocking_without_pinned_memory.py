"""GL503 non-blocking-without-pinned-memory."""

from __future__ import annotations

from gpulint.analysis.training import (
    batch_loader_call,
    forwarded_keywords,
    is_bool,
    keyword,
    set_keyword_edit,
)
from gpulint.rule import Context, Rule


class NonBlockingWithoutPinnedMemory(Rule):
    code = "GL503"
    name = "non-blocking-without-pinned-memory"
    summary = "`.to(device, non_blocking=True)` on batches of a DataLoader that does not pin memory."
    message = (
        "`non_blocking=True` only overlaps the copy with compute when the batch is in pinned memory, "
        "and this DataLoader does not pin it; pass `pin_memory=True` to the DataLoader"
    )
    fix_safety = "safe"
    default = False
    kind = "slow"
    prefilter = r"non_blocking\s*=\s*True"
    ast_prefilter = r"non_blocking"
    explanation = '''
A host-to-device copy can run asynchronously only from page-locked (pinned) host memory. From
ordinary pageable memory, `tensor.to("cuda", non_blocking=True)` is staged through a pinned buffer
by the driver and does not overlap with the GPU's work, so the flag buys nothing. A DataLoader pins
its batches with `pin_memory=True` (in a background thread).

The fix adds `pin_memory=True` to the DataLoader whose batches are moved. Off by default.

Bad:

```python
loader = DataLoader(ds, batch_size=64, num_workers=4)
for x, y in loader:
    x = x.to(device, non_blocking=True)
```

Good:

```python
loader = DataLoader(ds, batch_size=64, num_workers=4, pin_memory=True)
for x, y in loader:
    x = x.to(device, non_blocking=True)
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        for call, recv, _ in m.method_calls("to", "cuda"):
            nb = keyword(call, "non_blocking")
            if nb is None or not is_bool(nb.value, True):
                continue
            loader = batch_loader_call(m, recv)
            if loader is None:
                continue
            fwd = forwarded_keywords(m, loader)
            if fwd is None or "pin_memory" in fwd:
                continue
            pin = keyword(loader, "pin_memory")
            if pin is not None and not is_bool(pin.value, False):
                continue  # pinned, or decided by an expression
            fix = ctx.fix(set_keyword_edit(ctx, loader, "pin_memory", "True"), message="Add `pin_memory=True` to the DataLoader")
            yield ctx.finding(call, fix=fix)
