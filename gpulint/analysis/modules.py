"""Facts about the file's own `nn.Module` subclasses (shared by GL105, GL106, GL107).

    facts = ctx.model.facts(ModuleFacts)
    for cls in facts.classes:            # one ModuleClass per nn.Module subclass in the file
        cls.forward                      # the FunctionDef of `forward` (inherited from a file class too)
        cls.reachable                    # forward and the methods it calls as `self.m(...)`, transitively
        cls.forward_params               # forward's parameters after `self`
        cls.init_assigns                 # `self.a = ...` in __init__, by attribute, with their kind
        cls.forward_reads / forward_writes   # `self.a` read / assigned in reachable methods
        cls.flow                         # a small device dataflow over the reachable methods

The dataflow (`DeviceFlow`) follows, inside the methods reachable from `forward`, which values are
on the model's device ("D": forward's tensor inputs, parameters, buffers, submodule outputs and
what is computed from them) and which come from a tensor factory called without `device=` (or
from an unregistered tensor attribute). It records where the two *meet* in an operation that
needs both on one device (arithmetic, comparisons, `torch.*` functions, a call of a submodule that
has parameters, `add`/`matmul`/`masked_fill`... methods). Values used only for shapes, Python
numbers, indexing or moved with `.to(x.device)` / `.type_as(x)` never meet anything.

Everything here is static: torch is never imported.
"""

from __future__ import annotations

import re

from dataclasses import dataclass, field
from typing import Iterable

import libcst as cst

from gpulint.model import children as _children

from gpulint.model import ClassInfo, Kind, ScriptModel, requires_other_path
from gpulint.analysis.training import keyword as _keyword

def _type_of_tensor(call: cst.Call) -> bool:
    """`t.type(x.type())`: a conversion to the type of another tensor, whose string names its
    device (`torch.cuda.FloatTensor`)."""
    if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
        return False
    inner = call.args[0].value
    return (
        isinstance(inner, cst.Call)
        and not inner.args
        and isinstance(inner.func, cst.Attribute)
        and inner.func.attr.value == "type"
    )


# ---------------------------------------------------------------------------------------------
# Knowledge
# ---------------------------------------------------------------------------------------------

#: accelerator availability checks: the branch they take without an accelerator runs on the host
_AVAILABILITY_CALLS = frozenset(
    {
        "torch.cuda.is_available",
        "torch.accelerator.is_available",
        "torch.backends.mps.is_available",
        "torch.xpu.is_available",
    }
)

#: factories GL105 looks at (torch.<name>), deterministic and random
DETERMINISTIC_FACTORIES = frozenset(
    "zeros ones empty full arange linspace eye tensor as_tensor "
    "hann_window hamming_window blackman_window bartlett_window kaiser_window".split()  # (1-D windows: STFT)
)
RANDOM_FACTORIES = frozenset("rand randn randint".split())
FACTORIES = DETERMINISTIC_FACTORIES | RANDOM_FACTORIES
#: legacy typed constructors: they take no `device=`
LEGACY_CONSTRUCTORS = frozenset(
    "FloatTensor DoubleTensor HalfTensor LongTensor IntTensor ShortTensor ByteTensor CharTensor "
    "BoolTensor Tensor".split()
)
LIKE_FACTORIES = frozenset(
    "zeros_like ones_like empty_like full_like rand_like randn_like randint_like".split()
)

#: nn layers that own parameters (or buffers): calling one with a host tensor fails on a GPU
PARAM_LAYERS = frozenset(
    "Linear Bilinear LazyLinear Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d "
    "LazyConv1d LazyConv2d LazyConv3d Embedding EmbeddingBag LayerNorm GroupNorm RMSNorm BatchNorm1d "
    "BatchNorm2d BatchNorm3d SyncBatchNorm RNN LSTM GRU RNNCell LSTMCell GRUCell MultiheadAttention "
    "Transformer TransformerEncoder TransformerDecoder TransformerEncoderLayer TransformerDecoderLayer "
    "PReLU".split()
)
#: nn containers: they have parameters when one of their children has
CONTAINER_LAYERS = frozenset("Sequential ModuleList ModuleDict".split())

#: attributes of a tensor that are not tensors
NON_TENSOR_ATTRS = frozenset(
    "shape device dtype ndim is_cuda is_leaf requires_grad grad_fn layout names is_sparse "
    "is_quantized is_meta itemsize nbytes".split()
)
#: attributes of a tensor that are tensors on the same device
TENSOR_ATTRS = frozenset("T mT H mH data grad real imag".split())
#: tensor methods whose result is not a tensor (or not on the tensor's device)
NON_TENSOR_METHODS = frozenset(
    "item tolist numpy size dim numel data_ptr element_size nelement is_contiguous get_device "
    "stride is_floating_point is_complex equal cpu storage untyped_storage backward register_hook "
    "__len__ is_pinned is_shared dim_order".split()
)
#: tensor methods that need their tensor arguments on the receiver's device
MEET_METHODS = frozenset(
    "add add_ sub sub_ mul mul_ div div_ true_divide floor_divide remainder fmod pow pow_ matmul mm "
    "bmm mv dot maximum minimum masked_fill masked_fill_ where eq ne lt le gt ge lerp lerp_ atan2 "
    "addmm addmm_ baddbmm index_select gather scatter scatter_ scatter_add scatter_add_ index_add "
    "index_add_ masked_scatter masked_scatter_ logical_and logical_or logical_xor bitwise_and "
    "bitwise_or clamp clamp_ clip".split()
)
#: reductions that, with no `dim`, give a 0-dim tensor, which PyTorch combines with tensors on any
#: device like a Python number (DeepOD's `(y_pred - torch.mean(ref)) / torch.std(ref)`, P43-1)
FULL_REDUCTIONS = frozenset(
    "sum mean max min prod std var amax amin all any count_nonzero median nanmean nansum norm "
    "argmax argmin".split()
)
_FULL_REDUCTION_KEYWORDS = frozenset({"dtype", "unbiased", "correction", "p"})


def _full_reduction(call: cst.Call, positional: int) -> bool:
    """`torch.mean(t)` (positional=1) or `t.mean()` (positional=0): no dimension given."""
    pos = [a for a in call.args if a.keyword is None]
    if any(a.star for a in call.args) or len(pos) != positional:
        return False
    return all(a.keyword.value in _FULL_REDUCTION_KEYWORDS for a in call.args if a.keyword is not None)


#: torch.* functions whose tensor arguments may be on the host by design (lengths, split sizes...)
NO_MEET_FUNCTIONS = frozenset(
    {
        "torch.nn.utils.rnn.pack_padded_sequence",
        "torch.nn.utils.rnn.pad_packed_sequence",
        "torch.nn.utils.rnn.pack_sequence",
        "torch.nn.utils.rnn.pad_sequence",
        "torch.split",
        "torch.tensor_split",
        "torch.repeat_interleave",
        "torch.broadcast_shapes",
        "torch.is_tensor",
        "torch.numel",
        "torch.device",
        "torch.Size",
        "torch.no_grad",
        "torch.enable_grad",
        "torch.set_grad_enabled",
        "torch.autocast",
        "torch.manual_seed",
        # the sizes of a tensor as a tensor: always made on the host, whatever the input's device
        # (SpanBERT's fairseq SinusoidalPositionalEmbedding joins them with `torch.LongTensor([-1])`
        # on its ONNX-trace path, P53-1)
        "torch._shape_as_tensor",
    }
)
#: Python built-ins whose result is a Python value (never a tensor on a device)
PYTHON_VALUE_CALLS = frozenset(
    "len int float bool str range enumerate zip list tuple dict set print isinstance getattr hasattr "
    "min max sum abs round repr sorted reversed any all type id hash divmod map filter iter next "
    "format".split()
)
#: parameter annotations that say "tensor"
TENSOR_ANNOTATIONS = frozenset({"torch.Tensor", "torch.FloatTensor", "torch.LongTensor", "torch.BoolTensor"})
#: method names that, called on a parameter, show that it is a tensor
TENSOR_EVIDENCE_METHODS = frozenset(
    "size view reshape unsqueeze squeeze permute transpose flatten contiguous float half long int bool "
    "to mean sum max min softmax log_softmax masked_fill expand expand_as repeat chunk split matmul bmm "
    "clamp exp log abs sqrt pow detach clone numel dim new_zeros new_ones new_full new_empty new_tensor "
    "type_as view_as reshape_as argmax argmin norm cumsum unbind narrow sigmoid tanh relu".split()
)

D = "D"  # the tag of values on the model's device
_FIRST_OPERAND_ONLY = frozenset(
    "multinomial bincount topk kthvalue narrow repeat_interleave roll flip chunk split tensor_split "
    "unsqueeze squeeze reshape flatten transpose permute movedim tile sort argsort cumsum cumprod "
    "softmax log_softmax argmax argmin".split()
    # `F.pad(x, [diffX // 2, ...])`, `F.interpolate(x, size=...)`: the other arguments are sizes
    # (milesial/Pytorch-UNet's old `Up.forward`, copied in SegmenTron, builds them with `torch.tensor`)
    + ["nn.functional.pad", "nn.functional.interpolate", "nn.functional.upsample"]
)
_SIZE_NAME = re.compile(r"(?:^|_)(?:size|sizes|shape|dims?|len|length|num|count)(?:_|$)|^n_|^num_")
EMPTY: frozenset = frozenset()


