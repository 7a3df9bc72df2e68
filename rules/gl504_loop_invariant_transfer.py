"""GL504 loop-invariant-transfer."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.paths import is_test_path
from gpulint.analysis.training import TrainingFacts, dotted, walk
from gpulint.flow import DTYPE, TENSOR
from gpulint.rule import Context, Kind, Rule

_READ_PARENTS = (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.ComparisonTarget, cst.Index,
                 cst.SubscriptElement)


class LoopInvariantTransfer(Rule):
    code = "GL504"
    name = "loop-invariant-transfer"
    summary = "The same tensor is copied to the device on every iteration of a loop."
    message = "`{name}` does not change in this loop, but `{call}` copies it to the device on every iteration; move it above the loop"
    fix_safety = "unsafe"
    fix_partial = True
    constant_message = (
        "`{expr}` is a constant, but `{move}` builds it on the CPU and copies it to the device on every "
        "iteration (`device=` would still copy it); build it once above the loop"
    )
    default = True
    kind = "slow"
    prefilter = r"\.(?:to|cuda)\("
    ast_prefilter = (r"^\.(?:to|cuda)\($", r"^loop$")
    explanation = '''
`x.to(device)` on a tensor that lives elsewhere makes a new copy each time it runs. Inside a loop,
a tensor defined before the loop and never changed in it (class weights, a mask, a lookup table,
positional encodings) is copied again on every iteration: a host-to-device transfer, and often a
synchronisation, per step for the same bytes.

A `.to(dtype)` that names no device (`x.to(weight_dtype)`) casts on the tensor's own device and is
not reported. The rule is careful that the tensor really is loop-invariant: it is not re-assigned in the loop,
not changed in place (no `x.add_()`, `x[i] = ...`, `x.data = ...`, no `optimizer.step()` in the loop of an
optimizer built over it, as in an attack that optimizes a latent `nn.Parameter`), not passed to a
function that could change it, and the device expression does not change either. A copy under an
`if` that compares the loop's counter with a number (`if epoch == 0:` in `for epoch in range(n)`,
`if i == 0:` in `for i, x in enumerate(loader)`) runs on one iteration only and is not reported.

The tensor may be a name the flow analysis knows to hold a host tensor (`fy, fx =
torch.meshgrid(...)`, a tuple a function of the file returns), or an attribute of an instance of a
plain class of the file (`w.stats.to(device)`, `self.stats.cuda()` in a method's loop) when no code of
the file writes that attribute except `self.stats = ...` in `__init__` or before the loop, and the loop
only reads the instance's attributes and calls its methods. A module's tensors (an optimizer over
`parameters()` changes them) and attributes of classes with a base from outside the file are left
alone.

The same holds for a constant built in the loop from literals and moved there
(`torch.Tensor([[0.1, 0.1, 0.2, 0.2]]).cuda()`, `torch.tensor(0).float().cuda()` in a per-image
loss): the data is read on the host and copied on every iteration of the innermost loop, also with
`device=` on the constructor. Build it once above the loop (no fix is offered for these). A constant
the same loop then changes in place is not reported: a fresh accumulator (`loss =
torch.FloatTensor([0]).cuda()` then `loss += ...`) or the buffer of an in-place collective (`size =
torch.LongTensor([0]).cuda()` then `dist.all_reduce(size)`) must start from its value on every
iteration, and built once it would carry the last iteration's value into the next. A legacy
constructor given sizes (`torch.Tensor(1000, 1000).cuda()`) is an uninitialised buffer, not a
constant, and is not reported either.

The fix (unsafe: it changes when the copy is made, and the hoisted name then exists before the
loop) moves a `y = x.to(device)` statement above the loop.

Bad:

```python
for x, y in loader:
    w = class_weights.to(device)
    loss = F.cross_entropy(model(x.to(device)), y.to(device), weight=w)
```

Good:

```python
w = class_weights.to(device)
for x, y in loader:
    loss = F.cross_entropy(model(x.to(device)), y.to(device), weight=w)
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        facts: TrainingFacts = m.facts(TrainingFacts)
        tests = is_test_path(ctx.path)  # a test suite's constants are tiny: the copy is not worth a word (as GL501)
        for call, recv, meth in m.method_calls("to", "cuda"):
            if isinstance(recv, cst.Call):
                found = None if tests else self._constant_site(ctx, facts, call, recv, meth)
                if found is not None:
                    yield found
                    continue
                recv = _cast_base(m, recv)  # `fx.float().to(device)`: the name under dtype casts
            if isinstance(recv, cst.Attribute):
                found = self._attribute_site(ctx, facts, call, recv, meth)
                if found is not None:
                    yield found
                continue
            if not isinstance(recv, cst.Name):
                continue
            loop = facts.enclosing_loop(call)
            if loop is None:
                continue
            if facts.kind_of(recv) is not Kind.TENSOR and not _engine_host_tensor(m, recv):
                continue
            if meth == "to" and not call.args:
                continue
            if meth == "to" and _dtype_only(m, call):
                continue  # `x.to(weight_dtype)`: a cast on the tensor's own device, no transfer
            if not self._invariant_name(ctx, facts, recv, loop):
                continue
            if not all(self._invariant_expr(ctx, facts, a.value, loop) for a in call.args):
                continue
            if _one_iteration_only(m, call, loop):
                continue  # `if epoch == 0:` in `for epoch in range(...)`: the copy runs once
            yield ctx.finding(
                call,
                self.message.format(name=recv.value, call=ctx.code(call)),
                self._hoist(ctx, facts, call, loop),
            )

    def _constant_site(self, ctx, facts, call, recv, meth):
        """`torch.Tensor([[0.1, 0.1, 0.2, 0.2]]).cuda()`, `torch.tensor(0).float().cuda()`: a tensor of
        literals (under dtype casts), built on the host and copied to the device on every iteration
        of an innermost loop (yhenon/pytorch-retinanet's focal loss, per image). `device=` on the
        factory would not save the copy (the data is read on the host); building it once would."""
        m = ctx.model
        base = recv
        while isinstance(base, cst.Call) and isinstance(base.func, cst.Attribute) and (
            (base.func.attr.value in _CASTS and not base.args)
            or (base.func.attr.value == "to" and base.args and _dtype_only(m, base))
        ):
            base = base.func.value
        if not isinstance(base, cst.Call) or (m.qualname(base.func) or "") not in _LITERAL_FACTORIES:
            return None
        if not base.args or not all(_literal_arg(a) for a in base.args):
            return None
        if _sizes_only(m, base):
            return None  # `torch.Tensor(1000, 1000)`: an uninitialised buffer of that shape, not a constant
        if not any(a.keyword is None for a in base.args):
            return None
        if meth == "cuda" and call.args:
            return None
        if meth == "to" and (not call.args or _dtype_only(m, call)):
            return None
        if not all(self._invariant_expr(ctx, facts, a.value, facts.enclosing_loop(call) or call) for a in call.args):
            return None
        loop = facts.enclosing_loop(call)
        if loop is None or any(isinstance(n, (cst.For, cst.While)) for n in m.walk(loop.body, skip=(cst.FunctionDef,
                                                                                                      cst.ClassDef, cst.Lambda))):
            return None  # only the innermost loop: the copy is paid on every step
        if facts.is_conditional_in(call, loop) and _lazy_guard(m, call, loop):
            return None
        if _one_iteration_only(m, call, loop):
            return None
        if _fresh_buffer(m, call, loop):
            return None  # a fresh zero the iteration writes into: it cannot be built once
        start, end = ctx.span(call)
        move = ctx.source[ctx.span(recv)[1]:end].lstrip()
        return ctx.finding(call, self.constant_message.format(expr=ctx.code(recv), move=move))

    def _attribute_site(self, ctx, facts, call, recv: cst.Attribute, meth):
        """`w.stats.to(device)` / `self.stats.cuda()` in a loop (G55-2, OneTrainer PR #1608's shape: an
        offloaded VAE's batch-norm statistics copied on every step). Only `<name>.<attr>` on an
        instance of a plain class of the file (no base from outside it: no property or `__getattr__`
        the analysis cannot see), the engine's value a host tensor, and the attribute provably left
        alone while the loop runs: every `.<attr>` of the file that is not a plain read is either an
        assignment `self.<attr> = ...` in an `__init__` or an assignment before the loop in the
        loop's own scope; in the loop the base is not rebound and is used only to read attributes
        or to call methods the class defines; no optimizer of the file is built over `.<attr>`."""
        m = ctx.model
        base = recv.value
        if not isinstance(base, cst.Name):
            return None
        loop = facts.enclosing_loop(call)
        if loop is None:
            return None
        if meth == "to" and (not call.args or _dtype_only(m, call)):
            return None
        if not _engine_host_tensor(m, recv):
            return None
        cls = self._plain_class_of(m, base, call)
        if cls is None or not _attribute_is_data(m, cls, recv.attr.value):
            return None
        if base.value != "self":
            bindings = m.bindings_of(base)
            if not bindings or any(self._inside(m, b.node, loop) or not facts.before(b.node, loop) for b in bindings):
                return None
        elif any(isinstance(b.node, cst.Name) and self._inside(m, b.node, loop) for b in m.bindings_of(base)):
            return None
        if not self._base_uses_ok(ctx, facts, base, cls, loop):
            return None
        if not self._attr_left_alone(ctx, facts, recv, loop):
            return None
        if not all(self._invariant_expr(ctx, facts, a.value, loop) for a in call.args):
            return None
        name = ctx.code(recv)
        return ctx.finding(call, self.message.format(name=name, call=ctx.code(call)),
                           self._hoist(ctx, facts, call, loop))

    @staticmethod
    def _plain_class_of(m, base: cst.Name, call) -> str | None:
        """The file class `base` is an instance of, when that class and its bases are all the
        file's own (or `object`) and none is an `nn.Module` (whose tensors an optimizer over
        `parameters()` or a `.to()` may change)."""
        if base.value == "self":
            fn = m.enclosing(call, cst.FunctionDef)
            if fn is None or m.enclosing(fn, cst.FunctionDef) is not None:
                return None
            cdef = m.class_of(fn)
            if cdef is None or not fn.params.params or fn.params.params[0].name.value != "self":
                return None
            if any(_decorator_name(d) in ("staticmethod", "classmethod") for d in fn.decorators):
                return None
            cls = cdef.name.value
        else:
            v = m.value_of(base)
            if v.kind != "object" or v.cls is None or v.alts:
                return None
            cls = v.cls
        seen, todo = set(), [cls]
        while todo:
            c = todo.pop()
            if c in seen:
                continue
            seen.add(c)
            info = m.classes.get(c)
            if info is None or len(info.bases) != len(info.node.bases):
                return None
            for b in info.bases:
                if b in ("object", "builtins.object"):
                    continue
                if b not in m.classes:
                    return None  # a base from outside the file: its attributes are unknown
                todo.append(b)
        return cls

    def _base_uses_ok(self, ctx, facts, base: cst.Name, cls: str, loop) -> bool:
        """Every use of the base in the loop reads an attribute or calls a method the class (or a
        base of the file) defines; an argument, an alias, `del` or a method the file does not
        define (inherited from nowhere the analysis can read) could change the attribute."""
        m = ctx.model
        for n in walk(loop):
            if not (isinstance(n, cst.Name) and n.value == base.value):
                continue
            parent = m.parent(n)
            if isinstance(parent, cst.Attribute) and parent.attr is n:
                continue  # `x.w`: another name's attribute
            if not (isinstance(parent, cst.Attribute) and parent.value is n):
                if isinstance(parent, cst.Call) and parent.func is n and m.method_of_class(cls, "__call__"):
                    continue
                return False
            grand = m.parent(parent)
            if (isinstance(grand, cst.Call) and grand.func is parent
                    and m.method_of_class(cls, parent.attr.value) is None
                    and m.value_of(parent).kind not in _CALLABLE_VALUES):
                return False  # (`self.model(x)` calls a module held by the instance: fine)
        return True

    def _attr_left_alone(self, ctx, facts, recv: cst.Attribute, loop) -> bool:
        """No use of `.<attr>` anywhere in the file may change it while the loop runs."""
        m = ctx.model
        attr = recv.attr.value
        loop_scope = m.scope_of(loop)
        for n in m.walk(m.module):
            if isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value in ("setattr", "delattr",
                                                                                              "vars"):
                return False
            if isinstance(n, cst.Call) and any(a.keyword is not None and a.keyword.value == "out"
                                               and ctx.code(a.value).endswith("." + attr) for a in n.args):
                return False
            if isinstance(n, cst.Attribute) and n.attr.value == "__dict__":
                return False  # `obj.__dict__.update(...)`: attributes written by name
            if not (isinstance(n, cst.Attribute) and n.attr.value == attr):
                continue
            parent = m.parent(n)
            if isinstance(parent, cst.Call) and parent.func is n:
                return False  # a method of that name: not the tensor alone
            if self._read_only(ctx, facts, n) and not self._optimized(m, n):
                continue
            if self._inside(m, n, loop):
                return False
            if isinstance(parent, cst.Element) and isinstance(m.parent(parent), (cst.Tuple, cst.List)):
                # `self.fy, self.fx = torch.meshgrid(...)`: one target of a tuple assignment
                # (probe69 E69-4); starred elements are not
                outer = m.parent(m.parent(parent))
                if isinstance(outer, cst.AssignTarget) and outer.target is m.parent(parent):
                    parent = outer
            if not (isinstance(parent, cst.AssignTarget) and (parent.target is n or not isinstance(parent.target, cst.Attribute))):
                return False  # an alias, an argument, an in-place change, `del`, `+=`
            if isinstance(n.value, cst.Name) and n.value.value == "self":
                fn = m.enclosing(n, cst.FunctionDef)
                if fn is not None and fn.name.value == "__init__" and not self._inside(m, loop, fn):
                    continue
            if m.scope_of(n) is loop_scope and facts.before(n, loop):
                continue
            return False
        return True

    @staticmethod
    def _optimized(m, n) -> bool:
        """`.<attr>` read as an argument of an optimizer's constructor (`torch.optim.Adam([w.z])`):
        the optimizer changes it in place on every `step()`."""
        for anc in m.ancestors(n):
            if isinstance(anc, cst.Call):
                q = m.qualname(anc.func) or ""
                if q.startswith("torch.optim.") or m.kind_of(anc) is Kind.OPTIMIZER:
                    return True
            if isinstance(anc, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return False
        return False

    @staticmethod
    def _inside(m, node, loop) -> bool:
        return any(a is loop for a in m.ancestors(node))

    def _invariant_name(self, ctx, facts, name: cst.Name, loop) -> bool:
        m = ctx.model
        bindings = m.bindings_of(name)
        if not bindings:
            return False
        for b in bindings:
            if self._inside(m, b.node, loop) or not facts.before(b.node, loop):
                return False
        # every use in the loop only reads the tensor
        for n in walk(loop):
            if isinstance(n, cst.Name) and n.value == name.value and not self._read_only(ctx, facts, n):
                return False
        return not _stepped_in(m, name, loop)

    def _read_only(self, ctx, facts, n: cst.Name) -> bool:
        m = ctx.model
        parent = m.parent(n)
        if isinstance(parent, cst.Attribute) and parent.value is n:
            grand = m.parent(parent)
            if isinstance(grand, cst.Call) and grand.func is parent:
                meth = parent.attr.value
                return not meth.endswith("_") and meth not in ("resize_", "set_", "copy_", "put_", "index_put_")
            if isinstance(grand, (cst.AssignTarget, cst.AugAssign, cst.Del)):
                return False
            return parent.attr.value in ("device", "dtype", "shape", "T", "ndim")
        if isinstance(parent, cst.Subscript) and parent.value is n:
            return not isinstance(m.parent(parent), (cst.AssignTarget, cst.AugAssign, cst.Del))
        if isinstance(parent, _READ_PARENTS):
            return True
        if isinstance(parent, cst.Arg):
            call = m.parent(parent)
            if isinstance(call, cst.Call):
                q = m.qualname(call.func) or ""
                if q.startswith("torch.") and not any(a.keyword is not None and a.keyword.value == "out" for a in call.args):
                    return True
                if facts.is_model(call.func) or facts.is_loss_module(call.func):
                    return True
                if isinstance(call.func, cst.Name) and call.func.value in ("print", "len"):
                    return True
        return False

    def _invariant_expr(self, ctx, facts, expr, loop) -> bool:
        m = ctx.model
        for n in [expr, *walk(expr)]:
            if isinstance(n, cst.Name) and not (isinstance(m.parent(n), cst.Attribute) and m.parent(n).attr is n):
                for b in m.bindings_of(n):
                    if self._inside(m, b.node, loop):
                        return False
            if isinstance(n, cst.Call):
                return False
        return True

    def _hoist(self, ctx, facts, call, loop):
        m = ctx.model
        assign = m.parent(call)
        line = m.parent(assign)
        if not (isinstance(assign, cst.Assign) and assign.value is call and isinstance(line, cst.SimpleStatementLine)):
            return None
        if len(line.body) != 1 or len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
            return None
        if m.parent(line) is not loop.body:
            return None  # only statements that run unconditionally on every iteration
        target = assign.targets[0].target
        if any(b.node is not target and self._inside(m, b.node, loop) for b in m.bindings_of(target)):
            return None
        if not isinstance(loop.body, cst.IndentedBlock) or len(loop.body.body) < 2:
            return None
        start, _ = ctx.span(loop)
        row = ctx.location(start)[0] - len(loop.leading_lines)
        offset = ctx.line_starts()[row - 1]
        return ctx.fix(
            ctx.insert_text(offset, ctx.indent_of(loop) + self._line_text(ctx, line) + ctx.newline),
            ctx.remove_statement(line),
            message="Move the transfer above the loop",
        )

    @staticmethod
    def _line_text(ctx: Context, line: cst.SimpleStatementLine) -> str:
        """The statement with its trailing comment, without indentation or newline."""
        first, last = ctx._line_bounds(line)
        return ctx.source[first:last].strip()


# kinds of an instance attribute whose call cannot reach the instance's other attributes
_CALLABLE_VALUES = frozenset(("module", "optimizer", "scheduler", "scaler"))
_NO_DEVICE_KEYWORDS = frozenset(("dtype", "non_blocking", "copy", "memory_format"))


def _stepped_in(m, name: cst.Name, loop) -> bool:
    """An optimizer built over the tensor steps in the loop and so changes it in place (DeepRobust's
    CW-L2 attack: `modifier = nn.Parameter(start)`, `optimizer = torch.optim.Adam([modifier, ], ...)`,
    then `self.gan(modifier.to(self.device))` ... `optimizer.step()` on every iteration):
    `optimizer.step()` or `scaler.step(optimizer)` in the loop, the optimizer's binding a call
    whose arguments name the tensor."""
    for n in walk(loop):
        if not (isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "step"):
            continue
        opts = [n.func.value, *(a.value for a in n.args if a.keyword is None)]
        for opt in opts:
            if not isinstance(opt, cst.Name):
                continue
            for b in m.bindings_of(opt):
                v = b.value
                if isinstance(v, cst.Call) and any(
                        isinstance(x, cst.Name) and x.value == name.value for a in v.args for x in (a.value, *walk(a.value))):
                    return True
    return False


def _engine_host_tensor(m, name: cst.Name) -> bool:
    """The flow engine's value of the receiver at the site is a tensor on the host, where the
    binding table cannot type the name (E55-5, pytorch#17854: `fy, fx = torch.meshgrid(...)`, the
    elements of a tuple of tensors). Only a host tensor: a copy that a `.to(device)` of a value
    already on the accelerator (or on it on some path) would not make is no site."""
    v = m.value_of(name)
    return v.kind == TENSOR and v.dev is not None and v.dev.is_host


def _cast_base(m, expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """The name under a chain of dtype casts, `fx.float()` / `mask.long()` / `x.to(torch.float16)`
    (pytorch#17854: a meshgrid built once, `fx.float().cuda()` on every step); None when the chain
    holds anything else (`fx.add(1)`, `fx[0]`), whose result the rule does not follow."""
    base = expr
    while isinstance(base, cst.Call) and isinstance(base.func, cst.Attribute) and (
        (base.func.attr.value in _CASTS and not base.args)
        or (base.func.attr.value == "to" and base.args and _dtype_only(m, base))
    ):
        base = base.func.value
    if base is expr or not (isinstance(base, cst.Name) or isinstance(base, cst.Attribute)
                            and isinstance(base.value, cst.Name)):
        return None
    return base


def _attribute_is_data(m, cls: str, attr: str) -> bool:
    """`attr` is no method or property of the class or its bases of the file, and none of them
    routes attribute access through `__getattr__` / `__getattribute__` / `__setattr__`."""
    seen, todo = set(), [cls]
    while todo:
        c = todo.pop()
        info = m.classes.get(c)
        if c in seen or info is None:
            continue
        seen.add(c)
        names = set(info.methods)
        for stmt in info.node.body.body if isinstance(info.node.body, cst.IndentedBlock) else ():
            if isinstance(stmt, cst.FunctionDef):
                names.add(stmt.name.value)
        if attr in names or names & {"__getattr__", "__getattribute__", "__setattr__"}:
            return False
        todo.extend(b for b in info.bases if b in m.classes)
    return True


def _decorator_name(d: cst.Decorator) -> str:
    e = d.decorator
    if isinstance(e, cst.Call):
        e = e.func
    return e.attr.value if isinstance(e, cst.Attribute) else e.value if isinstance(e, cst.Name) else ""


def _dtype_only(m, call: cst.Call) -> bool:
    """`.to(torch.float16)`, `.to(weight_dtype)`, `.to(dtype=...)`: no argument names a device
    (the engine gives the positional argument a dtype value)."""
    for a in call.args:
        if a.star:
            return False
        if a.keyword is not None:
            if a.keyword.value not in _NO_DEVICE_KEYWORDS:
                return False
        elif m.value_of(a.value).kind != DTYPE and not _dtype_name(m, a.value):
            return False
    return True


def _dtype_name(m, e) -> bool:
    """A name every binding of which reads a tensor's dtype (`dtype = anchors.dtype`): the engine gives
    it no dtype value when the tensor is a parameter (Yet-Another-EfficientDet-Pytorch's focal loss,
    `torch.tensor(0).to(dtype)` in the CPU branch: a cast, no copy)."""
    if not isinstance(e, cst.Name):
        return False
    bs = m.bindings_of(e)
    return bool(bs) and all(
        b.how == "assign" and isinstance(b.value, cst.Attribute) and b.value.attr.value == "dtype" for b in bs
    )



_CASTS = frozenset("float double half bfloat16 long int short char byte bool".split())
_LITERAL_FACTORIES = frozenset(
    f"torch.{n}" for n in (
        "tensor as_tensor Tensor FloatTensor DoubleTensor HalfTensor LongTensor IntTensor ByteTensor BoolTensor"
    ).split()
)


def _literal(node) -> bool:
    if isinstance(node, (cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.Name):
        return node.value in ("True", "False")
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return _literal(node.expression)
    if isinstance(node, (cst.List, cst.Tuple)):
        return bool(node.elements) and all(not isinstance(e, cst.StarredElement) and _literal(e.value)
                                           for e in node.elements)
    return False


def _literal_arg(a: cst.Arg) -> bool:
    if a.star:
        return False
    if a.keyword is None:
        return _literal(a.value)
    if a.keyword.value == "dtype":
        d = dotted(a.value)
        return d is not None and d.startswith("torch.")
    return a.keyword.value == "requires_grad" and isinstance(a.value, cst.Name) and a.value.value == "False"


def _sizes_only(m, factory: cst.Call) -> bool:
    """A legacy typed constructor given bare integers (`torch.Tensor(1000, 1000)`,
    `torch.FloatTensor(8)`): the integers are a shape and the memory is uninitialised, as
    `torch.empty` (P48-1, the GPU-memory demo of tensorboardX vendored in openai/jukebox appends a
    fresh `torch.Tensor(1000, 1000).cuda()` to a list on every iteration). Nothing is read from the
    host, and a buffer the iteration fills or keeps cannot be built once. `torch.tensor(5)` and
    `torch.Tensor([5])` hold data and stay constants."""
    if (m.qualname(factory.func) or "") in ("torch.tensor", "torch.as_tensor"):
        return False
    pos = [a.value for a in factory.args if a.keyword is None]
    return bool(pos) and all(
        isinstance(v, cst.Integer) or (isinstance(v, cst.UnaryOperation) and isinstance(v.expression, cst.Integer))
        for v in pos
    )


def _lazy_guard(m, call, loop) -> bool:
    """An `if` between the loop and the call that tests a cache (`if x is None:`, `if not cache:`):
    built once."""
    for anc in m.ancestors(call):
        if anc is loop:
            return False
        if isinstance(anc, cst.If):
            t = anc.test
            if isinstance(t, cst.Comparison) and any(isinstance(c.operator, (cst.Is, cst.NotIn)) for c in t.comparisons):
                return True
            if isinstance(t, cst.UnaryOperation) and isinstance(t.operator, cst.Not):
                return True
    return False


def _one_iteration_only(m, call, loop) -> bool:
    """An `if` between the loop and the call that compares the loop's counter with a number
    (`if epoch == 0:` in `for epoch in range(n)`, `if i == 0:` in `for i, batch in
    enumerate(loader)`, RexYing/gnn-model-explainer's explain.py logging the attention matrix at
    the first epoch): the branch runs on one iteration at most, so the copy is made once, not on
    every iteration. Only a counter (the target of `range(...)`, the index of `enumerate(...)`),
    whose values do not repeat; `for label in labels: if label == 0:` can match many times."""
    counter = _loop_counter(loop)
    if counter is None or any(
            isinstance(n, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign)) and isinstance(n.target, cst.Name)
            and n.target.value == counter for n in walk(loop.body)):
        return False  # the counter is re-bound in the loop: its values may repeat
    node = call
    for anc in m.ancestors(call):
        if anc is loop:
            return False
        if isinstance(anc, cst.If) and node is anc.body and _tests_counter_equal(anc.test, counter):
            return True
        node = anc
    return False


def _loop_counter(loop) -> str | None:
    if not isinstance(loop, cst.For) or not isinstance(loop.iter, cst.Call) or not isinstance(loop.iter.func, cst.Name):
        return None
    fn = loop.iter.func.value
    target = loop.target
    if fn == "range" and isinstance(target, cst.Name):
        return target.value
    if fn == "enumerate" and isinstance(target, (cst.Tuple, cst.List)) and target.elements and \
            isinstance(target.elements[0].value, cst.Name):
        return target.elements[0].value.value
    return None


def _tests_counter_equal(test, counter: str) -> bool:
    """`counter == <int>` (either side), alone or as one operand of an `and`."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _tests_counter_equal(test.left, counter) or _tests_counter_equal(test.right, counter)
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.Equal)):
        return False
    left, right = test.left, test.comparisons[0].comparator
    for a, b in ((left, right), (right, left)):
        if isinstance(a, cst.Name) and a.value == counter and isinstance(b, cst.Integer):
            return True
    return False


