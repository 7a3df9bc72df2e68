"""Mixed-precision facts shared by the GL2 rules: autocast regions, GradScalers and the order of
scaler calls within one training iteration.

Computed once per file with `ctx.model.facts(AmpFacts)`. Static only: never imports torch.

Vocabulary
- an *autocast region* is a `with torch.autocast(...)` (also `torch.amp.autocast`, the deprecated
  `torch.cuda.amp.autocast` / `torch.cpu.amp.autocast`, a context held in a variable, or the same
  call used as a decorator), with the device types and dtypes it may run with;
- a *scaler* is a value known to be a GradScaler, or the receiver `S` of `S.scale(x).backward()`;
- an *iteration* is the innermost loop around a `.backward()` call that contains it (or the
  enclosing function when there is no loop); events of one iteration are ordered by their position
  in the source, and two events in different branches of one `if`/`else` never follow each other.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Iterable, Iterator

import libcst as cst

from gpulint.model import SCALER_CLASSES, Kind, ScriptModel, branch_of
from gpulint.model import children as _children
from gpulint.model import dotted as _dotted_text

# qualified name -> (device type fixed by the API or None when it is the first argument,
#                    names of the positional parameters after the device type)
AUTOCAST_APIS: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "torch.autocast": (None, ("device_type", "dtype", "enabled", "cache_enabled")),
    "torch.amp.autocast": (None, ("device_type", "dtype", "enabled", "cache_enabled")),
    "torch.amp.autocast_mode.autocast": (None, ("device_type", "dtype", "enabled", "cache_enabled")),
    "torch.cuda.amp.autocast": ("cuda", ("enabled", "dtype", "cache_enabled")),
    "torch.cuda.amp.autocast_mode.autocast": ("cuda", ("enabled", "dtype", "cache_enabled")),
    "torch.cpu.amp.autocast": ("cpu", ("enabled", "dtype", "cache_enabled")),
    "torch.cpu.amp.autocast_mode.autocast": ("cpu", ("enabled", "dtype", "cache_enabled")),
}
# the dtype autocast uses when none is given, by device type
SET_AUTOCAST_ENABLED = "torch.set_autocast_enabled"
SET_AUTOCAST_DTYPE = frozenset({"torch.set_autocast_dtype", "torch.set_autocast_gpu_dtype"})
CONTEXTMANAGER_DECORATORS = frozenset({"contextlib.contextmanager"})
DEFAULT_AUTOCAST_DTYPE = {"cuda": "float16", "cpu": "bfloat16", "xpu": "bfloat16", "mps": "float16",
                          "hpu": "bfloat16"}

# deprecated API -> (replacement's last name, device type)
DEPRECATED_AMP: dict[str, tuple[str, str]] = {
    "torch.cuda.amp.autocast": ("autocast", "cuda"),
    "torch.cuda.amp.autocast_mode.autocast": ("autocast", "cuda"),
    "torch.cpu.amp.autocast": ("autocast", "cpu"),
    "torch.cpu.amp.autocast_mode.autocast": ("autocast", "cpu"),
    "torch.cuda.amp.GradScaler": ("GradScaler", "cuda"),
    "torch.cuda.amp.grad_scaler.GradScaler": ("GradScaler", "cuda"),
    "torch.cpu.amp.GradScaler": ("GradScaler", "cpu"),
    "torch.cpu.amp.grad_scaler.GradScaler": ("GradScaler", "cpu"),
}
DEPRECATED_AMP_MODULES = {
    "torch.cuda.amp": "cuda",
    "torch.cpu.amp": "cpu",
    "torch.cuda.amp.autocast_mode": "cuda",
    "torch.cpu.amp.autocast_mode": "cpu",
    "torch.cuda.amp.grad_scaler": "cuda",
    "torch.cpu.amp.grad_scaler": "cpu",
}

SCALER_QUALNAMES = frozenset(
    SCALER_CLASSES
    | {
        "torch.cpu.amp.GradScaler",
        "torch.cpu.amp.grad_scaler.GradScaler",
        "torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler",
        "torch.distributed.fsdp.ShardedGradScaler",
    }
)
CLIP_FUNCTIONS = frozenset({"clip_grad_norm_", "clip_grad_value_", "clip_grad_norm"})
NO_GRAD_QUALNAMES = frozenset(
    {"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad",
     "torch.autograd.grad_mode.inference_mode"}
)
FLOAT16 = frozenset({"torch.float16", "torch.half"})
BFLOAT16 = frozenset({"torch.bfloat16"})
FLOAT32 = frozenset({"torch.float32", "torch.float"})
# frameworks that do mixed precision (and its loss scaling) themselves
AMP_FRAMEWORKS = frozenset({"lightning", "accelerate", "deepspeed", "hf-trainer", "ignite", "composer"})

_LOOPS = (cst.For, cst.While)
_BUILTINS = frozenset(dir(builtins))


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------


@dataclass
class AutocastRegion:
    call: cst.Call  # the autocast(...) call
    qualname: str
    anchor: cst.CSTNode  # where a diagnostic points: the `with` statement or the decorator
    body: cst.CSTNode  # the With statement, or the decorated FunctionDef
    devices: frozenset[str] | None  # device types it may run on; None: cannot tell
    dtypes: frozenset[str] | None  # "float16" / "bfloat16" / "float32"; None: cannot tell
    device_arg: cst.BaseExpression | None  # the device-type argument as written (new API only)
    enabled: cst.BaseExpression | None  # the `enabled=` argument, None when absent
    condition: cst.BaseExpression | None = None  # `ctx = autocast(...) if COND else nullcontext()`
    via_decorator: bool = False
    # entered through a context manager of the file (a `@contextmanager` function that yields
    # inside autocast, a class whose `__enter__` turns it on): `call` and `enabled` are written
    # there, not at the `with` (the anchor)
    indirect: bool = False

    @property
    def disabled(self) -> bool:
        return isinstance(self.enabled, cst.Name) and self.enabled.value == "False"

    @property
    def may_be_cuda_fp16(self) -> bool:
        """Known to possibly run fp16 autocast on CUDA (every unknown answers False)."""
        if self.disabled or self.devices is None or self.dtypes is None:
            return False
        return "cuda" in self.devices and "float16" in self.dtypes

    @property
    def is_legacy(self) -> bool:
        return AUTOCAST_APIS.get(self.qualname, (None,))[0] is not None


@dataclass
class BackwardCall:
    call: cst.Call  # `X.backward(...)`
    loss: cst.BaseExpression  # X, or L in `S.scale(L).backward()`
    scaler: str | None  # source text of S for `S.scale(L).backward()`
    # S itself (also for `scaled = S.scale(L)` then `scaled.backward()`, E35-1)
    scaler_node: cst.BaseExpression | None = None


@dataclass
class ScalerCall:
    call: cst.Call
    scaler: str  # the receiver's source text
    method: str  # "step" / "unscale_" / "update" / "scale"
    optimizer: str | None  # text of the first argument of step / unscale_


@dataclass
class DirectStep:
    call: cst.Call  # `O.step()`
    optimizer: str


@dataclass
class Iteration:
    """The events of one training iteration (a loop body, or a function without a loop)."""

    node: cst.CSTNode  # For / While / FunctionDef / Module
    backwards: list[BackwardCall] = field(default_factory=list)
    scaler_calls: list[ScalerCall] = field(default_factory=list)
    steps: list[DirectStep] = field(default_factory=list)
    clips: list[cst.Call] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# The analysis
# ---------------------------------------------------------------------------------------------


class AmpFacts:
    def __init__(self, model: ScriptModel) -> None:
        self.m = model
        self.order = model.order
        self._scope_cache = None
        self.regions: list[AutocastRegion] = []
        self.backwards: list[BackwardCall] = []
        self.scaler_calls: list[ScalerCall] = []
        self.direct_steps: list[DirectStep] = []
        self.clips: list[cst.Call] = []
        self.scaler_constructors: list[cst.Call] = []
        self._collect()

    # text -------------------------------------------------------------------------------------
    def text(self, node: cst.CSTNode) -> str:
        return self.m.module.code_for_node(node)

    # collection -------------------------------------------------------------------------------
    def _collect(self) -> None:
        m = self.m
        scaled_receivers: set[str] = set()
        for call in m.calls:
            q = m.qualname(call.func)
            if q in SCALER_QUALNAMES:
                self.scaler_constructors.append(call)
            f = call.func
            if isinstance(f, cst.Attribute) and f.attr.value == "backward":
                recv = f.value
                scaler = None
                loss = recv
                scale = recv if _is_scale_call(recv) else self._scaled_name_value(recv, call)
                scaler_node = None
                if scale is not None:
                    scaler_node = scale.func.value
                    scaler = self.text(scaler_node)
                    loss = scale.args[0].value
                    scaled_receivers.add(scaler)
                self.backwards.append(BackwardCall(call, loss, scaler, scaler_node))
            last = f.attr.value if isinstance(f, cst.Attribute) else f.value if isinstance(f, cst.Name) else None
            if last in CLIP_FUNCTIONS:
                self.clips.append(call)
        self.scaler_names = set(scaled_receivers)
        for call, recv, meth in m.method_calls("step", "unscale_", "update", "scale"):
            text = self.text(recv)
            if text not in self.scaler_names and m.kind_of(recv) is Kind.SCALER:
                self.scaler_names.add(text)
        for call, recv, meth in m.method_calls("step", "unscale_", "update", "scale"):
            text = self.text(recv)
            if text in self.scaler_names:
                opt = None
                if meth in ("step", "unscale_"):
                    pos = [a for a in call.args if a.keyword is None and not a.star]
                    if pos:
                        opt = self.text(pos[0].value)
                self.scaler_calls.append(ScalerCall(call, text, meth, opt))
            elif meth == "step" and m.kind_of(recv) is Kind.OPTIMIZER:
                self.direct_steps.append(DirectStep(call, text))
        self._collect_regions()

    def _scaled_name_value(self, recv: cst.BaseExpression, backward: cst.Call) -> cst.Call | None:
        """`S.scale(L)` when `recv` is a local name bound once, by `recv = S.scale(L)` earlier in
        the same function (`scaled_loss = scaler.scale(loss)` then `scaled_loss.backward()`, E35-1);
        None otherwise (a parameter, a name bound twice or in another scope)."""
        if not isinstance(recv, cst.Name):
            return None
        m = self.m
        bindings = m.bindings_of(recv)
        if len(bindings) != 1:
            return None
        b = bindings[0]
        if b.how != "assign" or not _is_scale_call(b.value) or not isinstance(b.node, cst.Name):
            return None
        if m.scope_of(b.node) is not m.scope_of(backward) or not self.before(b.node, backward):
            return None
        return b.value  # type: ignore[return-value]

    def _collect_regions(self) -> None:
        m = self.m
        for call in m.calls:
            q = m.qualname(call.func)
            if q not in AUTOCAST_APIS:
                continue
            parent = m.parent(call)
            if isinstance(parent, cst.WithItem):
                with_stmt = m.parent(parent)
                self.regions.append(self._region(call, q, with_stmt, with_stmt))
            elif isinstance(parent, cst.Decorator):
                fn = m.parent(parent)
                region = self._region(call, q, parent, fn)
                region.via_decorator = True
                self.regions.append(region)
            elif isinstance(parent, cst.Return) or (
                    isinstance(parent, cst.IfExp) and isinstance(m.parent(parent), cst.Return)):
                # `def maybe_autocast(self): return torch.cuda.amp.autocast(...) if ... else nullcontext()`
                # (BLIP-2/LAVIS style), then `with self.maybe_autocast():`: each such `with` may run it
                self._returned_regions(call, q)
            else:
                # `ctx = autocast(...)` or `ctx = autocast(...) if COND else nullcontext()`, then `with ctx:`
                condition = None
                holder = parent
                if isinstance(parent, cst.IfExp):
                    if parent.body is call:
                        condition = parent.test
                    else:
                        condition = cst.UnaryOperation(cst.Not(), cst.ensure_type(parent.test, cst.BaseExpression))
                    holder = m.parent(parent)
                if not (isinstance(holder, cst.Assign) and len(holder.targets) == 1):
                    continue
                target = holder.targets[0].target
                if (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
                        and target.value.value == "self" and m.class_of(holder) is not None):
                    # `self.ctx = torch.autocast(...)` in `__init__`, `with self.ctx:` in a method
                    self._attribute_regions(call, q, holder, target, condition)
                    continue
                if not isinstance(target, cst.Name):
                    continue
                if len(m.bindings_of(target)) != 1:
                    continue
                for with_stmt in m.withs:
                    for item in with_stmt.items:
                        if isinstance(item.item, cst.Name) and item.item.value == target.value:
                            bound = m.bindings_of(item.item)
                            if len(bound) == 1 and bound[0].node is target:
                                region = self._region(call, q, with_stmt, with_stmt)
                                region.condition = condition
                                self.regions.append(region)
        self._context_manager_regions()

    def _context_manager_regions(self) -> None:
        """`with C(...):` where C is a class of the file whose `__enter__` enters autocast or
        turns it on with `torch.set_autocast_enabled` (lightwood's LightwoodAutocast), and
        `with f(...):` / `with self.f(...):` where f is a `@contextmanager` function or method of
        the file that yields inside `with autocast(...)`: autocast regions at those `with`s."""
        m = self.m
        producers: dict[cst.CSTNode, list] = {}  # ClassDef / FunctionDef -> [(call, q)]
        dtype_set = False
        for call in m.calls:
            q = m.qualname(call.func)
            if q in SET_AUTOCAST_DTYPE:
                dtype_set = True
            if q not in AUTOCAST_APIS and q != SET_AUTOCAST_ENABLED:
                continue
            fn = m.enclosing(call, cst.FunctionDef)
            if fn is None or m.enclosing(fn, cst.FunctionDef) is not None:
                continue
            cls = m.class_of(fn)
            if fn.name.value == "__enter__" and cls is not None:
                producers.setdefault(cls, []).append((call, q))
            elif q in AUTOCAST_APIS and self._yields_inside(call, fn) and any(
                    m.qualname(d.decorator) in CONTEXTMANAGER_DECORATORS for d in fn.decorators):
                producers.setdefault(fn, []).append((call, q))
        if not producers:
            return
        for with_stmt in m.withs:
            for item in with_stmt.items:
                it = item.item
                if not isinstance(it, cst.Call):
                    continue
                producer = self._context_producer(it.func, with_stmt)
                for call, q in producers.get(producer, ()):
                    if q == SET_AUTOCAST_ENABLED:
                        region = self._enabled_region(call, with_stmt, dtype_set)
                        if region is None:
                            continue
                    else:
                        region = self._region(call, q, with_stmt, with_stmt)
                    region.indirect = True
                    self.regions.append(region)

    def _yields_inside(self, call: cst.Call, fn: cst.FunctionDef) -> bool:
        """`call` is an item of a `with` of `fn` whose body yields."""
        m = self.m
        item = m.parent(call)
        if not isinstance(item, cst.WithItem):
            return False
        with_stmt = m.parent(item)
        return any(isinstance(node, cst.Yield)
                   for node in m.walk(with_stmt.body, skip=(cst.FunctionDef, cst.Lambda, cst.ClassDef)))

    def _context_producer(self, func: cst.BaseExpression, at: cst.CSTNode):
        """The class (`C(...)`) or function (`f(...)`, `self.f(...)`) of the file a `with`
        item calls; None for anything else."""
        m = self.m
        if isinstance(func, cst.Name):
            bs = m.bindings_of(func)
            if len(bs) == 1 and bs[0].how in ("class", "def"):
                node = bs[0].node
                return node if isinstance(node, (cst.ClassDef, cst.FunctionDef)) else m.parent(node)
            return None
        if (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"):
            cls = m.class_of(at)
            info = m.classes.get(cls.name.value) if cls is not None else None
            if info is not None and info.node is cls:
                return info.methods.get(func.attr.value)
        return None

    def _enabled_region(self, call: cst.Call, anchor: cst.CSTNode, dtype_set: bool) -> AutocastRegion | None:
        """`torch.set_autocast_enabled(flag)` (CUDA, the old signature) or
        `torch.set_autocast_enabled(device_type, flag)`: a region with the device's default
        autocast dtype (unknown when the file sets the autocast dtype)."""
        pos = [a.value for a in call.args if a.keyword is None and not a.star]
        if len(pos) != len(call.args) or not 1 <= len(pos) <= 2:
            return None
        flag = pos[-1]
        if isinstance(flag, cst.Name) and flag.value == "False":
            return None
        devices = frozenset({"cuda"}) if len(pos) == 1 else self.possible_devices(pos[0])
        dtypes = None
        if devices is not None and not dtype_set and all(d in DEFAULT_AUTOCAST_DTYPE for d in devices):
            dtypes = frozenset(DEFAULT_AUTOCAST_DTYPE[d] for d in devices)
        return AutocastRegion(call, SET_AUTOCAST_ENABLED, anchor, anchor, devices, dtypes, None, None)

    def _returned_regions(self, call: cst.Call, q: str) -> None:
        """`with f(...):` / `with self.f(...):` where `f` is the function or method of the file
        whose `return` gives this autocast call (on some path)."""
        m = self.m
        fn = m.enclosing(call, cst.FunctionDef)
        if fn is None or m.enclosing(fn, cst.FunctionDef) is not None:
            return
        cls = m.class_of(fn)
        name = fn.name.value
        for with_stmt in m.withs:
            for item in with_stmt.items:
                it = item.item
                if not isinstance(it, cst.Call):
                    continue
                f = it.func
                if cls is None:
                    hit = isinstance(f, cst.Name) and f.value == name and m.module_function(name) is fn
                else:
                    hit = (isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name)
                           and f.value.value == "self" and f.attr.value == name
                           and m.class_of(with_stmt) is cls)
                if hit:
                    self.regions.append(self._region(call, q, with_stmt, with_stmt))

    def _attribute_regions(self, call: cst.Call, q: str, holder, target: cst.Attribute, condition) -> None:
        """`with self.<attr>:` in the class whose only binding of that attribute is `holder`."""
        m = self.m
        cls = m.class_of(holder)
        bound = m.bindings_of(target)
        if len(bound) != 1 or bound[0].node is not target:
            return
        name = target.attr.value
        for with_stmt in m.withs:
            if m.class_of(with_stmt) is not cls:
                continue
            for item in with_stmt.items:
                it = item.item
                if (isinstance(it, cst.Attribute) and isinstance(it.value, cst.Name) and it.value.value == "self"
                        and it.attr.value == name):
                    region = self._region(call, q, with_stmt, with_stmt)
                    region.condition = condition
                    self.regions.append(region)

    def _region(self, call: cst.Call, q: str, anchor, body) -> AutocastRegion:
        fixed_device, params = AUTOCAST_APIS[q]
        args = _bind_args(call, params)
        device_arg = None
        if fixed_device is not None:
            devices: frozenset[str] | None = frozenset({fixed_device})
        else:
            device_arg = args.get("device_type")
            devices = self.possible_devices(device_arg) if device_arg is not None else None
        if args is _UNBOUND:
            return AutocastRegion(call, q, anchor, body, None, None, None, None)
        dtype_arg = args.get("dtype")
        if dtype_arg is not None:
            dtypes = self.possible_dtypes(dtype_arg)
            on_cuda = self._branch_on_cuda(dtype_arg)
            if on_cuda is not None and dtypes is not None:
                # `torch.bfloat16 if device.type == "cuda" else torch.float16` (nanoVLM): on CUDA only
                # the branch its test picks there runs; float16 elsewhere is not the GradScaler's matter
                picked = self.possible_dtypes(on_cuda)
                if picked is not None and "float16" not in picked:
                    dtypes = (dtypes - {"float16"}) | picked
        elif devices is not None and all(d in DEFAULT_AUTOCAST_DTYPE for d in devices):
            dtypes = frozenset(DEFAULT_AUTOCAST_DTYPE[d] for d in devices)
        else:
            dtypes = None
        if dtypes is not None and devices is not None and dtype_arg is None:
            # fp16 matters on cuda only: keep the cuda default visible
            pass
        return AutocastRegion(call, q, anchor, body, devices, dtypes, device_arg, args.get("enabled"))

    # value resolution -------------------------------------------------------------------------
    def possible_devices(self, expr: cst.BaseExpression | None, _depth: int = 0) -> frozenset[str] | None:
        """Device types an expression may evaluate to ("cuda", "cpu", ...); None: cannot tell."""
        if expr is None or _depth > 8:
            return None
        m = self.m
        if isinstance(expr, cst.SimpleString):
            value = expr.evaluated_value
            if isinstance(value, bytes):
                return None
            return frozenset({value.split(":", 1)[0]})
        if isinstance(expr, cst.IfExp):
            a = self.possible_devices(expr.body, _depth + 1)
            b = self.possible_devices(expr.orelse, _depth + 1)
            return None if a is None or b is None else a | b
        if isinstance(expr, cst.Call):
            q = m.qualname(expr.func)
            if q == "torch.device" and expr.args and expr.args[0].keyword is None:
                return self.possible_devices(expr.args[0].value, _depth + 1)
            if (isinstance(expr.func, cst.Name) and expr.func.value == "str" and "str" not in m.aliases
                    and len(expr.args) == 1 and expr.args[0].keyword is None and not expr.args[0].star):
                return self.possible_devices(expr.args[0].value, _depth + 1)  # `str(device)`
            return None
        if isinstance(expr, cst.Attribute) and expr.attr.value == "type":
            return self.possible_devices(expr.value, _depth + 1)
        if isinstance(expr, cst.Name):
            bindings = m.bindings_of(expr)
            if not bindings:
                return None
            out: set[str] = set()
            for b in bindings:
                if b.how == "param":  # what the function's call sites pass
                    args = m.param_arguments(b)
                    if not args:
                        return None
                    for a in args:
                        found = self.possible_devices(a, _depth + 1)
                        if found is None:
                            return None
                        out |= found
                    continue
                if b.how != "assign" or b.value is None:
                    return None
                found = self.possible_devices(b.value, _depth + 1)
                if found is None:
                    return None
                out |= found
            return frozenset(out)
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
            from gpulint.flow import argparse_default, is_parsed_namespace

            if is_parsed_namespace(m, expr.value):
                # `args.device` of `add_argument("--device", default="cuda" if ... else "cpu")`:
                # what the option's default may be (probe69 E69-5)
                return self.possible_devices(argparse_default(m, expr.attr.value), _depth + 1)
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            # `self.device` (a constructor's argument): where the flow engine says it is
            v = m.value_of(expr)
            if v.kind == "device" and v.dev is not None:
                if v.dev.is_host:
                    return frozenset({"cpu"})
                if v.dev.where == "acc":
                    return frozenset({"cuda", "cpu"})  # a configured device: the GPU there is, or the CPU
        return None

    def _branch_on_cuda(self, expr) -> cst.BaseExpression | None:
        """For `A if <device-type test> else B`, the branch taken when the device type is "cuda":
        tests `X.type == "cuda"`, `X.type != "mps"`, `X.type in ["cuda", "cpu"]`, `not in`, and
        the same on a name bound to `X.type`; None for any other expression."""
        if isinstance(expr, cst.Name):
            bs = self.m.bindings_of(expr)
            if len(bs) == 1 and bs[0].how == "assign" and isinstance(bs[0].value, cst.IfExp):
                expr = bs[0].value
        if not isinstance(expr, cst.IfExp):
            return None
        test = expr.test
        if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
            return None
        left, cmp = test.left, test.comparisons[0]
        if not (isinstance(left, cst.Attribute) and left.attr.value == "type") and not (
                isinstance(left, cst.Name) and "device" in left.value.lower()):
            return None
        right = cmp.comparator
        if isinstance(right, cst.SimpleString):
            values = {right.evaluated_value}
        elif isinstance(right, (cst.List, cst.Tuple, cst.Set)) and all(
                isinstance(el.value, cst.SimpleString) for el in right.elements):
            values = {el.value.evaluated_value for el in right.elements}
        else:
            return None
        op = cmp.operator
        if isinstance(op, (cst.Equal, cst.In)):
            true_on_cuda = "cuda" in values
        elif isinstance(op, (cst.NotEqual, cst.NotIn)):
            true_on_cuda = "cuda" not in values
        else:
            return None
        return expr.body if true_on_cuda else expr.orelse

    def possible_dtypes(self, expr: cst.BaseExpression | None, _depth: int = 0) -> frozenset[str] | None:
        if expr is None or _depth > 8:
            return None
        q = self.m.qualname(expr)
        if q in FLOAT16:
            return frozenset({"float16"})
        if q in BFLOAT16:
            return frozenset({"bfloat16"})
        if q in FLOAT32:
            return frozenset({"float32"})
        if isinstance(expr, cst.IfExp):
            a = self.possible_dtypes(expr.body, _depth + 1)
            b = self.possible_dtypes(expr.orelse, _depth + 1)
            return None if a is None or b is None else a | b
        if isinstance(expr, cst.Subscript):
            return self._dtype_table_lookup(expr, _depth)
        if isinstance(expr, cst.Name):
            return self._over_bindings(expr, self.possible_dtypes, _depth)
        return None

    def _dtype_table_lookup(self, expr: cst.Subscript, _depth: int) -> frozenset[str] | None:
        """`{"float16": torch.float16, "bfloat16": torch.bfloat16, ...}[dtype]` (nanoGPT's
        `ptdtype`): the dict display (written there or bound once to a name) looked up with keys
        that are all known constant strings (`dtype = "float16"`, `"bfloat16" if ok else
        "float16"`). None when a key may be anything else (a command-line or config value)."""
        if len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index):
            return None
        table = expr.value
        if isinstance(table, cst.Name):
            bindings = self.m.bindings_of(table)
            if len(bindings) != 1 or bindings[0].how != "assign" or bindings[0].value is None:
                return None
            table = bindings[0].value
        if not isinstance(table, cst.Dict):
            return None
        entries: dict[str, cst.BaseExpression] = {}
        for el in table.elements:
            if not isinstance(el, cst.DictElement) or not isinstance(el.key, cst.SimpleString):
                return None
            key = el.key.evaluated_value
            if not isinstance(key, str):
                return None
            entries[key] = el.value
        keys = self._possible_strings(expr.slice[0].slice.value, _depth + 1)
        if not keys or not keys <= entries.keys():
            return None
        out: set[str] = set()
        for key in keys:
            found = self.possible_dtypes(entries[key], _depth + 1)
            if found is None:
                return None
            out |= found
        return frozenset(out)

    def _possible_strings(self, expr: cst.BaseExpression, _depth: int) -> frozenset[str] | None:
        """The constant strings an expression may evaluate to; None: anything else possible."""
        if _depth > 8:
            return None
        if isinstance(expr, cst.SimpleString):
            value = expr.evaluated_value
            return frozenset({value}) if isinstance(value, str) else None
        if isinstance(expr, cst.IfExp):
            a = self._possible_strings(expr.body, _depth + 1)
            b = self._possible_strings(expr.orelse, _depth + 1)
            return None if a is None or b is None else a | b
        if isinstance(expr, cst.Name):
            return self._over_bindings(expr, self._possible_strings, _depth)
        return None

    def _over_bindings(self, name: cst.Name, each, _depth: int) -> frozenset[str] | None:
        """What `each` finds in every value the name is assigned (None when one is not an
        assignment or gives None)."""
        bindings = self.m.bindings_of(name)
        if not bindings:
            return None
        out: set[str] = set()
        for b in bindings:
            if b.how != "assign" or b.value is None:
                return None
            found = each(b.value, _depth + 1)
            if found is None:
                return None
            out |= found
        return frozenset(out)

    # whole-file questions ---------------------------------------------------------------------
    @property
    def uses_loss_scaling(self) -> bool:
        """A GradScaler is built or used (`S.scale(L).backward()`, `S.unscale_`), or apex amp.

        A use through a scaler that is None on every path does not count (E35-2): `S` a parameter
        defaulting to None of a file function whose every call site in the file leaves it out or
        passes None (or such a parameter of its caller), as in `def step(..., scaler=None): if
        scaler is not None: scaler.scale(loss).backward() ...` when no caller passes a scaler. A
        function never called in the file (library code), a method, or a call site passing
        anything else keeps the use counting."""
        if self.scaler_constructors:
            return True
        if self.m.uses_module("apex"):
            return True
        receivers = [b.scaler_node for b in self.backwards if b.scaler is not None]
        receivers += [s.call.func.value for s in self.scaler_calls]  # type: ignore[attr-defined]
        receivers += [recv for _, recv, meth in self.m.method_calls("unscale_")]
        return any(r is None or not self.always_none(r) for r in receivers)

    def always_none(self, expr: cst.BaseExpression | None, _depth: int = 0) -> bool:
        """`expr` is `None`, or a parameter defaulting to None that every call of its function in
        the file leaves out or fills with such a value (at most 4 callers deep); False when unsure."""
        if isinstance(expr, cst.Name) and expr.value == "None":
            return True
        if not isinstance(expr, cst.Name) or _depth > 4:
            return False
        m = self.m
        bindings = m.bindings_of(expr)
        if len(bindings) != 1 or bindings[0].how != "param":
            return False
        b = bindings[0]
        if not (isinstance(b.value, cst.Name) and b.value.value == "None"):
            return False
        fn = m.function_of_param(b)
        if fn is None or m.scope_of(expr) is not fn:
            return False
        sites = m.call_sites(fn)
        if not sites or not self._only_called(fn, sites):
            return False
        args = m.param_arguments(b)
        if len(args) != len(sites):
            return False
        return all(self.always_none(a, _depth + 1) for a in args)

    def _only_called(self, fn: cst.FunctionDef, sites: list[cst.Call]) -> bool:
        """Every mention of the function's name in the file is its `def` or a call of it (no
        `partial(fn, ...)`, no `hook = fn`, no decorator that may call it otherwise)."""
        if fn.decorators:
            return False
        name = fn.name.value
        funcs = {id(c.func) for c in sites}
        m = self.m
        for node in self.order:
            if not isinstance(node, cst.Name) or node.value != name or node is fn.name or id(node) in funcs:
                continue
            parent = m.parent(node)
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                continue  # `obj.step`, another name
            if isinstance(parent, cst.Arg) and parent.keyword is node:
                continue  # `f(step=...)`
            if isinstance(parent, cst.Param) and parent.name is node:
                continue
            return False
        return True

    @property
    def framework_precision(self) -> bool:
        """A framework that handles precision and loss scaling drives the script."""
        return bool(self.m.frameworks & AMP_FRAMEWORKS)

    def trained_backwards(self) -> list[BackwardCall]:
        """`.backward()` calls not under `no_grad`/`inference_mode`."""
        return [b for b in self.backwards if not self.under_no_grad(b.call)]

    def under_no_grad(self, node: cst.CSTNode) -> bool:
        m = self.m
        for anc in m.ancestors(node):
            if isinstance(anc, cst.With):
                for item in anc.items:
                    it = item.item
                    if isinstance(it, cst.Call) and m.qualname(it.func) in NO_GRAD_QUALNAMES:
                        return True
            if isinstance(anc, cst.FunctionDef):
                for dec in anc.decorators:
                    d = dec.decorator
                    d = d.func if isinstance(d, cst.Call) else d
                    if m.qualname(d) in NO_GRAD_QUALNAMES:
                        return True
        return False

    # order and branches -----------------------------------------------------------------------
    def before(self, a: cst.CSTNode, b: cst.CSTNode) -> bool:
        return self.order[a] < self.order[b]

    def contains(self, outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
        return outer is inner or any(anc is outer for anc in self.m.ancestors(inner))

    def exclusive(self, a: cst.CSTNode, b: cst.CSTNode) -> bool:
        """a and b sit in different branches of one `if`/`else` (ScriptModel.exclusive)."""
        return self.m.exclusive(a, b)

    def may_follow(self, first: cst.CSTNode, second: cst.CSTNode) -> bool:
        """`second` may run after `first` in the same pass through the code."""
        return self.before(first, second) and not self.exclusive(first, second)

    # iterations ---------------------------------------------------------------------------------
    def scope_node(self, node: cst.CSTNode) -> cst.CSTNode:
        return self.m.scope_of(node)

    def iteration_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The innermost loop (within the node's function) around `node` that contains a
        `.backward()` call; else the enclosing function/module when it contains one."""
        scope = self.scope_node(node)
        for anc in self.m.ancestors(node):
            if anc is scope:
                break
            if isinstance(anc, _LOOPS) and self._has_backward(anc):
                return anc
        if self._has_backward(scope):
            return scope
        return None

    def _has_backward(self, node: cst.CSTNode) -> bool:
        return any(self.contains(node, b.call) for b in self.backwards)

    def last_backward_before(self, iteration: cst.CSTNode, node: cst.CSTNode) -> BackwardCall | None:
        best = None
        for b in self.backwards:
            if not self.contains(iteration, b.call):
                continue
            if self.may_follow(b.call, node) and (best is None or self.before(best.call, b.call)):
                best = b
        return best

    def scaled_backward_before(self, iteration: cst.CSTNode, node: cst.CSTNode) -> BackwardCall | None:
        """The last `S.scale(L).backward()` of the iteration that may run before `node`, when every
        later backward that may also run before `node` sits in another branch of an `if` with it
        (`if scaler: scaler.scale(loss).backward()` / `else: loss.backward()`)."""
        found = None
        for b in self.backwards:
            if b.scaler is not None and self.contains(iteration, b.call) and self.may_follow(b.call, node):
                if found is None or self.before(found.call, b.call):
                    found = b
        if found is None:
            return None
        for b in self.backwards:
            if b is found or not self.contains(iteration, b.call) or not self.may_follow(b.call, node):
                continue
            if self.before(found.call, b.call) and not self.exclusive(found.call, b.call):
                return None
        return found

    def scaler_calls_in(self, iteration: cst.CSTNode, scaler: str | None = None, method: str | None = None):
        return [
            s
            for s in self.scaler_calls
            if self.contains(iteration, s.call)
            and (scaler is None or s.scaler == scaler)
            and (method is None or s.method == method)
        ]

    def statement(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.m.statement_of(node)

    def lone_call_statement(self, call: cst.Call) -> cst.SimpleStatementLine | None:
        """The statement line when `call` is the whole of a one-statement line, else None."""
        expr = self.m.parent(call)
        line = self.m.parent(expr) if expr is not None else None
        if isinstance(expr, cst.Expr) and isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
            return line
        return None

    def block_of(self, stmt: cst.CSTNode) -> cst.CSTNode | None:
        """The IndentedBlock/Module whose statement list holds `stmt` directly."""
        parent = self.m.parent(stmt)
        if isinstance(parent, (cst.IndentedBlock, cst.Module)):
            return parent
        return None

    def conditions_between(self, node: cst.CSTNode, outer: cst.CSTNode) -> list[tuple[cst.If, bool]] | None:
        """The `if` statements between `outer` and `node`: (if, True when node is in its body).
        None when `node` is in an `elif`/`else` chain deeper than one level or in a `try`/`while`
        condition that cannot be expressed."""
        out = []
        child = node
        for anc in self.m.ancestors(node):
            if anc is outer:
                return out
            if isinstance(anc, cst.If):
                branch = branch_of(anc, child)
                if branch == "test":
                    return None
                if branch == "orelse" and isinstance(anc.orelse, cst.If):
                    return None  # an elif chain
                out.append((anc, branch == "body"))
            child = anc
        return out

    def update_anchor(self, step_calls: list[cst.Call], iteration: cst.CSTNode) -> cst.SimpleStatementLine | None:
        """Where `S.update()` goes: after the last of these step statements, when they are all
        statement lines of one block (so the update runs exactly when a step ran)."""
        stmts = []
        for call in step_calls:
            stmt = self.m.statement_of(call)
            if not isinstance(stmt, cst.SimpleStatementLine):
                return None
            stmts.append(stmt)
        if not stmts:
            return None
        block = self.block_of(stmts[0])
        if block is None or any(self.block_of(s) is not block for s in stmts):
            return None
        for anc in self.m.ancestors(block):
            if anc is iteration:
                break
            if isinstance(anc, (*_LOOPS, cst.FunctionDef, cst.Lambda)):
                return None  # e.g. `for opt in optimizers: scaler.step(opt)`: update after that loop
        return max(stmts, key=lambda s: self.order[s])

    # names ----------------------------------------------------------------------------------------
    def all_names(self) -> set[str]:
        out: set[str] = set()
        for (_, name) in self.m.bindings:
            out.add(name)
        out.update(self.m.aliases)
        return out

    def fresh_name(self, base: str) -> str:
        taken = self.all_names()
        if base not in taken:
            return base
        for i in range(2, 100):
            cand = f"{base}{i}" if not base.endswith("_") else f"{base}{i}"
            if cand not in taken:
                return cand
        return base + "_gl"

    def available_at(self, expr: cst.BaseExpression, stmt: cst.CSTNode) -> bool:
        """Every name `expr` reads is bound before `stmt` (and not re-bound after it), imported,
        or a builtin: the expression can be evaluated at `stmt`."""
        for name in _load_names(expr):
            if name.value in self.m.aliases or (name.value in _BUILTINS and not self.m.bindings_of(name)):
                continue
            bindings = self.m.bindings_of(name)
            # resolve in the scope of stmt, not of the expression
            probe_scope = self.m.scope_of(stmt)
            own = self.m.bindings.get((probe_scope, name.value)) or self.m.bindings.get((self.m.module, name.value))
            bindings = own or bindings
            if not bindings:
                return False
            for b in bindings:
                if b.how in ("param",):
                    continue
                if not self.before(b.node, stmt):
                    return False
        return True


_UNBOUND: dict = {}


def _is_scale_call(expr) -> bool:
    """`S.scale(L)`."""
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == "scale"
        and bool(expr.args)
    )


