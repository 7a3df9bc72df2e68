"""GL306 removed-parallel-api."""

from __future__ import annotations

import re

import libcst as cst

from gpulint.model import dotted as _dotted

from gpulint.rule import Context, Rule

# old qualified name -> (new last component, what happened)
RENAMED = {
    "torch.nn.parallel.DistributedDataParallelCPU": (
        "DistributedDataParallel",
        "`DistributedDataParallelCPU` is a deprecated alias slated for removal: `DistributedDataParallel` "
        "works on CPU (gloo backend, no `device_ids`)",
    ),
    "torch.distributed.reduce_op": (
        "ReduceOp",
        "`torch.distributed.reduce_op` is deprecated and slated for removal: use `torch.distributed.ReduceOp`",
    ),
    "torch.distributed._all_gather_base": (
        "all_gather_into_tensor",
        "`_all_gather_base` is a private, deprecated function: use `all_gather_into_tensor` (same arguments)",
    ),
    "torch.distributed._reduce_scatter_base": (
        "reduce_scatter_tensor",
        "`_reduce_scatter_base` is a private, deprecated function: use `reduce_scatter_tensor` (same arguments)",
    ),
}
_RENAMED_LAST = frozenset(q.rsplit(".", 1)[-1] for q in RENAMED)
REMOVED_MODULES = {
    "torch.distributed.deprecated": "`torch.distributed.deprecated` no longer exists (removed years ago): use `torch.distributed`",
}
DATA_PARALLEL_FN = frozenset({"torch.nn.parallel.data_parallel", "torch.nn.parallel.data_parallel.data_parallel"})


