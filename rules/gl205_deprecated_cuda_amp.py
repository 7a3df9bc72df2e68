"""GL205 deprecated-cuda-amp."""

from __future__ import annotations

import re

import libcst as cst

from gpulint.analysis.amp import DeprecatedAmp, DeprecatedImport, DeprecatedUse
from gpulint.rule import Context, Rule, split_lines

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
    ast_prefilter = r"^amp$"
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
called, are reported without a fix. Compatibility code is left alone: imports and calls inside `try:` blocks
whose handlers catch `AttributeError`/`TypeError`/`ImportError` and inside those handlers, and
branches chosen by a torch-version test. When the project's torch version is known
(`torch-version` setting, or its torch requirement) and is older than the API the fix writes
(`torch.amp.GradScaler("cuda")` needs torch 2.3), the finding comes without a fix.

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
        version = _target_version(ctx)
        for use in facts.direct:
            if _version_guarded(ctx, use.node) or _compat_handler(ctx, use.node):
                continue  # `torch.amp.X(...) if torch >= 2.4 else torch.cuda.amp.X()`: the fallback is the point
            if use.call is None and _recognised_only(ctx, use.node):
                continue  # `func is torch.cuda.amp.autocast`, `func in [..., torch.cuda.amp.autocast]`: not a use
            fix = None
            reason = _too_old(use.kind, version)
            if use.call is not None and reason is None:
                fix = ctx.fix(*_call_edits(ctx, use), message=f"Use `{use.new_func}(\"{use.device}\", ...)`")
            msg = _use_message(use, use.new_func)
            if reason and use.call is not None:
                msg += f"; no automatic fix: {reason}"
            yield ctx.finding(use.call or use.node, msg, fix)
        for group in facts.imports:
            if _compat_handler(ctx, group.stmt) or _version_guarded(ctx, group.stmt):
                continue
            reason = next((r for r in (_too_old(u.kind, version) for u in group.uses) if r), None)
            if reason is None and any(_version_guarded(ctx, u.node) or _compat_handler(ctx, u.node) for u in group.uses):
                reason = "some uses are compatibility code for other torch versions"
            fix = _group_fix(ctx, group) if reason is None else None
            msg = _import_message(ctx, group)
            if reason and not group.reason:
                msg += f"; no automatic fix: {reason}"
            yield ctx.finding(group.stmt, msg, fix)
            for use in group.uses:
                if _version_guarded(ctx, use.node) or _compat_handler(ctx, use.node):
                    continue
                yield ctx.finding(use.call or use.node, _use_message(use, None), fix)


def _recognised_only(ctx: Context, node) -> bool:
    """A reference that is compared or listed, not called or bound: code that recognises the old
    API when its users pass it (torch/_dynamo's tables of autocast functions), not a use of it."""
    m = ctx.model
    parent = m.parent(node)
    if isinstance(parent, cst.Element):
        return isinstance(m.parent(parent), (cst.List, cst.Tuple, cst.Set))
    return isinstance(parent, (cst.Comparison, cst.ComparisonTarget))


# The oldest torch with the API the fix writes: `torch.amp.GradScaler("cuda")` is 2.3;
# `torch.amp.autocast("cuda", ...)` is 1.10 (as `torch.autocast`; the `torch.amp` name since 2.0).
_NEEDS = {"GradScaler": (2, 3), "autocast": (2, 0)}


def _target_version(ctx: Context):
    """The (major, minor) torch version the project targets, when the settings know it
    (`torch-version` or the project's torch requirement); None when unknown."""
    settings = getattr(ctx, "settings", None)
    return getattr(settings, "torch_version", None)


def _too_old(kind: str, version) -> str | None:
    need = _NEEDS.get(kind)
    if version is None or need is None or tuple(version) >= need:
        return None
    return f"`torch.amp.{kind}` needs torch {need[0]}.{need[1]}, and the project targets torch {version[0]}.{version[1]}"


_COMPAT_EXCEPTIONS = frozenset({"AttributeError", "TypeError", "ImportError", "ModuleNotFoundError", "NameError"})


def _catches_compat(handler: cst.ExceptHandler) -> bool:
    if handler.type is None:
        return True  # a bare `except:`
    names = []
    items = [e.value for e in handler.type.elements] if isinstance(handler.type, cst.Tuple) else [handler.type]
    for value in items:
        if isinstance(value, cst.Name):
            names.append(value.value)
        elif isinstance(value, cst.Attribute):
            names.append(value.attr.value)
    return any(n in _COMPAT_EXCEPTIONS for n in names)


def _span_within(ctx: Context, inner, outer) -> bool:
    a, b = ctx.span(inner)
    c, d = ctx.span(outer)
    return c <= a and b <= d


def _compat_handler(ctx: Context, node) -> bool:
    """Inside `try: ... except (AttributeError, TypeError, ImportError):` (either side): code that
    exists to work across torch versions, where the old API may be the very point."""
    m = ctx.model
    for anc in m.ancestors(node):
        if isinstance(anc, cst.ExceptHandler) and _catches_compat(anc):
            return True
        if isinstance(anc, cst.Try) and _span_within(ctx, node, anc.body) and any(_catches_compat(h) for h in anc.handlers):
            return True
    return False


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
            indent = split_lines(between)[-1] if not between.endswith(("\n", "\r")) else ""
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