def _bind_args(call: cst.Call, params: tuple[str, ...]) -> dict[str, cst.BaseExpression]:
    """Map a call's arguments onto parameter names; `_UNBOUND` when *args/**kwargs hide them."""
    out: dict[str, cst.BaseExpression] = {}
    pos = 0
    for arg in call.args:
        if arg.star:
            return _UNBOUND
        if arg.keyword is None:
            if pos < len(params):
                out[params[pos]] = arg.value
            pos += 1
        else:
            out[arg.keyword.value] = arg.value
    return out


def _load_names(expr: cst.CSTNode) -> Iterator[cst.Name]:
    """Names read by an expression (attribute heads, not attribute names or keywords)."""
    if isinstance(expr, cst.Name):
        yield expr
        return
    if isinstance(expr, cst.Attribute):
        yield from _load_names(expr.value)
        return
    if isinstance(expr, cst.Arg):
        yield from _load_names(expr.value)
        return
    if isinstance(expr, (cst.Lambda, cst.GeneratorExp, cst.ListComp, cst.SetComp, cst.DictComp)):
        # bail out: a comprehension binds names of its own
        yield cst.Name("__gpulint_unresolvable__")
        return
    for child in _children(expr):
        if isinstance(child, cst.CSTNode):
            yield from _load_names(child)


