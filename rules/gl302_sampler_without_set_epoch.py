"""GL302 sampler-without-set-epoch."""

from __future__ import annotations

import json

import libcst as cst

from gpulint.analysis.distributed import DIST_FRAMEWORKS, DistFacts, epoch_variable
from gpulint.analysis.training import TrainingFacts
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
`sampler.set_epoch(epoch)` as the first statement of the epoch loop. When the sampler's name is
not bound on every path to the loop (made under `if args.distributed:` only), the call is guarded
by that test (when it is still valid at the loop), or by
`isinstance(loader.sampler, DistributedSampler)`; when neither is sure, no fix is offered.

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
            if loaders and all(_evaluation_only(m, facts, lo) for lo in loaders):
                continue  # only evaluated: the order of an evaluation pass changes nothing
            loops: list[tuple[cst.For, object]] = []
            for lo in loaders:
                for loop in facts.epoch_loops(lo, through_calls=True):
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
        if loop in facts.iter_pass_loops and not _iter_each_range_pass(m, loop, lo):
            return None  # `iter(loader)` re-created in this loop: its passes have no epoch number
        if not isinstance(loop, cst.For):
            return None  # a generator's `while True:` over the loader has no epoch number to pass
        epoch = epoch_variable(m, loop)
        body = loop.body
        if epoch is None or not isinstance(body, cst.IndentedBlock) or not body.body:
            return None
        scope = m.scope_of(loop)
        if s.target is None and s.key_target is not None:
            # kept under a dict key (maybe filled on some paths only): `loader.sampler` may then be
            # another sampler, so the call goes through the key
            return _set_epoch_by_key(ctx, s, loop, epoch, scope)
        recv = None
        for holder, suffix in ((s.target, ""), (lo.target, ".sampler")):
            if holder is None:
                continue
            hscope = m.scope_of(holder)
            if hscope is scope or (hscope is m.module and (scope, holder.value) not in m.bindings):
                recv = holder.value + suffix
                break
        returned = False
        if recv is None:
            # the loader came back from a function or method of the file (`train_dataloader =
            # self.get_train_dataloader()`): its `.sampler`, when that name is bound once, before
            # the epoch loop, in the loop's scope
            holder = _returned_loader_name(m, facts, lo, loop, scope)
            if holder is None:
                return None
            recv, returned = holder.value + ".sampler", True
        first = body.body[0]
        guard = None
        if recv == getattr(s.target, "value", None):
            if _bound_on_every_path(m, s.target, loop):
                guard = _guard(m, s.target)
            else:
                # bound on some paths only: the test it was made under, or the loader's sampler
                guard = _branch_test(ctx, s.target, loop)
                if guard is None:
                    recv = None
                    if lo.target is not None and m.scope_of(lo.target) is scope:
                        recv = lo.target.value + ".sampler"
                    else:
                        return None
        if returned:
            # the function may build another sampler on another path (`RandomSampler(ds) if
            # local_rank == -1 else DistributedSampler(ds)`): only a DistributedSampler has set_epoch
            cls = _sampler_class_code(ctx, s.call)
            if cls is None:
                return None
            guard = f"isinstance({recv}, {cls})"
        elif recv.endswith(".sampler"):
            guard = None
            if not _bound_on_every_path(m, lo.target, loop):
                return None  # the loader itself is missing on some path
            if any(b.value is not lo.call for b in m.bindings_of(lo.target)):
                # another loader on another path (a plain shuffling one when not distributed)
                cls = _sampler_class_code(ctx, s.call)
                if cls is None:
                    return None
                guard = f"isinstance({recv}, {cls})"
        line = f"{recv}.set_epoch({epoch})"
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


def _evaluation_only(m, facts: DistFacts, lo) -> bool:
    """Every pass over the loader is an evaluation pass: its loop runs with autograd off (`with
    torch.no_grad():`, or in a function decorated with it) and runs no backward and no optimizer
    step, itself or through the file's functions (HydraGNN's `validate`/`test` under
    `@torch.no_grad()` over the validation and test loaders of `create_dataloaders`). Each rank
    evaluates its fixed share of the split whatever the order: set_epoch changes nothing there."""
    loops = facts.loader_loops(lo)
    if not loops:
        return False
    tf: TrainingFacts = m.facts(TrainingFacts)
    for ll in loops:
        info = tf.loop_info.get(ll.loop)
        if info is None or info.backward or info.backward_via or info.steps or info.steps_via:
            return False
        if tf.grad_mode_at(ll.loop) != "off":
            return False
    return True