_ONE_DIM_FACTORIES = frozenset({"torch.linspace", "torch.logspace", "torch.arange"})


def _one_dim_factory(m, value) -> bool:
    """A 1-D tensor: `torch.linspace/logspace/arange(...)` (no `out=`), or one of them in arithmetic
    with numbers (`2 ** torch.linspace(...)`, `torch.arange(n) * 0.5`)."""
    if isinstance(value, cst.BinaryOperation):
        sides = (value.left, value.right)
        calls = [x for x in sides if not isinstance(x, (cst.Integer, cst.Float))]
        return len(calls) == 1 and _one_dim_factory(m, calls[0])
    if isinstance(value, cst.Call):
        return m.qualname(value.func) in _ONE_DIM_FACTORIES and not any(
            a.keyword is not None and a.keyword.value == "out" for a in value.args
        )
    return False


def _is_self(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Name) and node.value == "self"


def self_attr(node: cst.CSTNode) -> str | None:
    """`a` for `self.a`, else None."""
    if isinstance(node, cst.Attribute) and _is_self(node.value):
        return node.attr.value
    return None


def _str_value(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.SimpleString):
        try:
            value = node.evaluated_value
        except Exception:  # pragma: no cover - odd literals
            return None
        return value if isinstance(value, str) else None
    if isinstance(node, cst.ConcatenatedString):
        try:
            value = node.evaluated_value
        except Exception:  # pragma: no cover
            return None
        return value if isinstance(value, str) else None
    return None


_DEFS = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
_IS_DEF: dict[type, bool] = {}  # node class -> is it one of _DEFS (isinstance on LibCST's ABCs is slow)


def _walk(node: cst.CSTNode, skip_defs: bool = True) -> Iterable[cst.CSTNode]:
    """Every node under `node` (itself included), not entering nested functions and classes."""
    stack = [node]
    pop, push = stack.pop, stack.append
    is_def = _IS_DEF
    while stack:
        cur = pop()
        yield cur
        kids = _children(cur)
        if not skip_defs:
            stack.extend(reversed(kids))
            continue
        for child in reversed(kids):
            t = type(child)
            d = is_def.get(t)
            if d is None:
                d = is_def[t] = issubclass(t, _DEFS)
            if not d:
                push(child)


def _positional(call: cst.Call) -> list[cst.Arg]:
    return [a for a in call.args if a.keyword is None and not a.star]


def _has_double_star(call: cst.Call) -> bool:
    return any(a.star == "**" for a in call.args)


# ---------------------------------------------------------------------------------------------
# Per-class facts
# ---------------------------------------------------------------------------------------------


@dataclass
class AttrAssign:
    """One `self.<attr> = value` statement in `__init__`."""

    attr: str
    node: cst.Assign | cst.AnnAssign | cst.AugAssign  # the small statement
    target: cst.Attribute
    value: cst.BaseExpression | None
    method: cst.FunctionDef
    kind: str  # parameter | buffer | module | container | tensor | scalar | none | other


@dataclass
class ModuleClass:
    info: ClassInfo
    name: str
    methods: dict[str, cst.FunctionDef]  # own methods and those inherited from file classes
    init: cst.FunctionDef | None
    forward: cst.FunctionDef | None
    reachable: list[cst.FunctionDef]  # forward first
    forward_params: list[cst.Param]
    init_assigns: dict[str, list[AttrAssign]] = field(default_factory=dict)
    buffers: set[str] = field(default_factory=set)  # register_buffer("a", ...) anywhere in the class
    parameters: set[str] = field(default_factory=set)  # nn.Parameter attributes, register_parameter
    submodules: set[str] = field(default_factory=set)  # attributes holding modules
    registers_dynamically: bool = False  # add_module / register_module / setattr(self, ...) in the class
    forward_reads: dict[str, list[cst.Attribute]] = field(default_factory=dict)
    forward_writes: dict[str, list[cst.Attribute]] = field(default_factory=dict)
    _flow: "DeviceFlow | None" = None
    _facts: "ModuleFacts | None" = None

    @property
    def node(self) -> cst.ClassDef:
        return self.info.node

    def attr_kind(self, attr: str) -> str:
        """What `self.attr` holds after __init__: parameter, buffer, module, tensor, container,
        scalar, none, other or unknown (never assigned in __init__)."""
        if attr in self.parameters:
            return "parameter"
        if attr in self.buffers:
            return "buffer"
        if attr in self.submodules:
            return "module"
        kinds = {a.kind for a in self.init_assigns.get(attr, ())} - {"none"}
        if len(kinds) == 1:
            return kinds.pop()
        if not kinds and attr in self.init_assigns:
            return "none"
        return "unknown" if not kinds else "other"

    def is_method(self, name: str) -> bool:
        return name in self.methods

    @property
    def flow(self) -> "DeviceFlow":
        if self._flow is None:
            assert self._facts is not None
            self._flow = DeviceFlow(self._facts, self)
        return self._flow

    def tensor_params(self) -> list[str]:
        """forward's parameters that are tensors (annotated so, or used as one in forward), in order."""
        assert self._facts is not None
        return [p.name.value for p in self.forward_params if self._facts._param_is_tensor(self, p)]

    def input_params(self) -> list[str]:
        """forward's parameters taken as inputs on the model's device by the dataflow: the tensor
        parameters, and the first positional parameter unless it is used as something else (a dict,
        a count...)."""
        assert self._facts is not None
        names = self.tensor_params()
        positional = [p for p in self.forward_params if p.star == "" or p.star is None]
        first = positional[0] if positional else None
        if (
            first is not None
            and first.name.value not in names
            and first.annotation is None
            and first.default is None
            and first in [*self.forward.params.posonly_params, *self.forward.params.params]  # type: ignore[union-attr]
            and not self._facts._param_not_tensor(self, first)
        ):
            names.insert(0, first.name.value)
        return names


_FLAG_GPU_WORDS = frozenset({"cuda", "gpu", "gpus"})
_FLAG_NOT_WORDS = frozenset({"no", "not", "non", "disable", "disabled", "cpu", "without", "skip", "off"})


def _gpu_word_flag(name: str) -> bool:
    """An options attribute whose name says the run uses the GPU (`cuda_condition`, `is_cuda`,
    `on_gpu`, `train_on_gpu`): a word for CUDA or a GPU and none that negates it or names the CPU.
    Read only where it can make a rule silent (a tensor moved under it)."""
    words = name.lower().split("_")
    return bool(_FLAG_GPU_WORDS & set(words)) and not (_FLAG_NOT_WORDS & set(words))