def iter_statements(block: cst.CSTNode) -> Iterable[cst.CSTNode]:
    body = getattr(block, "body", None)
    if isinstance(body, cst.BaseSuite):
        body = getattr(body, "body", None)
    return body or ()


# ---------------------------------------------------------------------------------------------
# Deprecated torch.cuda.amp / torch.cpu.amp APIs (GL205)
# ---------------------------------------------------------------------------------------------


@dataclass
class DeprecatedUse:
    """One use of a deprecated AMP class: a call (fixable when `call` is set) or a bare reference."""

    node: cst.BaseExpression  # the expression naming the deprecated API (a call's func, or a reference)
    qualname: str
    kind: str  # "autocast" / "GradScaler"
    device: str  # "cuda" / "cpu"
    call: cst.Call | None  # the call, when `node` is called (with no *args/**kwargs)
    new_func: str | None = None  # replacement text for `node` (direct `torch.cuda.amp.X` form)
    reason: str | None = None  # why no fix


@dataclass
class DeprecatedImport:
    """`from torch.cuda.amp import autocast, GradScaler`, `from torch.cuda import amp`,
    `import torch.cuda.amp as amp`: the import and every use of the names it binds."""

    stmt: cst.CSTNode  # the Import / ImportFrom
    target: cst.BaseExpression  # the dotted module name to rewrite
    new_module: str  # its replacement
    old: str = ""  # the deprecated module the import reaches (`torch.cuda.amp`)
    uses: list[DeprecatedUse] = field(default_factory=list)
    reason: str | None = None  # why the group cannot be fixed




