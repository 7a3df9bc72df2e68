"""GL112 model-not-moved."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.placement import PlacementFacts
from gpulint.model import Kind
from gpulint.rule import Context, Rule

class ModelNotMoved(Rule):
    code = "GL112"
    name = "model-not-moved"
    summary = "Inputs are moved to a device and passed to a model that is never moved there."
    message = "`{model}` receives inputs moved to `{device}` but the model itself is never moved; add `{model} = {model}.to({device})` after it is built"
    fix_safety = "unsafe"
    default = True
    kind = "crash"
    prefilter = r"DataLoader|\.to\(|\.cuda\("
    ast_prefilter = r"DataLoader|^\.(?:to|cuda)\($"
    explanation = '''
Moving every batch to the GPU is half the job: a model built on the CPU and never moved has its
weights on the CPU, and the first forward pass fails with `RuntimeError: Expected all tensors to
be on the same device, but found at least two devices, cuda:0 and cpu!`.

The fix (unsafe: the model's placement changes for the whole script) moves the model once, right
after it is built, with the device expression the inputs are moved with.

The rule is silent when the model is built with `device=`/`device_map=`, moved anywhere (also
in place: `model.to(device)`), handed to a function that might move it, or not built in this file.
Loss modules and other parameter-free layers are never reported: they work on any device.

Bad:

```python
model = Net()
for x, y in loader:
    x, y = x.to(device), y.to(device)
    loss = criterion(model(x), y)
```

Good:

```python
model = Net()
model = model.to(device)
for x, y in loader:
    x, y = x.to(device), y.to(device)
    loss = criterion(model(x), y)
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        if m.frameworks:
            return
        facts = m.facts(PlacementFacts)
        reported = set()
        for ll in facts.loops:
            for use in ll.uses:
                if use.move is None or m.is_cpu_move(use.move):
                    continue
                callee = use.call.func
                if not isinstance(callee, cst.Name) or callee.value in reported:
                    continue
                binding = self._built_here_never_moved(ctx, callee)
                if binding is None:
                    continue
                reported.add(callee.value)
                device = use.move.device
                device_text = ctx.code(device) if device is not None else None
                fix = None
                stmt = m.statement_of(binding.node)
                if (
                    device_text is not None
                    and self._visible(ctx, device, stmt)
                    and isinstance(stmt, cst.SimpleStatementLine)
                    and len(stmt.body) == 1
                ):
                    fix = ctx.fix(
                        ctx.insert_after(stmt, f"{callee.value} = {callee.value}.to({device_text})"),
                        message="Move the model to the inputs' device after it is built",
                    )
                shown = device_text or "cuda"
                yield ctx.finding(use.call, self.message.format(model=callee.value, device=shown), fix)
        yield from self._engine(ctx, reported)

    def _engine(self, ctx: Context, reported: set):
        """The flow engine: a module holding parameters that is on the host where it is called with
        inputs on the accelerator (a model built or loaded in a helper and never moved). Message
        only: where the move belongs is the author's call."""
        from gpulint import flowkb

        m = ctx.model
        for mm in m.mismatches():
            if mm.op != "module-host":
                continue
            ctor = mm.host_value.origin
            if isinstance(ctor, cst.Call) and _built_from_parts(m, ctor):
                continue
            q = m.qualname(ctor.func) if isinstance(ctor, cst.Call) else None
            if q and ("loss" in flowkb.class_tags(q) or q.endswith("Loss")):
                continue  # GL108's
            callee = mm.node.func
            if not isinstance(callee, (cst.Name, cst.Attribute)):
                continue  # built and called at once (`Metric(...)(x)`) or kept in a container: no name to move
            if m.value_of(callee).kind == "metric":
                continue  # GL119's
            name = ctx.code(callee)
            if name in reported:
                continue
            reported.add(name)
            d = mm.acc_value.dev
            device = ctx.code(d.expr) if d is not None and d.expr is not None else "cuda"
            yield ctx.finding(mm.node, self.message.format(model=name, device=device))

    @staticmethod
    def _built_here_never_moved(ctx: Context, callee: cst.Name):
        m = ctx.model
        if m.kind_of(callee) is not Kind.MODULE:
            return None
        bindings = m.bindings_of(callee)
        if len(bindings) != 1:
            return None
        b = bindings[0]
        if b.how != "assign" or not isinstance(b.value, cst.Call):
            return None
        if m.moves_of(callee) or m.moves_in_chain(b.value):
            return None
        ctor = b.value
        if _built_from_parts(m, ctor):
            return None
        q = m.qualname(ctor.func)
        if m.is_stateless_module(callee):
            return None
        if q is not None:
            if not (q.startswith("torch.nn.") or q.startswith("torchvision.models.")):
                return None
        elif not (isinstance(ctor.func, cst.Name) and m.class_is(ctor.func.value, frozenset(
            {"torch.nn.Module", "torch.nn.modules.module.Module", "torch.nn.Sequential"}
        ))):
            return None
        # handed to a function that might move it (or anything we cannot follow): silent
        for call in m.calls:
            for arg in call.args:
                if isinstance(arg.value, cst.Name) and arg.value.value == callee.value and m.bindings_of(arg.value) is bindings:
                    q = m.qualname(call.func) or ""
                    if not q.startswith("torch.") or q.startswith(("torch.nn.parallel", "torch.nn.DataParallel", "torch.compile")):
                        return None
        return b

    @staticmethod
    def _visible(ctx: Context, device: cst.BaseExpression, stmt) -> bool:
        m = ctx.model
        root = device
        while isinstance(root, (cst.Attribute, cst.Call)):
            root = root.value if isinstance(root, cst.Attribute) else root.func
        if isinstance(root, cst.SimpleString):
            return True
        if not isinstance(root, cst.Name):
            return False
        if root.value in m.aliases:
            return True
        scope = m.scope_of(stmt)
        for key in ((scope, root.value), (m.module, root.value)):
            for b in m.bindings.get(key, []):
                if ctx.span(b.node)[0] < ctx.span(stmt)[0] or b.how == "param":
                    return True
        return False


_CONTAINERS = frozenset({"torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict"})


def _built_from_parts(m, ctor: cst.Call) -> bool:
    """`nn.Sequential(*layers)` / `nn.ModuleList(parts)`: a container of modules made elsewhere,
    which may have been moved one by one (`local_layers = [l.to(0) for l in layers]` in torch's
    dist_autograd tests): where it lives is not known from the container's constructor."""
    q = m.qualname(ctor.func) or ""
    if q not in _CONTAINERS:
        return False
    return any(a.star or not isinstance(a.value, cst.Call) for a in ctor.args)
