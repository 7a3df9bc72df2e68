"""What the flow engine asks about torch and its ecosystem, in one place.

Answers come from `gpulint.kb` (generated from torch itself); this adapter adds the few facts the
engine needs that are not properties of torch's API (which classes are DataParallel-style wrappers,
which constructors build on the host) and normalises the knowledge base's answers to the engine's
kinds.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

try:  # the generated knowledge base (merged from main)
    from gpulint import kb as _kb
except ImportError:  # pragma: no cover - until it lands
    _kb = None

WRAPPERS = frozenset(
    {
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.data_parallel.DataParallel",
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
        "torch.nn.DistributedDataParallel",
    }
)
# Tensor methods whose result keeps the operand's shape (a non-scalar stays non-scalar).
SHAPE_KEEPING = frozenset(
    "float half double long int bool bfloat16 to cuda cpu detach clone contiguous abs exp log sigmoid tanh "
    "relu neg sqrt softmax log_softmax clamp clip pow masked_fill type type_as requires_grad_".split()
)
_DTYPES = frozenset(
    "float16 float32 float64 half float double bfloat16 int8 int16 int32 int64 uint8 long int bool "
    "complex64 complex128 cfloat short".split()
)
# factories (tensors made from nothing: on the host unless device= says otherwise)
_CREATES = frozenset(
    "zeros ones empty full rand randn randint randperm arange linspace logspace eye tensor as_tensor "
    "from_numpy normal bernoulli multinomial range FloatTensor LongTensor Tensor IntTensor BoolTensor "
    "DoubleTensor scalar_tensor".split()
)
_LIKE = frozenset("zeros_like ones_like empty_like full_like rand_like randn_like randint_like".split())

# kind names of the knowledge base -> the engine's
_KIND_MAP = {"dataloader": "loader", "lr_scheduler": "scheduler", "grad_scaler": "scaler"}
_ENGINE_KINDS = frozenset(
    "tensor module optimizer scheduler loader dataset scaler device metric dtype".split()
)


@dataclass(frozen=True)
class Func:
    returns: str
    tensor_params: tuple | None
    creates: bool
    shape_same: bool


def canonical(q: str) -> str:
    if _kb is not None:
        try:
            return _kb.canonical(q) or q
        except Exception:
            return q
    return q


def is_dtype(q: str) -> bool:
    return q.startswith("torch.") and q.rsplit(".", 1)[-1] in _DTYPES


@lru_cache(maxsize=4096)
def class_kind(q: str | None) -> str | None:
    """The engine kind of instances of the class `q` (None: not a class the engine knows)."""
    if not q:
        return None
    if q in WRAPPERS:
        return "module"
    k = None
    if _kb is not None:
        k = _kb.class_kind(canonical(q)) or _kb.class_kind(q)
    else:
        k = _stub_class_kind(q)
    if k is None:
        return None
    k = _KIND_MAP.get(k, k)
    return k if k in _ENGINE_KINDS else None


def builds_on_host(q: str) -> bool:
    """Constructing `q` puts its parameters on the host (nn layers, torchvision models)."""
    return q.startswith(("torch.", "torchvision.", "timm.", "torchmetrics."))


def dataset_on_host(q: str) -> bool:
    return q.startswith(("torch.utils.data.", "torchvision."))


@lru_cache(maxsize=4096)
def function(q: str) -> Func | None:
    q = canonical(q)
    last = q.rsplit(".", 1)[-1]
    info = None
    if _kb is not None:
        info = _kb.function(q)
        if info is None:
            return None
        tp = tuple(info.tensor_params) if info.tensor_params is not None else None
        creates = last in _CREATES or (bool(getattr(info, "device_param", False)) and not tp)
        return Func(info.returns, tp, creates and last not in _LIKE, last not in ("sum", "mean", "max", "min"))
    return _stub_function(q)


@lru_cache(maxsize=2048)
def tensor_method(name: str) -> str | None:
    if _kb is not None:
        return _kb.tensor_method(name)
    return _stub_tensor_method(name)


@lru_cache(maxsize=512)
def module_method(name: str) -> str | None:
    if _kb is not None:
        found = _kb.module_method(name)
        if found is not None:
            return found
    if name in ("to", "cuda", "cpu", "half", "float", "double", "bfloat16", "type", "to_empty", "xpu", "mps"):
        return "inplace_move"
    if name in ("train", "eval", "requires_grad_", "apply", "share_memory", "zero_grad"):
        return "same"
    if name in ("parameters", "buffers"):
        return "tensor_iter"
    return None


# ---------------------------------------------------------------------------------------------
# stub answers until gpulint.kb lands (the old name tables)
# ---------------------------------------------------------------------------------------------


def _stub_class_kind(q: str) -> str | None:
    from gpulint import model as M

    if q in M.SCALER_CLASSES:
        return "scaler"
    if q in M.DATALOADER_CLASSES:
        return "loader"
    if q in M.DATASET_BASES:
        return "dataset"
    if q == "torch.device":
        return "device"
    if q.startswith("torchmetrics.") and q.rsplit(".", 1)[-1][:1].isupper():
        return "metric"
    if q in ("torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.Tensor", "torch.FloatTensor",
             "torch.LongTensor"):
        return "tensor"
    if q.startswith("torch.optim.swa_utils.AveragedModel"):
        return "module"
    if M.is_scheduler_qualname(q):
        return "scheduler"
    if M.is_optimizer_qualname(q):
        return "optimizer"
    if M.is_module_class_qualname(q) or q in M.MODULE_BASES:
        return "module"
    return None


def _stub_function(q: str) -> Func | None:
    from gpulint import model as M

    if not q.startswith("torch."):
        return None
    tail = q[len("torch."):]
    last = tail.rsplit(".", 1)[-1]
    if tail in M.TENSOR_FACTORIES:
        return Func("tensor", ("input",) if last in _LIKE or last in ("multinomial", "bernoulli", "normal") else (),
                    last in _CREATES and last not in _LIKE, True)
    if tail in ("chunk", "split", "unbind"):
        return Func("tensors", ("input",), False, False)
    if tail in M.TENSOR_FUNCTIONS or tail.startswith("nn.functional."):
        if tail in ("cat", "concat", "stack", "hstack", "vstack"):
            return Func("tensor", ("tensors",), False, True)
        if tail in ("topk", "sort", "max", "min") :
            return Func("tensor", ("input",), False, False)
        return Func("tensor", None, False, tail not in ("sum", "mean", "norm"))
    return None


_STUB_SAME = frozenset(
    "unsqueeze squeeze view reshape permute transpose contiguous clone detach flatten expand expand_as repeat "
    "sum mean max min abs exp log sqrt pow softmax log_softmax argmax argmin masked_fill gather index_select "
    "matmul mm bmm t flip roll narrow select clamp clip sigmoid tanh relu neg add sub mul div eq ne gt lt ge le "
    "type_as view_as reshape_as repeat_interleave std var norm float_power round floor ceil sign cumsum "
    "new_zeros new_ones new_full new_empty new_tensor masked_select nonzero long_".split()
)


def _stub_tensor_method(name: str) -> str | None:
    if name in ("to", "cuda", "type"):
        return "move"
    if name == "cpu":
        return "host"
    if name in ("item", "tolist", "numpy", "size", "dim", "numel", "stride", "data_ptr", "element_size",
                "is_contiguous", "get_device", "is_floating_point"):
        return "host_value"
    if name in ("half", "float", "double", "bfloat16", "long", "int", "bool", "short", "byte", "char"):
        return "cast"
    if name in ("chunk", "split", "unbind"):
        return "tensors"
    if name in _STUB_SAME:
        return "same"
    if name.endswith("_") and not name.startswith("_"):
        return "inplace"
    return None
