"""GL206 pure-fp16-training."""

from __future__ import annotations

import libcst as cst

from gpulint.model import children as _children

from gpulint.analysis.amp import FLOAT16, AmpFacts
from gpulint.model import Kind, is_optimizer_qualname
from gpulint.rule import Context, Rule


class PureFp16Training(Rule):
    code = "GL206"
    name = "pure-fp16-training"
    summary = "A model converted to float16 (`.half()`) is trained without a GradScaler."
    message = "`{m}` is converted to float16 and trained without a GradScaler: fp16 weights, gradients and optimizer state underflow and overflow (NaN); keep float32 weights and use `torch.autocast` + `torch.amp.GradScaler`, or bfloat16"
    fix_safety = "none"
    default = True
    kind = "silent"
    prefilter = r"\.half\(|float16"
    ast_prefilter = (r"^\.half\($|float16", r"backward")
    explanation = '''
`model.half()` (or `model.to(torch.float16)`) converts the weights themselves to float16. Training
such a model stores weights, gradients and optimizer state in float16: updates smaller than the
weight's precision are lost (lr * grad rounds to zero), small gradients underflow, Adam's second
moment overflows, and the loss soon becomes NaN.

Mixed precision keeps float32 master weights and runs only the compute in float16: wrap the
forward pass in `torch.autocast(device_type, dtype=torch.float16)` and scale the loss with a
`torch.amp.GradScaler`. On hardware with bfloat16 (Ampere and newer), `dtype=torch.bfloat16`
needs no scaler. No automatic fix: the change touches the model, the loop and the optimizer.

The rule fires only when the converted model's parameters are given to an optimizer and a
`.backward()` follows the conversion in the same function (or in a function the file calls with
the model afterwards, or, for `self.net.half()` in a class's `__init__`, in another method of that
class whose optimizer steps `self.net`); frozen half-precision models (a VAE or teacher that is not
optimized), inference-only scripts and frameworks that manage precision are left alone.

Bad:

```python
model = Net().to(device).half()
optimizer = torch.optim.Adam(model.parameters())
for x, y in loader:
    loss = criterion(model(x.half()), y)
    loss.backward()
    optimizer.step()
```

Good:

```python
model = Net().to(device)
optimizer = torch.optim.Adam(model.parameters())
scaler = torch.amp.GradScaler("cuda")
for x, y in loader:
    with torch.autocast("cuda", dtype=torch.float16):
        loss = criterion(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        facts = m.facts(AmpFacts)
        if facts.uses_loss_scaling or facts.framework_precision:
            return
        backwards = facts.trained_backwards()
        if not backwards:
            return
        optimizers = [c for c in m.calls if (q := m.qualname(c.func)) is not None and is_optimizer_qualname(q)]
        optimized = _optimized_names(optimizers, m=m)
        optimized_params = _optimized_names(optimizers, parameters_only=True, m=m)

        training_fns = {fn for b in backwards if (fn := m.enclosing(b.call, cst.FunctionDef)) is not None}

        def trains_after(call: cst.Call, name: str | None = None) -> bool:
            """A backward pass of the training runs after the conversion, in its own scope, or in a
            function of the file that this scope calls afterwards with the model (`.half()` in
            `main()`, then `train(train_loader, model, criterion, optimizer, epoch)`:
            pytorch_resnet_cifar10)."""
            scope = m.scope_of(call)
            if any(m.scope_of(b.call) is scope and facts.before(call, b.call) for b in backwards):
                return True
            if name is None or not training_fns:
                return False
            for c in m.calls_in(scope) if scope is not m.module else m.calls:
                if (isinstance(c.func, cst.Name) and m.scope_of(c) is scope and facts.before(call, c)
                        and m.module_function(c.func.value) in training_fns
                        and any(isinstance(a.value, cst.Name) and a.value.value == name for a in c.args)):
                    return True
            return False

        # one pass over what the optimizers receive: the float16 conversions whose module's
        # parameters some optimizer of the file steps, and, across functions, those an optimizer of
        # a function that trains receives when the conversion is elsewhere (`.half()` in main())
        scopes = {m.scope_of(b.call) for b in backwards}
        training_classes = {m.class_of(fn) for fn in training_fns} - {None}
        stepped = set()
        elsewhere = []
        for call in optimizers:
            # an optimizer built in the `__init__` of a class another method of which trains
            # (`self.optimizer = AdamW(self.model.parameters())`, `run()` steps it) trains as well
            init = m.enclosing(call, cst.FunctionDef)
            trains = m.scope_of(call) in scopes or (
                init is not None and init.name.value == "__init__" and m.class_of(init) in training_classes
                and m.enclosing(init, cst.FunctionDef, cst.ClassDef) is m.class_of(init))
            for arg in call.args:
                for owner in _parameter_owner_nodes(arg.value):
                    v = m.value_of(owner)
                    at = v.half_at
                    if v.kind != "module" or not v.half or at is None:
                        continue
                    stepped.add(at)
                    if trains and isinstance(at, cst.Call) and m.scope_of(at) is not m.scope_of(call):
                        elsewhere.append((at, owner))
        # `self.net` converted in `__init__` of a class whose optimizer (built in the same class)
        # steps `self.net.parameters()` and one of whose methods trains (`Trainer.__init__` +
        # `Trainer.run()`): `__init__` runs before any other method of the instance
        optimized_self = {(cls, attr) for call in optimizers if (cls := m.class_of(call)) is not None
                          for attr in _self_parameter_owners(call)}

        def stepped_in_class(call: cst.Call, name: str) -> bool:
            return (m.class_of(call), name[len("self."):]) in optimized_self

        def trains_in_class(call: cst.Call, name: str) -> bool:
            fn = m.enclosing(call, cst.FunctionDef)
            cls = m.class_of(call)
            if fn is None or fn.name.value != "__init__" or cls is None:
                return False
            if m.enclosing(fn, cst.FunctionDef, cst.ClassDef) is not cls:
                return False
            if cls in training_classes:
                return True
            # a method of the class hands `self.net` to a training function of the file
            # (`train(self.loader, self.generator, ...)` in `run()`: stylegan2 in probe69 classify)
            for c in m.calls:
                if (m.class_of(c) is cls and isinstance(c.func, cst.Name)
                        and m.module_function(c.func.value) in training_fns
                        and any(_is_self_attr(a.value) and "self." + a.value.attr.value == name for a in c.args)):
                    return True
            return False

        reported = set()
        for call, recv, meth in m.method_calls("half", "to"):
            if meth == "to" and not _to_float16(m, call):
                continue
            if meth == "half" and call.args:
                continue
            name = _model_name(m, call, recv)
            if name is None:
                continue
            if name.startswith("self."):
                # as for names: `self.net.parameters()` given to an optimizer says it is a module
                if call not in stepped and not stepped_in_class(call, name):
                    continue
                if not (trains_after(call) or trains_in_class(call, name)):
                    continue
                reported.add(call)
                yield ctx.finding(call, self.message.format(m=name))
                continue
            # the converted module's own value stepped by an optimizer (`net = model`,
            # `Adam(net.parameters())`), or a name read in an optimizer's arguments
            if name not in optimized and call not in stepped:
                continue
            # a known module, or a name whose `.parameters()` an optimizer receives
            if m.kind_of(recv) is not Kind.MODULE and name not in optimized_params and call not in stepped:
                continue
            if not trains_after(call, name):
                continue
            reported.add(call)
            yield ctx.finding(call, self.message.format(m=name))
        # a conversion the flow engine sees in a method of the model's class or a function given to
        # `apply` (`model.convert_to_fp16()`, `model.apply(convert_module_to_f16)`)
        for call in m.calls:
            f = call.func
            if not isinstance(f, cst.Attribute) or f.attr.value in ("half", "to") or call in reported:
                continue
            v = m.value_of(call)
            if v.kind != "module" or not v.half or v.half_at is not call:
                continue
            name = ctx.code(f.value)
            if name not in optimized:
                continue
            if not trains_after(call):
                continue
            reported.add(call)
            yield ctx.finding(call, self.message.format(m=name))
        for at, owner in elsewhere:
            if at in reported:
                continue
            reported.add(at)
            yield ctx.finding(at, self.message.format(m=ctx.code(owner)))
        # across functions: a function that trains calls a module the flow engine knows was
        # converted to float16 by its caller (`model.half()` in main(), `train(model, ...)`)
        for call in m.calls:
            if m.scope_of(call) not in scopes:
                continue
            v = m.value_of(call.func)
            at = v.half_at
            if v.kind != "module" or not v.half or at is None or at in reported:
                continue
            if not isinstance(at, cst.Call) or m.scope_of(at) is m.scope_of(call):
                continue
            if not isinstance(at.func, cst.Attribute) or at.func.attr.value not in ("half", "to"):
                continue
            if at not in stepped:
                continue  # no optimizer steps that module's parameters (a frozen half-precision teacher)
            reported.add(at)
            yield ctx.finding(at, self.message.format(m=ctx.code(at.func.value)))


def _parameter_owner_nodes(e: cst.BaseExpression) -> list[cst.BaseExpression]:
    """X in `X.parameters()` / `X.named_parameters()` anywhere in an optimizer argument."""
    out = []
    stack = [e]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Call):
            f = n.func
            if isinstance(f, cst.Attribute) and f.attr.value in ("parameters", "named_parameters"):
                out.append(f.value)
                continue
            stack.extend(a.value for a in n.args)
            stack.append(f)
        elif isinstance(n, (cst.List, cst.Tuple)):
            stack.extend(el.value for el in n.elements)
        elif isinstance(n, cst.Dict):
            stack.extend(el.value for el in n.elements if isinstance(el, cst.DictElement))
    return out


def _to_float16(m, call: cst.Call) -> bool:
    for arg in call.args:
        if arg.keyword is None or arg.keyword.value == "dtype":
            value = _single_assigned_value(m, arg.value)
            if m.qualname(arg.value) in FLOAT16 or (value is not None and m.qualname(value) in FLOAT16):
                return True
    return False


def _single_assigned_value(m, node) -> cst.BaseExpression | None:
    """The value of a plain name with exactly one binding, a plain assignment (`weight_type =
    torch.float16`, magic_animate_unofficial#6; `trainable_params = list(filter(lambda p:
    p.requires_grad, model.parameters()))`); None otherwise (a dtype chosen on several paths, as
    diffusers scripts do with `weight_dtype`, stays unknown)."""
    if m is None or not isinstance(node, cst.Name):
        return None
    bindings = m.bindings_of(node)
    if len(bindings) != 1 or bindings[0].how != "assign":
        return None
    value = bindings[0].value
    return value if isinstance(value, cst.BaseExpression) else None


def _model_name(m, call: cst.Call, recv: cst.BaseExpression) -> str | None:
    """The name the converted module is known by: `model` in `model.half()` / `model.to(d).half()`,
    or the target of `model = Net().half()`."""
    while (
        isinstance(recv, cst.Call)
        and isinstance(recv.func, cst.Attribute)
        and recv.func.attr.value in ("to", "cuda", "cpu", "half", "float", "train", "eval")
    ):
        recv = recv.func.value
    if isinstance(recv, cst.Name) and m.qualname(recv) is None:
        return recv.value
    if _is_self_attr(recv):
        return "self." + recv.attr.value
    node = call
    parent = m.parent(node)
    while isinstance(parent, (cst.Attribute, cst.Call)):
        node, parent = parent, m.parent(parent)
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
        target = parent.targets[0].target
        if isinstance(target, cst.Name):
            return target.value
        if _is_self_attr(target):
            return "self." + target.attr.value
    return None


def _is_self_attr(e) -> bool:
    return isinstance(e, cst.Attribute) and isinstance(e.value, cst.Name) and e.value.value == "self"


def _self_parameter_owners(call: cst.Call) -> set[str]:
    """`net` for each `self.net` in `X.parameters()` / `X.named_parameters()` of an optimizer's
    arguments."""
    return {owner.attr.value for arg in call.args for owner in _parameter_owner_nodes(arg.value)
            if _is_self_attr(owner)}


def _optimized_names(optimizers: list[cst.Call], parameters_only: bool = False, m=None) -> set[str]:
    """Names read in the arguments of the optimizer constructors (`Adam(model.parameters())`); with
    `parameters_only`, only the names whose `.parameters()` / `.named_parameters()` is passed. An
    argument that is a name assigned once is read through its value (`params = [p for p in
    model.parameters() if p.requires_grad]; AdamW(params)`)."""
    out: set[str] = set()
    for call in optimizers:
        for arg in call.args:
            values = [arg.value]
            assigned = _single_assigned_value(m, arg.value)
            if assigned is not None:
                values.append(assigned)
            for value in values:
                if parameters_only:
                    out.update(_parameter_owners(value))
                else:
                    out.update(_names(value))
    return out


def _parameter_owners(node: cst.CSTNode):
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value in ("parameters", "named_parameters")
        and isinstance(node.func.value, cst.Name)
    ):
        yield node.func.value.value
        return
    for child in _children(node):
        yield from _parameter_owners(child)


def _names(node: cst.CSTNode):
    if isinstance(node, cst.Name):
        yield node.value
        return
    if isinstance(node, cst.Attribute):
        yield from _names(node.value)
        return
    for child in _children(node):
        yield from _names(child)
