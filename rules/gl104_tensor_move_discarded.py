"""GL104 tensor-move-discarded."""

from __future__ import annotations

import libcst as cst

from gpulint.rule import Context, Kind, Rule

_METHODS = ("to", "cuda", "cpu", "half", "float", "double", "bfloat16", "pin_memory")


class TensorMoveDiscarded(Rule):
    code = "GL104"
    name = "tensor-move-discarded"
    summary = "A tensor's `.to()`/`.cuda()`/`.half()`... result is thrown away; tensors are not moved in place."
    message = "`tensor.{meth}()` returns a new tensor and does not change `{name}`; assign it: `{name} = {name}.{meth}(...)`"
    fix_safety = "safe"
    default = True
    kind = "crash"
    prefilter = r"^[ \t]*[\w.\[\]'\"]+\.(?:to|cuda|cpu|half|float|double|bfloat16|pin_memory)\("
    ast_prefilter = r"^expr \.(?:to|cuda|cpu|half|float|double|bfloat16|pin_memory)\($"
    explanation = '''
`nn.Module.to()` moves a module's parameters in place, so `model.to(device)` on its own line is
fine. `Tensor.to()` (and `.cuda()`, `.cpu()`, `.half()`, `.float()`, `.pin_memory()`, ...) is not
in place: it returns a new tensor and leaves the original where it was. A statement that calls it
and drops the result does nothing, and the unmoved tensor later meets the model on another device:
`RuntimeError: Expected all tensors to be on the same device`.

The rule fires only where the value is known to be a tensor (a factory result, a DataLoader item,
arithmetic on tensors, ...), never on modules or unknown values. A batch of a DataLoader whose
`collate_fn` the file cannot see (imported, or made by a call: `collate_fn=batcher()`) is not known
to be a tensor: such collate functions often build graph batches (DGL before 0.5, PyTorch
Geometric), whose `.to(device)` moves the batch in place and returns it.

The safe fix assigns the result back (`x = x.to(device)`). For an item (`batch[0].to(device)`) it
is offered only when the statement just before assigned that same item (`inst[key] = ...`, the key
a name or a literal): a tuple batch takes no item assignment.

Bad:

```python
for x, y in loader:
    x.to(device)
    y.to(device)
    loss = criterion(model(x), y)
```

Good:

```python
for x, y in loader:
    x = x.to(device)
    y = y.to(device)
    loss = criterion(model(x), y)
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        for call, recv, meth in m.method_calls(*_METHODS):
            parent = m.parent(call)
            if not isinstance(parent, cst.Expr):
                continue
            if m.kind_of(recv) is not Kind.TENSOR and m.value_of(recv).kind != "tensor":
                continue  # neither the binding table nor the flow engine knows it is a tensor
            if not isinstance(recv, (cst.Name, cst.Attribute, cst.Subscript)):
                continue  # e.g. `torch.zeros(3).cuda()` alone: nothing to assign to
            if _item_of_opaque_collate(m, recv):
                continue  # a batch item a `collate_fn` the file cannot see made: a graph, not known to be a tensor
            stmt = m.parent(parent)
            if meth == "cpu" and _displayed_by_notebook(ctx, stmt):
                continue  # `y_preds.cpu()` last in a notebook cell: IPython shows the host copy
            name = ctx.code(recv)
            fix = None
            if isinstance(stmt, cst.SimpleStatementLine) and (_assignable(recv) or _item_just_assigned(m, ctx, recv, stmt)):
                fix = ctx.fix(ctx.insert_text(ctx.span(parent)[0], f"{name} = "), message=f"Assign the result to `{name}`")
            yield ctx.finding(call, self.message.format(meth=meth, name=name), fix)



def _item_of_opaque_collate(m, recv) -> bool:
    """The receiver is (a part of) a batch of a DataLoader whose `collate_fn` the analysis cannot
    see: an imported function or the result of a call (`collate_fn=batcher()` from the project's
    data module), whose output the engine leaves unknown. Such a collate function often builds
    objects that are not tensors: THUDM/GCC's `batcher()` returns `dgl.batch(...)` graphs, whose
    `.to(ctx)` (DGL < 0.5, which GCC pins) moved the features in place and returned the graph, as
    PyTorch Geometric's `Batch.to()` still does. A collate function of the file the engine follows
    (its batches are then what it returns) and the host collators of torch and Hugging Face
    (`default_collate`, `DataCollator*`), which make tensors, keep the rule reporting."""
    origin = m.value_of(recv).origin
    if _is_loader_call(m, origin):
        return _opaque_collate(m, origin)
    # the binding table's answer (a loader item, unpacked) when the engine has none: follow the
    # item back to the loaders the loop iterates (through parameters to their call sites)
    root = recv
    while isinstance(root, (cst.Attribute, cst.Subscript)):
        root = root.value
    if not isinstance(root, cst.Name) or m.value_of(recv).kind is not None:
        return False
    loaders = _loaders_behind(m, root, 0)
    return bool(loaders) and all(_opaque_collate(m, c) for c in loaders)


_ITER_WRAPPERS = frozenset({"enumerate", "iter", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm"})


def _is_loader_call(m, node) -> bool:
    from gpulint import flowkb

    return isinstance(node, cst.Call) and flowkb.class_kind(m.qualname(node.func)) == "loader"


def _loaders_behind(m, expr, depth: int) -> list:
    """The DataLoader constructions an expression comes from: through assignments, unpacking and
    `for` targets (to the iterable, through enumerate/iter/tqdm) and parameters (to the arguments of
    the function's call sites). Empty when any path leads elsewhere."""
    if depth > 8:
        return []
    if _is_loader_call(m, expr):
        return [expr]
    if isinstance(expr, cst.Call):
        q = m.qualname(expr.func) or (expr.func.value if isinstance(expr.func, cst.Name) else None)
        pos = [a for a in expr.args if a.keyword is None and not a.star]
        if q in _ITER_WRAPPERS and pos:
            return _loaders_behind(m, pos[0].value, depth + 1)
        return []
    if not isinstance(expr, cst.Name):
        return []
    bindings = m.bindings_of(expr)
    if not bindings:
        return []
    out = []
    for b in bindings:
        if b.how in ("assign", "unpack", "for") and b.value is not None:
            found = _loaders_behind(m, b.value, depth + 1)
        elif b.how == "param":
            found = [c for a in m.param_arguments(b) for c in _loaders_behind(m, a, depth + 1)]
        else:
            found = []
        if not found:
            return []
        out.extend(found)
    return out


def _opaque_collate(m, origin: cst.Call) -> bool:
    collate = next((a.value for a in origin.args if a.keyword is not None and a.keyword.value == "collate_fn"), None)
    if collate is None:
        return False
    loader = m.value_of(origin)
    if loader.elem is None or loader.elem.kind != "batch":
        return False  # the engine followed the collate function: its batches are what it returns
    f = collate.func if isinstance(collate, cst.Call) else collate
    q = m.qualname(f) or ""
    last = q.rsplit(".", 1)[-1]
    if q.startswith("torch.utils.data") or (q.startswith("transformers.") and (
            last.startswith("DataCollator") or last == "default_data_collator")):
        return False  # torch's and Hugging Face's collators stack tensors
    return True


def _assignable(node: cst.BaseExpression) -> bool:
    # `batch[0] = ...` fails when the batch is a tuple, so subscripts get no fix
    return isinstance(node, (cst.Name, cst.Attribute))


def _item_just_assigned(m, ctx: Context, recv, stmt) -> bool:
    """`instance[key].to(device)` right after `instance[key] = torch.tensor(...)` in the same block
    (conversational-uptake PR#4, fixtures63 G63-2): the container takes item assignment (it just
    did), and the subscript reads only a name or a literal, so writing the moved copy back is
    safe."""
    if not isinstance(recv, cst.Subscript) or not isinstance(recv.value, (cst.Name, cst.Attribute)):
        return False
    if len(recv.slice) != 1 or not isinstance(recv.slice[0].slice, cst.Index):
        return False
    key = recv.slice[0].slice.value
    if not isinstance(key, (cst.Name, cst.SimpleString, cst.Integer)):
        return False
    block = m.parent(stmt)
    body = getattr(block, "body", None)
    if not isinstance(body, (list, tuple)) or stmt not in body:
        return False
    i = body.index(stmt)
    if i == 0:
        return False
    prev = body[i - 1]
    if not isinstance(prev, cst.SimpleStatementLine) or len(prev.body) != 1 or not isinstance(prev.body[0], cst.Assign):
        return False
    text = ctx.code(recv)
    return any(ctx.code(t.target) == text for t in prev.body[0].targets)


def _displayed_by_notebook(ctx: Context, stmt) -> bool:
    """A top-level expression statement that ends a notebook cell: IPython displays its value,
    so the result is not thrown away (`y_preds.cpu()` alone at the end of a cell). Only comments
    and blank lines may follow it before the next cell; a trailing `;` hides the value. Asked
    for `.cpu()` only: a host copy shown for its values is the common intent, while
    `X_train.to(device)` ending a cell is the bug this rule is for, displayed or not."""
    if not ctx.path.endswith(".ipynb") or not isinstance(stmt, cst.SimpleStatementLine):
        return False
    # imported only for notebooks: `check` of a .py file does not import gpulint.notebook
    from gpulint.notebook import BOUNDARY

    if not isinstance(ctx.model.parent(stmt), cst.Module) or stmt.body[-1].semicolon is not cst.MaybeSentinel.DEFAULT:
        return False
    for line in ctx.source[ctx.span(stmt)[1]:].splitlines():
        text = line.strip()
        if text == BOUNDARY:
            return True
        if text and not text.startswith("#"):
            return False
    return True
