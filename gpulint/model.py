"""The ScriptModel: what a training script is about, computed once per file.

One walk over the LibCST tree records imports, bindings, calls, loops, functions and classes.
Rules ask questions (`qualname`, `kind_of`, `enclosing`, ...) and never re-derive imports or
types themselves. Where the analysis cannot tell, the answer is `Kind.UNKNOWN` / `None`, and rules
stay silent.

The model is deliberately simple and flow-insensitive: a name's kind is the kind all of its
bindings in its scope agree on. Scopes are functions (with lookups falling back to the module) and,
for `self.attr`, the enclosing class.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

import libcst as cst

from gpulint import cstwalk as _cstwalk


# identity hashing and equality, and C isinstance checks, for LibCST's node classes (see there)
_cstwalk.fast_node_identity()


class Kind(str, enum.Enum):
    MODULE = "module"  # an nn.Module instance (wrappers included)
    TENSOR = "tensor"
    OPTIMIZER = "optimizer"
    SCHEDULER = "scheduler"
    SCALER = "scaler"
    DATALOADER = "dataloader"
    DATASET = "dataset"
    DEVICE = "device"
    BATCH = "batch"  # one item of a DataLoader whose structure is not known (tuple, dict, tensor)
    UNKNOWN = "unknown"


# ---------------------------------------------------------------------------------------------
# Knowledge about the PyTorch ecosystem (qualified names)
# ---------------------------------------------------------------------------------------------

TENSOR_FACTORIES = frozenset(
    "zeros ones empty full rand randn randint randperm arange linspace logspace eye tensor "
    "as_tensor from_numpy zeros_like ones_like empty_like full_like rand_like randn_like "
    "randint_like normal bernoulli multinomial".split()
)
RANDOM_FACTORIES = frozenset(
    "rand randn randint randperm normal bernoulli multinomial rand_like randn_like "
    "randint_like".split()
)
# torch.* functions that return a tensor (besides factories)
TENSOR_FUNCTIONS = frozenset(
    "cat concat stack hstack vstack matmul mm bmm einsum where clamp clip exp log sigmoid tanh "
    "softmax log_softmax relu abs sqrt sum mean max min argmax argmin sort topk cumsum flatten "
    "reshape squeeze unsqueeze transpose permute gather index_select masked_fill cdist norm "
    "mul add sub div pow from_file tril triu outer cross diag roll flip repeat_interleave "
    "tile chunk split baddbmm addmm".split()
)
# Tensor methods whose result is not a tensor.
NON_TENSOR_METHODS = frozenset(
    "item tolist numpy size dim numel data_ptr backward element_size nelement is_contiguous "
    "get_device register_hook storage untyped_storage type_as_str __len__ stride "
    "is_floating_point is_complex equal".split()
)
MOVE_METHODS = frozenset("to cuda cpu".split())
CAST_METHODS = frozenset("half float double bfloat16 long int bool short byte char".split())

OPTIMIZER_PREFIXES = ("torch.optim.", "transformers.AdamW", "bitsandbytes.optim.", "apex.optimizers.")
SCHEDULER_PREFIXES = ("torch.optim.lr_scheduler.",)
SCHEDULER_FUNCTIONS = frozenset(
    {
        "transformers.get_linear_schedule_with_warmup",
        "transformers.get_cosine_schedule_with_warmup",
        "transformers.get_scheduler",
        "transformers.optimization.get_linear_schedule_with_warmup",
        "transformers.optimization.get_cosine_schedule_with_warmup",
        "transformers.optimization.get_scheduler",
    }
)
SCALER_CLASSES = frozenset(
    {"torch.amp.GradScaler", "torch.cuda.amp.GradScaler", "torch.amp.grad_scaler.GradScaler",
     "torch.cuda.amp.grad_scaler.GradScaler", "torch.GradScaler", "torch.cpu.amp.GradScaler",
     "torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler"}
)
DATALOADER_CLASSES = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
DATASET_BASES = frozenset(
    {"torch.utils.data.Dataset", "torch.utils.data.IterableDataset", "torch.utils.data.dataset.Dataset",
     "torch.utils.data.TensorDataset"}
)
MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module", "torch.nn.Sequential",
                          "torch.nn.ModuleList", "torch.nn.ModuleDict",
                          # LightningModule subclasses nn.Module
                          "lightning.LightningModule", "lightning.pytorch.LightningModule",
                          "pytorch_lightning.LightningModule", "pytorch_lightning.core.LightningModule",
                          "lightning.pytorch.core.LightningModule"})
WRAPPER_CLASSES = frozenset(
    {
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.data_parallel.DataParallel",
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
        "torch.nn.DistributedDataParallel",
    }
)
NON_MODULE_NN = frozenset(
    {"torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.init", "torch.nn.functional",
     "torch.nn.utils", "torch.nn.ParameterList", "torch.nn.ParameterDict"}
)
MODULE_FACTORY_PREFIXES = ("torchvision.models.", "timm.create_model")
PRETRAINED_PREFIXES = ("transformers.",)

# torch.nn modules without parameters or buffers: where they "are" does not matter.
STATELESS_MODULES = frozenset(
    "ReLU ReLU6 GELU SiLU Mish Sigmoid Tanh Softmax LogSoftmax Softplus LeakyReLU ELU SELU Hardtanh "
    "Hardswish Hardsigmoid Dropout Dropout1d Dropout2d Dropout3d AlphaDropout Flatten Unflatten Identity "
    "MaxPool1d MaxPool2d MaxPool3d AvgPool1d AvgPool2d AvgPool3d AdaptiveAvgPool1d AdaptiveAvgPool2d "
    "AdaptiveAvgPool3d AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d Upsample PixelShuffle "
    "PixelUnshuffle ZeroPad2d ConstantPad1d ConstantPad2d ReflectionPad2d ReplicationPad2d CosineSimilarity "
    "PairwiseDistance ZeroPad1d ZeroPad3d ConstantPad3d ReflectionPad1d ReflectionPad3d ReplicationPad1d "
    "ReplicationPad3d CircularPad1d CircularPad2d CircularPad3d UpsamplingNearest2d UpsamplingBilinear2d "
    "Fold Unfold MaxUnpool1d MaxUnpool2d MaxUnpool3d LPPool1d LPPool2d LocalResponseNorm Softmax2d Softmin "
    "LogSigmoid CELU GLU Threshold Tanhshrink Softshrink Hardshrink FeatureAlphaDropout ChannelShuffle".split()
)

FRAMEWORK_MODULES = {
    "lightning": "lightning",
    "pytorch_lightning": "lightning",
    "lightning_fabric": "lightning",
    "accelerate": "accelerate",
    "deepspeed": "deepspeed",
    "transformers.Trainer": "hf-trainer",
    "transformers.trainer": "hf-trainer",
    "transformers.Seq2SeqTrainer": "hf-trainer",
    "trl": "hf-trainer",
    "ignite": "ignite",
    "composer": "composer",
}

AVAILABILITY_NAMES = frozenset(
    {
        "torch.cuda.is_available",
        "torch.cuda.device_count",
        "torch.accelerator.is_available",
        "torch.accelerator.current_accelerator",
        "torch.backends.mps.is_available",
        "torch.xpu.is_available",
    }
)
_DEVICE_FLAG = re.compile(r"""["']--?(?:device|devices|cuda|no[-_]cuda|gpu|gpus|no[-_]gpu|cpu|use[-_]cuda|accelerator)["']""")
# Names test suites and libraries use to gate CUDA code (a file using them checks availability).
AVAILABILITY_TOKENS = re.compile(
    r"\b(?:TEST_CUDA|TEST_MULTIGPU|HAS_CUDA|HAS_GPU|RUN_CUDA|onlyCUDA|onlyCUDAAndPRIVATEUSE1|skipCUDAIf\w*|"
    r"requires_cuda|requires_gpu|skipIfNoCuda|skip_if_no_cuda|skip_if_lt_x_gpu|cuda_available|"
    r"device_count|is_available|instantiate_device_type_tests|largeTensorTest)\b"
)


_ENGINE_KINDS = {
    "tensor": Kind.TENSOR, "module": Kind.MODULE, "metric": Kind.MODULE, "optimizer": Kind.OPTIMIZER,
    "scheduler": Kind.SCHEDULER, "loader": Kind.DATALOADER, "dataset": Kind.DATASET, "batch": Kind.BATCH,
    "scaler": Kind.SCALER, "device": Kind.DEVICE,
}


def is_optimizer_qualname(q: str) -> bool:
    if q.startswith(SCHEDULER_PREFIXES) or q in SCHEDULER_FUNCTIONS:
        return False
    if q.startswith("torch.optim."):
        last = q.rsplit(".", 1)[-1]
        return last[:1].isupper() and last not in ("Optimizer",)
    return q.startswith(OPTIMIZER_PREFIXES[1:])


def is_scheduler_qualname(q: str) -> bool:
    if q in SCHEDULER_FUNCTIONS:
        return True
    if q.startswith(SCHEDULER_PREFIXES):
        last = q.rsplit(".", 1)[-1]
        return last[:1].isupper()
    return False


def is_module_class_qualname(q: str) -> bool:
    """A `torch.nn.X` layer/loss/container class, a torchvision model constructor, etc."""
    if q in WRAPPER_CLASSES:
        return True
    if q.startswith("torch.nn."):
        if any(q == p or q.startswith(p + ".") for p in NON_MODULE_NN):
            return False
        last = q.rsplit(".", 1)[-1]
        # torch.nn.Linear, torch.nn.modules.loss.MSELoss, but not torch.nn.functional.relu
        return last[:1].isupper()
    if q.startswith("torchvision.models."):
        last = q.rsplit(".", 1)[-1]
        return last[:1].islower() and not last.startswith(("get_", "list_")) and "Weights" not in last
    if q == "timm.create_model":
        return True
    return False


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------


@dataclass
class Binding:
    """One place where a name (or `self.attr`) gets a value."""

    name: str
    node: cst.CSTNode  # the target node
    value: cst.BaseExpression | None  # the assigned expression, when there is one
    how: str  # "assign", "augassign", "for", "param", "import", "with", "def", "class", "unpack"
    # for "unpack" and "for": the index path of the target inside the value's structure
    index: tuple[int, ...] = ()
    annotation: cst.BaseExpression | None = None


@dataclass
class Move:
    """A place where a value is put on a device."""

    call: cst.Call  # `x.to(d)`, `x.cuda()`, `x.cpu()`, or a constructor/factory called with device=
    device: cst.BaseExpression | None  # the device expression; None for `.cuda()` / `.cpu()`
    method: str  # "to", "cuda", "cpu" or "device="
    non_blocking: bool = False

    @property
    def to_cpu(self) -> bool:
        if self.method == "cpu":
            return True
        d = self.device
        if isinstance(d, cst.SimpleString):
            return d.evaluated_value in ("cpu",) if isinstance(d.evaluated_value, str) else False
        if isinstance(d, cst.Call) and d.args and isinstance(d.args[0].value, cst.SimpleString):
            v = d.args[0].value.evaluated_value
            return v == "cpu"
        return False

    @property
    def literal(self) -> str | None:
        """The device as a string when it is written literally ("cuda", "cuda:0", "cpu")."""
        if self.method == "cuda":
            return "cuda" if self.device is None else None
        if self.method == "cpu":
            return "cpu"
        d = self.device
        if isinstance(d, cst.Call) and d.args:
            d = d.args[0].value
        if isinstance(d, cst.SimpleString) and isinstance(d.evaluated_value, str):
            return d.evaluated_value
        return None


DEVICE_PREFIXES = ("cuda", "cpu", "mps", "xpu", "meta", "hpu", "npu", "xla")
DTYPE_NAMES = frozenset(
    "float16 float32 float64 half float double bfloat16 int8 int16 int32 int64 uint8 long int bool "
    "complex64 complex128 cfloat short".split()
)


@dataclass
class ClassInfo:
    node: cst.ClassDef
    bases: list[str]  # qualified names of bases (file classes by their own name)
    methods: dict[str, cst.FunctionDef] = field(default_factory=dict)


@dataclass
class Loop:
    node: cst.For
    iterable: cst.BaseExpression
    source_kind: Kind  # kind of the thing iterated (after unwrapping enumerate/tqdm/zip)


# ---------------------------------------------------------------------------------------------
# The walk
# ---------------------------------------------------------------------------------------------


class _Collector(cst.CSTVisitor):
    def __init__(self, model: "ScriptModel") -> None:
        self.m = model
        self.stack: list[cst.CSTNode] = []
        self.scopes: list[cst.CSTNode] = [model.module]
        self.classes: list[cst.ClassDef] = []
        # the int object last stored in `order`/`end`: a node's end is the next node's order, and
        # nested nodes often end together; one object per value, not two (~30 MB on 50k lines)
        self.pos = -1

    # generic hooks: parent map and scope bookkeeping
    def on_visit(self, node: cst.CSTNode) -> bool:
        m = self.m
        nodes = m.nodes
        i = len(nodes)
        if i != self.pos:
            self.pos = i
        m.order[node] = self.pos
        nodes.append(node)
        stack = self.stack
        if stack:
            parent = stack[-1]
            m.parents[node] = parent
            kids = m.kids  # only nodes with children have an entry (most nodes are leaves)
            siblings = kids.get(parent)
            if siblings is None:
                kids[parent] = [node]
            else:
                siblings.append(node)
        stack.append(node)
        handler = _VISIT.get(type(node))
        if handler is not None:
            handler(self, node)
        return True

    def _v_call(self, node: cst.Call) -> None:
        self.m.calls.append(node)

    def _v_assign(self, node: cst.Assign) -> None:
        for tgt in node.targets:
            self._bind_target(tgt.target, node.value, "assign", ())

    def _v_annassign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind_target(node.target, node.value, "assign", (), node.annotation.annotation)

    def _v_augassign(self, node: cst.AugAssign) -> None:
        self._bind_target(node.target, node, "augassign", ())

    def _v_for(self, node: cst.For) -> None:
        self.m.fors.append(node)
        self._bind_target(node.target, node.iter, "for", ())

    def _v_while(self, node: cst.While) -> None:
        self.m.whiles.append(node)

    def _v_with(self, node: cst.With) -> None:
        self.m.withs.append(node)
        for item in node.items:
            if item.asname is not None:
                self._bind_target(item.asname.name, item.item, "with", ())

    def _v_functiondef(self, node: cst.FunctionDef) -> None:
        m = self.m
        self._bind_name(node.name.value, node.name, None, "def")
        m.functions.setdefault(node.name.value, []).append(node)
        self.scopes.append(node)
        params = node.params
        for p in (*params.posonly_params, *params.params, *params.kwonly_params):
            ann = p.annotation.annotation if p.annotation is not None else None
            self._bind_name(p.name.value, p.name, p.default, "param", annotation=ann)
        for p in (params.star_arg, params.star_kwarg):
            if isinstance(p, cst.Param):
                self._bind_name(p.name.value, p.name, None, "param")
        if self.classes and self.stack[-2:-1] and self._direct_method(node):
            m.classes[self.classes[-1].name.value].methods[node.name.value] = node

    def _v_lambda(self, node: cst.Lambda) -> None:
        self.scopes.append(node)

    def _v_classdef(self, node: cst.ClassDef) -> None:
        m = self.m
        self._bind_name(node.name.value, node.name, None, "class")
        bases = []
        for arg in node.bases:
            q = m.qualname(arg.value)
            if q is None and isinstance(arg.value, cst.Name):
                q = arg.value.value
            if q:
                bases.append(q)
        m.classes[node.name.value] = ClassInfo(node, bases)
        self.classes.append(node)
        self.scopes.append(node)

    def _v_string(self, node: cst.SimpleString) -> None:
        if _DEVICE_FLAG.fullmatch(node.value):
            self.m.device_flag = True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()
        m = self.m
        i = len(m.nodes)
        if i != self.pos:
            self.pos = i
        m.end[original_node] = self.pos
        t = type(original_node)
        if t in _SCOPES:
            self.scopes.pop()
            if t is cst.ClassDef:
                self.classes.pop()

    def _direct_method(self, fn: cst.FunctionDef) -> bool:
        # parent chain: ClassDef -> IndentedBlock -> FunctionDef
        parent = self.m.parents.get(fn)
        grand = self.m.parents.get(parent) if parent is not None else None
        return grand is self.classes[-1]

    # imports ----------------------------------------------------------------------------------
    def _import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = _dotted(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.m.aliases[alias.asname.name.value] = full
            else:
                root = full.split(".", 1)[0]
                self.m.aliases[root] = root
            self.m.imported_modules.add(full)

    def _import_from(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            self.m.star_import = True
        if node.relative or node.module is None:
            return
        mod = _dotted(node.module)
        if mod is None:
            return
        self.m.imported_modules.add(mod)
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = _dotted(alias.name)
            if name is None:
                continue
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.m.aliases[local] = f"{mod}.{name}"
            self.m.imported_modules.add(f"{mod}.{name}")

    # bindings ---------------------------------------------------------------------------------
    def _scope_for_target(self, target: cst.BaseExpression) -> tuple[cst.CSTNode, str] | None:
        if isinstance(target, cst.Name):
            return self.scopes[-1], target.value
        if (
            isinstance(target, cst.Attribute)
            and isinstance(target.value, cst.Name)
            and target.value.value == "self"
            and self.classes
        ):
            return self.classes[-1], "self." + target.attr.value
        return None

    def _bind_name(self, name, node, value, how, index=(), annotation=None, scope=None) -> None:
        scope = scope if scope is not None else self.scopes[-1]
        self.m.bindings.setdefault((scope, name), []).append(
            Binding(name, node, value, how, index, annotation)
        )

    def _bind_target(self, target, value, how, index, annotation=None) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for i, el in enumerate(target.elements):
                inner = el.value
                if isinstance(el, cst.StarredElement):
                    continue
                self._bind_target(inner, value, how if how != "assign" else "unpack", index + (i,))
            return
        found = self._scope_for_target(target)
        if found is None:
            return
        scope, name = found
        self._bind_name(name, target, value, how, index, annotation, scope=scope)


# on_visit's work per node class (most nodes, Name and Attribute among them, have none)
_VISIT = {
    cst.Call: _Collector._v_call,
    cst.Import: _Collector._import,
    cst.ImportFrom: _Collector._import_from,
    cst.Assign: _Collector._v_assign,
    cst.AnnAssign: _Collector._v_annassign,
    cst.AugAssign: _Collector._v_augassign,
    cst.For: _Collector._v_for,
    cst.While: _Collector._v_while,
    cst.With: _Collector._v_with,
    cst.FunctionDef: _Collector._v_functiondef,
    cst.Lambda: _Collector._v_lambda,
    cst.ClassDef: _Collector._v_classdef,
    cst.SimpleString: _Collector._v_string,
}
_SCOPES = frozenset({cst.FunctionDef, cst.Lambda, cst.ClassDef})

# names a star import conventionally brings in PyTorch code, as that code imports them itself
_STAR_CONVENTIONS = (("torch", "torch"), ("nn", "torch.nn"), ("F", "torch.nn.functional"))

_NO_KIDS: tuple = ()  # the recorded children of a node without any (one shared object)

_ACTIVE: "ScriptModel | None" = None  # the model built last in this process (one file at a time)


def children(node: cst.CSTNode) -> Sequence[cst.CSTNode]:
    """`node.children`, from the recorded tree of the file being analysed when it has the node.

    For helpers that walk subtrees without a model at hand; LibCST's own `.children` re-runs its
    visitor machinery on every call."""
    model = _ACTIVE
    if model is not None:
        found = model.kids.get(node)
        if found is not None:
            return found
        if node in model.order:
            return _NO_KIDS
    return _cstwalk.children(node)


def walk(node: cst.CSTNode, skip: tuple[type, ...] = ()) -> Iterator[cst.CSTNode]:
    """Every node below `node` in source order (see ScriptModel.walk)."""
    stack = list(reversed(children(node)))
    while stack:
        n = stack.pop()
        yield n
        if skip and isinstance(n, skip):
            continue
        stack.extend(reversed(children(n)))


def branch_of(node: cst.If, child: cst.CSTNode) -> str:
    """Which part of an `if` statement `child` (a direct child of it) is: "test", "body", "orelse"."""
    if child is node.test:
        return "test"
    if child is node.body:
        return "body"
    return "orelse"


def literal_bool(expr: cst.CSTNode | None) -> bool | None:
    """True/False for the literal names `True`/`False`, else None."""
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return expr.value == "True"
    return None


def string_value(expr: cst.CSTNode | None) -> str | None:
    """The value of a plain string literal (not bytes, not an f-string), else None."""
    if isinstance(expr, cst.SimpleString):
        try:
            value = expr.evaluated_value
        except Exception:  # noqa: BLE001 - a literal LibCST cannot evaluate
            return None
        return value if isinstance(value, str) else None
    return None


def dotted(node: cst.CSTNode | None) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None (no import resolution: see qualname)."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        left = dotted(node.value)
        return None if left is None else f"{left}.{node.attr.value}"
    return None


_dotted = dotted


# ---------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------


# Layout nodes (whitespace, newlines, blank and comment lines): about half of a tree's nodes, and no
# analysis reads them, so the model does not record them (its walks, parents and children leave
# them out); the rules that need comments read the source's tokens.
_LAYOUT = frozenset({cst.SimpleWhitespace, cst.Newline, cst.TrailingWhitespace, cst.EmptyLine,
                     cst.ParenthesizedWhitespace, cst.Comment})


# names of a script's entry functions (a call of one at module level runs the script)
_ENTRY_NAME = re.compile(r"(main|run|train|test|evaluate|eval|predict|infer|inference|demo|fit)(_\w*)?$")


class ScriptModel:
    def __init__(self, module: cst.Module, source: str | None = None) -> None:
        self.module = module
        self.source = source if source is not None else module.code
        # another file of the same run may set a CUDA default tensor type (gpulint.project)
        self.project_default_device = False
        self._cuda_default: bool | None = None
        self.aliases: dict[str, str] = {}
        self.imported_modules: set[str] = set()
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        # The tree, recorded once: walking it again through LibCST's visitor machinery (or a
        # node's `.children`, which runs that machinery) costs as much as the first walk.
        self.kids: dict[cst.CSTNode, list[cst.CSTNode]] = {}  # the children of nodes that have any
        self.nodes: list[cst.CSTNode] = []  # every node in source (pre-)order
        self.order: dict[cst.CSTNode, int] = {}  # node -> position in `nodes`
        self.end: dict[cst.CSTNode, int] = {}  # node -> position after its subtree in `nodes`
        self._call_order: list[int] | None = None
        self.bindings: dict[tuple[cst.CSTNode, str], list[Binding]] = {}
        self.calls: list[cst.Call] = []
        self.fors: list[cst.For] = []
        self.whiles: list[cst.While] = []
        self.withs: list[cst.With] = []
        self.functions: dict[str, list[cst.FunctionDef]] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.device_flag = False
        self.star_import = False  # `from utils import *` somewhere in the file
        self._kind_cache: dict[cst.CSTNode, Kind] = {}
        self._in_progress: set = set()
        self._kind_partial: dict = {}  # partial kinds within one top-level kind_of query
        self._kind_depth = 0
        self._cycle_hit = False
        self._facts: dict[type, object] = {}
        self._call_sites: dict[cst.FunctionDef, list[cst.Call]] = {}
        self._inplace: dict[int, list[Move]] | None = None
        self._flow = None
        self._shadowing: dict[str, set] = {}  # (filled once the bindings are known, below)
        collector = _Collector(self)
        # the same nodes and hooks, in the same order, as module.visit(collector), without
        # LibCST rebuilding every node it passes (gpulint/cstwalk.py)
        _cstwalk.traverse(module, collector.on_visit, collector.on_leave, _LAYOUT)
        if self.star_import:
            # `torch` (or `nn`, `F`) that only a star import brings (`from modeling.deeplab import *`
            # in pytorch-deeplab-xception's train.py): the usual module, when the file binds none
            added = False
            for local, full in _STAR_CONVENTIONS:
                if local not in self.aliases and not self.bindings.get((module, local)):
                    self.aliases[local] = full
                    added = True
            if added:
                # class bases named through those (`class RCNN(nn.Module)`) were read before the
                # names were known (PRECISION30 A4)
                for info in self.classes.values():
                    bases = []
                    for arg in info.node.bases:
                        q = self.qualname(arg.value)
                        if q is None and isinstance(arg.value, cst.Name):
                            q = arg.value.value
                        if q:
                            bases.append(q)
                    info.bases[:] = bases
        # import aliases that a function re-binds as a local (`import json as net` and `def
        # val(net, ...)`: `net` there is the parameter): name -> those function scopes
        for (scope, name), bs in self.bindings.items():
            if name in self.aliases and scope is not module and any(b.how != "import" for b in bs):
                self._shadowing.setdefault(name, set()).add(scope)
        global _ACTIVE
        _ACTIVE = self

    # the tree -----------------------------------------------------------------------------------
    def children(self, node: cst.CSTNode) -> Sequence[cst.CSTNode]:
        """A node's children in source order (recorded by the model's one walk)."""
        found = self.kids.get(node)
        if found is not None:
            return found
        return _NO_KIDS if node in self.order else _cstwalk.children(node)

    def walk(self, node: cst.CSTNode, skip: tuple[type, ...] = ()) -> Iterator[cst.CSTNode]:
        """Every node below `node` (not `node` itself) in source order; the subtrees of nodes of
        the `skip` types are not entered (the nodes themselves are yielded)."""
        stack = list(reversed(self.children(node)))
        while stack:
            n = stack.pop()
            yield n
            if skip and isinstance(n, skip):
                continue
            stack.extend(reversed(self.children(n)))

    def calls_in(self, node: cst.CSTNode, skip: tuple[type, ...] = ()) -> list[cst.Call]:
        """The calls below `node` (not `node` itself), in source order, without walking (`skip`: leave
        out calls nested in nodes of these types below `node`, e.g. function definitions)."""
        import bisect

        if self._call_order is None:
            self._call_order = [self.order[c] for c in self.calls]
        start, stop = self.order.get(node), self.end.get(node)
        if start is None or stop is None:
            return [n for n in self.walk(node, skip) if type(n) is cst.Call]
        lo = bisect.bisect_right(self._call_order, start)  # below `node`, not `node` itself
        hi = bisect.bisect_left(self._call_order, stop)
        found = self.calls[lo:hi]
        if skip:
            found = [c for c in found if not self._nested_in(c, node, skip)]
        return found

    def _nested_in(self, n: cst.CSTNode, top: cst.CSTNode, types: tuple[type, ...]) -> bool:
        cur = self.parents.get(n)
        while cur is not None and cur is not top:
            if isinstance(cur, types):
                return True
            cur = self.parents.get(cur)
        return False

    def contains(self, outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
        """`inner` is `outer` or lies in its subtree."""
        i = self.order.get(inner)
        return i is not None and self.order.get(outer, -1) <= i < self.end.get(outer, -1)

    def precedes(self, a: cst.CSTNode, b: cst.CSTNode) -> bool:
        """`a` starts before `b` in the source (both nodes of this file)."""
        return self.order[a] < self.order[b]

    def exclusive(self, a: cst.CSTNode, b: cst.CSTNode) -> bool:
        """a and b sit in different branches of one `if`/`else` or conditional expression (an `if`
        statement's test is in neither branch)."""
        path_a = [a, *self.ancestors(a)]
        index = {id(n): i for i, n in enumerate(path_a)}
        prev_b = b
        for anc in self.ancestors(b):
            if id(anc) in index:
                i = index[id(anc)]
                child_a = path_a[i - 1] if i > 0 else None
                if isinstance(anc, cst.If) and child_a is not None:
                    # (the test runs before either branch: never exclusive with them, B70-E1)
                    ba, bb = branch_of(anc, child_a), branch_of(anc, prev_b)
                    return "test" not in (ba, bb) and ba != bb
                if isinstance(anc, cst.IfExp) and child_a is not None:
                    return {child_a, prev_b} == {anc.body, anc.orelse}
                return False
            prev_b = anc
        return False

    # the flow engine ---------------------------------------------------------------------------
    @property
    def flow(self):
        """The flow engine's results for this file (`gpulint.flow.Flow`), computed on first use."""
        found = self._flow
        if found is None:
            from gpulint.flow import Flow, NoFlow

            try:
                found = Flow(self)
            except RecursionError:
                found = NoFlow()  # a pathological nesting depth: every value unknown
            self._flow = found
        return found

    def value_of(self, expr: cst.CSTNode | None):
        """The engine's abstract value of an expression (`gpulint.flow.Value`: kind, dev, half, ...)
        at the point where it is evaluated; `flow.UNKNOWN` when the engine did not reach it."""
        from gpulint.flow import UNKNOWN

        if expr is None:
            return UNKNOWN
        return self.flow.values.get(expr, UNKNOWN)

    def resolved_sites(self, fn: cst.FunctionDef) -> list[cst.Call]:
        """The calls the flow engine resolved to `fn`, a function or a method of the file
        (`self._updater.step(...)` where `self._updater` is an `Updater`), in file order; calls
        whose receiver the engine could not tell are not among them."""
        sites = self.flow.site_values.get(fn)
        if not sites:
            return []
        order = self.order
        return sorted(sites, key=lambda c: order.get(c, 0))

    def reached(self, expr: cst.CSTNode | None) -> bool:
        """The engine evaluated `expr`: False for code it found never runs (a constructor's
        `if device is not None:` branch that no construction in the file takes) and for code it
        did not analyse at all."""
        return expr is not None and expr in self.flow.values

    def device_of(self, expr: cst.CSTNode | None):
        """Where a tensor or module lives (`gpulint.flow.Dev`: `.is_host`, `.is_acc`, `.expr` the
        device expression) at that point; None when unknown or when host on one path and device on
        another (`Dev.where == "either"` is returned as None too)."""
        d = self.value_of(expr).dev
        if d is None or d.where == "either":
            return None
        return d

    def mismatches(self):
        """Operations whose tensor operands live on different devices (`gpulint.flow.Mismatch`)."""
        return self.flow.mismatches

    def site_alternatives(self):
        """Per-call mismatches at an operation `mismatches()` already has through another call,
        with another host operand (a helper given host labels made in two places)."""
        return self.flow.site_alternatives

    def gpu_mismatches(self):
        """Operations whose tensor operands are on two GPUs the code names by different indices
        (`host` is one operand, `acc` the other; for a module call, `acc` is the module)."""
        return self.flow.gpu_mismatches

    # derived facts ----------------------------------------------------------------------------
    def facts(self, provider: type):
        """A family-specific analysis (e.g. `gpulint.analysis.amp.AmpFacts`), computed once per file
        from this model on first use and shared by every rule that asks for it."""
        found = self._facts.get(provider)
        if found is None:
            found = self._facts[provider] = provider(self)
        return found

    # names ------------------------------------------------------------------------------------
    def cuda_default_set(self) -> bool:
        """The file, or through the run's project facts another file of its project, sets a default
        tensor type or device that may be CUDA (`torch.set_default_tensor_type(
        'torch.cuda.FloatTensor')`, `torch.set_default_device(device)`): tensors and layers built
        without a device may then be on the accelerator. A written-out CPU type or `"cpu"` does
        not count. The one answer the flow engine, the module facts and the rules share."""
        if self._cuda_default is None:
            from gpulint.project import names_host

            found = self.project_default_device
            if not found:
                for c in self.calls:
                    if self.qualname(c.func) not in ("torch.set_default_tensor_type", "torch.set_default_device"):
                        continue
                    if not c.args or c.args[0].keyword is not None and c.args[0].keyword.value not in (
                            "t", "device"):
                        continue
                    if not names_host(self.module.code_for_node(c.args[0].value)):
                        found = True
                        break
            self._cuda_default = found
        return self._cuda_default

    def qualname(self, expr: cst.CSTNode | None) -> str | None:
        """`nn.DataParallel` -> `torch.nn.DataParallel` through the file's imports."""
        if isinstance(expr, cst.Name):
            found = self.aliases.get(expr.value)
            if found is not None and expr.value in self._shadowing:
                scopes = self._shadowing[expr.value]
                scope = self.enclosing(expr, cst.FunctionDef, cst.Lambda, cst.ClassDef)
                while scope is not None:
                    if scope in scopes:
                        return None  # a local (a parameter, an assignment) of that name
                    scope = self.enclosing(scope, cst.FunctionDef, cst.Lambda)
            return found
        if isinstance(expr, cst.Attribute):
            left = self.qualname(expr.value)
            return None if left is None else f"{left}.{expr.attr.value}"
        return None

    def call_name(self, call: cst.Call) -> str | None:
        return self.qualname(call.func)

    def uses_module(self, prefix: str) -> bool:
        return any(m == prefix or m.startswith(prefix + ".") for m in self.imported_modules)

    # structure --------------------------------------------------------------------------------
    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        node = self.parents.get(node)
        while node is not None:
            yield node
            node = self.parents.get(node)

    def enclosing(self, node: cst.CSTNode, *types: type) -> cst.CSTNode | None:
        for anc in self.ancestors(node):
            if isinstance(anc, types):
                return anc
        return None

    def statement_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The statement (simple line or compound) that contains `node`."""
        cur = node
        while cur is not None:
            if isinstance(cur, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return cur
            cur = self.parents.get(cur)
        return None

    def scope_of(self, node: cst.CSTNode) -> cst.CSTNode:
        fn = self.enclosing(node, cst.FunctionDef, cst.Lambda)
        return fn if fn is not None else self.module

    def class_of(self, node: cst.CSTNode) -> cst.ClassDef | None:
        return self.enclosing(node, cst.ClassDef)  # type: ignore[return-value]

    # bindings ---------------------------------------------------------------------------------
    def bindings_of(self, expr: cst.BaseExpression) -> list[Binding]:
        """Every binding the name or `self.attr` expression may refer to."""
        if isinstance(expr, cst.Name):
            scope = self.scope_of(expr)
            found = self.bindings.get((scope, expr.value))
            if found:
                return found
            # enclosing functions, then the module
            for anc in self.ancestors(scope) if scope is not self.module else ():
                if isinstance(anc, (cst.FunctionDef, cst.Lambda)):
                    found = self.bindings.get((anc, expr.value))
                    if found:
                        return found
            return self.bindings.get((self.module, expr.value), [])
        if (
            isinstance(expr, cst.Attribute)
            and isinstance(expr.value, cst.Name)
            and expr.value.value == "self"
        ):
            cls = self.class_of(expr)
            if cls is not None:
                return self.bindings.get((cls, "self." + expr.attr.value), [])
        return []

    # functions --------------------------------------------------------------------------------
    def function_of_param(self, b: Binding) -> cst.FunctionDef | None:
        fn = self.enclosing(b.node, cst.FunctionDef)
        return fn  # type: ignore[return-value]

    def call_sites(self, fn: cst.FunctionDef) -> list[cst.Call]:
        """Calls of a module-level (or nested) function defined in this file, by its name.

        Methods and functions whose name is bound more than once are not followed."""
        name = fn.name.value
        defs = self.functions.get(name, [])
        if len(defs) != 1 or self.class_of(fn) is not None:
            return []
        cache = self._call_sites
        if fn not in cache:
            cache[fn] = [c for c in self.calls if isinstance(c.func, cst.Name) and c.func.value == name]
        return cache[fn]

    def construction_sites(self, cls: cst.ClassDef) -> list[cst.Call]:
        """The calls `Cls(...)` that build the file's class `cls`, when they are all its uses: its
        name defined once, never written except as the called name of those calls, and no class
        of the file derived from it (whose constructor would call this one with its own
        arguments); empty otherwise."""
        name = cls.name.value
        info = self.classes.get(name)
        if info is None or info.node is not cls or any(name in c.bases for c in self.classes.values()):
            return []
        cache = self._call_sites
        if cls not in cache:
            calls = [c for c in self.calls if isinstance(c.func, cst.Name) and c.func.value == name]
            uses = sum(1 for n in self.nodes if type(n) is cst.Name and n.value == name)
            cache[cls] = calls if uses == len(calls) + 1 else []  # (+1: the class statement's own name)
        return cache[cls]

    def param_arguments(self, b: Binding, constructors: bool = False) -> list[cst.BaseExpression]:
        """The argument expressions passed for parameter `b` at the function's call sites in this
        file (empty when any call site cannot be matched: *args, **kwargs). With `constructors`,
        a parameter of a class's `__init__` gets the arguments of the class's constructions."""
        fn = self.function_of_param(b)
        if fn is None:
            return []
        params = fn.params
        positional = [p.name.value for p in (*params.posonly_params, *params.params)]
        if constructors and fn.name.value == "__init__" and self.class_of(fn) is not None:
            sites = self.construction_sites(self.class_of(fn))
            positional = positional[1:]  # `self`
        else:
            sites = self.call_sites(fn)
        if not sites:
            return []
        out = []
        for call in sites:
            found = None
            pos = 0
            for arg in call.args:
                if arg.star:
                    return []
                if arg.keyword is None:
                    if pos < len(positional) and positional[pos] == b.name:
                        found = arg.value
                    pos += 1
                elif arg.keyword.value == b.name:
                    found = arg.value
            if found is None:
                if isinstance(b.value, cst.BaseExpression):  # the default value is used
                    found = b.value
                else:
                    return []
            out.append(found)
        return out

    # devices and moves ------------------------------------------------------------------------
    def is_device_expr(self, e: cst.BaseExpression | None, _depth: int = 0) -> bool:
        """Does `e` look like a device (not a dtype)? `"cuda"`, `torch.device(...)`, a name of kind
        DEVICE, `x.device`, `device`/`args.device`/`local_rank`-like names, an int index."""
        if e is None:
            return False
        if isinstance(e, cst.SimpleString):
            v = e.evaluated_value
            return isinstance(v, str) and v.split(":", 1)[0] in DEVICE_PREFIXES
        if isinstance(e, (cst.ConcatenatedString, cst.FormattedString)):
            return "cuda" in self.module.code_for_node(e)
        if isinstance(e, cst.Integer):
            return True
        if isinstance(e, cst.IfExp):
            return self.is_device_expr(e.body, _depth) or self.is_device_expr(e.orelse, _depth)
        q = self.qualname(e)
        if q is not None:
            last = q.rsplit(".", 1)[-1]
            if q.startswith("torch.") and last in DTYPE_NAMES:
                return False
        if isinstance(e, cst.Call):
            return self.qualname(e.func) == "torch.device"
        if self.kind_of(e) is Kind.DEVICE:
            return True
        if isinstance(e, (cst.Name, cst.Attribute)):
            last = e.value if isinstance(e, cst.Name) else e.attr.value
            low = last.lower()
            if "dtype" in low:
                return False
            if "device" in low or "rank" in low or low in ("gpu", "gpu_id", "dev"):
                return True
            return isinstance(e, cst.Name) and _depth < 3 and self._bound_to_devices(e, _depth + 1)
        return False

    def _bound_to_devices(self, e: cst.Name, depth: int) -> bool:
        """A name every binding of which is an assignment of a device expression (`where = "cuda" if
        torch.cuda.is_available() else "cpu"`, `d = x.device`): a device, whatever it is called."""
        bs = self.bindings_of(e)
        for b in bs:
            if b.how == "assign" and type(b.value) is cst.IfExp and any(
                    type(n) is cst.Attribute and n.attr.value in ("is_cuda", "get_device", "device")
                    for n in (b.value.test, *self.walk(b.value.test))):
                return False  # `"cuda" if t.is_cuda else "cpu"`: wherever that tensor is
        return bool(bs) and all(
            b.how == "assign" and b.value is not None and b.value is not e and type(b.value) is not cst.Integer
            and self.is_device_expr(b.value, depth) for b in bs)

    def move_of_call(self, call: cst.Call) -> Move | None:
        f = call.func
        if isinstance(f, cst.Attribute):
            meth = f.attr.value
            nb = any(a.keyword is not None and a.keyword.value == "non_blocking" for a in call.args)
            if meth == "cuda":
                pos = [a for a in call.args if a.keyword is None]
                dev = pos[0].value if pos else next(
                    (a.value for a in call.args if a.keyword is not None and a.keyword.value == "device"), None
                )
                return Move(call, dev, "cuda", nb)
            if meth == "cpu" and not call.args:
                return Move(call, None, "cpu")
            if meth == "to":
                for a in call.args:
                    if a.keyword is not None and a.keyword.value == "device":
                        return Move(call, a.value, "to", nb)
                pos = [a for a in call.args if a.keyword is None]
                if pos and self.is_device_expr(pos[0].value):
                    return Move(call, pos[0].value, "to", nb)
                if pos and isinstance(pos[0].value, (cst.Name, cst.Attribute)) and self.kind_of(pos[0].value) is Kind.TENSOR:
                    return Move(call, pos[0].value, "to", nb)  # x.to(other_tensor)
                return None
        for a in call.args:
            if a.keyword is not None and a.keyword.value in ("device", "device_map") and not (
                isinstance(a.value, cst.Name) and a.value.value == "None"
            ):
                return Move(call, a.value, "device=")
        return None

    def moves_in_chain(self, expr: cst.BaseExpression | None) -> list[Move]:
        """Moves applied while computing `expr`: `Net().to(d)`, `DDP(model.cuda())`, `x.to(d).float()`."""
        out: list[Move] = []
        cur = expr
        while isinstance(cur, cst.Call):
            mv = self.move_of_call(cur)
            if mv is not None:
                out.append(mv)
            q = self.qualname(cur.func)
            if q in WRAPPER_CLASSES and cur.args:
                cur = cur.args[0].value
                continue
            if isinstance(cur.func, cst.Attribute) and not (q and q.startswith("torch.")):
                cur = cur.func.value
                continue
            break
        if isinstance(cur, (cst.Name, cst.Attribute)) and cur is not expr:
            out.extend(self.moves_of(cur))
        return out

    def moves_of(self, expr: cst.BaseExpression) -> list[Move]:
        """Every move known to apply to the value a name (or `self.attr`) refers to: in its
        bindings (`m = Net().to(d)`), in-place module moves (`m.to(d)`, `m.cuda()` anywhere the same
        binding is visible), and for parameters, the moves of the arguments at the call sites."""
        if not isinstance(expr, (cst.Name, cst.Attribute)):
            return self.moves_in_chain(expr)
        key = ("moves", expr)
        if key in self._in_progress:
            return []
        self._in_progress.add(key)
        try:
            bindings = self.bindings_of(expr)
            out: list[Move] = []
            for b in bindings:
                if b.how in ("assign", "unpack") and b.value is not None and b.how == "assign":
                    out.extend(self.moves_in_chain(b.value))
                elif b.how == "param":
                    for arg in self.param_arguments(b):
                        out.extend(self.moves_in_chain(arg) if not isinstance(arg, (cst.Name, cst.Attribute)) else self.moves_of(arg))
            if bindings and self.kind_of(expr) not in (Kind.TENSOR, Kind.BATCH):
                # Module.to() moves in place; Tensor.to() does not (that is GL104's bug)
                out.extend(self._inplace_moves().get(id(bindings), []))
            unique, seen = [], set()
            for mv in out:
                if mv.call not in seen:
                    seen.add(mv.call)
                    unique.append(mv)
            return unique
        finally:
            self._in_progress.discard(key)

    def _inplace_moves(self) -> dict[int, list[Move]]:
        """Moves done by calls whose result is not what matters: `model.to(d)` (Modules move in place)."""
        if self._inplace is None:
            self._inplace = {}
            for call, recv, meth in self.method_calls("to", "cuda", "cpu"):
                if not isinstance(recv, (cst.Name, cst.Attribute)):
                    continue
                mv = self.move_of_call(call)
                if mv is None:
                    continue
                bindings = self.bindings_of(recv)
                if bindings:
                    self._inplace.setdefault(id(bindings), []).append(mv)
        return self._inplace

    def device_literal(self, e: cst.BaseExpression | None, _depth: int = 0) -> str | None:
        """The device an expression names when it can be read off the file: `"cuda:0"`,
        `torch.device("cpu")`, or a name all of whose bindings agree on one; else None."""
        if e is None or _depth > 5:
            return None
        if isinstance(e, cst.SimpleString):
            v = e.evaluated_value
            return v if isinstance(v, str) else None
        if isinstance(e, cst.Call) and self.qualname(e.func) == "torch.device" and e.args:
            first = self.device_literal(e.args[0].value, _depth + 1)
            if first is not None and len(e.args) > 1 and isinstance(e.args[1].value, cst.Integer):
                return f"{first}:{e.args[1].value.value}"
            return first
        if isinstance(e, cst.Name):
            values = set()
            for b in self.bindings_of(e):
                if b.how != "assign" or b.value is None:
                    return None
                values.add(self.device_literal(b.value, _depth + 1))
            if len(values) == 1:
                return values.pop()
        return None

    def is_cpu_move(self, mv: Move) -> bool:
        if mv.to_cpu:
            return True
        if mv.method in ("to", "device=") and mv.device is not None:
            lit = self.device_literal(mv.device)
            return lit is not None and lit.split(":")[0] in ("cpu", "meta")
        return False

    def device_moves(self, expr: cst.BaseExpression) -> list[Move]:
        """Moves of `expr` to something other than the CPU (or that may not be the CPU)."""
        return [mv for mv in self.moves_of(expr) if not self.is_cpu_move(mv)]

    def constructor_of(self, expr: cst.BaseExpression) -> cst.Call | None:
        """The call that built the value of a name with a single assignment (through moves)."""
        if isinstance(expr, (cst.Name, cst.Attribute)):
            bs = self.bindings_of(expr)
            if len(bs) != 1 or bs[0].how != "assign" or not isinstance(bs[0].value, cst.Call):
                return None
            expr = bs[0].value
        cur = self.unmoved(expr)
        return cur if isinstance(cur, cst.Call) else None

    @staticmethod
    def unmoved(expr: cst.BaseExpression) -> cst.BaseExpression:
        """`X` of `X.to(d).float().eval()`: the receiver under a chain of moves, casts and mode
        switches (which return the same module or a copy of the same value)."""
        cur = expr
        while isinstance(cur, cst.Call) and isinstance(cur.func, cst.Attribute) and cur.func.attr.value in (
            MOVE_METHODS | CAST_METHODS | {"train", "eval"}
        ):
            cur = cur.func.value
        return cur

    def cuda_tensor_type(self, e: cst.BaseExpression, choice_test=None, depth: int = 0) -> bool:
        """`torch.cuda.FloatTensor` (any legacy CUDA tensor type), or a name bound only to one, or a
        choice `A if test else B` with `A` one: `choice_test(test)` must hold of the test where given
        (`x.is_cuda`, an availability test); without it either branch being one suffices."""
        if depth > 3:
            return False
        from gpulint.flowkb import LEGACY_TENSOR_TYPES

        q = self.qualname(e) or ""
        if q.startswith("torch.cuda.") and q in LEGACY_TENSOR_TYPES:
            return True
        if isinstance(e, cst.IfExp):
            if choice_test is not None:
                return self.cuda_tensor_type(e.body, choice_test, depth + 1) and choice_test(e.test)
            return self.cuda_tensor_type(e.body, None, depth + 1) or self.cuda_tensor_type(e.orelse, None, depth + 1)
        if isinstance(e, cst.Name):
            bs = self.bindings_of(e)
            return bool(bs) and all(b.how == "assign" and isinstance(b.value, cst.BaseExpression)
                                    and self.cuda_tensor_type(b.value, choice_test, depth + 1) for b in bs)
        return False

    def is_stateless_module(self, expr: cst.BaseExpression) -> bool:
        """A loss or activation module (no parameters unless built with weight=...)."""
        ctor = self.constructor_of(expr)
        q = self.qualname(ctor.func) if ctor is not None else None
        if q is None or not q.startswith("torch.nn."):
            return False
        last = q.rsplit(".", 1)[-1]
        from gpulint import kb

        if last.endswith("Loss") or "loss" in kb.class_tags(q):  # (`NLLLoss2d`, PRECISION31 A4)
            return not any(a.keyword is not None and a.keyword.value in ("weight", "pos_weight") for a in ctor.args)
        return last in STATELESS_MODULES

    # loops ------------------------------------------------------------------------------------
    def loader_of_loop(self, loop: cst.For) -> cst.BaseExpression | None:
        """The DataLoader expression a `for` loop iterates (through enumerate/zip/tqdm), or None."""
        it = loop.iter
        while isinstance(it, cst.Call):
            q = self.qualname(it.func) or (it.func.value if isinstance(it.func, cst.Name) else None)
            pos = [a for a in it.args if a.keyword is None]
            if q in ("enumerate", "iter", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm") and pos:
                it = pos[0].value
                continue
            break
        if self.kind_of(it) is Kind.DATALOADER:
            return it
        return None

    # classes ----------------------------------------------------------------------------------
    def class_is(self, name: str, bases: frozenset[str], _seen: frozenset = frozenset()) -> bool:
        info = self.classes.get(name)
        if info is None or name in _seen:
            return False
        for b in info.bases:
            if b in bases:
                return True
            if b in self.classes and self.class_is(b, bases, _seen | {name}):
                return True
        return False

    def module_function(self, name: str) -> cst.FunctionDef | None:
        """The file's one function of this name that is not a method (None when there are several
        or none)."""
        defs = self.functions.get(name)
        if not defs:
            return None
        # a method of the same name is no rival: a bare name never calls it (E50-4, a DQN's
        # module-level `get_action(state, net)` beside `QNet.get_action`)
        defs = [d for d in defs if self.class_of(d) is None] if len(defs) > 1 else defs
        if len(defs) != 1 or self.class_of(defs[0]) is not None:
            return None
        return defs[0]

    def method_of_class(self, cls: str | None, name: str) -> tuple[cst.FunctionDef, str] | None:
        """The method `name` of the file's class `cls`, or of its first base of the file that has
        it (following first bases only), with the class that defines it."""
        seen = set()
        while cls is not None and cls not in seen:
            seen.add(cls)
            info = self.classes.get(cls)
            if info is None:
                return None
            if name in info.methods:
                return info.methods[name], cls
            bases = [b for b in info.bases if b in self.classes]
            cls = bases[0] if bases else None
        return None

    def module_classes(self) -> list[ClassInfo]:
        return [c for n, c in self.classes.items() if self.class_is(n, MODULE_BASES)]

    # kinds ------------------------------------------------------------------------------------
    def kind_of(self, expr: cst.BaseExpression | None) -> Kind:
        if expr is None:
            return Kind.UNKNOWN
        cached = self._kind_cache.get(expr)
        if cached is not None:
            return cached
        if expr in self._in_progress:
            self._cycle_hit = True
            return Kind.UNKNOWN
        partial = self._kind_partial.get(expr)
        if partial is not None:
            self._cycle_hit = True  # reused within this query: still partial
            return partial
        top = self._kind_depth == 0
        self._kind_depth += 1
        self._in_progress.add(expr)
        saved, self._cycle_hit = self._cycle_hit, False
        try:
            kind = self._kind(expr)
        finally:
            self._kind_depth -= 1
            self._in_progress.discard(expr)
            hit = self._cycle_hit
            self._cycle_hit = saved or hit
        if not hit:  # a result that saw a cycle is partial: do not remember it
            self._kind_cache[expr] = kind
        elif not top:
            # remembered for the rest of this top-level query only: without it, every path
            # through a cycle recomputed it (exponential on files with mutually dependent names)
            self._kind_partial[expr] = kind
        if top:
            self._kind_partial.clear()
        return kind

    def _engine_kind(self, expr: cst.BaseExpression) -> Kind:
        """The flow engine's kind where the binding table cannot tell (values through calls,
        methods, `self` attributes set in other methods, helpers' results)."""
        v = self.flow.values.get(expr)
        if v is None or v.kind is None:
            return Kind.UNKNOWN
        return _ENGINE_KINDS.get(v.kind, Kind.UNKNOWN)

    def is_kind(self, expr: cst.BaseExpression | None, *kinds: Kind) -> bool:
        return self.kind_of(expr) in kinds

    def _kind(self, expr: cst.BaseExpression) -> Kind:
        if isinstance(expr, (cst.Name, cst.Attribute)):
            bindings = self.bindings_of(expr)
            if bindings:
                return self._kind_of_bindings(bindings)
            if isinstance(expr, cst.Attribute) and not (isinstance(expr.value, cst.Name) and expr.value.value == "self"):
                # `root.model` of an instance of a plain class of the file that holds an instance
                # of a module class of the file (the engine follows it; the binding table cannot)
                v = self.flow.values.get(expr)
                if v is not None and v.kind == "module" and v.cls is not None and v.cls in self.classes:
                    return Kind.MODULE
            return Kind.UNKNOWN
        if isinstance(expr, cst.Call):
            return self._kind_of_call(expr)
        if isinstance(expr, cst.BinaryOperation):
            left, right = self.kind_of(expr.left), self.kind_of(expr.right)
            if Kind.TENSOR in (left, right):
                return Kind.TENSOR
            return Kind.UNKNOWN
        if isinstance(expr, cst.UnaryOperation):
            return Kind.TENSOR if self.kind_of(expr.expression) is Kind.TENSOR else Kind.UNKNOWN
        if isinstance(expr, cst.Subscript):
            base = self.kind_of(expr.value)
            if base in (Kind.TENSOR, Kind.BATCH):
                return Kind.TENSOR
            return Kind.UNKNOWN
        return Kind.UNKNOWN

    def _kind_of_bindings(self, bindings: Sequence[Binding]) -> Kind:
        kinds = set()
        for b in bindings:
            if b.how == "assign" and type(b.value) is cst.Name and b.value.value == "None" and len(bindings) > 1:
                continue  # `self.model = None` beside `self.model = Net()`: a placeholder, not a kind
            k = self._kind_of_binding(b)
            if k is None:  # no information (a cycle, e.g. x = x.to(d))
                continue
            kinds.add(k)
        if len(kinds) == 1:
            return kinds.pop()
        return Kind.UNKNOWN

    def _kind_of_binding(self, b: Binding) -> Kind | None:
        if b.how in ("def", "class", "import"):
            return Kind.UNKNOWN
        if b.how == "param":
            if b.annotation is not None:
                ann = self._kind_of_annotation(b.annotation)
                if ann is not Kind.UNKNOWN:
                    return ann
            args = self.param_arguments(b)
            if not args:
                return Kind.UNKNOWN
            kinds = {self.kind_of(a) for a in args}
            return kinds.pop() if len(kinds) == 1 else Kind.UNKNOWN
        if b.how == "augassign":
            # x += tensor keeps x's other bindings' kind
            assert isinstance(b.value, cst.AugAssign)
            k = self.kind_of(b.value.value)
            return k if k is Kind.TENSOR else None
        if b.how == "for":
            return self._kind_of_loop_target(b)
        if b.how == "unpack":
            value = b.value
            if isinstance(value, (cst.Tuple, cst.List)) and len(b.index) == 1:
                elements = value.elements
                i = b.index[0]
                if i < len(elements) and not any(isinstance(e, cst.StarredElement) for e in elements):
                    return self._binding_value_kind(elements[i].value)
                return Kind.UNKNOWN
            k = self._binding_value_kind(value)
            if k is Kind.BATCH:
                return Kind.TENSOR
            return Kind.UNKNOWN
        if b.how == "with":
            return Kind.UNKNOWN
        if b.annotation is not None:
            ann = self._kind_of_annotation(b.annotation)
            if ann is not Kind.UNKNOWN:
                return ann
        return self._binding_value_kind(b.value)

    def _binding_value_kind(self, value: cst.BaseExpression | None) -> Kind | None:
        if value is None:
            return Kind.UNKNOWN
        saved, self._cycle_hit = self._cycle_hit, False
        k = self.kind_of(value)
        hit = self._cycle_hit
        self._cycle_hit = saved or hit
        if hit and k is Kind.UNKNOWN:
            return None  # e.g. `x = x.to(d)`: says nothing beyond x's other bindings
        return k

    def _kind_of_annotation(self, ann: cst.BaseExpression) -> Kind:
        q = self.qualname(ann)
        if q is None:
            if isinstance(ann, cst.Name) and ann.value in self.classes:
                return self._kind_of_class_name(ann.value)
            return Kind.UNKNOWN
        if q in ("torch.Tensor", "torch.FloatTensor", "torch.LongTensor"):
            return Kind.TENSOR
        if q in MODULE_BASES or is_module_class_qualname(q):
            return Kind.MODULE
        if q in ("torch.optim.Optimizer", "torch.optim.optimizer.Optimizer") or is_optimizer_qualname(q):
            return Kind.OPTIMIZER
        if q in DATALOADER_CLASSES:
            return Kind.DATALOADER
        if q == "torch.device":
            return Kind.DEVICE
        return Kind.UNKNOWN

    def _kind_of_class_name(self, name: str) -> Kind:
        if self.class_is(name, MODULE_BASES):
            return Kind.MODULE
        if self.class_is(name, DATASET_BASES):
            return Kind.DATASET
        if self.class_is(name, frozenset({"torch.optim.Optimizer"})):
            return Kind.OPTIMIZER
        return Kind.UNKNOWN

    def _kind_of_loop_target(self, b: Binding) -> Kind | None:
        source, index = self.unwrap_iterable(b.value, b.index)
        if source is None:
            return Kind.UNKNOWN
        sk = self.kind_of(source)
        if sk is Kind.DATALOADER:
            return Kind.BATCH if not index else Kind.TENSOR
        if sk is Kind.MODULE and not index:
            return Kind.UNKNOWN
        return Kind.UNKNOWN

    def unwrap_iterable(
        self, it: cst.BaseExpression | None, index: tuple[int, ...] = ()
    ) -> tuple[cst.BaseExpression | None, tuple[int, ...]]:
        """See through enumerate/tqdm/zip/iter to what a loop target comes from.

        Returns the underlying iterable for the target at `index` and the remaining index into
        one item of it (or (None, ()) when it cannot tell).
        """
        while isinstance(it, cst.Call):
            q = self.qualname(it.func) or (it.func.value if isinstance(it.func, cst.Name) else None)
            args = [a for a in it.args if a.keyword is None]
            if q in ("enumerate",) and args:
                if not index:
                    return None, ()
                if index[0] == 0:
                    return None, ()
                it, index = args[0].value, index[1:]
                continue
            if q in ("zip",) and args:
                if not index:
                    return None, ()
                if index[0] >= len(args):
                    return None, ()
                it, index = args[index[0]].value, index[1:]
                continue
            if q in ("iter", "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "tqdm") and args:
                it = args[0].value
                continue
            break
        return it, index

    def _kind_of_call(self, call: cst.Call) -> Kind:
        func = call.func
        q = self.qualname(func)
        if q is not None:
            k = self._kind_of_qualified_call(q, call)
            if k is not None:
                return k
        if isinstance(func, cst.Name) and func.value in self.classes:
            return self._kind_of_class_name(func.value)
        if isinstance(func, cst.Attribute):
            meth = func.attr.value
            recv = func.value
            if meth == "from_pretrained" and q and q.startswith(PRETRAINED_PREFIXES):
                last = q.rsplit(".", 2)[-2]
                if "Model" in last:
                    return Kind.MODULE
                return Kind.UNKNOWN
            rk = self.kind_of(recv)
            if meth in MOVE_METHODS or meth in CAST_METHODS:
                if rk in (Kind.MODULE, Kind.TENSOR, Kind.OPTIMIZER, Kind.SCHEDULER):
                    return rk
                return Kind.UNKNOWN
            if rk is Kind.TENSOR:
                if meth in NON_TENSOR_METHODS:
                    return Kind.UNKNOWN
                return Kind.TENSOR
            if rk is Kind.MODULE and meth in ("train", "eval", "requires_grad_", "apply", "share_memory"):
                return Kind.MODULE
        if isinstance(func, cst.Name) and func.value == "iter" and call.args and "iter" not in self.aliases:
            if self.kind_of(call.args[0].value) is Kind.DATALOADER:
                return Kind.DATALOADER  # an iterator over the loader yields the same batches
        if isinstance(func, cst.Name) and func.value == "next" and call.args and func.value not in self.aliases:
            inner = call.args[0].value
            if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Name) and inner.func.value == "iter" and inner.args:
                inner = inner.args[0].value
            if self.kind_of(inner) is Kind.DATALOADER:
                return Kind.BATCH
        # calling a module gives its output
        if self.kind_of(func) is Kind.MODULE:
            return Kind.TENSOR
        return Kind.UNKNOWN

    def _kind_of_qualified_call(self, q: str, call: cst.Call) -> Kind | None:
        from gpulint import flowkb

        ek = flowkb.class_kind(q)
        if ek is not None and ek != "tensor" and q not in WRAPPER_CLASSES:  # the class's real MRO (AveragedModel: a Module)
            k = _ENGINE_KINDS.get(ek)
            if k is not None:
                return k
        if q.startswith("torch."):
            tail = q[len("torch."):]
            if tail in TENSOR_FACTORIES or tail in TENSOR_FUNCTIONS:
                return Kind.TENSOR
            if tail in ("FloatTensor", "LongTensor", "Tensor", "IntTensor", "BoolTensor", "DoubleTensor",
                        "nn.functional.one_hot") or tail.startswith("nn.functional."):
                return Kind.TENSOR
            if tail == "device":
                return Kind.DEVICE
            if tail in ("nn.Parameter", "nn.parameter.Parameter"):
                return Kind.TENSOR
            fn = flowkb.function(q) if not (tail.startswith("nn.init.") or tail.endswith("_")) else None
            if fn is not None and fn.returns == "tensor":
                # the knowledge base's tensor-returning functions (`torch.cumprod`, E44-1b); not the
                # in-place ones, which hand back their argument (`nn.init.uniform_(nn.Parameter(...))`
                # is the Parameter: MS-G3D's `self.A_res`)
                return Kind.TENSOR
        if q in WRAPPER_CLASSES:
            args = [a for a in call.args if a.keyword is None or a.keyword.value == "module"]
            if args:
                inner = self.kind_of(args[0].value)
                if inner is Kind.OPTIMIZER:
                    return Kind.OPTIMIZER
                if inner is Kind.UNKNOWN and self._cycle_hit:
                    return Kind.UNKNOWN  # `x = DP(x)`: what it wraps decides
            return Kind.MODULE
        if is_scheduler_qualname(q):
            return Kind.SCHEDULER
        if is_optimizer_qualname(q):
            return Kind.OPTIMIZER
        if q in SCALER_CLASSES:
            return Kind.SCALER
        if q in DATALOADER_CLASSES:
            return Kind.DATALOADER
        if q in DATASET_BASES:
            return Kind.DATASET
        if is_module_class_qualname(q):
            return Kind.MODULE
        return None

    # facts about the whole file -----------------------------------------------------------------
    @property
    def checks_availability(self) -> bool:
        """The file asks whether an accelerator is there (or takes the device from a flag)."""
        if self.device_flag:
            return True
        for call in self.calls:
            if self.qualname(call.func) in AVAILABILITY_NAMES:
                return True
        return bool(AVAILABILITY_TOKENS.search(self.source))

    @property
    def is_script(self) -> bool:
        """The file runs something: a `__main__` guard, top-level loops or `with` blocks, or a
        top-level call of one of its own functions. A module of imports, definitions, constants and
        registrations is a library (even one whose methods call `.backward()`, like a trainer's)."""
        made: set[str] = set()  # top-level names bound to an instance of a class of the file
        made_cls: dict[str, str] = {}
        for stmt in self.module.body:
            if isinstance(stmt, (cst.For, cst.While, cst.With)):
                return True
            if isinstance(stmt, cst.If):
                test = self.module.code_for_node(stmt.test)
                if "__name__" in test and "__main__" in test:
                    return True
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    # `main()` / `train(args)`: a function of this file run at import. (A call of an
                    # imported function, e.g. a registration, does not make a library a script.)
                    if (
                        isinstance(small, cst.Expr)
                        and isinstance(small.value, cst.Call)
                        and isinstance(small.value.func, cst.Name)
                        and small.value.func.value in self.functions
                    ):
                        return True
                    # `model = main()`, `losses = train(args)`: an entry function of the file run
                    # at import, its result kept (GFM's test script, rules65 E65-1); a helper that
                    # builds a module-level constant (`_table = _build_table()`) is no entry
                    if (
                        isinstance(small, (cst.Assign, cst.AnnAssign))
                        and isinstance(small.value, cst.Call)
                        and isinstance(small.value.func, cst.Name)
                        and small.value.func.value in self.functions
                        and _ENTRY_NAME.match(small.value.func.value)
                    ):
                        return True
                    # `trainer = Trainer(...)` then `acc = trainer.train()` (or `Trainer(...).train()`):
                    # a method of a class of the file, run at import (M46-1, a FER2013 trainer)
                    value = small.value if isinstance(small, (cst.Expr, cst.Assign, cst.AnnAssign)) else None
                    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
                        recv, meth = value.func.value, value.func.attr.value
                        if isinstance(recv, cst.Name) and recv.value in made and self._defines(made_cls[recv.value], meth):
                            return True
                        if (isinstance(recv, cst.Call) and isinstance(recv.func, cst.Name)
                                and recv.func.value in self.classes and self._defines(recv.func.value, meth)):
                            return True
                    if (isinstance(small, cst.Assign) and isinstance(small.value, cst.Call)
                            and isinstance(small.value.func, cst.Name) and small.value.func.value in self.classes):
                        for t in small.targets:
                            if isinstance(t.target, cst.Name):
                                made.add(t.target.value)
                                made_cls[t.target.value] = small.value.func.value
        return False

    def _defines(self, cls: str, method: str, depth: int = 0) -> bool:
        """The file's class `cls`, or one of its bases defined in the file, defines `method`."""
        info = self.classes.get(cls)
        if info is None or depth > 8:
            return False
        if method in info.methods:
            return True
        return any(self._defines(b, method, depth + 1) for b in info.bases if b in self.classes)

    @property
    def frameworks(self) -> frozenset[str]:
        """The training frameworks the file imports (computed once: the imports are known once the
        model is built, and rules ask hundreds of times per file)."""
        found = self.__dict__.get("_frameworks")
        if found is None:
            found = frozenset(name for mod in self.imported_modules for prefix, name in FRAMEWORK_MODULES.items()
                              if mod == prefix or mod.startswith(prefix + "."))
            self._frameworks = found
        return found

    def iter_calls(self, *qualnames: str) -> Iterable[cst.Call]:
        wanted = set(qualnames)
        for call in self.calls:
            if self.qualname(call.func) in wanted:
                yield call

    def method_calls(self, *names: str) -> Iterable[tuple[cst.Call, cst.BaseExpression, str]]:
        """(call, receiver, method) for every `recv.name(...)` call."""
        wanted = set(names)
        for call in self.calls:
            f = call.func
            if isinstance(f, cst.Attribute) and f.attr.value in wanted:
                yield call, f.value, f.attr.value


def requires_other_path(m, line, test, host_is_else: bool) -> bool:
    """`line` (a node) sits in the body of an `if` one of whose `and`-conjuncts requires the path of
    a conditional expression that does not make the host value (`stop_loss = ... if self.stopnet else
    torch.zeros(1)`, then `if not self.separate_stopnet and self.stopnet: loss += stop_loss`)."""
    code = m.module.code_for_node(test).strip()
    want = code if host_is_else else "not " + code
    child = line
    for anc in m.ancestors(line):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        if isinstance(anc, cst.If) and child is anc.body:
            stack, conj = [anc.test], []
            while stack:
                t = stack.pop()
                if isinstance(t, cst.BooleanOperation) and isinstance(t.operator, cst.And):
                    stack += [t.left, t.right]
                else:
                    conj.append(m.module.code_for_node(t).strip())
            if want in conj:
                return True
        child = anc
    return False
