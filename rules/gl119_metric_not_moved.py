"""GL119 metric-not-moved."""

from __future__ import annotations

import libcst as cst

from gpulint.rule import Context, Rule
from gpulint.sites import line_ref

_FRAMEWORKS = {"lightning", "accelerate", "hf-trainer", "deepspeed"}
_UPDATES = frozenset({"update", "forward", "__call__"})


class MetricNotMoved(Rule):
    code = "GL119"
    name = "metric-not-moved"
    summary = "A metric object with state tensors is updated with GPU tensors but never moved to the GPU."
    message = "`{metric}` keeps its state on the CPU but is updated with `{arg}` on the accelerator ({line}); move it: `{fixed}`"
    fix_safety = "safe"
    default = True
    kind = "crash"
    prefilter = r"update|compute|metric|Metric"
    ast_prefilter = r"(?i)metric|^def compute$"
    explanation = '''
A metric object (a torchmetrics `Metric`, or an `nn.Module` of the file with `update`/`compute`
that keeps its running counts in buffers) holds state tensors. Built on the CPU and fed
predictions from a model on the GPU, its first `update` mixes devices:
`RuntimeError: Expected all tensors to be on the same device` (torchmetrics raises its own
message naming the devices). Metrics are modules: `metric.to(device)` moves their state.

The fix appends `.to(D)` to the metric's constructor, D being the device expression the updating
tensors were moved with, when that expression is available at the constructor.

Bad:

```python
accuracy = torchmetrics.Accuracy(task="multiclass", num_classes=10)
for x, y in loader:
    x, y = x.to(device), y.to(device)
    accuracy.update(model(x), y)
```

Good:

```python
accuracy = torchmetrics.Accuracy(task="multiclass", num_classes=10).to(device)
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        if m.frameworks & _FRAMEWORKS:
            return
        reported = set()
        for call in m.calls:
            f = call.func
            if isinstance(f, cst.Attribute) and f.attr.value in _UPDATES:
                recv = f.value
            elif isinstance(f, (cst.Name, cst.Attribute, cst.Call)):
                recv = f  # `metric(preds, y)`, and `F1Score(...)(preds, y)` built and called at once
            else:
                continue
            v = m.value_of(recv)
            if v.kind != "metric" or v.dev is None:
                continue
            if v.dev.is_host:
                ctors = self._constructors(m, recv, v)
            elif v.dev.where == "either":
                # `for metric in [P().to(device), R()]`: the loop variable is either; each item is known
                ctors = self._loop_items(m, recv, v) or []
            else:
                continue
            for ctor in ctors:
                if ctor not in reported:
                    yield from self._report(ctx, call, ctor, reported)

    @staticmethod
    def _constructors(m, recv, v) -> list:
        """The metric constructors the receiver may be: its origin, or, for the variable of a loop
        over a list of known metrics (`for metric in self._metrics:` given `metrics=[P(), R()]`),
        every unmoved metric of the list (the loop updates each one)."""
        found = MetricNotMoved._loop_items(m, recv, v)
        if found is not None:
            return found
        return [v.origin] if isinstance(v.origin, cst.Call) else []

    @staticmethod
    def _loop_items(m, recv, v) -> list | None:
        """For the variable of a loop over a list whose metrics are known item by item: the
        constructors of its unmoved metrics; None when `recv` is not such a loop variable."""
        if isinstance(recv, cst.Name):
            loop = m.enclosing(recv, cst.For)
            while loop is not None and not (isinstance(loop.target, cst.Name) and loop.target.value == recv.value
                                            or MetricNotMoved._items_target(loop, recv)):
                loop = m.enclosing(loop, cst.For)
            if loop is not None and [b for b in m.bindings_of(recv) if m.contains(loop, b.node)] and all(
                    b.how == "for" for b in m.bindings_of(recv) if m.contains(loop, b.node)):
                items = m.value_of(loop.iter).items
                it = loop.iter
                if (not items and isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute)
                        and it.func.attr.value in ("values", "items") and not it.args):
                    # `for metric in metrics.values()` of `{"acc": Accuracy(), "f1": F1Score()}`
                    # (or `for name, metric in metrics.items()`)
                    keys = m.value_of(it.func.value).keys
                    items = [kv[1] for kv in keys] if keys else None
                if items and v.origin in [i.origin for i in items]:
                    return [i.origin for i in items if i.kind == "metric" and i.dev is not None
                            and i.dev.is_host and isinstance(i.origin, cst.Call)]
        return None

    @staticmethod
    def _items_target(loop: cst.For, recv: cst.Name) -> bool:
        """`for name, metric in metrics.items()`: `recv` is the value half of the target."""
        t = loop.target
        it = loop.iter
        return (isinstance(t, cst.Tuple) and len(t.elements) == 2 and isinstance(t.elements[1].value, cst.Name)
                and t.elements[1].value.value == recv.value and isinstance(it, cst.Call)
                and isinstance(it.func, cst.Attribute) and it.func.attr.value == "items")

    def _report(self, ctx: Context, call: cst.Call, ctor: cst.Call, reported: set):
        m = ctx.model
        acc = None
        dtext = None
        for a in call.args:
            d = m.device_of(a.value)
            if d is not None and d.where == "acc" and m.value_of(a.value).kind == "tensor":
                text = self._device_text(ctx, d, ctor)
                if acc is None or (dtext is None and text):
                    acc, dtext = (a.value, d), text  # prefer an operand whose device can be named
        if acc is None:
            return
        reported.add(ctor)
        arg, dev = acc
        fix = None
        suffix = f".to({dtext})" if dtext else ".to(device)"
        if dtext:
            fix = ctx.fix(ctx.insert_text(ctx.span(ctor)[1], suffix), message=f"Move the metric: `{suffix}`")
        fixed = f"{ctx.code(ctor.func)}(...){suffix}"
        yield ctx.finding(
            ctor,
            self.message.format(metric=ctx.code(ctor.func), arg=ctx.code(arg), line=line_ref(ctx, call), fixed=fixed),
            fix,
        )

    @staticmethod
    def _device_text(ctx: Context, dev, ctor: cst.Call) -> str | None:
        """The device expression as text when it can be evaluated where the metric is built."""
        m = ctx.model
        e = dev.expr
        if isinstance(e, cst.SimpleString):
            return ctx.code(e)
        if isinstance(e, cst.Call) and m.qualname(e.func) == "torch.device":
            # the value of a device variable: find a name bound to it before the constructor
            parent = m.parent(e)
            if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
                t = parent.targets[0].target
                if isinstance(t, cst.Name) and m.precedes(parent, ctor) and m.scope_of(parent) in (m.scope_of(ctor), m.module):
                    return t.value
            return None
        if isinstance(e, cst.Name):
            bound = m.bindings_of(e)
            ok = (m.scope_of(ctor), m.module)
            if bound and all(m.precedes(b.node, ctor) and m.scope_of(b.node) in ok for b in bound):
                return e.value
        return None
