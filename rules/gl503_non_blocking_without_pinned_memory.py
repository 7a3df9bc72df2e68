"""GL503 non-blocking-without-pinned-memory."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.training import (
    forwarded_keywords,
    is_bool,
    keyword,
    loader_call_of,
    loader_source,
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
            loader = _batch_loader_call(m, recv)
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


_COMPREHENSIONS = (cst.DictComp, cst.ListComp, cst.SetComp, cst.GeneratorExp)


def _batch_loader_call(m, recv: cst.BaseExpression | None) -> cst.Call | None:
    """`loader_call_of`, also for the variable of a comprehension over a loader batch:
    `{k: v.to(d, non_blocking=True) for k, v in batch.items()}`, `[t.cuda(non_blocking=True) for t
    in batch]` (the same lookup as GL502's `batch_loader_call`; rule files cannot share code)."""
    loader = loader_call_of(m, recv)
    if loader is not None or not isinstance(recv, cst.Name):
        return loader
    for anc in m.ancestors(recv):
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return None
        if not isinstance(anc, _COMPREHENSIONS):
            continue
        comp = anc.for_in
        while comp is not None:
            if recv.value in _target_names(comp.target):
                return _iterated_batch_loader(m, comp.iter, anc)
            comp = comp.inner_for_in
    return None


def _target_names(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        names: set[str] = set()
        for el in target.elements:
            names |= _target_names(el.value)
        return names
    return set()


def _iterated_batch_loader(m, it: cst.BaseExpression, comp: cst.CSTNode) -> cst.Call | None:
    if (
        isinstance(it, cst.Call)
        and isinstance(it.func, cst.Attribute)
        and it.func.attr.value in ("items", "values")
        and not it.args
    ):
        it = it.func.value
    if not isinstance(it, (cst.Name, cst.Attribute)):
        return None
    stmt = m.statement_of(comp)
    reaching = [b for b in m.bindings_of(it) if stmt is None or not m.contains(stmt, b.node)]
    if len(reaching) != 1 or reaching[0].how != "for":
        return loader_call_of(m, it)
    source, _ = m.unwrap_iterable(reaching[0].value, reaching[0].index)
    return loader_source(m, source)
