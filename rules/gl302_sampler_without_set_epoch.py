"""GL302 sampler-without-set-epoch."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.distributed import DIST_FRAMEWORKS, DistFacts
from gpulint.rule import Context, Rule


class SamplerWithoutSetEpoch(Rule):
    code = "GL302"
    name = "sampler-without-set-epoch"
    summary = "A shuffling DistributedSampler is used over several epochs without `set_epoch`: every epoch sees the same order."
    message = (
        "`DistributedSampler` shuffles with a seed derived from its epoch, which stays 0 unless "
        "`sampler.set_epoch(epoch)` is called at the start of each epoch: every epoch repeats the same order"
    )
    fix_safety = "safe"
    default = True
    kind = "silent"
    prefilter = r"DistributedSampler"
    ast_prefilter = r"DistributedSampler"
    explanation = '''
`DistributedSampler` shuffles with `seed + epoch`, and its epoch only changes when you call
`sampler.set_epoch(epoch)`. Without it every epoch iterates the shards in exactly the same order
(and each rank always sees the same, fixed shard order), which silently hurts convergence.

The rule fires on a `DistributedSampler` that shuffles (no `shuffle=` or `shuffle=True`), used
by a DataLoader that is iterated inside an epoch loop (directly, or in a function of the file
that the loader is passed to), in a file that never calls `set_epoch`. The fix inserts
`sampler.set_epoch(epoch)` as the first statement of the epoch loop.

Bad:

```python
sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=32, sampler=sampler)
for epoch in range(10):
    for x, y in loader:
        ...
```

Good:

```python
sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=32, sampler=sampler)
for epoch in range(10):
    sampler.set_epoch(epoch)
    for x, y in loader:
        ...
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        if m.frameworks & DIST_FRAMEWORKS:
            return
        if _mentions_set_epoch(m):
            return  # set somewhere (maybe through a helper): do not second-guess it
        facts: DistFacts = m.facts(DistFacts)
        for s in facts.samplers:
            if not s.distributed:
                continue
            loaders = facts.loaders_of_sampler(s)
            if s.shuffle is not True and not (
                    s.shuffle is None and loaders and all(lo.sampler_shuffle is True for lo in loaders)):
                continue  # not shuffled, or not known to be (a helper's `shuffle=shuffle` set by its caller)
            loops: list[tuple[cst.For, object]] = []
            for lo in loaders:
                for loop in facts.epoch_loops(lo):
                    if any(a is loop for a in m.ancestors(s.call)):
                        continue  # the sampler is rebuilt every epoch
                    if all(loop is not seen for seen, _ in loops):
                        loops.append((loop, lo))
            if not loops:
                continue
            edits = []
            for loop, lo in loops:
                edit = self._set_epoch(ctx, facts, s, lo, loop)
                if edit is None:
                    edits = None
                    break
                edits.append(edit)
            fix = ctx.fix(*edits, message="Call `set_epoch(epoch)` first in the epoch loop") if edits else None
            yield ctx.finding(s.call, fix=fix)

    @staticmethod
    def _set_epoch(ctx: Context, facts: DistFacts, s, lo, loop: cst.For):
        m = ctx.model
        if loop in facts.iter_pass_loops:
            return None  # `iter(loader)` re-created in this loop: its passes have no epoch number
        if not isinstance(loop, cst.For):
            return None  # a generator's `while True:` over the loader has no epoch number to pass
        epoch = _epoch_name(m, loop)
        body = loop.body
        if epoch is None or not isinstance(body, cst.IndentedBlock) or not body.body:
            return None
        scope = m.scope_of(loop)
        recv = None
        for holder, suffix in ((s.target, ""), (lo.target, ".sampler")):
            if holder is None:
                continue
            hscope = m.scope_of(holder)
            if hscope is scope or (hscope is m.module and (scope, holder.value) not in m.bindings):
                recv = holder.value + suffix
                break
        if recv is None:
            return None
        first = body.body[0]
        line = f"{recv}.set_epoch({epoch})"
        guard = _guard(m, s.target) if recv == getattr(s.target, "value", None) else None
        if guard is not None:
            # the name holds something else on another path (`None` when not distributed)
            unit = ctx.indent_of(first)[len(ctx.indent_of(loop)):] or "    "
            line = f"if {guard}:\n{unit}{line}"
        edit = ctx.insert_before(first, line)
        if first.leading_lines:
            # above the comments that introduce the first statement (they describe that statement)
            start = ctx.span(first.leading_lines[0])[0]
            line_start = max(o for o in ctx.line_starts() if o <= start)
            edit = ctx.insert_text(line_start, edit.content)
        return edit


def _guard(m, holder: cst.Name) -> str | None:
    """A test for the fix's call when the sampler's name is also bound to something other than a
    DistributedSampler: `x is not None` when that is `None`, else `hasattr(x, "set_epoch")`."""
    others = []
    for b in m.bindings_of(holder):
        v = b.value
        q = (m.qualname(v.func) or "") if isinstance(v, cst.Call) else ""
        if q.rsplit(".", 1)[-1] == "DistributedSampler":
            continue
        others.append(v)
    if not others:
        return None
    if all(isinstance(v, cst.Name) and v.value == "None" for v in others):
        return f"{holder.value} is not None"
    return f'hasattr({holder.value}, "set_epoch")'


def _epoch_name(m, loop: cst.For) -> str | None:
    """`for epoch in range(n)` -> "epoch"; `for epoch, _ in enumerate(...)` -> "epoch"."""
    t = loop.target
    if isinstance(t, cst.Name):
        return t.value
    it = loop.iter
    if (
        isinstance(t, cst.Tuple)
        and t.elements
        and isinstance(t.elements[0].value, cst.Name)
        and isinstance(it, cst.Call)
        and isinstance(it.func, cst.Name)
        and it.func.value == "enumerate"
    ):
        return t.elements[0].value.value
    return None


def _mentions_set_epoch(m) -> bool:
    """`x.set_epoch`, or a "set_epoch" string (getattr/hasattr), anywhere in the code."""
    for node in m.parents:
        if isinstance(node, cst.Attribute) and node.attr.value == "set_epoch":
            return True
        if isinstance(node, cst.SimpleString) and "set_epoch" in node.value:
            return True
    return False