class ModuleFacts:
    """Facts about every nn.Module subclass defined in the file."""

    def __init__(self, model: ScriptModel) -> None:
        self.model = model
        self.default_device_set = model.cuda_default_set()
        self.classes: list[ModuleClass] = []
        self.by_name: dict[str, ModuleClass] = {}
        for info in model.module_classes():
            cls = self._build(info)
            self.classes.append(cls)
            self.by_name[cls.name] = cls

    # building -----------------------------------------------------------------------------------
    def _merged_methods(self, info: ClassInfo, seen: frozenset = frozenset()) -> dict[str, cst.FunctionDef]:
        out: dict[str, cst.FunctionDef] = {}
        name = info.node.name.value
        for base in reversed(info.bases):
            b = self.model.classes.get(base)
            if b is not None and base not in seen and base != name:
                out.update(self._merged_methods(b, seen | {name}))
        out.update(info.methods)
        return out

    def _build(self, info: ClassInfo) -> ModuleClass:
        m = self.model
        methods = self._merged_methods(info)
        forward = methods.get("forward")
        init = methods.get("__init__")
        reachable: list[cst.FunctionDef] = []
        if forward is not None:
            todo = [forward]
            while todo:
                fn = todo.pop(0)
                if fn in reachable:
                    continue
                reachable.append(fn)
                for node in _walk(fn.body):
                    if isinstance(node, cst.Call):
                        name = self_attr(node.func)
                        if name is not None and name in methods and methods[name] not in reachable:
                            todo.append(methods[name])
        params: list[cst.Param] = []
        if forward is not None:
            ps = [*forward.params.posonly_params, *forward.params.params, *forward.params.kwonly_params]
            params = ps[1:] if ps and ps[0].name.value == "self" else ps
        cls = ModuleClass(info, info.node.name.value, methods, init, forward, reachable, params)
        cls._facts = self

        # registrations anywhere in the class (and its file bases)
        for fn in methods.values():
            for node in _walk(fn.body):
                if not isinstance(node, cst.Call):
                    continue
                f = node.func
                meth = f.attr.value if isinstance(f, cst.Attribute) and _is_self(f.value) else None
                args = _positional(node)
                first = _str_value(args[0].value) if args else None
                if meth == "register_buffer" and first:
                    cls.buffers.add(first)
                elif meth == "register_parameter" and first:
                    cls.parameters.add(first)
                elif meth in ("add_module", "register_module"):
                    cls.registers_dynamically = True
                    if first:
                        cls.submodules.add(first)
                elif isinstance(f, cst.Name) and f.value == "setattr" and args and _is_self(args[0].value):
                    cls.registers_dynamically = True

        # __init__ assignments (own __init__ and, through super().__init__, file bases')
        inits = []
        for base in info.bases:
            b = self.model.classes.get(base)
            if b is not None:
                bm = self._merged_methods(b)
                if "__init__" in bm:
                    inits.append(bm["__init__"])
        if init is not None and init not in inits:
            inits.append(init)
        # helpers `__init__` calls as statements (`self._build_mask(n)`, xLSTM's
        # `self.init_states(x)`) and forward does not: their assignments are construction state
        for fn in list(inits):
            for stmt in fn.body.body if isinstance(fn.body, cst.IndentedBlock) else ():
                if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
                    continue
                e = stmt.body[0]
                if not (isinstance(e, cst.Expr) and isinstance(e.value, cst.Call)):
                    continue
                name = self_attr(e.value.func)
                helper = methods.get(name) if name is not None else None
                if helper is not None and name != "__init__" and helper not in reachable and helper not in inits:
                    inits.append(helper)
        for fn in inits:
            for node in _walk(fn.body):
                if isinstance(node, cst.Assign):
                    for t in node.targets:
                        self._record_assign(cls, fn, node, t.target, node.value)
                elif isinstance(node, cst.AnnAssign):
                    self._record_assign(cls, fn, node, node.target, node.value)
                elif isinstance(node, cst.AugAssign):
                    self._record_assign(cls, fn, node, node.target, None)

        for attr, assigns in cls.init_assigns.items():
            kinds = {a.kind for a in assigns}
            if "parameter" in kinds:
                cls.parameters.add(attr)
            elif "module" in kinds and kinds <= {"module", "none"}:
                cls.submodules.add(attr)

        # reads and writes of self.attr in the reachable methods
        for fn in reachable:
            for node in _walk(fn.body):
                written: list[cst.BaseExpression] = []
                if isinstance(node, cst.Assign):
                    written = [t.target for t in node.targets]
                elif isinstance(node, (cst.AnnAssign, cst.AugAssign)):
                    written = [node.target]
                elif isinstance(node, (cst.For,)):
                    written = [node.target]
                for t in written:
                    for el in _flatten_targets(t):
                        a = self_attr(el)
                        if a is not None:
                            cls.forward_writes.setdefault(a, []).append(el)
                if isinstance(node, cst.Attribute):
                    a = self_attr(node)
                    if a is not None and a not in methods and not self._is_store(node):
                        cls.forward_reads.setdefault(a, []).append(node)
        return cls

    def _is_store(self, node: cst.Attribute) -> bool:
        parent = self.model.parent(node)
        while isinstance(parent, (cst.Tuple, cst.List, cst.Element, cst.StarredElement)):
            parent = self.model.parent(parent)
        if isinstance(parent, cst.AssignTarget):
            return True
        if isinstance(parent, (cst.AnnAssign, cst.For)) and parent.target is not None:
            return _contains(parent.target, node)
        return False

    def _record_assign(self, cls, fn, stmt, target, value) -> None:
        for el in _flatten_targets(target):
            attr = self_attr(el)
            if attr is None:
                continue
            v = value if el is target else None  # tuple targets: no single value
            kind = self.value_kind(v) if el is target else "other"
            if isinstance(stmt, cst.AugAssign):
                kind = "other"
            cls.init_assigns.setdefault(attr, []).append(AttrAssign(attr, stmt, el, v, fn, kind))

    # kinds of values --------------------------------------------------------------------------
    def is_parameter_expr(self, expr: cst.BaseExpression | None, depth: int = 0) -> bool:
        """`nn.Parameter(...)` (or a name bound only to one)."""
        if expr is None or depth > 4:
            return False
        if isinstance(expr, cst.Call):
            q = self.model.qualname(expr.func)
            if q in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
                return True
            # nn.Parameter(...).requires_grad_(False), .to(...)
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in ("requires_grad_", "to", "cuda"):
                return self.is_parameter_expr(expr.func.value, depth + 1)
            return False
        if isinstance(expr, cst.Name):
            bindings = self.model.bindings_of(expr)
            return bool(bindings) and all(
                b.how == "assign" and self.is_parameter_expr(b.value, depth + 1) for b in bindings
            )
        return False

    def constructs_module(self, expr: cst.BaseExpression | None, _depth: int = 0) -> bool:
        """A call that builds a new module (`nn.Linear(...)`, a file module class, `nn.Sequential(...)`),
        also through a module-level function of the file every `return` of which builds one
        (`def fc_net(n): return nn.Sequential(...)`, RLlib's model-catalog shape, E36-3)."""
        if not isinstance(expr, cst.Call):
            return False
        if self.model.kind_of(expr) is Kind.MODULE:
            return True
        return _depth < 3 and self._module_builder(expr, _depth)

    def _module_builder(self, call: cst.Call, depth: int) -> bool:
        m = self.model
        if not isinstance(call.func, cst.Name):
            return False
        defs = [d for d in m.functions.get(call.func.value, ()) if m.class_of(d) is None]
        if len(defs) != 1 or defs[0].asynchronous is not None:
            return False
        fn = defs[0]
        returns = []
        for node in _walk(fn.body):
            if isinstance(node, (cst.Yield, cst.Await)):
                return False
            if isinstance(node, cst.Return):
                returns.append(node.value)
        if not returns:
            return False
        for v in returns:
            if isinstance(v, cst.Name):
                bs = [b for b in m.bindings_of(v) if m.enclosing(b.node, cst.FunctionDef) is fn]
                if not bs or any(b.how != "assign" for b in bs):
                    return False
                if not all(self.constructs_module(b.value, depth + 1) for b in bs):
                    return False
            elif not self.constructs_module(v, depth + 1):
                return False
        return True

    def value_kind(self, value: cst.BaseExpression | None) -> str:
        m = self.model
        if value is None:
            return "other"
        if isinstance(value, cst.Name) and value.value == "None":
            return "none"
        if isinstance(value, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
                              cst.FormattedString)) or (isinstance(value, cst.Name) and value.value in ("True", "False")):
            return "scalar"
        if isinstance(value, cst.UnaryOperation) and isinstance(value.expression, (cst.Integer, cst.Float)):
            return "scalar"
        if isinstance(value, (cst.List, cst.Dict, cst.Tuple, cst.ListComp, cst.DictComp, cst.Set, cst.SetComp)):
            return "container"
        if self.is_parameter_expr(value):
            return "parameter"
        k = m.kind_of(value)
        if k is Kind.MODULE:
            return "module"
        if k is Kind.TENSOR:
            return "tensor"
        if isinstance(value, cst.Name):
            # `P, L, U = torch.lu_unpack(*torch.linalg.lu_factor(w))` then `self.P = P`: a part of a
            # torch function's tuple of tensors (the flow engine's value says tensor)
            bs = m.bindings_of(value)
            if bs and all(b.how == "unpack" and isinstance(b.value, cst.Call)
                          and (m.qualname(b.value.func) or "").startswith("torch.") for b in bs):
                if m.value_of(value).kind == "tensor":
                    return "tensor"
        return "other"

    # forward's parameters ---------------------------------------------------------------------
    def _param_is_tensor(self, cls: ModuleClass, p: cst.Param) -> bool:
        if p.annotation is not None:
            return self._annotation_is_tensor(p.annotation.annotation)
        if p.default is not None and not (isinstance(p.default, cst.Name) and p.default.value == "None"):
            return False
        name = p.name.value
        fn = cls.forward
        if fn is None:
            return False
        for node in _walk(fn.body):
            if isinstance(node, cst.Name) and node.value == name:
                if self._tensor_use(cls, node):
                    return True
        return False

    def _param_not_tensor(self, cls: ModuleClass, p: cst.Param) -> bool:
        """Is the parameter used as something other than a tensor (a dict, a count, a list)?"""
        m = self.model
        name = p.name.value
        if _SIZE_NAME.search(name):
            return True  # `window_size`, `shape`, `num_heads`, `seq_len`: sizes, not tensors
        if cls.forward is None:
            return True
        for node in _walk(cls.forward.body):
            if not (isinstance(node, cst.Name) and node.value == name):
                continue
            parent = m.parent(node)
            if isinstance(parent, cst.Subscript) and parent.value is node:
                for el in parent.slice:
                    if isinstance(el.slice, cst.Index) and _str_value(el.slice.value) is not None:
                        return True
            if isinstance(parent, cst.Attribute) and parent.value is node:
                if parent.attr.value in ("items", "keys", "values", "get", "append", "pop", "update"):
                    return True
            if isinstance(parent, cst.For) and parent.iter is node:
                return True
            if isinstance(parent, cst.Arg) and parent.value is node:
                call = m.parent(parent)
                if isinstance(call, cst.Call):
                    q = m.qualname(call.func)
                    if isinstance(call.func, cst.Name) and call.func.value in ("range", "int", "float", "str", "len"):
                        return True
                    if q is not None and q.startswith("torch.") and q[len("torch."):] in FACTORIES | LEGACY_CONSTRUCTORS:
                        return True
        return False

    def _annotation_is_tensor(self, ann: cst.BaseExpression) -> bool:
        q = self.model.qualname(ann)
        if q in TENSOR_ANNOTATIONS:
            return True
        if isinstance(ann, cst.SimpleString) and _str_value(ann) in ("torch.Tensor", "Tensor"):
            return True
        if isinstance(ann, cst.Subscript):  # Optional[Tensor]
            q = self.model.qualname(ann.value) or (ann.value.value if isinstance(ann.value, cst.Name) else None)
            if q in ("typing.Optional", "Optional") and len(ann.slice) == 1:
                inner = ann.slice[0].slice
                if isinstance(inner, cst.Index):
                    return self._annotation_is_tensor(inner.value)
        if isinstance(ann, cst.BinaryOperation) and isinstance(ann.operator, cst.BitOr):  # Tensor | None
            sides = [ann.left, ann.right]
            others = [s for s in sides if not (isinstance(s, cst.Name) and s.value == "None")]
            return len(others) == 1 and self._annotation_is_tensor(others[0])
        return False

    def _tensor_use(self, cls: ModuleClass, name: cst.Name) -> bool:
        """Does this occurrence of a parameter use it as a tensor?"""
        m = self.model
        parent = m.parent(name)
        if isinstance(parent, cst.Attribute) and parent.value is name:
            attr = parent.attr.value
            if attr in ("shape", "device", "dtype", "ndim", "T", "mT"):
                return True
            grand = m.parent(parent)
            return attr in TENSOR_EVIDENCE_METHODS and isinstance(grand, cst.Call) and grand.func is parent
        if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.MatrixMultiply):
            return True
        if isinstance(parent, cst.Subscript) and parent.value is name:
            for el in parent.slice:
                s = el.slice
                if isinstance(s, cst.Slice):
                    return True
                if isinstance(s, cst.Index) and isinstance(s.value, (cst.Ellipsis,)):
                    return True
                if isinstance(s, cst.Index) and isinstance(s.value, cst.Name) and s.value.value == "None":
                    return True
            return False
        holder: cst.CSTNode = name
        while isinstance(parent, (cst.Element, cst.List, cst.Tuple)):
            holder, parent = parent, m.parent(parent)
        if isinstance(parent, cst.Arg) and parent.keyword is None and holder is not name:
            call = m.parent(parent)
            q = m.qualname(call.func) if isinstance(call, cst.Call) else None
            return q in ("torch.cat", "torch.stack", "torch.concat", "torch.hstack", "torch.vstack")
        if isinstance(parent, cst.Arg) and parent.value is name and parent.keyword is None:
            call = m.parent(parent)
            if not isinstance(call, cst.Call):
                return False
            q = m.qualname(call.func)
            if q is not None and q.startswith("torch."):
                tail = q[len("torch."):]
                if tail in FACTORIES or tail in LEGACY_CONSTRUCTORS or q in NO_MEET_FUNCTIONS:
                    return False
                return True
            attr = self_attr(call.func)
            if attr is not None and attr in cls.submodules and parent is call.args[0]:
                return True
        return False