def _set_epoch_by_key(ctx: Context, s, loop: cst.For, epoch: str, scope):
    """`samplers["train"].set_epoch(epoch)` for a sampler kept under a constant key of a dict name
    visible in the epoch loop's scope and bound (once) on every path to it. Guarded by
    `isinstance(samplers.get("train"), DistributedSampler)` unless the sampler is a value of the
    dict display itself (then the key holds it wherever the name is bound)."""
    m = ctx.model
    if s.key_target is None:
        return None
    holder, key = s.key_target
    hscope = m.scope_of(holder)
    if not (hscope is scope or (hscope is m.module and (scope, holder.value) not in m.bindings)):
        return None
    bindings = m.bindings_of(holder)
    if len(bindings) != 1 or not isinstance(bindings[0].value, cst.Dict):
        return None
    if not _bound_on_every_path(m, holder, loop):
        return None
    in_display = m.contains(bindings[0].value, s.call)
    k = json.dumps(key)
    ref = f"{holder.value}[{k}]"
    line = f"{ref}.set_epoch({epoch})"
    if not in_display:
        cls = _sampler_class_code(ctx, s.call)
        if cls is None:
            return None
        unit = ctx.indent_of(loop.body.body[0])[len(ctx.indent_of(loop)):] or "    "
        line = f"if isinstance({holder.value}.get({k}), {cls}):\n{unit}{line}"
    first = loop.body.body[0]
    edit = ctx.insert_before(first, line)
    if first.leading_lines:
        start = ctx.span(first.leading_lines[0])[0]
        line_start = max(o for o in ctx.line_starts() if o <= start)
        edit = ctx.insert_text(line_start, edit.content)
    return edit


_PATHS = (cst.If, cst.For, cst.While, cst.Try, cst.TryStar, cst.Match)


def _block_of(m, stmt):
    """The statement list holding `stmt` and that list's owner (a compound statement, an
    `else:`/`except:`/`finally:` clause, or the module)."""
    par = m.parent(stmt)
    if isinstance(par, cst.Module):
        return par.body, par
    if isinstance(par, cst.IndentedBlock):
        return par.body, m.parent(par)
    return None, None


def _binds(m, stmt, targets) -> bool:
    """Running `stmt` to its end always binds one of the `targets` (binding nodes)."""
    if isinstance(stmt, cst.SimpleStatementLine):
        return any(m.contains(stmt, t) and not _in_conditional_expr(m, t, stmt) for t in targets)
    if isinstance(stmt, cst.If):
        orelse = stmt.orelse
        if orelse is None:
            return False
        other = [orelse] if isinstance(orelse, cst.If) else list(orelse.body.body)
        return _block_binds(m, stmt.body.body, targets) and _block_binds(m, other, targets)
    if isinstance(stmt, cst.With):
        return _block_binds(m, stmt.body.body, targets)
    return False


_CONDITIONAL_EXPRS = (cst.IfExp, cst.BooleanOperation, cst.Lambda, cst.ListComp, cst.SetComp,
                      cst.DictComp, cst.GeneratorExp)


def _in_conditional_expr(m, node, stmt) -> bool:
    """A walrus target inside `a if c else b`, `a and b`, a lambda or a comprehension."""
    for anc in m.ancestors(node):
        if anc is stmt:
            return False
        if isinstance(anc, _CONDITIONAL_EXPRS):
            return True
    return False


def _block_binds(m, stmts, targets) -> bool:
    return any(_binds(m, st, targets) for st in stmts)


def _is_main_guard(node) -> bool:
    t = getattr(node, "test", None)
    return (isinstance(node, cst.If) and isinstance(t, cst.Comparison) and isinstance(t.left, cst.Name)
            and t.left.value == "__name__")


def _returned_loader_name(m, facts: DistFacts, lo, loop: cst.For, scope) -> cst.Name | None:
    """The name (bound once in `scope`, to a call or to an item of what a call returns, before
    `loop`) that a pass over the loader
    inside `loop` iterates, when the flow engine knows it holds `lo`'s loader."""
    found = None
    for inner in m.fors:
        if inner is not loop and not m.contains(loop, inner):
            continue
        for src in facts.iter_sources(inner.iter):
            if isinstance(src, cst.Name) and m.scope_of(src) is scope and facts._holds_loader(src, lo):
                if found is not None and found.value != src.value:
                    return None
                found = src
    if found is None:
        return None
    bindings = m.bindings.get((scope, found.value), [])
    # `train_loader = make_loader(...)`, or one of the loaders a helper returns in a tuple
    # (`train_loader, val_loader, test_loader = get_dataloaders(cfg)`, nanoVLM PR#124, G67-3)
    if len(bindings) != 1 or bindings[0].how not in ("assign", "unpack") or not isinstance(bindings[0].value, cst.Call):
        return None
    if not m.precedes(bindings[0].node, loop) or m.contains(loop, bindings[0].node):
        return None
    if not _bound_on_every_path(m, bindings[0].node, loop):
        return None
    return found


