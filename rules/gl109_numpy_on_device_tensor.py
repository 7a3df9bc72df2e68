"""GL109 numpy-on-device-tensor."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.devices import DeviceFacts, runs_on_cpu_only
from gpulint.flow import number_or_tensor, runs_on_gpu
from gpulint.rule import Context, Rule


class NumpyOnDeviceTensor(Rule):
    code = "GL109"
    name = "numpy-on-device-tensor"
    summary = "`.numpy()` on a tensor that lives on the GPU (a moved model's output, a moved tensor)."
    message = "`{expr}` is on the accelerator: `.numpy()` only works on CPU tensors; use `{fixed}`"
    fix_safety = "safe"
    default = True
    kind = "crash"
    prefilter = r"\.numpy\(|numpy|sklearn|pandas"
    ast_prefilter = r"numpy|sklearn|pandas"
    explanation = '''
NumPy arrays live in host memory, so `Tensor.numpy()` only accepts CPU tensors. On a tensor that
is on the GPU (the output of a model moved with `model.to(device)`, a batch moved with
`x.to(device)`, anything computed from them) it raises
`TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor
to host memory first.` The script works on a laptop without a GPU and fails on the cluster,
usually in the evaluation code after the first epoch.

The fix copies the tensor to the host first: `.detach().cpu().numpy()` (`.detach()` also avoids
`Can't call numpy() on Tensor that requires grad`; it is harmless inside `torch.no_grad()`).
Where the expression is already detached only `.cpu()` is added.

NumPy functions given device tensors (`np.sum(t)`, `np.array(outputs)`), scikit-learn's metrics
(`accuracy_score(labels, preds)`, `roc_curve(labels, scores)`) and pandas' `DataFrame`/`Series`,
which all call `np.asarray` on their inputs, fail the same way; scikit-learn is left alone where the file turns on its array-API
dispatch, and `np.shape(t)` / `np.ndim(t)` (they read `t.shape` / `t.ndim` and convert nothing).
Storing a device tensor into a part of a NumPy array that is an array itself (`g_loss[ind] = loss.data`
with `g_loss = np.zeros((5000, 1))`: a row) converts it the same way; the fix copies it first
(`loss.data.cpu()`). Storing it into one element (`h[i] = loss` with `h = np.zeros(5)`) takes
`float(loss)`, which works on any device, and is not reported.

The rule fires only where the tensor is known to be on a device: the output of a module that
was moved to a non-CPU device (and never moved back), a loss or `torch`/`F` function of such a
tensor, or a tensor moved with `.to(...)`/`.cuda()`. Inside `forward` of a module class (or a
helper only `forward` calls), a tensor computed from the module's inputs or parameters lives
wherever the module runs, and counts as on a device unless the file is a script or notebook that
never asks for one (xiaxin1998/DHCN#14: `np.sum(final, 0)` over a submodule's layer outputs). A
value that is a number on some paths and a tensor on the accelerator on the others counts too
(`best = float("inf")`, then `best = val_loss`: WenjieDu/PyPOTS#10's `np.equal(self.best_loss, ...)`). Never
after a `.cpu()`, not on a branch that only runs without a GPU (`t.numpy() if not train_on_gpu else
t.cpu().numpy()`), and not for `.numpy(force=True)`.

Bad:

```python
model = Net().to(device)
with torch.no_grad():
    preds = model(x).argmax(dim=1)
accuracy = (preds.numpy() == labels).mean()
```

Good:

```python
model = Net().to(device)
with torch.no_grad():
    preds = model(x).argmax(dim=1)
accuracy = (preds.detach().cpu().numpy() == labels).mean()
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        facts = m.facts(DeviceFacts)
        for call, recv, _meth in m.method_calls("numpy"):
            if any(a.keyword is not None and a.keyword.value == "force" for a in call.args) or call.args:
                continue
            if not (_on_accelerator(m, facts, recv) or _where_module_runs(ctx, m.value_of(recv), call)):
                continue
            if not runs_on_gpu(m, call):
                continue  # `t.numpy() if not train_on_gpu else t.cpu().numpy()`: a CPU-only branch
            if _in_cpu_device_branch(m, call, m.value_of(recv)):
                continue  # `if device == "cpu": t.numpy() else: t.cpu().numpy()`, t moved to `device`
            detached = _detached(recv)
            insert = "cpu()." if detached else "detach().cpu()."
            attr = call.func.attr  # type: ignore[union-attr]
            start = ctx.span(attr)[0]  # right before `numpy`, after the dot
            head = ctx.source[ctx.span(call)[0]:start]
            fixed = f"{head}{insert}numpy()"
            fix = ctx.fix(ctx.insert_text(start, insert), message=f"Copy to the host: `.{insert}numpy()`")
            msg = self.message.format(expr=_short(head.rstrip(". \n")), fixed=_short(fixed))
            if not _on_accelerator(m, facts, recv):
                msg = msg.replace("is on the accelerator", "is on the module's device (the accelerator when it runs there)", 1)
            yield ctx.finding(call, msg, fix)
        yield from self._numpy_functions(ctx)
        yield from self._stored_into_array(ctx)

    def _stored_into_array(self, ctx: Context):
        """`g_loss[ind] = loss.data` with `g_loss = np.zeros((5000, 1))` (Learning-to-See-in-the-Dark
        #10, G65-1): a device tensor stored into a slot of a NumPy array that is itself an array (a
        row, a slice) is converted with `__array__`, i.e. `.numpy()`, and fails the same way. A slot
        that is one element (as many plain indices as the array has dimensions) takes `float(t)`,
        which works on any device: not reported."""
        m = ctx.model
        for node in m.nodes:
            if type(node) is not cst.Assign or len(node.targets) != 1:
                continue
            target = node.targets[0].target
            if not isinstance(target, cst.Subscript) or not isinstance(target.value, cst.Name):
                continue
            ndim = _numpy_array_ndim(m, target.value)
            if ndim is None or not _sub_array_slot(target, ndim):
                continue
            value = node.value
            v = m.value_of(value)
            maybe = number_or_tensor(v) and v.dev is not None and v.dev.where == "acc"
            if not (_on_accelerator(m, m.facts(DeviceFacts), value) and v.kind == "tensor" or maybe):
                continue
            if not runs_on_gpu(m, node):
                continue
            insert = ".cpu()" if _detached(value) else ".detach().cpu()"
            code = ctx.code(value)
            atom = isinstance(value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or value.lpar
            fixed = f"{code}{insert}" if atom else f"({code}){insert}"
            fix = ctx.fix(ctx.replace(value, fixed), message=f"Copy to the host: `{insert[1:]}`")
            yield ctx.finding(
                value,
                f"`{_short(code)}` is on the accelerator: storing it into `{_short(ctx.code(target))}` (a sub-array of "
                f"the NumPy array `{target.value.value}`) converts it with `.numpy()`, which only works on CPU "
                f"tensors; copy it to the host first: `{_short(fixed)}`",
                fix if not maybe else None,
            )

    def _numpy_functions(self, ctx: Context):
        """`np.sum(t)`, `np.array(outputs)`: NumPy converts its tensor arguments (a tensor, or a
        list of them) the way `.numpy()` does, and fails the same way on device tensors. Only where
        the flow engine knows the tensors are on an accelerator."""
        m = ctx.model
        dispatch = None
        for call in m.calls:
            q = m.qualname(call.func)
            if not q:
                continue
            if q.startswith("sklearn.metrics."):
                # scikit-learn's metrics convert their inputs with `np.asarray` (Lightning#1429,
                # ganomaly#26's `roc_curve(labels, scores)`), unless the file turns on its array-API
                # dispatch, which takes torch tensors where they are
                if dispatch is None:
                    dispatch = "array_api_dispatch" in ctx.source
                if dispatch:
                    continue
            elif not (q.startswith("numpy.") or q == "numpy" or q in _PANDAS_CONVERTING):
                continue  # (pandas' constructors convert with `np.asarray` too)
            elif q in _READS_ATTRIBUTE:
                continue  # `np.shape(t)` returns `t.shape` without converting (JordanAsh/badge's `gram_red`)
            for a in call.args:
                if a.keyword is not None or a.star:
                    continue
                x = a.value
                v = m.value_of(x)
                if v.kind == "tuple" and v.elem is not None and v.items is None:
                    v = v.elem
                    if not _on_acc(v) and isinstance(x, cst.Name):
                        # rows appended as list literals: `targets.append([i, cls, *list(box), conf])`
                        row = _appended_row_item(m, x)
                        if row is not None:
                            v = m.value_of(row)
                elif type(x) in (cst.List, cst.Tuple):
                    # `np.array([loss.item(), acc * 100])`: the first element on the accelerator
                    x = next((el.value for el in x.elements if not isinstance(el, cst.StarredElement)
                              and _on_acc(m.value_of(el.value))), x)
                    v = m.value_of(x)
                maybe = number_or_tensor(v) and v.dev is not None and v.dev.where == "acc"
                if not (_on_acc(v) or maybe or _where_module_runs(ctx, v, call)) or not runs_on_gpu(m, call):
                    continue
                what = ctx.code(x)
                where = ("holds tensors on the accelerator" if _on_acc(v) else
                         "is a number on some paths and a tensor on the accelerator on the others" if maybe else
                         "holds tensors on the module's device (the accelerator when it runs there)")
                yield ctx.finding(
                    call,
                    f"`{_short(what)}` {where}: `{_short(ctx.code(call.func))}(...)` converts "
                    "them to NumPy, which only works on CPU tensors; copy them to the host first "
                    "(`.detach().cpu()`)",
                )
                break


_PANDAS_CONVERTING = frozenset({"pandas.DataFrame", "pandas.Series"})
# NumPy functions that read the attribute of the same name first and convert only objects without
# it: a tensor (any device) answers them itself
_READS_ATTRIBUTE = frozenset({"numpy.shape", "numpy.ndim"})


_NUMPY_SHAPED = frozenset({"numpy.zeros", "numpy.ones", "numpy.empty", "numpy.full"})


def _numpy_array_ndim(m, name: cst.Name) -> int | None:
    """The number of dimensions of the NumPy array `name` holds, when every binding of it that
    reaches here is `np.zeros/ones/empty/full(<shape literal>, ...)` in the same scope (an int: 1,
    a tuple or list display of k items: k); None otherwise."""
    bindings = m.bindings_of(name)
    if not bindings:
        return None
    found = set()
    for b in bindings:
        if b.how != "assign" or not isinstance(b.value, cst.Call) or m.qualname(b.value.func) not in _NUMPY_SHAPED:
            return None
        args = b.value.args
        shape = next((a.value for a in args if a.keyword is not None and a.keyword.value == "shape"), None)
        if shape is None and args and args[0].keyword is None and not args[0].star:
            shape = args[0].value
        if isinstance(shape, cst.Integer):
            found.add(1)
        elif isinstance(shape, (cst.Tuple, cst.List)) and shape.elements and not any(
                isinstance(e, cst.StarredElement) for e in shape.elements):
            found.add(len(shape.elements))
        else:
            return None
    return found.pop() if len(found) == 1 else None


def _sub_array_slot(target: cst.Subscript, ndim: int) -> bool:
    """`a[i]` of a 2-D array, `a[0:2]`, `a[..., 1]`: the slot is an array, not one element. Only
    plain indices (names, numbers, attributes) and slices are read; anything else (a list or array
    of indices) is not decided: False."""
    plain = 0
    for el in target.slice:
        sl = el.slice
        if isinstance(sl, cst.Slice):
            return True
        v = sl.value
        if isinstance(v, cst.Ellipsis):
            return True
        if not isinstance(v, (cst.Name, cst.Integer, cst.Attribute, cst.UnaryOperation, cst.BinaryOperation)):
            return False
        plain += 1
    return plain < ndim


def _appended_row_item(m, name: cst.Name):
    """An element on the accelerator of a list or tuple literal appended to the list `name` in the
    function that reads it (every such element is converted by NumPy); None when there is none."""
    scope = m.scope_of(name)
    for call, recv, _meth in m.method_calls("append"):
        if not (isinstance(recv, cst.Name) and recv.value == name.value and m.scope_of(call) is scope):
            continue
        if len(call.args) != 1 or not isinstance(call.args[0].value, (cst.List, cst.Tuple)):
            continue
        if m.order[call] > m.order[name]:
            continue
        for el in call.args[0].value.elements:
            if not isinstance(el, cst.StarredElement) and _on_acc(m.value_of(el.value)):
                return el.value
    return None


def _where_module_runs(ctx: Context, v, node) -> bool:
    """A tensor computed in a module's `forward` from its inputs or parameters (the engine's
    "wherever the module is"): on the accelerator whenever the module runs there, unless the file
    is a script or notebook that never asks for one (DHCN#14: `np.sum(final, 0)` over the layers'
    embeddings inside a submodule's forward)."""
    return (v.kind == "tensor" and v.dev is not None and v.dev.where == "model"
            and ctx.model.flow.in_module_forward(node)
            and not runs_on_cpu_only(ctx.model, ctx.source, ctx.path))


def _on_acc(v) -> bool:
    return v.kind == "tensor" and v.dev is not None and v.dev.where == "acc"


def _on_accelerator(m, facts, recv) -> bool:
    """The flow engine's answer: a tensor it knows to be on an accelerator (moved there, or
    computed from such tensors), or a value of unknown kind moved there on purpose (`x.to(dev)`:
    only a tensor has `.numpy()`); silent where it is (or may be) on the host or unknown."""
    v = m.value_of(recv)
    if v.kind == "hostval" or v.dev is None or v.dev.where != "acc":
        return False
    if v.kind == "tensor" or (v.kind is None and v.placed is not None):
        if isinstance(v.dev.expr, (cst.Name, cst.Attribute)) and facts.device_is_cpu(v.dev.expr):
            return False  # `device = "cpu"`: the engine reads the name as an accelerator (ENGINE_FP, eighth pass #3)
        return True
    return False


def _cpu_test_subject(test) -> tuple[cst.BaseExpression, bool] | None:
    """(X, holds-on-cpu) for `X == "cpu"` / `X != "cpu"` (also `X.type`, `str(X)`, quotes either way
    round); None for any other test."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    c = test.comparisons[0]
    if isinstance(c.operator, cst.Equal):
        eq = True
    elif isinstance(c.operator, cst.NotEqual):
        eq = False
    else:
        return None
    left, right = test.left, c.comparator
    if isinstance(left, cst.SimpleString):
        left, right = right, left
    if not isinstance(right, cst.SimpleString) or right.evaluated_value != "cpu":
        return None
    if isinstance(left, cst.Attribute) and left.attr.value == "type":
        left = left.value
    elif (isinstance(left, cst.Call) and isinstance(left.func, cst.Name) and left.func.value == "str"
          and len(left.args) == 1):
        left = left.args[0].value
    return left, eq


def _in_cpu_device_branch(m, call, value) -> bool:
    """The call sits where the device the tensor was moved to is the CPU: the body of
    `if device == "cpu":` (or the `else:` of `!=`) with `device` the very expression of the move
    (NIID-Bench utils.py `compute_accuracy`, `device="cpu"` by default, converts with `.numpy()`
    on the CPU branch and `.cpu().numpy()` on the other)."""
    dev = getattr(value, "dev", None)
    exprs = [getattr(dev, "expr", None)]
    if exprs[0] is None:  # the engine has no value: the moves the bindings of the receiver's base show
        base = call.func.value  # type: ignore[union-attr]
        while True:
            if isinstance(base, cst.Attribute) and base.attr.value == "data":
                base = base.value
            elif (isinstance(base, cst.Call) and isinstance(base.func, cst.Attribute)
                  and base.func.attr.value == "detach" and not base.args):
                base = base.func.value
            else:
                break
        exprs = [mv.device for mv in m.device_moves(base)] if isinstance(base, cst.Name) else []
    if not exprs or not all(isinstance(e, (cst.Name, cst.Attribute)) for e in exprs):
        return False
    expr = exprs[0]
    if not all(e.deep_equals(expr) for e in exprs):
        return False
    child = call
    for anc in m.ancestors(call):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        if isinstance(anc, (cst.If, cst.IfExp)) and child is not anc.test:
            found = _cpu_test_subject(anc.test)
            if found is not None and found[0].deep_equals(expr) and (child is anc.body) is found[1]:
                return True
        child = anc
    return False


def _detached(e: cst.BaseExpression) -> bool:
    """`x.detach()...` / `x.data...` in the receiver chain itself."""
    cur = e
    while True:
        if isinstance(cur, cst.Call) and isinstance(cur.func, cst.Attribute):
            if cur.func.attr.value == "detach":
                return True
            cur = cur.func.value
        elif isinstance(cur, cst.Attribute):
            if cur.attr.value == "data":
                return True
            cur = cur.value
        elif isinstance(cur, cst.Subscript):
            cur = cur.value
        else:
            return False


def _short(code: str) -> str:
    code = " ".join(code.split())
    return code if len(code) <= 60 else code[:57] + "..."