# collectives of torch.distributed that write their tensor argument in place
_INPLACE_COLLECTIVES = frozenset(
    f"torch.distributed.{n}" for n in ("all_reduce", "reduce", "broadcast", "recv", "irecv", "all_reduce_coalesced")
)


def _fresh_buffer(m, call, loop) -> bool:
    """`name = <constant>.cuda()` whose name the same loop then changes in place: a per-iteration
    accumulator (`loss = torch.FloatTensor([0]).cuda()`, then `loss += F.cross_entropy(...)`,
    hendrycks/ss-ood label_corruption/train_ss.py) or the buffer of an in-place collective
    (`size1 = torch.LongTensor([0]).cuda()`, then `dist.all_reduce(size1)`, WXinlong/DenseCL
    openselfsup/models/memories/odc_memory.py). Built once above the loop it would carry the last
    iteration's value into the next one; the fresh constant is the point."""
    stmt = m.statement_of(call)
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
        return False
    a = stmt.body[0]
    if not (isinstance(a, cst.Assign) and a.value is call and len(a.targets) == 1
            and isinstance(a.targets[0].target, cst.Name)):
        return False
    name = a.targets[0].target.value
    for n in walk(loop):
        if isinstance(n, cst.AugAssign) and isinstance(n.target, cst.Name) and n.target.value == name:
            return True
        if isinstance(n, cst.AugAssign) and isinstance(n.target, cst.Subscript) and \
                isinstance(n.target.value, cst.Name) and n.target.value.value == name:
            return True
        if isinstance(n, cst.AssignTarget) and isinstance(n.target, cst.Subscript) and \
                isinstance(n.target.value, cst.Name) and n.target.value.value == name:
            return True
        if not isinstance(n, cst.Call):
            continue
        f = n.func
        if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == name and \
                f.attr.value.endswith("_") and not f.attr.value.startswith("_"):
            return True  # `name.add_(...)`, `name.zero_()`
        if (m.qualname(f) or "") in _INPLACE_COLLECTIVES and n.args and not n.args[0].star and \
                isinstance(n.args[0].value, cst.Name) and n.args[0].value.value == name:
            return True
        if any(x.keyword is not None and x.keyword.value == "out" and isinstance(x.value, cst.Name)
               and x.value.value == name for x in n.args):
            return True
    return False
