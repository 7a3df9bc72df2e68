"""GL207 gradscaler-with-fp16-weights."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from gpulint.analysis.amp import FLOAT16, AmpFacts
from gpulint.analysis.training import TrainingFacts
from gpulint.model import ScriptModel, dotted, is_optimizer_qualname
from gpulint.rule import Context, Rule
from gpulint.sites import line_ref

# GradScalers whose unscale_ refuses float16 gradients (ShardedGradScaler accepts them)
STRICT_SCALERS = frozenset(
    {
        "torch.amp.GradScaler",
        "torch.amp.grad_scaler.GradScaler",
        "torch.GradScaler",
        "torch.cuda.amp.GradScaler",
        "torch.cuda.amp.grad_scaler.GradScaler",
        "torch.cpu.amp.GradScaler",
        "torch.cpu.amp.grad_scaler.GradScaler",
    }
)
FLOAT32 = frozenset({"torch.float32", "torch.float", "torch.float64", "torch.double"})
_DEFS = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
_CHAIN = ("to", "cuda", "cpu", "train", "eval", "requires_grad_")
_MAX_DEPTH = 6


@dataclass
class HalfModel:
    name: str  # the model as the optimizer's constructor names it
    conversion: cst.Call  # `.half()` / `.to(torch.float16)` / `from_pretrained(..., torch_dtype=float16)`


class GradScalerWithFp16Weights(Rule):
    code = "GL207"
    name = "gradscaler-with-fp16-weights"
    summary = "A GradScaler steps an optimizer over a model converted to float16: `unscale_` raises on the GPU."
    message = "`{s}.{meth}({o})` unscales the gradients of `{m}`, whose weights were converted to float16 ({line}): GradScaler raises \"Attempting to unscale FP16 gradients\"; keep the weights in float32 and run the forward pass under `torch.autocast(device_type, dtype=torch.float16)` (or train in bfloat16 without a scaler)"
    fix_safety = "none"
    default = True
    kind = "crash"
    prefilter = r"\.half\(|float16|torch\.half"
    ast_prefilter = r"^\.half\($|float16|^half$"
    explanation = '''
A `GradScaler` keeps the loss scale and, in `scaler.unscale_(optimizer)` (also run by
`scaler.step(optimizer)`), divides the gradients by it in float32. It is built for mixed precision,
where the weights (and so their gradients) stay float32 and only the forward pass runs in float16
under `torch.autocast`. When the model itself was converted with `model.half()` (or
`model.to(torch.float16)`, or loaded with `torch_dtype=torch.float16`), its gradients are float16
and `unscale_` raises `ValueError: Attempting to unscale FP16 gradients.` at the first step.

Keep the weights in float32 and let autocast run the forward pass in float16; or, on hardware with
bfloat16, train with `torch.autocast(device_type, dtype=torch.bfloat16)` and no scaler. No
automatic fix: the conversion, the inputs' dtype and the loop all change.

The rule follows the optimizer that the scaler steps to the model whose `.parameters()` built it,
through assignments, function returns and call arguments of the file. It stays silent when part of
the model is converted back to float32, when the scaler is built with `enabled=` something other
than `True` or `torch.cuda.is_available()`, for `ShardedGradScaler` (which accepts float16 gradients), and when the optimizer
receives a filtered parameter list (adapters trained in float32 over a frozen float16 model).

Bad:

```python
model = Net().to(device).half()
optimizer = torch.optim.AdamW(model.parameters())
scaler = torch.amp.GradScaler("cuda")
for x, y in loader:
    with torch.autocast("cuda", dtype=torch.float16):
        loss = criterion(model(x.to(device)), y.to(device))
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
```

Good:

```python
model = Net().to(device)
optimizer = torch.optim.AdamW(model.parameters())
scaler = torch.amp.GradScaler("cuda")
for x, y in loader:
    with torch.autocast("cuda", dtype=torch.float16):
        loss = criterion(model(x.to(device)), y.to(device))
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        yield from self._lightning(ctx)
        amp = m.facts(AmpFacts)
        if not amp.scaler_calls:
            return
        half = _Half(m)
        seen: set[tuple] = set()
        calls = sorted(
            (sc for sc in amp.scaler_calls if sc.method in ("unscale_", "step") and sc.optimizer is not None),
            key=lambda sc: m.order[sc.call],
        )
        for sc in calls:
            key = (sc.scaler, sc.optimizer, m.scope_of(sc.call))
            if key in seen:
                continue
            recv = sc.call.func.value  # type: ignore[attr-defined]
            if not half.strict_scaler(recv):
                continue
            opt_arg = next(a.value for a in sc.call.args if a.keyword is None and not a.star)
            found = half.half_model_of_optimizer(opt_arg, sc.call)
            if found is not None:
                name, at = found.name, found.conversion
            else:
                # the flow engine: an optimizer over the parameters of a module converted to
                # float16, passed through the file's functions (`model.half()` in main())
                v = m.value_of(opt_arg)
                if v.kind != "optimizer" or not v.half or not isinstance(v.half_at, cst.Call) or v.placed is None:
                    continue
                name, at = ctx.code(v.placed), v.half_at
            seen.add(key)
            message = self.message.format(s=sc.scaler, meth=sc.method, o=sc.optimizer, m=name, line=line_ref(ctx, at))
            yield ctx.finding(sc.call, message)


    def _lightning(self, ctx: Context):
        """A Lightning Trainer with native 16-bit mixed precision (`precision=16`, `"16"`,
        `"16-mixed"`) fitting a module converted to float16 before the fit: the Trainer's
        GradScaler unscales before every optimizer step (Lightning#5140)."""
        m = ctx.model
        half = None
        for call, recv, _meth in m.method_calls("fit"):
            trainer = _lightning_trainer(m, recv)
            if trainer is None or not _mixed16(trainer):
                continue
            model = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "model"), None)
            if model is None:
                pos = [a for a in call.args if a.keyword is None]
                if not pos or pos[0].star:
                    continue
                model = pos[0].value
            half = half or _Half(m)
            found = half.half(model, call)
            if found is None:
                continue
            prec = next(a.value for a in trainer.args if a.keyword is not None and a.keyword.value == "precision")
            yield ctx.finding(
                trainer,
                f"this Trainer runs Lightning's 16-bit mixed precision (`precision={ctx.code(prec)}`), which keeps a "
                f"GradScaler and unscales the gradients before every optimizer step, but `{found.name}` it fits was "
                f"converted to float16 ({line_ref(ctx, found.conversion)}): the first step raises \"Attempting to "
                "unscale FP16 gradients\"; drop the conversion (mixed precision already runs the forward in float16) "
                "and convert a copy for saving after `fit`",
            )