class DeprecatedAmp:
    """Where a file uses `torch.cuda.amp` / `torch.cpu.amp` classes, and how to rewrite them."""

    def __init__(self, model: ScriptModel) -> None:
        self.m = model
        self.direct: list[DeprecatedUse] = []
        self.imports: list[DeprecatedImport] = []
        self._grouped: set[int] = set()
        self._collect_imports()
        self._collect_direct()

    def _text(self, node: cst.CSTNode) -> str:
        return self.m.module.code_for_node(node)

    # uses through `torch.` ------------------------------------------------------------------
    def _collect_direct(self) -> None:
        m = self.m
        seen: set[int] = set()
        for node in self._attribute_nodes():
            q = m.qualname(node)
            if q not in DEPRECATED_AMP or id(node) in seen:
                continue
            seen.add(id(node))
            head = node
            while isinstance(head, cst.Attribute):
                head = head.value
            if id(head) in self._grouped:
                continue
            torch_prefix = _prefix_with_qualname(m, node, "torch")
            if torch_prefix is None:
                continue  # e.g. `from torch import cuda; cuda.amp.autocast()`: not ours to guess
            kind, device = DEPRECATED_AMP[q]
            use = self._use(node, q)
            use.new_func = f"{self._text(torch_prefix)}.amp.{kind}"
            self.direct.append(use)

    def _attribute_nodes(self) -> Iterator[cst.Attribute]:
        """The file's attributes in source order, not those inside import statements (what a walk
        of the module skipping import statements finds; read from the model's node list)."""
        m = self.m
        nodes, end = m.nodes, m.end
        if not nodes or nodes[0] is not m.module:  # pragma: no cover - the model always records the module first
            skip = (cst.Import, cst.ImportFrom)
            yield from (n for n in m.walk(m.module, skip=skip) if type(n) is cst.Attribute)
            return
        attribute, imports = cst.Attribute, (cst.Import, cst.ImportFrom)
        is_import = _IS_IMPORT
        i, n = 1, len(nodes)
        while i < n:
            node = nodes[i]
            t = type(node)
            if t is attribute:
                yield node
            else:
                skip = is_import.get(t)
                if skip is None:
                    skip = is_import[t] = issubclass(t, imports)
                if skip:
                    i = end[node]  # not into the import statement
                    continue
            i += 1

    def _use(self, node: cst.BaseExpression, q: str) -> DeprecatedUse:
        kind, device = DEPRECATED_AMP[q]
        parent = self.m.parent(node)
        if isinstance(parent, cst.Call) and parent.func is node:
            if any(a.star for a in parent.args):
                return DeprecatedUse(node, q, kind, device, None, reason="called with *args/**kwargs")
            if kind == "autocast":
                positional = [a for a in parent.args if a.keyword is None]
                if len(positional) > 3:
                    return DeprecatedUse(node, q, kind, device, None, reason="too many positional arguments")
            return DeprecatedUse(node, q, kind, device, parent)
        return DeprecatedUse(node, q, kind, device, None, reason="not called")

    # uses through imports -------------------------------------------------------------------
    def _collect_imports(self) -> None:
        candidates = []
        for stmt in (n for n in self.m.nodes if type(n) in (cst.Import, cst.ImportFrom)):
            group = self._import_group(stmt)
            if group is not None:
                candidates.append(group)
        if not candidates:
            return
        from libcst.metadata import MetadataWrapper, ScopeProvider

        names = {local for _group, locals_ in candidates for local, _full in locals_}
        module = _scope_relevant_module(self.m, names)
        scopes = MetadataWrapper(module, unsafe_skip_copy=True).resolve(ScopeProvider)
        for group, locals_ in candidates:
            stmt = group.stmt
            if self.m.enclosing(stmt, cst.Try) is not None:
                continue  # a compatibility import (`try: from torch.amp ... except ImportError:`)
            scope = scopes.get(stmt)
            if scope is None:
                continue
            ok = True
            for local, _full in locals_:
                assignments = list(scope.assignments[local])
                if len(assignments) != 1:
                    ok = False  # bound more than once: which one a use means is unclear
                    break
            if not ok:
                continue
            for local, full in locals_:
                (assignment,) = list(scope.assignments[local])
                for ref in sorted(assignment.references, key=lambda r: self._pos(r.node)):
                    self._grouped.add(id(ref.node))
                    self._add_reference(group, ref.node, full)
            self.imports.append(group)

    def _pos(self, node: cst.CSTNode) -> int:
        return self.m.order.get(node, 0)

    def _import_group(self, stmt: cst.CSTNode):
        """(group, [(local name, qualified name)]) for a deprecated import, else None."""
        if isinstance(stmt, cst.ImportFrom):
            if stmt.relative or stmt.module is None or isinstance(stmt.names, cst.ImportStar):
                return None
            mod = _dotted_text(stmt.module)
            names = [(a, _dotted_text(a.name)) for a in stmt.names]
            locals_ = []
            if mod in DEPRECATED_AMP_MODULES:
                wanted = [(a, n) for a, n in names if f"{mod}.{n}" in DEPRECATED_AMP]
                if not wanted:
                    return None
                group = DeprecatedImport(stmt, stmt.module, "torch.amp", mod)
                if len(wanted) != len(names):
                    group.reason = "the import also names other torch.cuda.amp objects"
                for a, n in wanted:
                    local = a.asname.name.value if a.asname is not None else n
                    locals_.append((local, f"{mod}.{n}"))
                return group, locals_
            if mod in ("torch.cuda", "torch.cpu"):
                wanted = [(a, n) for a, n in names if n == "amp"]
                if not wanted:
                    return None
                group = DeprecatedImport(stmt, stmt.module, "torch", f"{mod}.amp")
                if len(wanted) != len(names):
                    group.reason = "the import also names other objects"
                for a, n in wanted:
                    local = a.asname.name.value if a.asname is not None else n
                    locals_.append((local, f"{mod}.amp"))
                return group, locals_
            return None
        if isinstance(stmt, cst.Import):
            for a in stmt.names:
                full = _dotted_text(a.name)
                if full in ("torch.cuda.amp", "torch.cpu.amp") and a.asname is not None:
                    local = a.asname.name.value
                    group = DeprecatedImport(stmt, a.name, "torch.amp", full)
                    if len(stmt.names) != 1:
                        group.reason = "the import statement imports several modules"
                    return group, [(local, full)]
        return None

    def _add_reference(self, group: DeprecatedImport, node: cst.CSTNode, full: str) -> None:
        m = self.m
        if not isinstance(node, cst.Name):
            group.reason = group.reason or "an unusual reference"
            return
        if full in DEPRECATED_AMP:
            use = self._use(node, full)
            group.uses.append(use)
            if use.call is None:
                group.reason = group.reason or f"`{node.value}` is {use.reason}"
            return
        # a module alias: `amp.autocast(...)`, `amp.GradScaler(...)`
        parent = m.parent(node)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            q = f"{full}.{parent.attr.value}"
            if q in DEPRECATED_AMP:
                use = self._use(parent, q)
                group.uses.append(use)
                if use.call is None:
                    group.reason = group.reason or f"`{self._text(parent)}` is {use.reason}"
                return
        group.reason = group.reason or f"`{self._text(parent if isinstance(parent, cst.Attribute) else node)}` has no torch.amp equivalent"


