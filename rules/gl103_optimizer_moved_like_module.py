"""GL103 optimizer-moved-like-module."""

from __future__ import annotations

import libcst as cst

from gpulint.model import WRAPPER_CLASSES
from gpulint.rule import Context, Kind, Rule

_HELD = (Kind.OPTIMIZER, Kind.SCHEDULER)


class OptimizerMovedLikeModule(Rule):
    code = "GL103"
    name = "optimizer-moved-like-module"
    summary = "An optimizer or LR scheduler is moved or wrapped as if it were an nn.Module."
    message = "optimizer/scheduler has no `.to()`/`.cuda()`: it follows its parameters; move the model instead"
    fix_safety = "safe"
    default = True
    kind = "crash"
    prefilter = r"optim|[Ss]cheduler"
    ast_prefilter = (r"optim|[Ss]cheduler", r"^\.(?:to|cuda|cpu)\($|DataParallel|^\.module$")
    explanation = '''
Optimizers and LR schedulers are not `nn.Module`s: they have no `.to()`, `.cuda()` or `.cpu()`,
and wrapping one in `DataParallel`/`DistributedDataParallel` fails. An optimizer's state lives
on the device of the parameters it was built from, so moving the *model* is all that is needed.
`optimizer.to("cuda")` raises `AttributeError: 'Adam' object has no attribute 'to'`.

The fix removes the call or the wrapper (and `optimizer.module.x` becomes `optimizer.x`).

Bad:

```python
model = Net().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3).to(device)
```

Good:

```python
model = Net().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        for call, recv, meth in m.method_calls("to", "cuda", "cpu"):
            if m.kind_of(recv) not in _HELD:
                continue
            what = "scheduler" if m.kind_of(recv) is Kind.SCHEDULER else "optimizer"
            msg = f"`.{meth}()` on an {what}: it has no such method; move the model, the {what} follows its parameters"
            if what == "scheduler":
                msg = f"`.{meth}()` on a scheduler: it has no such method; move the model instead"
            yield ctx.finding(call, msg, self._drop(ctx, call, recv, f"Remove `.{meth}(...)`"))
        for call in m.calls:
            if m.qualname(call.func) not in WRAPPER_CLASSES:
                continue
            args = [a for a in call.args if a.keyword is None]
            if not args or m.kind_of(args[0].value) is not Kind.OPTIMIZER:
                continue
            wrapper = m.qualname(call.func).rsplit(".", 1)[-1]
            yield ctx.finding(
                call,
                f"optimizer wrapped in `{wrapper}`: only modules can be wrapped; wrap the model and keep the optimizer as it is",
                self._drop(ctx, call, args[0].value, f"Remove the `{wrapper}` wrapper"),
            )
        for node in self._module_accesses(ctx):
            yield ctx.finding(
                node,
                "`optimizer.module`: an optimizer has no `.module`; call the optimizer directly",
                ctx.fix(ctx.replace(node, node.value), message="Remove `.module`"),
            )

    @staticmethod
    def _module_accesses(ctx: Context):
        m = ctx.model
        seen = set()
        for call in m.calls:
            f = call.func
            if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Attribute) and f.value.attr.value == "module":
                inner = f.value
                if inner not in seen and m.kind_of(inner.value) is Kind.OPTIMIZER:
                    seen.add(inner)
                    yield inner

    @staticmethod
    def _drop(ctx: Context, call: cst.Call, keep: cst.BaseExpression, message: str):
        """Replace `call` by `keep`; a statement that only re-binds the same name is removed."""
        parent = ctx.model.parent(call)
        stmt = ctx.model.parent(parent) if parent is not None else None
        if isinstance(parent, cst.Expr) and isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
            if isinstance(keep, (cst.Name, cst.Attribute)):
                return ctx.fix(ctx.remove_statement(stmt), message=message)
        if (
            isinstance(parent, cst.Assign)
            and isinstance(stmt, cst.SimpleStatementLine)
            and len(stmt.body) == 1
            and len(parent.targets) == 1
            and isinstance(keep, (cst.Name, cst.Attribute))
            and ctx.code(parent.targets[0].target) == ctx.code(keep)
        ):
            return ctx.fix(ctx.remove_statement(stmt), message=message)
        return ctx.fix(ctx.replace(call, ctx.code(keep)), message=message)