_LIGHTNING_TRAINERS = frozenset({
    "pytorch_lightning.Trainer", "pytorch_lightning.trainer.Trainer", "pytorch_lightning.trainer.trainer.Trainer",
    "lightning.Trainer", "lightning.pytorch.Trainer", "lightning.pytorch.trainer.Trainer",
    "lightning.pytorch.trainer.trainer.Trainer",
})


def _lightning_trainer(m: ScriptModel, recv: cst.BaseExpression) -> cst.Call | None:
    """The `Trainer(...)` call `recv` is (or the only value of the name `recv`)."""
    if isinstance(recv, cst.Call):
        return recv if m.qualname(recv.func) in _LIGHTNING_TRAINERS else None
    if isinstance(recv, cst.Name):
        binds = m.bindings_of(recv)
        if len(binds) == 1 and binds[0].how == "assign" and isinstance(binds[0].value, cst.Call):
            v = binds[0].value
            return v if m.qualname(v.func) in _LIGHTNING_TRAINERS else None
    return None


def _mixed16(trainer: cst.Call) -> bool:
    """`precision=16`, `"16"` or `"16-mixed"` (not `"16-true"`, bf16 or 32)."""
    if any(a.star for a in trainer.args):
        return False
    prec = next((a.value for a in trainer.args if a.keyword is not None and a.keyword.value == "precision"), None)
    if isinstance(prec, cst.Integer):
        return prec.value == "16"
    if isinstance(prec, cst.SimpleString):
        return prec.evaluated_value in ("16", "16-mixed")
    return False