# Names whose bindings can change what LibCST's scope analysis reads as a `typing.` construct
# (`typing.cast(...)`, `typing.X[...]`), inside which it parses strings as annotations.
_TYPING_NAMES = frozenset({"typing", "typing_extensions"})

# A switch for tests: GPULINT_AMP_FULL_SCOPES=1 runs LibCST's scope analysis on the whole module
# (the results must be the same either way).
import os as _os

_FULL_SCOPES = _os.environ.get("GPULINT_AMP_FULL_SCOPES", "0") == "1"


def _scope_relevant_module(model: ScriptModel, names: set[str]) -> cst.Module:
    """The module with only the statements that can matter to LibCST's scope analysis of `names`
    (the local names the deprecated imports bind): the top-level statements, and inside them the
    statements of each indented body, that hold a Name spelled like one of them or like
    `typing`/`typing_extensions` (every import that gives a `typing.` qualified name has one), or
    a string whose value holds one of the names (a string annotation LibCST parses). A body left
    with none gets `pass`; `else`/`except`/`finally` parts are kept whole. Only the ancestors of
    pruned bodies are rebuilt: the statements and Names kept are the module's own nodes, so the
    scopes found map the file's nodes.

    Every binding and every use of one of the names is in a kept statement, in the same scopes
    and the same order (an import statement counts as an assignment: uses after it in its scope
    stay after it), so each name's assignments and references are those of the whole module.
    The scope analysis of a whole concatenation of scripts costs ~0.3 s per 1,000 lines, most of
    it for statements that never mention the names (50k-line scaling file: 4.15 s with the
    top-level statements alone, 0.46 s pruned inside them, measured by the speed engineer)."""
    module = model.module
    nodes, order, end = model.nodes, model.order, model.end
    if _FULL_SCOPES or not nodes or nodes[0] is not module:
        return module
    wanted = set(names) | _TYPING_NAMES
    Name, SimpleString, Concatenated = cst.Name, cst.SimpleString, cst.ConcatenatedString
    hits: list[int] = []
    for i, n in enumerate(nodes):
        t = type(n)
        if t is Name:
            if n.value in wanted:
                hits.append(i)
        elif t is SimpleString or t is Concatenated:
            if t is SimpleString and "\\" not in n.value:
                found = any(name in n.value for name in names)
            else:  # escapes, or parts joined: what LibCST would parse is the string's value
                found = _value_mentions(n, names)
            if found:
                hits.append(i)
    import bisect

    for stmt in module.body:
        if order.get(stmt) is None or end.get(stmt) is None:
            return module

    def has(node) -> bool:
        start, stop = order.get(node), end.get(node)
        if start is None or stop is None:
            return True  # not recorded: keep it
        k = bisect.bisect_left(hits, start)
        return k < len(hits) and hits[k] < stop

    def prune(stmt):
        # inside a kept compound statement, its indented body keeps only the statements with a
        # hit (`pass` when none); `else`/`except`/`finally` parts and one-line suites stay whole
        body = getattr(stmt, "body", None) if isinstance(stmt, cst.BaseCompoundStatement) else None
        if not isinstance(body, cst.IndentedBlock):
            return stmt
        kept = [prune(x) for x in body.body if has(x)]
        if len(kept) == len(body.body) and all(k is x for k, x in zip(kept, body.body)):
            return stmt
        return stmt.with_changes(body=body.with_changes(body=kept or [cst.SimpleStatementLine([cst.Pass()])]))

    body = [prune(stmt) for stmt in module.body if has(stmt)]
    if len(body) == len(module.body) and all(k is x for k, x in zip(body, module.body)):
        return module
    return module.with_changes(body=body)


