"""GL205 deprecated-cuda-amp."""

from __future__ import annotations

import re

import libcst as cst

from gpulint.analysis.amp import DeprecatedAmp, DeprecatedImport, DeprecatedUse
from gpulint.rule import Context, Rule

# positional parameters of the deprecated autocast classes; torch.amp.autocast takes
# (device_type, dtype, enabled, cache_enabled), so old positionals become keywords
_OLD_AUTOCAST_PARAMS = ("enabled", "dtype", "cache_enabled")


class DeprecatedCudaAmp(Rule):
    code = "GL205"
    name = "deprecated-cuda-amp"
    summary = "`torch.cuda.amp.autocast`/`GradScaler` and `torch.cpu.amp.autocast` are deprecated; use `torch.amp`."
    message = "`torch.cuda.amp` is deprecated: use `torch.amp.autocast(\"cuda\", ...)` / `torch.amp.GradScaler(\"cuda\", ...)`"
    fix_safety = "safe"
    default = True
    kind = "future"
    prefilter = r"(?:cuda|cpu)\.amp\b|\bimport\b[^\n]*\bamp\b"
    explanation = '''
`torch.cuda.amp.autocast(...)`, `torch.cuda.amp.GradScaler(...)` and `torch.cpu.amp.autocast(...)`
(and the `torch.cpu.amp.GradScaler`) are deprecated: every call emits a `FutureWarning`
("`torch.cuda.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cuda',
args...)` instead.") and they will be removed. The device-generic `torch.amp` API takes the
device type as its first argument.

The fix rewrites each call, and rewrites an import (`from torch.cuda.amp import autocast,
GradScaler`, `from torch.cuda import amp`, `import torch.cuda.amp as amp`) together with every
call of the names it binds, in one edit. The old autocast's positional arguments are
`(enabled, dtype, cache_enabled)` while `torch.amp.autocast` takes `(device_type, dtype, enabled,
cache_enabled)`, so positional arguments become keywords (`autocast(False)` becomes
`autocast("cuda", enabled=False)`). Calls with `*args`/`**kwargs`, and names used without being
called, are reported without a fix. Imports inside `try:` blocks (compatibility shims for old
torch versions) are left alone.

Bad:

```python
from torch.cuda.amp import GradScaler, autocast

scaler = GradScaler()
with autocast(dtype=torch.float16):
    loss = criterion(model(x), y)
```

Good:

```python
from torch.amp import GradScaler, autocast

scaler = GradScaler("cuda")
with autocast("cuda", dtype=torch.float16):
    loss = criterion(model(x), y)
```
'''

    def check(self, ctx: Context):
        facts = ctx.model.facts(DeprecatedAmp)
        for use in facts.direct:
            if _version_guarded(ctx, use.node):
                continue  # `torch.amp.X(...) if torch >= 2.4 else torch.cuda.amp.X()`: the fallback is the point
            fix = None
            if use.call is not None:
                fix = ctx.fix(*_call_edits(ctx, use), message=f"Use `{use.new_func}(\"{use.device}\", ...)`")
            yield ctx.finding(use.call or use.node, _use_message(use, use.new_func), fix)
        for group in facts.imports:
            fix = _group_fix(ctx, group)
            yield ctx.finding(group.stmt, _import_message(ctx, group), fix)
            for use in group.uses:
                yield ctx.finding(use.call or use.node, _use_message(use, None), fix)


_GUARD = re.compile(r"version|TORCH_|_TORCH|hasattr|__version__|_GREATER|_LESS", re.IGNORECASE)


def _version_guarded(ctx: Context, node) -> bool:
    """Inside a branch chosen by a torch-version (or feature) test: compatibility code."""
    m = ctx.model
    for anc in m.ancestors(node):
        test = None
        if isinstance(anc, (cst.If, cst.IfExp, cst.While)):
            test = anc.test
        elif isinstance(anc, cst.Else):
            parent = m.parent(anc)
            test = getattr(parent, "test", None)
        if test is not None and _GUARD.search(ctx.code(test)):
            return True
    return False


def _use_message(use: DeprecatedUse, new_func: str | None) -> str:
    old = use.qualname
    new = new_func or f"torch.amp.{use.kind}"
    msg = f"`{old}` is deprecated: use `{new}(\"{use.device}\", ...)`"
    if use.kind == "autocast" and use.call is not None and any(a.keyword is None for a in use.call.args):
        msg += " (its positional arguments become keywords)"
    if use.reason and use.call is None:
        msg += f"; no automatic fix: {use.reason}"
    return msg


def _import_message(ctx: Context, group: DeprecatedImport) -> str:
    msg = f"`{group.old}` is deprecated: import from `{group.new_module}` and pass the device type to each call"
    if group.reason:
        msg += f"; no automatic fix: {group.reason}"
    return msg


def _group_fix(ctx: Context, group: DeprecatedImport):
    if group.reason:
        return None
    lines = [ctx.line_of(group.stmt)] + [ctx.line_of(u.call) for u in group.uses]
    if any(ctx.suppressed(line, "GL205") for line in lines):
        return None  # half a rewrite would break the script: all or nothing
    edits = [ctx.replace(group.target, group.new_module)]
    for use in group.uses:
        edits.extend(_call_edits(ctx, use))
    return ctx.fix(*edits, message=f"Import from `{group.new_module}` and pass the device type to each call")


def _call_edits(ctx: Context, use: DeprecatedUse):
    call = use.call
    assert call is not None
    edits = []
    if use.new_func is not None:
        edits.append(ctx.replace(use.node, use.new_func))
    device = f'"{use.device}"'
    inserts: dict[int, str] = {}
    func_end = ctx.span(call.func)[1]
    lpar = ctx.source.index("(", func_end)
    if not call.args:
        inserts[lpar + 1] = device
    else:
        start = ctx.span(call.args[0])[0]
        between = ctx.source[lpar + 1:start]
        if "\n" in between or "\r" in between:
            indent = between.splitlines()[-1] if not between.endswith(("\n", "\r")) else ""
            inserts[start] = device + "," + ctx.newline + indent
        else:
            inserts[start] = device + ", "
    if use.kind == "autocast":
        positional = [a for a in call.args if a.keyword is None]
        for name, arg in zip(_OLD_AUTOCAST_PARAMS, positional):
            at = ctx.span(arg)[0]
            inserts[at] = inserts.get(at, "") + f"{name}="
    for at, text in inserts.items():
        edits.append(ctx.insert_text(at, text))
    return edits