class RemovedParallelApi(Rule):
    code = "GL306"
    name = "removed-parallel-api"
    summary = "Removed, deprecated or misused parallel APIs (`DistributedDataParallelCPU`, `data_parallel`, `reduce_op`...)."
    message = "removed or deprecated parallel API"
    fix_safety = "safe"
    default = True
    kind = "crash"
    prefilter = r"DistributedDataParallelCPU|data_parallel|reduce_op|_all_gather_base|_reduce_scatter_base|\bdeprecated\b"
    ast_prefilter = r"DistributedDataParallelCPU|data_parallel|reduce_op|_all_gather_base|_reduce_scatter_base|^deprecated$"
    explanation = '''
Parallel APIs that no longer exist, are on their way out, or are used in a way that cannot work:

- `torch.nn.parallel.DistributedDataParallelCPU`: a deprecated alias; `DistributedDataParallel`
  runs on CPU with the gloo backend (leave `device_ids` unset). Fix: the 1:1 rename, imports included.
- `torch.distributed.reduce_op` → `torch.distributed.ReduceOp`; `dist._all_gather_base` →
  `dist.all_gather_into_tensor`; `dist._reduce_scatter_base` → `dist.reduce_scatter_tensor`
  (same arguments). Fix: the rename.
- `torch.nn.parallel.data_parallel` is a *function* `data_parallel(module, inputs, ...)` that runs
  one forward pass, and it shadows the submodule of the same name: `data_parallel(model)` (used like
  the class) raises `TypeError: missing 'inputs'`, and `torch.nn.parallel.data_parallel.DataParallel`
  raises `AttributeError: 'function' object has no attribute 'DataParallel'`. Fix: use
  `torch.nn.parallel.DataParallel` (where the call is written through the module path).
- `torch.distributed.deprecated` was removed: use `torch.distributed` (no automatic fix).

Bad:

```python
from torch.nn.parallel import DistributedDataParallelCPU
model = DistributedDataParallelCPU(model)
```

Good:

```python
from torch.nn.parallel import DistributedDataParallel
model = DistributedDataParallel(model)
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        yield from self._renames(ctx)
        yield from self._data_parallel(ctx)
        for node in list(m.parents):
            if type(node) in (cst.Import, cst.ImportFrom):  # (isinstance on LibCST's ABCs is slow; no subclasses)
                names = []
                if isinstance(node, cst.Import):
                    names = [_dotted(a.name) for a in node.names]
                elif node.module is not None and not node.relative:
                    mod = _dotted(node.module)
                    names = [mod]
                    if not isinstance(node.names, cst.ImportStar):
                        names += [f"{mod}.{_dotted(a.name)}" for a in node.names]
                for n in names:
                    if n and any(n == r or n.startswith(r + ".") for r in REMOVED_MODULES):
                        key = next(r for r in REMOVED_MODULES if n == r or n.startswith(r + "."))
                        yield ctx.finding(node, REMOVED_MODULES[key])
                        break
            elif type(node) is cst.Attribute and node.attr.value == "deprecated":
                # `torch.distributed.deprecated.reduce_op`, `dist.deprecated`: the package is gone,
                # so reading it as an attribute raises AttributeError (cavaface#63's apex build)
                q = m.qualname(node)
                if (q in REMOVED_MODULES and m.qualname(node.value) == q.rsplit(".", 1)[0]
                        and not _in_import(m, node) and not _probed(ctx, node) and not _in_probing_try(m, node)):
                    yield ctx.finding(node, REMOVED_MODULES[q] + " (reading it raises AttributeError)")

    # renames ----------------------------------------------------------------------------------
    def _renames(self, ctx: Context):
        m = ctx.model
        groups: dict[str, list[tuple[cst.CSTNode, list]]] = {}
        for node in list(m.parents):
            t = type(node)
            if t is not cst.Attribute and t is not cst.ImportFrom:
                continue  # (isinstance on LibCST's ABCs is slow; neither class has subclasses)
            if isinstance(node, cst.Attribute):
                if node.attr.value not in _RENAMED_LAST:
                    continue  # cheap test first: most attributes are not renamed APIs
                q = m.qualname(node)
                if q in RENAMED and not _in_import(m, node) and not _recognised_only(m, node):
                    new = RENAMED[q][0]
                    if _compat_fallback(ctx, node, q.rsplit(".", 1)[-1], new):
                        continue
                    edits = [ctx.replace(node.attr, new)]
                    groups.setdefault(q, []).append((node, edits))
            elif isinstance(node, cst.ImportFrom) and not node.relative and node.module is not None:
                if isinstance(node.names, cst.ImportStar):
                    continue
                mod = _dotted(node.module)
                for alias in node.names:
                    q = f"{mod}.{_dotted(alias.name)}"
                    if q not in RENAMED:
                        continue
                    new = RENAMED[q][0]
                    if _compat_fallback(ctx, node, _dotted(alias.name), new):
                        continue
                    if alias.asname is not None:
                        groups.setdefault(q, []).append((node, [ctx.replace(alias.name, new)]))
                        continue
                    local = _dotted(alias.name)
                    edits = self._rename_local(ctx, node, alias, local, new)
                    groups.setdefault(q, []).append((node, edits))
        # bare-name uses (`from torch.nn.parallel import DistributedDataParallelCPU [as X]`; X(...))
        for node in list(m.parents):
            if isinstance(node, cst.Name) and m.aliases.get(node.value) in groups:
                q = m.aliases.get(node.value)
                if not _in_import(m, node) and not _is_attr_name(m, node) and not m.bindings_of(node):
                    groups[q].append((node, []))
        for q, items in groups.items():
            all_edits = []
            ok = True
            for _node, edits in items:
                if edits is None:
                    ok = False
                    break
                all_edits.extend(edits)
            # one fix for every site of the same API, so imports and uses change together
            fix = ctx.fix(*_dedupe(all_edits), message=f"Use `{RENAMED[q][0]}`") if ok and all_edits else None
            for node, _ in items:
                yield ctx.finding(node, RENAMED[q][1], fix)

    def _rename_local(self, ctx: Context, imp: cst.ImportFrom, alias: cst.ImportAlias, local: str, new: str):
        """`from x import old` -> `from x import new`, and every use of `old` renamed. When `new` is
        already imported from the same place, the old name is dropped from the import instead."""
        m = ctx.model
        target_q = f"{_dotted(imp.module)}.{new}"
        existing = m.aliases.get(new)
        uses = [
            n
            for n in m.parents
            if isinstance(n, cst.Name) and n.value == local and not _in_import(m, n) and not _is_attr_name(m, n)
        ]
        if any((m.scope_of(u), local) in m.bindings and m.scope_of(u) is not m.module for u in uses):
            return None  # shadowed somewhere: leave it to a human
        edits = [ctx.replace(u, new) for u in uses]
        if existing is None:
            edits.append(ctx.replace(alias.name, new))
            return edits
        if existing != target_q:
            return None  # `new` means something else in this file
        names = [a for a in imp.names if a is not alias]
        stmt = m.statement_of(imp)
        if not names:
            if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
                edits.append(ctx.remove_statement(stmt))
                return edits
            return None
        new_names = list(names)
        new_names[-1] = new_names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        new_imp = imp.with_changes(names=new_names)
        edits.append(ctx.replace(imp, ctx.render(new_imp)))
        return edits

    # data_parallel ----------------------------------------------------------------------------
    def _data_parallel(self, ctx: Context):
        m = ctx.model
        for node in list(m.parents):
            # torch.nn.parallel.data_parallel.DataParallel: the function shadows the submodule
            if (
                type(node) is cst.Attribute
                and node.attr.value in ("DataParallel", "data_parallel")  # the cheap tests first
                and isinstance(node.value, cst.Attribute)
                and not _in_import(m, node)
                and m.qualname(node.value) == "torch.nn.parallel.data_parallel"
            ):
                base = ctx.code(node.value.value)
                yield ctx.finding(
                    node,
                    f"`torch.nn.parallel.data_parallel` is the function, not the module: `.{node.attr.value}` raises "
                    f"AttributeError; use `torch.nn.parallel.{node.attr.value}`",
                    ctx.fix(ctx.replace(node, f"{base}.{node.attr.value}"), message="Drop `.data_parallel`"),
                )
        for call in m.calls:
            q = m.qualname(call.func)
            if q not in DATA_PARALLEL_FN:
                continue
            if isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Attribute):
                if m.qualname(call.func.value) == "torch.nn.parallel.data_parallel":
                    continue  # reported above
            positional = [a for a in call.args if a.keyword is None]
            if any(a.star for a in call.args) or len(positional) >= 2 or any(
                a.keyword is not None and a.keyword.value == "inputs" for a in call.args
            ):
                continue
            fix = None
            if isinstance(call.func, cst.Attribute) and not any(
                a.keyword is not None and a.keyword.value == "module_kwargs" for a in call.args
            ):
                fix = ctx.fix(ctx.replace(call.func.attr, "DataParallel"), message="Use `DataParallel`")
            yield ctx.finding(
                call,
                "`data_parallel(module, inputs, ...)` is a function that runs one forward pass, not a wrapper: "
                "called without inputs it raises TypeError; wrap the model with `nn.parallel.DataParallel(model)` "
                "(or better, DistributedDataParallel)",
                fix,
            )




def _in_import(m, node) -> bool:
    return m.enclosing(node, cst.Import, cst.ImportFrom) is not None


def _is_attr_name(m, node: cst.Name) -> bool:
    """The `attr` part of `x.attr`, a keyword name, or a definition's name."""
    parent = m.parent(node)
    if isinstance(parent, cst.Attribute) and parent.attr is node:
        return True
    if isinstance(parent, cst.Arg) and parent.keyword is node:
        return True
    if isinstance(parent, (cst.FunctionDef, cst.ClassDef)) and parent.name is node:
        return True
    return False


def _dedupe(edits):
    seen = set()
    out = []
    for e in edits:
        if (e.start, e.end) in seen:
            continue
        seen.add((e.start, e.end))
        out.append(e)
    return out


def _compat_fallback(ctx: Context, node, old: str, new: str) -> bool:
    """The old name used only where the current one may be missing: a shim for old torch, which is
    correct code (renaming it makes it raise AttributeError on exactly the versions it is for).
    Shapes: under an `if`/`elif` whose test (or an earlier test of the same chain) asks for the old
    or the new API by name or reads a version (`if "all_gather_into_tensor" not in dir(dist)`,
    `elif hasattr(dist, "reduce_op")`, `if torch.__version__ < "1.13"`);
    in the `except` of a `try` whose body names the new API; a statement that binds the new name
    (`torch.distributed.all_gather_into_tensor = torch.distributed._all_gather_base`) or asks for it by string
    (`getattr(dist, "all_gather_into_tensor", dist._all_gather_base)`)."""
    m = ctx.model
    # a presence test names the API as a string (hasattr/getattr/dir); a version test reads a version
    presence = re.compile(r"""['"](?:%s|%s)['"]|version""" % (re.escape(old), re.escape(new)), re.I)
    quoted_new = re.compile(r"""['"]%s['"]""" % re.escape(new))
    stmt = m.statement_of(node)
    if stmt is not None and isinstance(stmt, cst.SimpleStatementLine):
        text = ctx.code(stmt)
        if quoted_new.search(text):
            return True
        for small in stmt.body:
            targets = []
            if isinstance(small, cst.Assign):
                targets = [t.target for t in small.targets]
            elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
                targets = [small.target]
            for t in targets:  # a module attribute of the new name set from the old one: a polyfill
                if isinstance(t, cst.Attribute) and t.attr.value == new:
                    return True
    child = node
    for anc in m.ancestors(node):
        if isinstance(anc, cst.If) and child is not anc.test:
            if presence.search(ctx.code(anc.test)):
                return True
        elif isinstance(anc, cst.ExceptHandler):
            tr = m.parent(anc)
            if isinstance(tr, cst.Try) and re.search(r"\b%s\b" % re.escape(new), ctx.code(tr.body)):
                return True
        child = anc
    return False


_PROBE = re.compile(r"\b(?:hasattr|getattr|dir)\s*\(|version", re.I)


def _probed(ctx: Context, node) -> bool:
    """`node` sits in a branch of an `if` chain that tests for an API by name or reads a version
    (apex's `if hasattr(dist, 'ReduceOp'): ... elif hasattr(dist, 'reduce_op'): ... else:
    ReduceOp = dist.deprecated.reduce_op`): a shim for old torch, never reached on a current one."""
    m = ctx.model
    child = node
    for anc in m.ancestors(node):
        if isinstance(anc, cst.If) and child is not anc.test and _PROBE.search(ctx.code(anc.test)):
            return True
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        child = anc
    return False


_PROBE_ERRORS = frozenset({"AttributeError", "ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def _in_probing_try(m, node) -> bool:
    """`node` is in the body of a `try` one of whose handlers catches AttributeError (or
    ImportError, Exception, or everything): code that probes for the old API and falls back."""
    child = node
    for anc in m.ancestors(node):
        if isinstance(anc, cst.Try) and child is anc.body:
            for h in anc.handlers:
                if h.type is None:
                    return True
                types = h.type.elements if isinstance(h.type, cst.Tuple) else [h.type]
                for t in types:
                    e = t.value if isinstance(t, cst.Element) else t
                    name = e.attr.value if isinstance(e, cst.Attribute) else getattr(e, "value", None)
                    if name in _PROBE_ERRORS:
                        return True
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        child = anc
    return False


def _recognised_only(m, node) -> bool:
    """A reference that is compared or listed, not called or bound: code that recognises the old
    API when its users pass it (torch/_dynamo's and torch/_export's tables of collectives, where
    renaming the entry would stop matching calls of the old name), not a use of it."""
    parent = m.parent(node)
    if isinstance(parent, cst.Element):
        return isinstance(m.parent(parent), (cst.List, cst.Tuple, cst.Set))
    return isinstance(parent, (cst.Comparison, cst.ComparisonTarget))