def _value_mentions(node, names: set[str]) -> bool:
    try:
        value = node.evaluated_value
    except Exception:
        return True  # cannot tell: keep the statement
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        return value is not None
    return any(name in value for name in names)


_IS_IMPORT: dict[type, bool] = {}  # node class -> an import statement (isinstance on LibCST's ABCs is slow)


def _prefix_with_qualname(model: ScriptModel, node: cst.BaseExpression, qualname: str):
    cur = node
    while isinstance(cur, cst.Attribute):
        cur = cur.value
        if model.qualname(cur) == qualname:
            return cur
    return None


# ---------------------------------------------------------------------------------------------
# a scaler step never followed by `update()` (GL204; GL203's fix asks it too)
# ---------------------------------------------------------------------------------------------

def update_missing(ctx, facts: AmpFacts, it, scaler: str, step_call) -> bool:
    """Whether a step of `scaler` made at `step_call` (a `scaler.step(...)`, or an
    `optimizer.step()` that GL203 turns into one) in the training iteration `it` is never followed
    by `scaler.update()`: no update in the iteration on the step's path, and none in a caller that
    could do it (a step helper whose caller updates, an update in another function). GL203 asks it
    too, so that its fix adds the update that a step through the scaler then needs."""
    updates = [u for u in facts.scaler_calls_in(it, scaler, "update")
               if not facts.exclusive(u.call, step_call) and not _guarded_apart(ctx.model, u.call, step_call, it)]
    if updates:
        return False
    others = [u for u in facts.scaler_calls if u.method == "update" and u.scaler == scaler]
    if not _is_loop(it) and others:
        return False  # a step helper: its caller may update
    # updated in another function, which the iteration may call
    return all(ctx.model.scope_of(u.call) is ctx.model.scope_of(step_call) for u in others)