def _flatten_targets(t: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(t, (cst.Tuple, cst.List)):
        out = []
        for el in t.elements:
            out.extend(_flatten_targets(el.value))
        return out
    if isinstance(t, cst.StarredElement):
        return _flatten_targets(t.value)
    return [t]


def _contains(root: cst.CSTNode, node: cst.CSTNode) -> bool:
    return any(n is node for n in _walk(root, skip_defs=False))


# ---------------------------------------------------------------------------------------------
# The device dataflow
# ---------------------------------------------------------------------------------------------


# attributes only a tensor has (among the values a method parameter usually holds)
_TENSOR_ONLY_ATTRS = frozenset(
    "size shape device dtype dim ndim ndimension numel view reshape transpose permute unsqueeze squeeze "
    "contiguous float half long masked_fill new_zeros new_ones new_full new_empty type_as expand".split()
)


@dataclass
class FactorySite:
    """A tensor factory called without a device inside a method reachable from forward."""

    call: cst.Call
    name: str  # zeros, randn, FloatTensor...
    method: cst.FunctionDef
    random: bool
    legacy: bool
    fix_param: str | None  # a parameter of `method` that holds a tensor on the model's device there
    met: bool = False


def _relative_imports(m) -> frozenset:
    """Names a relative import of the file binds (`from .utils import convert2cpu`), computed once
    per model (the binding table does not record them)."""
    found = getattr(m, "_gl_relative_imports", None)
    if found is None:
        names = set()
        for node in m.nodes:
            if type(node) is cst.ImportFrom and node.relative and not isinstance(node.names, cst.ImportStar):
                for alias in node.names:
                    target = alias.asname.name if alias.asname is not None else alias.name
                    if isinstance(target, cst.Name):
                        names.add(target.value)
        found = frozenset(names)
        try:
            m._gl_relative_imports = found
        except AttributeError:
            pass
    return found


class DeviceFlow:
    """Which host-made tensors meet device tensors in the methods reachable from forward."""

    MAX_PASSES = 6

    def __init__(self, facts: ModuleFacts, cls: ModuleClass) -> None:
        self.facts = facts
        self.model = facts.model
        self.cls = cls
        self.factories: dict[cst.Call, FactorySite] = {}
        self.attr_meets: dict[str, list[cst.CSTNode]] = {}  # unregistered tensor attributes that met D
        self.attr_meet_methods: dict[str, set[cst.FunctionDef]] = {}  # the methods where they met it
        self.param_tags: dict[cst.FunctionDef, dict[str, frozenset]] = {}
        self.returns: dict[cst.FunctionDef, frozenset] = {}
        self._fn: cst.FunctionDef | None = None
        self._ret: set = set()
        # per-position tags of methods that always return a tuple of one length
        # (`return y_true, noobj_mask, box_loss_scale`); None once a return breaks the pattern
        self.tuple_returns: dict[cst.FunctionDef, list[frozenset] | None] = {}
        self._ret_items: list[frozenset] | None = None
        self._ret_plain = False
        self._changed = False
        self._host_only = 0  # > 0 inside the branch an availability test runs when no accelerator is there
        self._cur_line = None  # the simple statement line under analysis
        self._path_factories: dict = {}  # factory -> (test, host is the `else`) of a conditional expression
        self._evidenced: set[str] = set()
        self._candidate_attrs = {
            a for a in cls.init_assigns if cls.attr_kind(a) == "tensor" and a not in cls.forward_writes
        }
        # methods outside forward's reach that the file calls on a moved instance (SAC's
        # `self.policy.sample(state)` after `.to(device)`): analysed after forward, for unregistered
        # tensor attributes only (factory meets and forward's own facts are left as forward made them)
        self._extra = False
        self._extra_methods: list[cst.FunctionDef] = []
        if cls.forward is not None:
            self.param_tags[cls.forward] = {p: frozenset({D}) for p in cls.input_params()}
            self._evidenced = set(cls.tensor_params())
            self._run()
            self._run_moved_methods()

    # driver -----------------------------------------------------------------------------------
    def _run_moved_methods(self) -> None:
        m = self.model
        cls = self.cls
        entries: list[tuple[cst.FunctionDef, list[cst.Call]]] = []
        for name, fn in cls.methods.items():
            if name.startswith("__") or fn in cls.reachable:
                continue
            sites = []
            for call in m.resolved_sites(fn):
                f = call.func
                if not isinstance(f, cst.Attribute) or _is_self(f.value):
                    continue
                dev = m.device_of(f.value)
                if dev is not None and dev.is_acc:
                    sites.append(call)
            if sites:
                entries.append((fn, sites))
        if not entries:
            return
        todo = [fn for fn, _ in entries]
        while todo:
            fn = todo.pop(0)
            if fn in self._extra_methods or fn in cls.reachable:
                continue
            self._extra_methods.append(fn)
            for node in _walk(fn.body):
                if isinstance(node, cst.Call):
                    name = self_attr(node.func)
                    if name is not None and name in cls.methods:
                        todo.append(cls.methods[name])
        # an attribute these methods assign is theirs to keep: not an unregistered __init__ tensor there
        written = set()
        for fn in self._extra_methods:
            for node in _walk(fn.body):
                targets: list[cst.BaseExpression] = []
                if isinstance(node, cst.Assign):
                    targets = [t.target for t in node.targets]
                elif isinstance(node, (cst.AnnAssign, cst.AugAssign)):
                    targets = [node.target]
                for t in targets:
                    for el in _flatten_targets(t):
                        a = self_attr(el)
                        if a is not None:
                            written.add(a)
        for fn, sites in entries:
            tags: dict[str, frozenset] = {}
            params = self._method_params(fn)
            for call in sites:
                i = 0
                for arg in call.args:
                    if arg.star:
                        break
                    name = None
                    if arg.keyword is None:
                        name = params[i] if i < len(params) else None
                        i += 1
                    elif arg.keyword.value in params:
                        name = arg.keyword.value
                    dev = m.device_of(arg.value)
                    if name is not None:
                        tags[name] = tags.get(name, EMPTY) | (frozenset({D}) if dev is not None and dev.is_acc else EMPTY)
            self.param_tags[fn] = tags
        saved = self._candidate_attrs
        self._candidate_attrs = saved - written
        self._extra = True
        try:
            self._run(self._extra_methods)
        finally:
            self._extra = False
            self._candidate_attrs = saved

    def _run(self, methods: list[cst.FunctionDef] | None = None) -> None:
        for _ in range(self.MAX_PASSES):
            self._changed = False
            for fn in self.cls.reachable if methods is None else methods:
                if fn not in self.param_tags:
                    continue
                self._fn = fn
                self._ret = set()
                self._ret_items = None
                self._ret_plain = False
                env = dict(self.param_tags[fn])
                self._suite(fn.body, env)
                old = self.returns.get(fn, EMPTY)
                new = old | frozenset(self._ret)
                if fn not in self.returns or new != old:
                    self.returns[fn] = new
                    self._changed = True
                items = None if self._ret_plain else self._ret_items
                prev = self.tuple_returns.get(fn, items)
                if prev is None or items is None or len(prev) != len(items):
                    merged = None
                else:
                    merged = [a | b for a, b in zip(prev, items)]
                if self.tuple_returns.get(fn, "unset") != merged:
                    self.tuple_returns[fn] = merged
                    self._changed = True
            if not self._changed:
                break

    def _method_params(self, fn: cst.FunctionDef) -> list[str]:
        ps = [*fn.params.posonly_params, *fn.params.params]
        names = [p.name.value for p in ps]
        return names[1:] if names and names[0] == "self" else names

    def _propagate(self, fn: cst.FunctionDef, call: cst.Call, arg_tags: list[frozenset]) -> None:
        params = self._method_params(fn)
        kw = [p.name.value for p in fn.params.kwonly_params]
        new = fn not in self.param_tags
        current = self.param_tags.setdefault(fn, {})
        before = dict(current)
        i = 0
        for arg, tags in zip(call.args, arg_tags):
            if arg.star:
                return  # *args / **kwargs: cannot map
            if arg.keyword is None:
                if i < len(params):
                    current[params[i]] = current.get(params[i], EMPTY) | tags
                i += 1
            elif arg.keyword.value in params or arg.keyword.value in kw:
                k = arg.keyword.value
                current[k] = current.get(k, EMPTY) | tags
        if new or current != before:
            self._changed = True

    # recording --------------------------------------------------------------------------------
    def _meet(self, *groups: frozenset) -> frozenset:
        """Host-made values of one group meet device values of another; returns the tags of the
        operation's result (on the device when a device value took part: the host-made ones that
        met are recorded, not carried on)."""
        if self._path_factories and self._cur_line is not None:
            # a factory made on the path of a conditional expression that an enclosing `if` excludes
            # here takes no part (`loss += stop_loss` under `if ... and self.stopnet:`, P55-2)
            gone = {t for g in groups for t in g if t in self._path_factories
                    and requires_other_path(self.model, self._cur_line, *self._path_factories[t])}
            if gone:
                groups = tuple(g - gone for g in groups)
        has_d = [D in g for g in groups]
        for i, g in enumerate(groups):
            if any(has_d[j] for j in range(len(groups)) if j != i):
                self._record(g)
        out = frozenset().union(*groups) - {"M"} if groups else EMPTY
        return frozenset({D}) if D in out else out

    def _record(self, tags: frozenset, at: cst.CSTNode | None = None) -> None:
        if self._host_only:
            return  # the branch of an availability test that runs with no accelerator: all on the host
        for t in tags:
            if self._extra and not (isinstance(t, tuple) and t[0] == "attr"):
                continue  # methods outside forward's reach: unregistered attributes only
            if isinstance(t, cst.Call) and t in self.factories:
                cond = self._path_factories.get(t)
                if cond is not None and self._cur_line is not None and requires_other_path(self.model, self._cur_line, *cond):
                    continue  # made on the path that never reaches this statement (P55-2)
                self.factories[t].met = True
            elif isinstance(t, tuple) and t[0] == "attr":
                self.attr_meets.setdefault(t[1], []).append(at)
                if self._fn is not None:
                    self.attr_meet_methods.setdefault(t[1], set()).add(self._fn)

    # statements -------------------------------------------------------------------------------
    def _suite(self, body, env: dict) -> None:
        if isinstance(body, cst.SimpleStatementSuite):
            # `if torch.cuda.is_available(): t = t.cuda()` on one line: small statements, no lines
            for small in body.body:
                self._small(small, env)
            return
        if isinstance(body, cst.IndentedBlock):
            stmts = body.body
        else:
            stmts = body
        for s in stmts:
            self._stmt(s, env)

    @staticmethod
    def _merge(env: dict, *others: dict) -> None:
        for o in others:
            for k, v in o.items():
                env[k] = env.get(k, EMPTY) | v

    def _cuda_tensor_type(self, e: cst.BaseExpression) -> bool:
        """A legacy CUDA tensor type, a name bound only to one, or a choice between one and a CPU
        type made on a device test (`if x.is_cuda`) or an availability test."""
        return self.model.cuda_tensor_type(
            e, lambda t: self._device_guard(t) or self._availability_test(t) > 0)

    def _device_guard(self, test: cst.BaseExpression, depth: int = 0) -> bool:
        """A test on where a tensor is (`x.is_cuda`, `x.device.type == "cuda"`), also through a
        local bound only to one (`cuda = x.is_cuda; ...; if cuda:`, segan's SincConv, PRECISION32 A2)."""
        for n in _walk(test):
            if isinstance(n, cst.Attribute) and n.attr.value in ("device", "is_cuda"):
                return True
            if isinstance(n, cst.Name) and depth < 2:
                bs = self.model.bindings_of(n)
                if bs and all(b.how == "assign" and isinstance(b.value, cst.BaseExpression) for b in bs) and all(
                        self._device_guard(b.value, depth + 1) for b in bs):
                    return True
        return False

    def _availability_test(self, test: cst.BaseExpression) -> int:
        """1 when `test` is an accelerator availability check (`torch.cuda.is_available()`), -1 when
        it is its negation, 0 otherwise."""
        sign = 1
        while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            sign, test = -sign, test.expression
        if (
            isinstance(test, cst.Call)
            and not test.args
            and self.model.qualname(test.func) in _AVAILABILITY_CALLS
        ):
            return sign
        if isinstance(test, cst.Attribute) and self.model.qualname(test) in _AVAILABILITY_CALLS:
            return sign  # `if torch.cuda.is_available:`, the call forgotten: always true (PRECISION27 A1)
        if isinstance(test, cst.Attribute) and _is_self(test.value):
            # the module's own GPU flag (`self.cuda = cuda` from its constructor, bubbliiiing's
            # YOLOLoss: `if self.cuda: y_true = y_true.type_as(x)`): the caller sets it where the
            # model runs on the GPU; without it everything is on the host
            from gpulint.flow import _CPU_FLAGS, _GPU_FLAGS

            if test.attr.value in _GPU_FLAGS or _gpu_word_flag(test.attr.value):
                return sign
            if test.attr.value in _CPU_FLAGS:
                return -sign
        if isinstance(test, cst.Attribute) and not _is_self(test.value) and not (
                self.model.qualname(test) or "").startswith("torch"):
            # an options namespace's GPU flag (`if cmd_args.cuda:`, `if self.args.use_gpu:`): the
            # same option moves the model (PRECISION18 A1, GraphCL's pytorch_structure2vec code)
            from gpulint.flow import _CPU_FLAGS, _GPU_FLAGS

            if test.attr.value in _GPU_FLAGS or _gpu_word_flag(test.attr.value):
                return sign
            if test.attr.value in _CPU_FLAGS:
                return -sign
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
            # `torch.cuda.is_available() and not args.no_cuda` (FMLP-Rec's `cuda_condition`): true
            # only where each part says the run has the GPU
            if self._availability_test(test.left) == 1 and self._availability_test(test.right) == 1:
                return sign
            return 0
        if (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
                and isinstance(test.comparisons[0].operator, (cst.Equal, cst.NotEqual))):
            # `if cmd_args.ctx == 'gpu':` (`!=` negates): an option compared with a GPU word; never
            # a tensor's `x.device.type == "cuda"` (where a value is, not where the run is)
            left, right = test.left, test.comparisons[0].comparator
            if isinstance(left, cst.SimpleString):
                left, right = right, left
            if (isinstance(right, cst.SimpleString) and isinstance(right.evaluated_value, str)
                    and right.evaluated_value.lower() in ("gpu", "cuda")
                    and isinstance(left, cst.Attribute) and left.attr.value != "type"
                    and not (self.model.qualname(left) or "").startswith("torch")):
                root = left
                while isinstance(root, cst.Attribute):
                    root = root.value
                if isinstance(root, cst.Name) and root.value not in ("self", "cls"):
                    return sign if isinstance(test.comparisons[0].operator, cst.Equal) else -sign
        if isinstance(test, cst.Name):
            # a module-level GPU flag (`GPU = cfg["gpu_train"]`, Pytorch_Retinaface's multibox loss:
            # `if GPU: loc_t = loc_t.cuda()`), read like the module's own `self.use_gpu`
            from gpulint.flow import _CPU_FLAGS, _GPU_FLAGS

            name = test.value.lower()
            bindings = self.model.bindings_of(test)
            if bindings and all(b.how == "assign" and self.model.scope_of(b.node) is self.model.module for b in bindings):
                if name in _GPU_FLAGS or _gpu_word_flag(name):
                    return sign
                if name in _CPU_FLAGS:
                    return -sign
        return 0

    def _stmt(self, s: cst.CSTNode, env: dict) -> None:
        if isinstance(s, cst.SimpleStatementLine):
            self._cur_line = s
            for small in s.body:
                self._small(small, env)
        elif isinstance(s, cst.If):
            self._expr(s.test, env)
            avail = self._availability_test(s.test)
            body = dict(env)
            if avail < 0:
                self._host_only += 1
            self._suite(s.body, body)
            if avail < 0:
                self._host_only -= 1
            other = dict(env)
            if avail > 0:
                self._host_only += 1
            if isinstance(s.orelse, cst.If):
                self._stmt(s.orelse, other)
            elif isinstance(s.orelse, cst.Else):
                self._suite(s.orelse.body, other)
            if avail > 0:
                self._host_only -= 1
            if avail:
                # `if torch.cuda.is_available(): t = t.cuda() [else: ...]` (pytorch-retinanet's loss
                # and post-processing): without an accelerator every value is on the host, so what
                # flows on is the accelerator branch's values.
                env.clear()
                env.update(body if avail > 0 else other)
                return
            if self._device_guard(s.test) and s.orelse is None:
                env.clear()
                env.update(body)  # `if t.device != x.device: t = t.to(x.device)`
                return
            env.clear()
            env.update(other)
            self._merge(env, body)
        elif isinstance(s, (cst.For, cst.While)):
            if isinstance(s, cst.For):
                it = self._expr(s.iter, env)
                if self._iterates_flat_attr(s.iter):
                    it = EMPTY  # the elements of a 1-D tensor are 0-d: they combine with any device
            else:
                self._expr(s.test, env)
            for _ in range(2):
                inner = dict(env)
                if isinstance(s, cst.For):
                    self._bind(s.target, it, None, inner)
                self._suite(s.body, inner)
                if isinstance(s, cst.While):
                    self._expr(s.test, inner)
                self._merge(env, inner)
            if s.orelse is not None:
                self._suite(s.orelse.body, env)
        elif isinstance(s, cst.With):
            for item in s.items:
                tags = self._expr(item.item, env)
                if item.asname is not None:
                    self._bind(item.asname.name, tags, None, env)
            self._suite(s.body, env)
        elif isinstance(s, (cst.Try, cst.TryStar)):
            self._suite(s.body, env)
            for h in s.handlers:
                inner = dict(env)
                self._suite(h.body, inner)
                self._merge(env, inner)
            if s.orelse is not None:
                self._suite(s.orelse.body, env)
            if s.finalbody is not None:
                self._suite(s.finalbody.body, env)

    def _small(self, s: cst.CSTNode, env: dict) -> None:
        if isinstance(s, cst.Assign):
            tags = self._expr(s.value, env)
            for t in s.targets:
                self._bind(t.target, tags, s.value, env)
        elif isinstance(s, cst.AnnAssign):
            if s.value is not None:
                self._bind(s.target, self._expr(s.value, env), s.value, env)
        elif isinstance(s, cst.AugAssign):
            left = self._expr(s.target, env)
            right = self._expr(s.value, env)
            out = self._meet(left, right)
            if isinstance(s.target, cst.Name):
                env[s.target.value] = out
        elif isinstance(s, cst.Expr):
            self._expr(s.value, env)
        elif isinstance(s, cst.Return):
            if s.value is not None:
                v = s.value
                if isinstance(v, cst.Tuple) and v.elements and not any(
                    isinstance(e, cst.StarredElement) for e in v.elements
                ):
                    items = [self._expr(e.value, env) - {"M"} for e in v.elements]
                    self._ret |= frozenset().union(*items)
                    if self._ret_items is None and not self._ret_plain:
                        self._ret_items = items
                    elif self._ret_items is not None and len(self._ret_items) == len(items):
                        self._ret_items = [a | b for a, b in zip(self._ret_items, items)]
                    else:
                        self._ret_plain = True
                else:
                    self._ret |= self._expr(v, env)
                    self._ret_plain = True

    def _bind(self, target, tags: frozenset, value, env: dict) -> None:
        if isinstance(target, cst.Name):
            env[target.value] = tags
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = target.elements
            if (
                isinstance(value, (cst.Tuple, cst.List))
                and len(value.elements) == len(elements)
                and not any(isinstance(e, cst.StarredElement) for e in (*elements, *value.elements))
            ):
                for el, v in zip(elements, value.elements):
                    self._bind(el.value, self._expr(v.value, env), v.value, env)
            else:
                items = self._tuple_result(value)
                if items is not None and len(items) == len(elements) and not any(
                    isinstance(e, cst.StarredElement) for e in elements
                ):
                    # `y_true, noobj_mask, box_loss_scale = self.get_target(...)`: each name gets the
                    # tags of its own position (bubbliiiing/yolov4-pytorch YOLOLoss)
                    for el, t in zip(elements, items):
                        self._bind(el.value, t, None, env)
                    return
                for el in elements:
                    self._bind(el.value, tags - {"M"}, None, env)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value, tags, None, env)
        else:
            # self.a = ..., t[i] = ...: evaluate the target's parts for meetings only
            if isinstance(target, cst.Subscript):
                self._expr(target.value, env)

    def _tuple_result(self, value) -> list[frozenset] | None:
        """Per-position tags of `self.<method>(...)` when the method always returns a tuple of one
        length, None otherwise."""
        if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and _is_self(value.func.value)):
            return None
        target = self.cls.methods.get(value.func.attr.value)
        if target is None or self._extra:
            return None
        return self.tuple_returns.get(target)

    # expressions ------------------------------------------------------------------------------
    def _expr(self, e: cst.BaseExpression | None, env: dict) -> frozenset:
        if e is None:
            return EMPTY
        if isinstance(e, cst.Name):
            return env.get(e.value, EMPTY)
        if isinstance(e, cst.Attribute):
            return self._attribute(e, env)
        if isinstance(e, cst.Call):
            return self._call(e, env)
        if isinstance(e, cst.BinaryOperation):
            left, right = self._expr(e.left, env), self._expr(e.right, env)
            if isinstance(e.operator, cst.Add) and (isinstance(e.left, (cst.Tuple, cst.List))
                                                    or isinstance(e.right, (cst.Tuple, cst.List))):
                # `torch.meshgrid(...) + (idx,)`: sequences concatenated, their tensors do not meet
                # (vnn's index tuple, PRECISION34 P34-A1)
                return (left | right) - {"M"}
            return self._meet(left, right)
        if isinstance(e, cst.Comparison):
            groups = [self._expr(e.left, env)]
            for c in e.comparisons:
                if isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)):
                    self._expr(c.comparator, env)
                    return EMPTY
                groups.append(self._expr(c.comparator, env))
            return self._meet(*groups)
        if isinstance(e, cst.BooleanOperation):
            return (self._expr(e.left, env) | self._expr(e.right, env)) - {"M"}
        if isinstance(e, cst.UnaryOperation):
            inner = self._expr(e.expression, env)
            return EMPTY if isinstance(e.operator, cst.Not) else inner
        if isinstance(e, cst.Subscript):
            base = self._expr(e.value, env)
            for el in e.slice:
                s = el.slice
                if isinstance(s, cst.Index):
                    self._expr(s.value, env)  # an index on the host is fine: only look inside it
                else:
                    for part in (s.lower, s.upper, s.step):
                        self._expr(part, env)
            return base - {"M"} if base != frozenset({"M"}) else EMPTY
        if isinstance(e, cst.IfExp):
            self._expr(e.test, env)
            body, orelse = self._expr(e.body, env), self._expr(e.orelse, env)
            avail = self._availability_test(e.test)
            if avail:
                return body if avail > 0 else orelse  # `x.cuda() if torch.cuda.is_available() else x`
            if self._device_guard(e.test):
                # `one_hot.cuda() if cos_theta.is_cuda else one_hot` (arcface's sphere product): each
                # branch runs where its test puts it; what both branches share is what holds
                return body & orelse
            for branch, tags, is_else in ((e.body, body, False), (e.orelse, orelse, True)):
                if isinstance(branch, cst.Call) and branch in tags and branch in self.factories:
                    # `criterion(...) if self.stopnet else torch.zeros(1)`: the factory runs on one path
                    self._path_factories[branch] = (e.test, is_else)
            return body | orelse
        if isinstance(e, (cst.Tuple, cst.List, cst.Set)):
            out = EMPTY
            for el in e.elements:
                out |= self._expr(el.value, env)
            return out
        if isinstance(e, cst.Dict):
            out = EMPTY
            for el in e.elements:
                if isinstance(el, cst.DictElement):
                    self._expr(el.key, env)
                out |= self._expr(el.value, env)
            return out
        if isinstance(e, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            inner = dict(env)
            comp = e.for_in
            while comp is not None:
                it = self._expr(comp.iter, inner)
                self._bind(comp.target, it - {"M"}, None, inner)
                for cond in comp.ifs:
                    self._expr(cond.test, inner)
                comp = comp.inner_for_in
            if isinstance(e, cst.DictComp):
                self._expr(e.key, inner)
                return self._expr(e.value, inner)
            return self._expr(e.elt, inner)
        if isinstance(e, cst.StarredElement):
            return self._expr(e.value, env)
        if isinstance(e, cst.NamedExpr):
            tags = self._expr(e.value, env)
            self._bind(e.target, tags, e.value, env)
            return tags
        if isinstance(e, cst.Await):
            return self._expr(e.expression, env)
        return EMPTY

    def _attribute(self, e: cst.Attribute, env: dict) -> frozenset:
        cls = self.cls
        attr = e.attr.value
        if _is_self(e.value):
            kind = cls.attr_kind(attr)
            if kind in ("parameter", "buffer"):
                return frozenset({D})
            if kind == "module":
                return frozenset({"M"})
            if attr in self._candidate_attrs:
                return frozenset({("attr", attr)})
            return EMPTY
        base = self._expr(e.value, env)
        if base == frozenset({"M"}):
            # self.fc.weight, self.lstm.weight_ih_l0: a submodule's parameters
            return frozenset({D}) if ("weight" in attr or "bias" in attr) else EMPTY
        if attr in NON_TENSOR_ATTRS:
            return EMPTY
        if attr in TENSOR_ATTRS:
            return base - {"M"}
        return frozenset({D}) if D in base else EMPTY

    def _args(self, call: cst.Call, env: dict) -> list[frozenset]:
        return [self._expr(a.value, env) for a in call.args]

    def _call(self, call: cst.Call, env: dict) -> frozenset:
        m = self.model
        q = m.qualname(call.func)
        if q is not None and q.startswith("torch."):
            tail = q[len("torch."):]
            if tail in FACTORIES or tail in LEGACY_CONSTRUCTORS:
                return self._factory(call, tail, env)
            if tail in LIKE_FACTORIES:
                args = self._args(call, env)
                return args[0] if args and call.args[0].keyword is None else EMPTY
            if tail in _FIRST_OPERAND_ONLY and call.args and call.args[0].keyword is None:
                # torch.multinomial(p, n), torch.topk(x, k)...: the other arguments are counts/sizes
                for a in call.args[1:]:
                    self._expr(a.value, env)
                return self._expr(call.args[0].value, env)
            # torch.cat([x, t]): the tensors of a list or tuple argument are operands too
            groups = []
            for a in call.args:
                if a.star == "" and isinstance(a.value, (cst.List, cst.Tuple)):
                    groups.extend(self._expr(el.value, env) for el in a.value.elements)
                else:
                    groups.append(self._expr(a.value, env))
            if q in NO_MEET_FUNCTIONS or tail.startswith(
                    ("cuda.", "backends.", "distributed.", "jit.", "autograd.", "onnx.")):
                # (`torch.onnx.operators.shape_as_tensor(x)` is a host tensor and
                # `reshape_from_tensor_shape(x, shape)` takes a host shape: export helpers, P53-1)
                return EMPTY
            if tail in FULL_REDUCTIONS and _full_reduction(call, 1):
                return EMPTY  # 0-dim: fine next to device tensors
            return self._meet(*groups)
        f = call.func
        if isinstance(f, cst.Attribute):
            meth = f.attr.value
            if _is_self(f.value):
                args = self._args(call, env)
                if meth in self.cls.methods:
                    target = self.cls.methods[meth]
                    if target in self.cls.reachable:
                        if not self._extra:  # forward's facts stay as forward made them
                            self._propagate(target, call, args)
                        return self.returns.get(target, EMPTY)
                    if self._extra and target in self._extra_methods:
                        self._propagate(target, call, args)
                        return self.returns.get(target, EMPTY)
                    return EMPTY
                if self.cls.attr_kind(meth) == "module":
                    return self._submodule_call(meth, args, call)
                return EMPTY
            recv = self._expr(f.value, env)
            args = self._args(call, env)
            if recv == frozenset({"M"}):  # self.block.method(...): unknown
                return frozenset({D}) if any(D in a for a in args) else EMPTY
            if meth == "cuda":
                return frozenset({D})
            if meth == "to":
                return self._to(call, recv, args)
            if meth == "type_as":
                return (args[0] - {"M"}) if args else recv
            if meth == "type" and _type_of_tensor(call):
                # `dummy.type(mel.type())`: the type string names the device too
                # (`torch.cuda.FloatTensor`), so the result is where `mel` is (flowtron)
                return args[0] - {"M"}
            if (meth == "type" and len(call.args) == 1 and call.args[0].keyword is None
                    and not call.args[0].star and D in args[0]):
                # `p_n.type(dtype)` with `dtype = offset.data.type()` handed down from forward
                # (deformable convolution in WongKinYiu/PyTorch_YOLOv4 utils/layers.py): a type
                # string of a device tensor, which moves the result there
                return frozenset({D})
            if (meth == "type" and len(call.args) == 1 and call.args[0].keyword is None
                    and not call.args[0].star and self._cuda_tensor_type(call.args[0].value)):
                # `.type(torch.cuda.FloatTensor)`, or `.type(dtype)` with `dtype =
                # torch.cuda.FloatTensor if xin.is_cuda else torch.FloatTensor` (DeNA's YOLOv3 layer):
                # on a GPU run the result is on the device
                return frozenset({D})
            if (meth == "type" and len(call.args) == 1 and call.args[0].keyword is None
                    and not call.args[0].star
                    and isinstance(call.args[0].value, (cst.Call, cst.FormattedString, cst.BinaryOperation))):
                # `self.k.type("torch{}.FloatTensor".format(self.cuda))`: a type name made at run time
                # names a device the analysis cannot read, so where the result is stays unknown
                # (pixel2style2pixel's BicubicDownSample, P33-A2)
                return EMPTY
            if meth in NON_TENSOR_METHODS:
                return EMPTY
            if meth in MEET_METHODS:
                return self._meet(recv, *args)
            if meth in FULL_REDUCTIONS and _full_reduction(call, 0):
                return EMPTY  # `ref.mean()`: 0-dim, fine next to device tensors
            return recv
        args = self._args(call, env)
        if isinstance(f, cst.Name) and (f.value in PYTHON_VALUE_CALLS or f.value in m.classes):
            return EMPTY
        if q is None and isinstance(f, (cst.Name, cst.Subscript)):
            # a local callable (`for layer in self.layers: x = layer(x)`, `self.blocks[i](x)`):
            # its output is where its input is
            self._expr(f, env)
            bound = m.bindings_of(f) if isinstance(f, cst.Name) else None
            if isinstance(f, cst.Name) and (any(b.how == "import" for b in bound) or (
                    not bound and f.value in _relative_imports(m))):
                # an imported function (`from .utils import convert2cpu`, PRECISION17 A1): where
                # its result is, is what it does, not where its input was
                return EMPTY
            if isinstance(f, cst.Name) and any(b.how == "def" for b in bound):
                # a function of the file that puts its result on the host itself (`def to_cpu(x):
                # return x.cpu()`, or makes it there): the flow engine's value of the call says so
                v = m.value_of(call)
                fn = m.module_function(f.value)
                made = v.placed if v.placed is not None else v.origin
                if (v.kind == "tensor" and v.dev is not None and v.dev.is_host and made is not None
                        and fn is not None and m.contains(fn, made)):
                    return EMPTY
            return frozenset({D}) if any(D in a for a in args) else EMPTY
        self._expr(f, env)
        return EMPTY

    def _iterates_flat_attr(self, it) -> bool:
        """`for freq in self.freq_bands:` where every `__init__` value of the attribute is a 1-D
        factory (`2**torch.linspace(0, n - 1, n)`, kwea123/nerf_pl's positional `Embedding`): each
        element is a 0-d tensor, which PyTorch combines with tensors on any device."""
        if not (isinstance(it, cst.Attribute) and _is_self(it.value)):
            return False
        assigns = self.cls.init_assigns.get(it.attr.value, [])
        return bool(assigns) and all(_one_dim_factory(self.model, a.value) for a in assigns)

    def _submodule_call(self, attr: str, args: list[frozenset], call: cst.Call | None = None) -> frozenset:
        if self.facts_has_params(attr):
            host_only = self._host_only_positions(attr, call)
            for i, a in enumerate(args):
                if i not in host_only:
                    self._record(a)
            return frozenset({D})
        if any(D in a for a in args):
            return frozenset({D})
        return frozenset().union(*args) - {"M"} if args else EMPTY

    def _host_only_positions(self, attr: str, call: cst.Call | None) -> set:
        """Positions of `call`'s arguments that the submodule `self.attr` (a class of the file)
        hands to `pack_padded_sequence` as its lengths in forward: they must stay on the host
        (PRECISION15 E2: an RNN language model given `torch.ones([batch])` as lengths)."""
        if call is None or any(a.keyword is not None or a.star for a in call.args):
            return set()
        sub = None
        for a in self.cls.init_assigns.get(attr, ()):
            if isinstance(a.value, cst.Call) and isinstance(a.value.func, cst.Name):
                sub = self.facts.by_name.get(a.value.func.value)
        if sub is None or sub.forward is None:
            return set()
        names = [p.name.value for p in sub.forward.params.params[1:]]
        out = set()
        for node in _walk(sub.forward.body):
            if isinstance(node, cst.Call) and self.model.qualname(node.func) == "torch.nn.utils.rnn.pack_padded_sequence":
                arg = node.args[1].value if len(node.args) > 1 and node.args[1].keyword is None else next(
                    (x.value for x in node.args if x.keyword is not None and x.keyword.value == "lengths"), None)
                if isinstance(arg, cst.Name) and arg.value in names:
                    out.add(names.index(arg.value))
        return out

    def facts_has_params(self, attr: str) -> bool:
        """Does submodule `self.attr` certainly own parameters?"""
        for a in self.cls.init_assigns.get(attr, ()):
            if a.kind == "module" and self._constructs_params(a.value, 0):
                return True
        return False

    def _constructs_params(self, value, depth: int) -> bool:
        if not isinstance(value, cst.Call) or depth > 4:
            return False
        q = self.model.qualname(value.func)
        if q is not None and q.startswith("torch.nn."):
            last = q.rsplit(".", 1)[-1]
            if last in PARAM_LAYERS:
                return True
            if last in CONTAINER_LAYERS:
                return any(self._constructs_params(a.value, depth + 1) for a in value.args)
            return False
        if isinstance(value.func, cst.Name) and value.func.value in self.facts.by_name:
            other = self.facts.by_name[value.func.value]
            return bool(other.parameters or other.buffers) or any(
                self._constructs_params(a.value, depth + 1)
                for assigns in other.init_assigns.values()
                for a in assigns
                if a.kind == "module"
            )
        return False

    def _to(self, call: cst.Call, recv: frozenset, args: list[frozenset]) -> frozenset:
        """`t.to(...)`: a device move gives a device value; a dtype-only cast keeps `t`'s tags."""
        moves = False
        for a in call.args:
            if a.keyword is not None:
                if a.keyword.value == "device":
                    moves = not _is_cpu_literal(a.value)
                continue
            v = a.value
            if _is_cpu_literal(v):
                return EMPTY
            if self._is_dtype(v):
                continue
            moves = True
        return frozenset({D}) if moves else recv

    def _is_dtype(self, v: cst.BaseExpression) -> bool:
        if isinstance(v, cst.Attribute) and v.attr.value == "dtype":
            return True
        q = self.model.qualname(v)
        if q is not None and q.startswith("torch.") and q[len("torch."):] in _DTYPES:
            return True
        return False

    def _factory(self, call: cst.Call, tail: str, env: dict) -> frozenset:
        args = self._args(call, env)
        legacy = tail in LEGACY_CONSTRUCTORS
        dev = _keyword(call, "device")
        positional = _positional(call)
        if dev is not None or (tail == "as_tensor" and len(positional) >= 3):
            value = dev.value if dev is not None else positional[2].value
            return EMPTY if _is_cpu_literal(value) else frozenset({D})
        if _has_double_star(call) or self._in_device_context(call):
            return EMPTY
        if _keyword(call, "out") is not None:
            return EMPTY  # `torch.arange(n, out=buf)` returns `buf`, on `buf`'s device
        if tail in ("tensor", "as_tensor"):
            if args and D in args[0]:
                return frozenset({D})  # torch.tensor(t) keeps t's device
            if not positional or not self.list_data(positional[0].value):
                return EMPTY  # a scalar (0-dim: fine next to device tensors) or unknown data
        if tail in ("zeros", "ones", "empty", "full") and positional:
            first = positional[0].value
            if isinstance(first, (cst.Tuple, cst.List)) and not first.elements:
                return EMPTY  # 0-dim
            sizes = list(first.elements) if isinstance(first, (cst.Tuple, cst.List)) else [positional[0]]
            if any(isinstance(el.value, cst.Integer) and el.value.value == "0" for el in sizes):
                return EMPTY  # no elements: a placeholder argument (`torch.empty([0])`), never read
        site = self.factories.get(call)
        fix_param = self._fix_param(env)
        if site is None:
            self.factories[call] = FactorySite(
                call, tail, self._fn, tail in RANDOM_FACTORIES, legacy, fix_param  # type: ignore[arg-type]
            )
        else:
            site.fix_param = fix_param
        return frozenset({call})

    def _fix_param(self, env: dict) -> str | None:
        fn = self._fn
        if fn is None:
            return None
        for name in self._method_params(fn) + [p.name.value for p in fn.params.kwonly_params]:
            if fn is self.cls.forward and name not in self._evidenced:
                continue
            tags = env.get(name, EMPTY)
            if tags == frozenset({D}) and (fn is self.cls.forward or self._engine_tensor(fn, name)) and (
                    not self._not_tensor_use(fn, name)):
                return name
        return None

    def _not_tensor_use(self, fn: cst.FunctionDef, name: str) -> bool:
        """A use of `name` in `fn` shows it is no tensor: a dict read by string key
        (`outputs["anchors"]`, DETA's assigner, E54-2), its `.items()` / `.keys()` / `.get()`, or
        a value the flow engine knows is a container or a Python value; `device=<name>.device`
        would raise AttributeError."""
        m = self.model
        for n in m.walk(fn.body):
            if not (isinstance(n, cst.Name) and n.value == name):
                continue
            if m.value_of(n).kind in ("mapping", "tuple", "object", "batch", "hostval"):
                return True
            parent = m.parent(n)
            if isinstance(parent, cst.Attribute) and parent.value is n and parent.attr.value in (
                    "items", "keys", "values", "get"):
                return True
            if isinstance(parent, cst.Subscript) and parent.value is n and any(
                    isinstance(el.slice, cst.Index) and isinstance(el.slice.value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))
                    for el in parent.slice):
                return True
        return False

    def _engine_tensor(self, fn: cst.FunctionDef, name: str) -> bool:
        """The flow engine knows `name` is a tensor in `fn` (a use of it has a tensor value): the
        fix may write `device=<name>.device` (not for a layer index `l` or a dtype string,
        precision10's yolov4-pytorch and PyTorch_YOLOv4)."""
        m = self.model
        for n in m.walk(fn.body):
            if isinstance(n, cst.Name) and n.value == name:
                if m.value_of(n).kind == "tensor":
                    return True
                parent = m.parent(n)
                if isinstance(parent, cst.Attribute) and parent.value is n and parent.attr.value in _TENSOR_ONLY_ATTRS:
                    return True  # `t.size(-1)`, `t.shape`: read as a tensor
        return False

    def _in_device_context(self, node: cst.CSTNode) -> bool:
        for anc in self.model.ancestors(node):
            if isinstance(anc, cst.With):
                for item in anc.items:
                    if isinstance(item.item, cst.Call) and self.model.qualname(item.item.func) == "torch.device":
                        return True
            if isinstance(anc, cst.FunctionDef):
                return False
        return False

    def list_data(self, data: cst.BaseExpression, depth: int = 0) -> bool:
        """Data for torch.tensor that is certainly a sequence (so the tensor is not 0-dim)."""
        if depth > 3:
            return False
        if isinstance(data, (cst.List, cst.Tuple, cst.ListComp)):
            return len(getattr(data, "elements", [None])) > 0
        if isinstance(data, cst.BinaryOperation):
            # [a] + [b] * n
            if isinstance(data.operator, cst.Add):
                return self.list_data(data.left, depth + 1) and self.list_data(data.right, depth + 1)
            if isinstance(data.operator, cst.Multiply):
                return self.list_data(data.left, depth + 1) or self.list_data(data.right, depth + 1)
        if isinstance(data, cst.Name):
            bindings = self.model.bindings_of(data)
            return bool(bindings) and all(
                b.how == "assign" and b.value is not None and self.list_data(b.value, depth + 1) for b in bindings
            )
        attr = self_attr(data)
        if attr is not None:
            assigns = self.cls.init_assigns.get(attr, ())
            return bool(assigns) and all(
                a.value is not None and isinstance(a.value, (cst.List, cst.Tuple, cst.ListComp)) for a in assigns
            )
        return False


