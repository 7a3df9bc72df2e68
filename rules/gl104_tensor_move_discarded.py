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
arithmetic on tensors, ...), never on modules or unknown values.

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
            stmt = m.parent(parent)
            if meth == "cpu" and _displayed_by_notebook(ctx, stmt):
                continue  # `y_preds.cpu()` last in a notebook cell: IPython shows the host copy
            name = ctx.code(recv)
            fix = None
            if isinstance(stmt, cst.SimpleStatementLine) and _assignable(recv):
                fix = ctx.fix(ctx.insert_text(ctx.span(parent)[0], f"{name} = "), message=f"Assign the result to `{name}`")
            yield ctx.finding(call, self.message.format(meth=meth, name=name), fix)



def _assignable(node: cst.BaseExpression) -> bool:
    # `batch[0] = ...` fails when the batch is a tuple, so subscripts get no fix
    return isinstance(node, (cst.Name, cst.Attribute))


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
