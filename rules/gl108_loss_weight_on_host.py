"""GL108 loss-weight-on-host."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.mismatch import accelerator_named_cpu
from gpulint.analysis.devices import DeviceFacts
from gpulint.model import MODULE_BASES, TENSOR_FACTORIES, Move
from gpulint.rule import Context, Kind, Rule

# loss classes whose first positional parameter is `weight`
_WEIGHT_FIRST = frozenset(
    {"CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "MultiLabelSoftMarginLoss", "NLLLoss2d"}
)
_FRAMEWORKS = {"lightning", "accelerate", "hf-trainer", "deepspeed"}
_HOST_FUNCTIONS = frozenset({"from_numpy", "FloatTensor", "Tensor", "DoubleTensor", "LongTensor"})


class LossWeightOnHost(Rule):
    code = "GL108"
    name = "loss-weight-on-host"
    summary = "A loss built with `weight=`/`pos_weight=` from a CPU tensor, used with a model moved to a GPU."
    message = "`{loss}` keeps its `{kw}` tensor on the CPU while the model is on {device}; move the loss: `{fixed}`"
    fix_safety = "safe"
    default = True
    kind = "crash"
    prefilter = r"weight"
    ast_prefilter = r"(?i)loss"
    explanation = '''
Loss modules such as `nn.CrossEntropyLoss(weight=...)` and `nn.BCEWithLogitsLoss(pos_weight=...)`
store the tensor they are given as a buffer. When the model is moved to the GPU but the loss is
not, the first loss call mixes devices:
`RuntimeError: Expected all tensors to be on the same device, but got weight is on cpu, different
from other tensors on cuda:0 (when checking argument in method wrapper_CUDA_nll_loss_forward)`.
Because the weight is a buffer, `criterion.to(device)` moves it (a loss without a weight has
nothing to move, which is why most scripts never move their loss).

The fix appends `.to(D)` to the loss constructor, D being the expression the model was moved
with (`.cuda()` when the model was moved with `.cuda()`); it is offered only where that move is
unconditional and D can be evaluated at the loss constructor.

The rule is silent when the weight tensor is created on or moved to a device, when the loss is
moved anywhere, when it is an attribute of an `nn.Module` (moving the model moves it), and in
scripts driven by Lightning, Accelerate, the HF Trainer or DeepSpeed.

Bad:

```python
class_weights = torch.tensor([1.0, 5.0])
model = Net().to(device)
criterion = nn.CrossEntropyLoss(weight=class_weights)
```

Good:

```python
class_weights = torch.tensor([1.0, 5.0])
model = Net().to(device)
criterion = nn.CrossEntropyLoss(weight=class_weights).to(device)
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        if m.frameworks & _FRAMEWORKS:
            return
        facts = m.facts(DeviceFacts)
        reported: set = set()
        yield from self._loss_calls(ctx, facts, reported)
        yield from self._engine(ctx, reported)

    def _loss_calls(self, ctx: Context, facts, reported: set):
        m = ctx.model
        model_moves = self._model_moves(ctx, facts)
        if not model_moves:
            return
        for call in m.calls:
            q = m.qualname(call.func)
            if not q or not q.startswith("torch.nn.") or not q.endswith("Loss"):
                continue
            weight, kw = self._weight_arg(call, q)
            if weight is None or not self._on_host(ctx, facts, weight, 0):
                continue
            target = self._bound_name(ctx, call)
            if target is None:
                continue
            if m.moves_of(target) or self._moved_through_parameter(ctx, target):
                continue  # the loss is moved (or its device handled) somewhere
            owner = m.class_of(call)
            if owner is not None and m.class_is(owner.name.value, MODULE_BASES):
                continue  # a submodule: moving the model moves it
            move, receiver = model_moves[0]
            suffix = self._suffix(ctx, facts, move, receiver, call)
            loss_code = ctx.code(call.func)
            device = f"`{ctx.code(move.device)}`" if move.device is not None else "`cuda`"
            fix = None
            if suffix is not None:
                fix = ctx.fix(ctx.insert_text(ctx.span(call)[1], suffix), message=f"Move the loss: `{suffix}`")
            # without a fix: the move the model gets (`.cuda()` under `if use_cuda:`), not a
            # `device` name the file may not have
            fixed = f"{loss_code}(...){suffix or self._model_move_text(ctx, move)}"
            reported.add(call)
            yield ctx.finding(call, self.message.format(loss=loss_code, kw=kw, device=device, fixed=fixed), fix)

    def _engine(self, ctx: Context, reported: set):
        """The flow engine: a loss module holding a CPU weight, called with tensors on the
        accelerator (the loss built in a helper or a trainer method, the weight computed there)."""
        from gpulint import flowkb

        m = ctx.model
        for mm in m.mismatches():
            if accelerator_named_cpu(m, mm):
                continue  # `device = "cpu"`: both operands are on the host
            if mm.op != "module-host":
                continue
            ctor = mm.host_value.origin
            if not isinstance(ctor, cst.Call) or ctor in reported:
                continue
            q = m.qualname(ctor.func)
            if not q or not ("loss" in flowkb.class_tags(q) or q.endswith("Loss")):
                continue
            weight, kw = self._weight_arg(ctor, q)
            if weight is None:
                continue
            owner = m.class_of(ctor)
            if owner is not None and m.class_is(owner.name.value, MODULE_BASES) and not isinstance(
                    mm.host, cst.Subscript):
                continue  # a submodule moves with its module (one kept in a plain list does not)
            reported.add(ctor)
            d = mm.acc_value.dev
            expr = ctx.code(d.expr) if d is not None and d.expr is not None else None
            device = f"`{expr}`" if expr is not None else "an accelerator"
            loss_code = ctx.code(ctor.func)
            fixed = f"{loss_code}(...).to({expr if expr is not None else '<the model device>'})"
            fix = None
            in_module = owner is not None and m.class_is(owner.name.value, MODULE_BASES)
            outer = _named(m, getattr(d, "outer", None) if d is not None else None)
            if (expr is not None and not in_module and outer is not None
                    and not m.facts(DeviceFacts).visible_at(d.expr, ctor) and m.facts(DeviceFacts).visible_at(outer, ctor)):
                # `self.device` inside the trainer class, set from the script's `device`: that name
                # where the loss is built
                expr = ctx.code(outer)
                device, fixed = f"`{expr}`", f"{loss_code}(...).to({expr})"
                fix = ctx.fix(ctx.insert_text(ctx.span(ctor)[1], f".to({expr})"), message=f"Move the loss: `.to({expr})`")
            elif expr is not None and not in_module and m.facts(DeviceFacts).visible_at(d.expr, ctor):
                # the device the engine found the model on (a trainer's `self.device` resolved to
                # the script's `device`), written where the loss is built; not inside an
                # nn.Module (a loss kept in a plain list there wants nn.ModuleList, GL107)
                fix = ctx.fix(ctx.insert_text(ctx.span(ctor)[1], f".to({expr})"), message=f"Move the loss: `.to({expr})`")
            yield ctx.finding(ctor, self.message.format(loss=loss_code, kw=kw, device=device, fixed=fixed), fix)

    @staticmethod
    def _model_move_text(ctx: Context, move: Move) -> str:
        """The model's own move, written for the loss: `.cuda()`, `.cuda(1)`, `.to(dev)`."""
        if move.method == "cuda":
            return f".cuda({ctx.code(move.device)})" if move.device is not None else ".cuda()"
        if move.device is not None:
            return f".to({ctx.code(move.device)})"
        return ".to(<the model device>)"

    # the model ---------------------------------------------------------------------------------
    @staticmethod
    def _model_moves(ctx: Context, facts: DeviceFacts) -> list[tuple[Move, cst.CSTNode]]:
        """Module moves to a non-CPU device in the file, with the statement-level receiver."""
        m = ctx.model
        out = []
        for call in m.calls:
            mv = m.move_of_call(call)
            if mv is None or mv.to_cpu or facts.device_is_cpu(mv.device):
                continue
            if mv.method == "device=":
                continue
            recv = call.func.value if isinstance(call.func, cst.Attribute) else None
            if recv is None or m.kind_of(recv) is not Kind.MODULE:
                continue
            q = m.qualname(recv.func) if isinstance(recv, cst.Call) else None
            if q and q.startswith("torch.nn.") and q.endswith("Loss"):
                continue
            if isinstance(recv, (cst.Name, cst.Attribute)) and facts.accelerator_moves(recv) == []:
                continue  # moved back to the CPU somewhere
            out.append((mv, call))
        out.sort(key=lambda t: facts.order(t[1]))
        return out

    @staticmethod
    def _moved_through_parameter(ctx: Context, target: cst.BaseExpression) -> bool:
        """`def train(model, criterion): criterion.to(device)` called with our loss (or with
        arguments we cannot see, for a parameter named like a loss)."""
        m = ctx.model
        if not isinstance(target, cst.Name):
            return False
        mine = m.bindings_of(target)
        for _call, recv, _meth in m.method_calls("to", "cuda"):
            if not isinstance(recv, cst.Name):
                continue
            for b in m.bindings_of(recv):
                if b.how != "param":
                    continue
                args = m.param_arguments(b)
                if not args:
                    low = b.name.lower()
                    if "loss" in low or "crit" in low:
                        return True
                    continue
                if any(isinstance(a, cst.Name) and m.bindings_of(a) is mine for a in args):
                    return True
        return False

    @staticmethod
    def _suffix(ctx: Context, facts: DeviceFacts, move: Move, move_call: cst.CSTNode, loss: cst.Call) -> str | None:
        m = ctx.model
        # the model move must run unconditionally (same scope: before the loss or after it)
        stmt = m.statement_of(move_call)
        scope = m.scope_of(move_call)
        body = scope if isinstance(scope, cst.Module) else getattr(scope, "body", None)
        if stmt is None or not isinstance(body, (cst.Module, cst.IndentedBlock)):
            return None
        top = stmt
        while m.parent(top) is not None and m.parent(top) is not body:
            top = m.parent(top)
        if m.parent(top) is not body or not facts.always_reaches(move_call, top):
            # else the block both statements share, when the move always runs in it: a model and
            # its loss made in the same iteration of a loop (`for fold in ...:` in main())
            top = LossWeightOnHost._shared_block_top(m, stmt, loss)
            if top is None or not facts.always_reaches(move_call, top):
                return None
        if move.method == "cuda":
            if move.device is None:
                return ".cuda()"
            return f".cuda({ctx.code(move.device)})" if facts.visible_at(move.device, loss) else None
        if move.device is None or not facts.visible_at(move.device, loss):
            return None
        return f".to({ctx.code(move.device)})"

    @staticmethod
    def _shared_block_top(m, stmt, loss: cst.Call):
        """The statement holding `stmt` in the innermost block (same function) that also holds
        `loss`; None when there is none."""
        if m.scope_of(stmt) is not m.scope_of(loss):
            return None
        cur = stmt
        while True:
            parent = m.parent(cur)
            if parent is None or isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return None
            if isinstance(parent, (cst.IndentedBlock, cst.Module)) and m.contains(parent, loss):
                return cur
            cur = parent

    # the loss ----------------------------------------------------------------------------------
    @staticmethod
    def _weight_arg(call: cst.Call, q: str) -> tuple[cst.BaseExpression | None, str]:
        for a in call.args:
            if a.keyword is not None and a.keyword.value in ("weight", "pos_weight"):
                if isinstance(a.value, cst.Name) and a.value.value == "None":
                    continue
                return a.value, a.keyword.value
        pos = [a for a in call.args if a.keyword is None and not a.star]
        if pos and q.rsplit(".", 1)[-1] in _WEIGHT_FIRST:
            return pos[0].value, "weight"
        return None, ""

    def _on_host(self, ctx: Context, facts: DeviceFacts, e: cst.BaseExpression, depth: int) -> bool:
        """The weight tensor is known to be computed on the CPU (factories without `device=`,
        `torch` functions and tensor methods of such tensors) and never moved."""
        m = ctx.model
        if depth > 16:
            return False
        host = lambda x: self._on_host(ctx, facts, x, depth + 1)  # noqa: E731
        if isinstance(e, cst.Call):
            if m.move_of_call(e) is not None:
                return False  # .to(...), .cuda(), device=...
            q = m.qualname(e.func)
            if q and q.startswith("torch."):
                tail = q[6:]
                if tail in TENSOR_FACTORIES or tail in _HOST_FUNCTIONS:
                    return True
                if "." in tail or not tail[:1].islower():
                    return False
                tensors = [a.value for a in e.args if a.keyword is None and not _literal(a.value)]
                return bool(tensors) and all(host(t) for t in tensors)
            if isinstance(e.func, cst.Attribute) and e.func.attr.value not in ("to", "cuda", "pin_memory"):
                if m.kind_of(e.func.value) is Kind.MODULE:
                    return False
                return host(e.func.value)
            return False
        if isinstance(e, cst.Subscript):
            return host(e.value)
        if isinstance(e, cst.BinaryOperation):
            sides = [s for s in (e.left, e.right) if not _literal(s)]
            return bool(sides) and all(host(s) for s in sides)
        if isinstance(e, cst.Comparison):
            sides = [e.left, *(c.comparator for c in e.comparisons)]
            sides = [s for s in sides if not _literal(s)]
            return bool(sides) and all(host(s) for s in sides)
        if isinstance(e, cst.Name):
            bs = m.bindings_of(e)
            if not bs or any(b.how != "assign" for b in bs):
                return False
            if m.moves_of(e):
                return False
            return all(host(b.value) for b in bs)
        return False

    @staticmethod
    def _bound_name(ctx: Context, call: cst.Call) -> cst.BaseExpression | None:
        """`criterion` in `criterion = nn.CrossEntropyLoss(...)` (the constructor is the whole value)."""
        parent = ctx.model.parent(call)
        if isinstance(parent, cst.Assign) and parent.value is call and len(parent.targets) == 1:
            t = parent.targets[0].target
            if isinstance(t, (cst.Name, cst.Attribute)):
                return t
        if isinstance(parent, cst.AnnAssign) and parent.value is call and isinstance(parent.target, (cst.Name, cst.Attribute)):
            return parent.target
        return None


def _literal(e: cst.BaseExpression) -> bool:
    if isinstance(e, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(e, cst.UnaryOperation):
        return _literal(e.expression)
    if isinstance(e, (cst.List, cst.Tuple)):
        return all(_literal(el.value) for el in e.elements)
    return False


def _named(m, expr):
    """A device expression as a name: itself when it is one, else the module-level name assigned
    exactly that expression (`device = torch.device(...)`), else None."""
    if expr is None or isinstance(expr, (cst.Name, cst.Attribute)):
        return expr
    for (scope, _name), bindings in m.bindings.items():
        if scope is m.module:
            for b in bindings:
                if b.how == "assign" and b.value is expr and isinstance(b.node, cst.Name):
                    return b.node
    return None