_DTYPES = frozenset(
    "float float32 float64 double float16 half bfloat16 int int8 int16 int32 int64 long short uint8 bool "
    "complex64 complex128 cfloat cdouble".split()
)


def _is_cpu_literal(v: cst.BaseExpression) -> bool:
    s = _str_value(v)
    if s is not None:
        return s == "cpu"
    if isinstance(v, cst.Call) and v.args:
        inner = _str_value(v.args[0].value)
        return inner == "cpu"
    return False


# ---------------------------------------------------------------------------------------------
# Helpers for fixes
# ---------------------------------------------------------------------------------------------


def nn_prefix(model: ScriptModel, cls_name: str) -> str | None:
    """How the file spells `torch.nn.<cls_name>`: `nn.ModuleList`, `torch.nn.ModuleList`,
    `ModuleList` (imported by name) — None when the file has no name for it."""
    for local, full in sorted(model.aliases.items()):
        if full == f"torch.nn.{cls_name}":
            return local
    for local, full in sorted(model.aliases.items()):
        if full == "torch.nn":
            return f"{local}.{cls_name}"
    for local, full in sorted(model.aliases.items()):
        if full == "torch":
            return f"{local}.nn.{cls_name}"
    return None


def super_init_index(model: ScriptModel, init: cst.FunctionDef) -> int | None:
    """Index, among __init__'s top-level statements, of `super().__init__(...)` (or
    `nn.Module.__init__(self)`); None when there is none."""
    body = init.body.body if isinstance(init.body, cst.IndentedBlock) else ()
    for i, stmt in enumerate(body):
        for node in _walk(stmt):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "__init__":
                recv = node.func.value
                if isinstance(recv, cst.Call) and isinstance(recv.func, cst.Name) and recv.func.value == "super":
                    return i
                if model.qualname(recv) in ("torch.nn.Module",) or isinstance(recv, cst.Name):
                    args = _positional(node)
                    if args and _is_self(args[0].value):
                        return i
    return None


def top_statement_index(model: ScriptModel, init: cst.FunctionDef, node: cst.CSTNode) -> int | None:
    body = init.body.body if isinstance(init.body, cst.IndentedBlock) else ()
    cur: cst.CSTNode | None = node
    while cur is not None:
        for i, stmt in enumerate(body):
            if stmt is cur:
                return i
        cur = model.parent(cur)
    return None