def _bound_on_every_path(m, holder: cst.Name, loop: cst.For) -> bool:
    """Whether the name bound at `holder` has a value on every path that reaches `loop`'s body:
    some statement before the loop, in the loop's block or a block around it (same scope), always
    binds it. A module-level name read in a function: bound by a top-level statement of the module
    (or of its `if __name__ == "__main__":` block)."""
    bindings = m.bindings_of(holder)
    targets = [b.node for b in bindings if b.how in ("assign", "unpack", "import", "with")]
    hscope, scope = m.scope_of(holder), m.scope_of(loop)
    if hscope is scope and any(b.how == "param" for b in bindings):
        return True
    if hscope is not scope:
        if hscope is not m.module:
            return False
        for t in targets:
            stmt = m.statement_of(t)
            stmts, owner = _block_of(m, stmt)
            if owner is not None and not isinstance(owner, cst.Module) and _is_main_guard(owner):
                stmts, owner = _block_of(m, owner)
            if isinstance(owner, cst.Module) and _binds(m, stmt, targets):
                return True
        return False
    cur = loop
    while True:
        stmts, owner = _block_of(m, cur)
        if stmts is None:
            return False
        for st in stmts:
            if st is cur:
                break
            if _binds(m, st, targets):
                return True
        if owner is scope or isinstance(owner, (cst.Module, cst.FunctionDef, cst.ClassDef)):
            return False
        if isinstance(owner, (cst.Else, cst.ExceptHandler, cst.Finally)):
            owner = m.parent(owner)
        # an `elif` is the `orelse` of its `if`: both are statements of the same block
        while isinstance(owner, cst.If) and isinstance(m.parent(owner), cst.If):
            owner = m.parent(owner)
        if owner is None:
            return False
        cur = owner


_MUTATORS = {"update", "pop", "popitem", "setdefault", "clear", "__setitem__", "__delitem__"}


def _simple_test(node) -> list[cst.Name] | None:
    """The root names of a test made of names, attributes, literal-indexed subscripts,
    comparisons, `and`/`or`/`not` and literals (no call), else None."""
    if isinstance(node, cst.Name):
        return [] if node.value in ("True", "False", "None") else [node]
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
        return []
    if isinstance(node, cst.Attribute):
        return _simple_test(node.value)
    if isinstance(node, cst.Subscript):
        if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
            return None
        key = node.slice[0].slice.value
        if not isinstance(key, (cst.Integer, cst.SimpleString)):
            return None
        return _simple_test(node.value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        return _simple_test(node.expression)
    if isinstance(node, cst.BooleanOperation):
        a, b = _simple_test(node.left), _simple_test(node.right)
        return None if a is None or b is None else a + b
    if isinstance(node, cst.Comparison):
        out = _simple_test(node.left)
        for c in node.comparisons:
            r = _simple_test(c.comparator)
            if out is None or r is None:
                return None
            out = out + r
        return out
    return None


def _branch_test(ctx: Context, holder: cst.Name, loop: cst.For) -> str | None:
    """`holder` is bound only in the body of an `if T:` (or in its `else:`) that runs before
    `loop` in the same block chain, and T is a simple test whose names are not re-bound or
    mutated after the `if`: `T` (or `not (T)`) still says whether the name is bound at the loop."""
    m = ctx.model
    bindings = m.bindings_of(holder)
    stmt = m.statement_of(holder)
    _, owner = _block_of(m, stmt)
    negate = False
    if isinstance(owner, cst.Else):
        owner, negate = m.parent(owner), True
    if not isinstance(owner, cst.If) or isinstance(m.parent(owner), cst.If):
        return None  # not a plain `if` (an `elif` needs the earlier tests too)
    branch = owner.orelse.body if negate else owner.body
    if not all(m.contains(branch, b.node) for b in bindings):
        return None
    if not _block_binds(m, branch.body, [b.node for b in bindings]):
        return None
    scope = m.scope_of(loop)
    if m.scope_of(owner) is not scope or m.contains(owner, loop) or not m.precedes(owner, loop):
        return None
    # the `if` is a statement of the loop's block or of a block around it
    if not m.contains(m.parent(owner), loop):
        return None
    roots = _simple_test(owner.test)
    if roots is None:
        return None
    for r in roots:
        rb = m.bindings_of(r)
        if not rb or any(m.scope_of(b.node) is not scope or not m.precedes(b.node, owner) for b in rb):
            return None  # a global, or re-bound after the test
        for node in m.walk(scope):
            if not m.precedes(owner, node):
                continue
            if isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.Del)):
                t = getattr(node, "target", None)
                if isinstance(t, (cst.Attribute, cst.Subscript)) and _root(t) == r.value:
                    return None  # `opt["dist"] = ...` after the test
            if (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                    and node.func.attr.value in _MUTATORS and _root(node.func.value) == r.value):
                return None
    test = ctx.code(owner.test)
    if negate:
        return f"not ({test})"
    return test