def _guarded_apart(m, update, step, it) -> bool:
    """The update sits under an `if` (inside the iteration) that the step is not under: it does
    not run after every step (icefall#1829: `if batch_idx % 100 == 0 and use_fp16: ...
    scaler.update(cur_grad_scale * 2.0)` as the only update after an unconditional step)."""
    # the tests of the `if`s the step runs in the true branch of (`if enable_amp: scaler.step(o)`):
    # an update under a second `if` with the same test runs after every such step (FourCastNet)
    text = cst.Module([]).code_for_node
    step_tests = set()
    child = step
    for anc in m.ancestors(step):
        if anc is it:
            break
        if isinstance(anc, cst.If) and m.contains(anc.body, child):
            step_tests.add(text(anc.test))
        child = anc
    child = update
    for anc in m.ancestors(update):
        if anc is it:
            return False
        if isinstance(anc, cst.If) and not m.contains(anc.test, child):
            branch = anc.body if m.contains(anc.body, child) else anc.orelse
            if branch is not None and not m.contains(branch, step):
                if branch is anc.body and text(anc.test) in step_tests:
                    child = anc
                    continue  # the same condition as the step's
                return True
        child = anc
    return False


def unscale_left_pending(ctx, facts: AmpFacts, it, unscale) -> cst.If | None:
    """An explicit `S.unscale_(O)` (ScalerCall `unscale`) in the training loop `it` whose every later
    `S.update()` of the iteration sits in a branch of an `if` the unscale is not under, together with
    every `S.step(...)`, where the other branch (or its absence) neither steps nor updates: the path
    that skips them (a step skipped for a too-large gradient norm, LVSM#19; a branch that only logs
    "Skipping updating the model", espnet#2362) leaves the optimizer unscaled, and the next
    iteration's `unscale_` raises "unscale_() has already been called on this optimizer since the
    last update()". The guarding `if`, or None. An `if` is no guard when its other branch steps an
    optimizer or the scaler, updates the scaler, or leaves the iteration (`raise`, `return`,
    `break`; a disabled scaler's `else: optimizer.step()`), or when it repeats a test the unscale is
    under (the same condition on both); the `if`s around it are tried next."""
    if not _is_loop(it):
        return None
    m = ctx.model
    updates = [u for u in facts.scaler_calls_in(it, unscale.scaler, "update")
               if facts.may_follow(unscale.call, u.call)]
    if not updates:
        return None  # no update after it at all: GL204's question about the step
    tests = {_dotted_text(a.test) or facts.text(a.test) for a in m.ancestors(unscale.call) if isinstance(a, cst.If)}
    guards = []
    for u in updates:
        found = _guarding_if(ctx, facts, u.call, unscale, it, tests)
        if found is None:
            return None
        guards.append(found)
    steps = [c for c in facts.scaler_calls_in(it, unscale.scaler, "step") if facts.may_follow(unscale.call, c.call)]
    if not steps or not all(any(m.contains(branch, st.call) for _g, branch in guards) for st in steps):
        return None
    return guards[0][0]