class _Half:
    """Value questions for GL207, through assignments, returns and call arguments of the file."""

    def __init__(self, m: ScriptModel) -> None:
        self.m = m
        self.t: TrainingFacts = m.facts(TrainingFacts)
        self.amp: AmpFacts = m.facts(AmpFacts)

    # values ---------------------------------------------------------------------------------
    def values(self, expr: cst.BaseExpression, depth: int = 0) -> list[cst.BaseExpression] | None:
        """What a name / `self.attr` may hold: the assigned expressions, the arguments its
        function receives at the file's call sites; None when the file does not show it."""
        if not isinstance(expr, (cst.Name, cst.Attribute)) or depth > _MAX_DEPTH:
            return None
        bindings = self.m.bindings_of(expr)
        if not bindings:
            return None
        out: list[cst.BaseExpression] = []
        for b in bindings:
            if b.how == "assign" and isinstance(b.value, cst.BaseExpression):
                out.append(b.value)
            elif b.how == "param":
                fn = self.m.enclosing(b.node, cst.FunctionDef)
                if not isinstance(fn, cst.FunctionDef):
                    return None
                sites = self.t.call_sites(fn)
                if not sites:
                    return None
                for site in sites:
                    arg = self.t.argument_for(fn, site, b.name)
                    if arg is None:
                        return None
                    out.append(arg)
            else:
                return None
        return out

    def constructors(self, expr: cst.BaseExpression, depth: int = 0) -> list[cst.Call] | None:
        """The calls that built the value (through names and moves), or None."""
        if depth > _MAX_DEPTH:
            return None
        while _chain_call(expr):
            expr = expr.func.value  # type: ignore[union-attr]
        if isinstance(expr, cst.Call):
            return [expr]
        vals = self.values(expr, depth)
        if vals is None:
            return None
        out: list[cst.Call] = []
        for v in vals:
            found = self.constructors(v, depth + 1)
            if found is None:
                return None
            out.extend(found)
        return out

    # the scaler -----------------------------------------------------------------------------
    def strict_scaler(self, recv: cst.BaseExpression) -> bool:
        ctors = self.constructors(recv)
        if not ctors:
            return False
        for c in ctors:
            if self.m.qualname(c.func) not in STRICT_SCALERS:
                return False
            for a in c.args:
                if a.star:
                    return False
                if a.keyword is not None and a.keyword.value == "enabled":
                    v = a.value
                    if isinstance(v, cst.Name) and v.value == "True":
                        continue
                    if isinstance(v, cst.Call) and self.m.qualname(v.func) == "torch.cuda.is_available":
                        continue  # enabled exactly where it raises: on a GPU
                    return False
        return True

    # the optimizer and its model ---------------------------------------------------------------
    def half_model_of_optimizer(self, opt: cst.BaseExpression, use: cst.CSTNode) -> HalfModel | None:
        ctors = self.constructors(opt)
        if not ctors:
            return None
        found = None
        for c in ctors:
            q = self.m.qualname(c.func)
            if q is None or not is_optimizer_qualname(q):
                return None
            params = _params_arg(c)
            if params is None:
                return None
            owner = _parameters_owner(params)
            if owner is None:
                return None  # a filtered or hand-built parameter list: cannot tell
            half = self.half(owner, use)
            if half is None:
                return None  # every constructor must see a float16 model
            found = half
        return found

    def half(self, model: cst.BaseExpression, use: cst.CSTNode, depth: int = 0) -> HalfModel | None:
        """`model` (a name, `self.attr` or call expression) holds float16 weights."""
        if depth > _MAX_DEPTH:
            return None
        name = dotted(model)
        if name is not None and self._converted_back(name):
            return None
        # `model.half()` as a statement on the same name, before the use when in the same scope
        if isinstance(model, (cst.Name, cst.Attribute)) and name is not None:
            conv = self._inplace_conversion(model, name, use)
            if conv is not None:
                return HalfModel(name, conv)
        return self._half_value(model, use, depth, name)

    def _half_value(self, expr, use, depth, name) -> HalfModel | None:
        m = self.m
        if isinstance(expr, cst.Call):
            conv = self._conversion(expr)
            if conv is not None:
                return HalfModel(name or m.module.code_for_node(expr), conv)
            if _chain_call(expr):
                return self._half_value(expr.func.value, use, depth + 1, name)
            fns = self.t.file_functions(expr)
            if len(fns) == 1:
                returns = _returns(m, fns[0])
                if not returns:
                    return None
                found = None
                for r in returns:
                    found = self.half(r, r, depth + 1)
                    if found is None:
                        return None
                return HalfModel(name or found.name, found.conversion) if found else None
            return None
        if isinstance(expr, (cst.Name, cst.Attribute)):
            vals = self.values(expr, depth)
            if not vals:
                return None
            found = None
            for v in vals:
                found = self.half(v, use, depth + 1)
                if found is None:
                    return None
            return HalfModel(name or found.name, found.conversion) if found else None
        return None

    def _conversion(self, call: cst.Call) -> cst.Call | None:
        """`X.half()`, `X.to(torch.float16)` / `.to(dtype=...)` / `.to(device, torch.float16)`,
        `Model.from_pretrained(..., torch_dtype=torch.float16)` (also `dtype=`)."""
        f = call.func
        if not isinstance(f, cst.Attribute):
            return None
        meth = f.attr.value
        if meth == "half" and not call.args:
            return call
        if meth == "to" and self._dtype_arg_is_fp16(call):
            return call
        if meth == "from_pretrained":
            for a in call.args:
                if a.keyword is not None and a.keyword.value in ("torch_dtype", "dtype") and self._fp16(a.value):
                    return call
        return None

    def _dtype_arg_is_fp16(self, call: cst.Call) -> bool:
        for a in call.args:
            if a.star:
                return False
            if a.keyword is None or a.keyword.value == "dtype":
                if self._fp16(a.value):
                    return True
        return False

    def _fp16(self, expr: cst.BaseExpression) -> bool:
        if self.m.qualname(expr) in FLOAT16:
            return True
        if isinstance(expr, cst.Name):
            found = self.amp.possible_dtypes(expr)
            return found == frozenset({"float16"})
        return False

    def _inplace_conversion(self, model, name: str, use: cst.CSTNode) -> cst.Call | None:
        """A statement `name.half()` / `name.to(torch.float16)` (a Module converts in place) in the
        scope where `name` means the same thing; before `use` when `use` is in that scope."""
        m = self.m
        cls = m.class_of(model) if name.startswith("self.") else None
        scope = m.scope_of(model)
        for call, recv, meth in m.method_calls("half", "to"):
            if dotted(recv) != name or self._conversion(call) is None:
                continue
            if not isinstance(m.parent(call), cst.Expr):
                continue  # `y = x.half()` converts a copy for a tensor; handled through values
            if cls is not None:
                if m.class_of(call) is not cls:
                    continue
            elif m.scope_of(call) is not scope:
                continue
            if m.scope_of(call) is m.scope_of(use) and not m.precedes(call, use):
                continue
            return call
        return None

    def _converted_back(self, name: str) -> bool:
        """Some part of the model is converted back to float32 somewhere in the file
        (`model.head.float()`, `for layer in model.modules(): layer.float()`)."""
        for call, recv, meth in self.m.method_calls("float", "to", "double"):
            if meth in ("float", "double"):
                if call.args:
                    continue
            elif not any(
                (a.keyword is None or a.keyword.value == "dtype") and self.m.qualname(a.value) in FLOAT32
                for a in call.args
            ):
                continue
            text = dotted(recv)
            if text is not None and (text == name or text.startswith(name + ".")):
                return True
            if isinstance(recv, cst.Name) and self._iterates_parts_of(recv, name):
                return True
        return False

    def _iterates_parts_of(self, var: cst.Name, name: str) -> bool:
        for b in self.m.bindings_of(var):
            if b.how == "for" and b.value is not None:
                text = self.m.module.code_for_node(b.value)
                if text.startswith(name + "."):
                    return True
        return False


def _chain_call(expr) -> bool:
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value in _CHAIN
        and not (expr.func.attr.value == "to" and any(a.keyword is not None and a.keyword.value == "dtype" for a in expr.args))
    )


def _params_arg(call: cst.Call) -> cst.BaseExpression | None:
    for i, a in enumerate(call.args):
        if a.star:
            return None
        if (a.keyword is None and i == 0) or (a.keyword is not None and a.keyword.value == "params"):
            return a.value
    return None


def _parameters_owner(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """M in `M.parameters()` (M a name or `self.attr`)."""
    if (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == "parameters"
        and not expr.args
        and dotted(expr.func.value) is not None
    ):
        return expr.func.value
    return None


def _returns(m: ScriptModel, fn: cst.FunctionDef) -> list[cst.BaseExpression]:
    out = []
    for n in m.walk(fn.body, _DEFS):
        if isinstance(n, cst.Return):
            if n.value is None:
                return []
            out.append(n.value)
    return out