def _root(expr) -> str | None:
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None


def _sampler_class_code(ctx: Context, call: cst.Call) -> str | None:
    """The sampler's class as written at its constructor, when it names a module-level import."""
    m = ctx.model
    func = call.func
    root = func
    while isinstance(root, cst.Attribute):
        root = root.value
    if not isinstance(root, cst.Name) or root.value not in m.aliases or not _top_level_import(m, root.value):
        return None
    if any(key[1] == root.value for key in m.bindings):
        return None  # the imported name is also assigned somewhere
    if not (m.qualname(func) or "").endswith("DistributedSampler"):
        return None
    return ctx.code(func)


def _top_level_import(m, name: str) -> bool:
    """`name` (an import of the model's `aliases`) is bound by an `import`/`from ... import`
    statement of the module's own top level (not one inside a function, a class, an `if` or a
    `try`): it exists wherever the fix's call goes."""
    for node in m.nodes:
        if type(node) is not cst.Import and type(node) is not cst.ImportFrom:
            continue
        if isinstance(node.names, cst.ImportStar):
            continue
        line = m.parent(node)
        if line is None or m.parent(line) is not m.module:
            continue
        for alias in node.names:
            local = alias.evaluated_alias or alias.evaluated_name
            if type(node) is cst.Import and alias.asname is None:
                local = local.split(".", 1)[0]
            if local == name:
                return True
    return False


def _guard(m, holder: cst.Name) -> str | None:
    """A test for the fix's call when the sampler's name is also bound to something other than a
    DistributedSampler: `x is not None` when that is `None`, else `hasattr(x, "set_epoch")`."""
    others = []
    values = [b.value for b in m.bindings_of(holder)]
    while values:
        v = values.pop()
        if isinstance(v, cst.IfExp):  # `DistributedSampler(ds) if distributed else None`
            values += [v.body, v.orelse]
            continue
        q = (m.qualname(v.func) or "") if isinstance(v, cst.Call) else ""
        if q.rsplit(".", 1)[-1] == "DistributedSampler":
            continue
        others.append(v)
    if not others:
        return None
    if all(isinstance(v, cst.Name) and v.value == "None" for v in others):
        return f"{holder.value} is not None"
    return f'hasattr({holder.value}, "set_epoch")'


def _iter_each_range_pass(m, loop, lo) -> bool:
    """`for epoch in range(...): it = iter(loader)` with the `iter(loader)` a statement of the loop's
    own body (not under a `try`/`if`, as a `StopIteration` refill is): each iteration of the `range`
    loop is one pass over the loader, numbered by the loop's target (distributed-training-guide#40)."""
    if not (isinstance(loop, cst.For) and isinstance(loop.iter, cst.Call) and isinstance(loop.iter.func, cst.Name)
            and loop.iter.func.value == "range" and isinstance(loop.body, cst.IndentedBlock)):
        return False
    if lo.target is None:
        return False
    for stmt in loop.body.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            v = small.value if isinstance(small, cst.Assign) else None
            if (isinstance(v, cst.Call) and isinstance(v.func, cst.Name) and v.func.value == "iter" and v.args
                    and isinstance(v.args[0].value, cst.Name) and v.args[0].value.value == lo.target.value):
                return True
    return False


def _mentions_set_epoch(m) -> bool:
    """`x.set_epoch`, or a "set_epoch" string (getattr/hasattr), anywhere in the code."""
    for node in m.parents:
        if isinstance(node, cst.Attribute) and node.attr.value == "set_epoch":
            return True
        if isinstance(node, cst.SimpleString) and "set_epoch" in node.value:
            return True
    return False
