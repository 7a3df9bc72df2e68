"""GL504 loop-invariant-transfer."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.paths import is_test_path
from gpulint.analysis.training import TrainingFacts, dotted, walk
from gpulint.flow import DTYPE
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

The same holds for a constant built in the loop from literals and moved there
(`torch.Tensor([[0.1, 0.1, 0.2, 0.2]]).cuda()`, `torch.tensor(0).float().cuda()` in a per-image
loss): the data is read on the host and copied on every iteration of the innermost loop, also with
`device=` on the constructor. Build it once above the loop (no fix is offered for these). A constant
the same loop then changes in place is not reported: a fresh accumulator (`loss =
torch.FloatTensor([0]).cuda()` then `loss += ...`) or the buffer of an in-place collective (`size =
torch.LongTensor([0]).cuda()` then `dist.all_reduce(size)`) must start from its value on every
iteration, and built once it would carry the last iteration's value into the next.

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
            if not isinstance(recv, cst.Name):
                continue
            loop = facts.enclosing_loop(call)
            if loop is None:
                continue
            if facts.kind_of(recv) is not Kind.TENSOR:
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
    if base is expr or not isinstance(base, cst.Name):
        return None
    return base


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