def _guarding_if(ctx, facts: AmpFacts, update, unscale, it, tests) -> tuple[cst.If, cst.CSTNode] | None:
    """The innermost `if` (inside the iteration, not around the unscale) with `update` in one branch
    and, as its other branch, nothing or a block that neither steps nor updates nor leaves the
    iteration; with the branch that holds `update`."""
    m = ctx.model
    child = update
    for anc in m.ancestors(update):
        if anc is it:
            return None
        if isinstance(anc, cst.If) and not m.contains(anc.test, child):
            in_body = m.contains(anc.body, child)
            branch = anc.body if in_body else anc.orelse
            other = anc.orelse if in_body else anc.body
            if branch is not None and not m.contains(branch, unscale.call) \
                    and (_dotted_text(anc.test) or facts.text(anc.test)) not in tests \
                    and (other is None or not _steps_or_leaves(ctx, facts, other, unscale.scaler)):
                return anc, branch
        child = anc
    return None


def _steps_or_leaves(ctx, facts: AmpFacts, block, scaler: str) -> bool:
    """`block` steps or updates the scaler `scaler`, steps an optimizer (any `X.step(...)`), or
    holds a `raise`, `return` or `break` (the loop may not reach the next `unscale_`; a `continue`
    does reach it)."""
    m = ctx.model
    for n in m.walk(block):
        if isinstance(n, (cst.Raise, cst.Return, cst.Break)):
            return True
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value in ("step", "update") \
                and (n.func.attr.value == "step" or facts.text(n.func.value) == scaler):
            return True
    return False


def update_edit(ctx, facts: AmpFacts, it, scaler: str, step_calls):
    """The edit that inserts `scaler.update()` after the last of `step_calls` (statement lines of
    one block of the iteration), or None when there is no such single place."""
    anchor = facts.update_anchor(step_calls, it)
    if anchor is None:
        return None
    return ctx.insert_after(anchor, f"{scaler}.update()")


def _is_loop(node) -> bool:
    return isinstance(node, (cst.For, cst.While))
