"""What the flow engine asks about torch and its ecosystem, in one place.

Answers come from `gpulint.kb` (generated from torch itself); this adapter adds the few facts the
engine needs that are not properties of torch's API (which classes are DataParallel-style wrappers,
which constructors build on the host) and normalises the knowledge base's answers to the engine's
kinds.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from gpulint import kb as _kb

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


def is_wrapper(q: str | None) -> bool:
    """torch's DataParallel / DistributedDataParallel, or a data-parallel wrapper of another
    package that subclasses DataParallel and scatters its inputs the same way (PyTorch-Encoding's
    `DataParallelModel`, sync-batchnorm's `DataParallelWithCallback`, `BalancedDataParallel`)."""
    if not q:
        return False
    if q in WRAPPERS:
        return True
    last = q.rsplit(".", 1)[-1]
    # imported (a dotted name): a class of the file is followed as written
    return "." in q and "DataParallel" in last and "Distributed" not in last and not q.startswith("torch.")


# Tensor methods whose result keeps the operand's shape (a non-scalar stays non-scalar).
SHAPE_KEEPING = frozenset(
    "float half double long int bool bfloat16 to cuda cpu detach clone contiguous abs exp log sigmoid tanh "
    "relu neg sqrt softmax log_softmax clamp clip pow masked_fill type type_as requires_grad_ view reshape "
    "permute transpose expand expand_as view_as reshape_as repeat flatten contiguous unsqueeze "
    # reorder, accumulate or select along a dimension: still at least one dimension
    "repeat_interleave roll flip fliplr flipud cumsum cumprod argsort tril triu t narrow index_select "
    "gather masked_select tile "
    # element-wise: the receiver's shape (E38-4: `mask.logical_not()`)
    "logical_not bitwise_not sign sgn floor ceil round trunc frac sin cos tan asin acos atan sinh cosh "
    "reciprocal square exp2 expm1 log1p log2 log10 rsqrt erf erfc isnan isinf isfinite nan_to_num "
    "masked_fill_ fill_ zero_ clamp_ clamp_min clamp_max sigmoid_ relu_ abs_ neg_ exp_ log_ sqrt_ "
    "float_power nonzero_static bool_ sin_ cos_ floor_ ceil_ round_ logit".split()
)
# torch functions whose result has at least one dimension whatever their operands
ALWAYS_NONSCALAR = frozenset(
    "bincount stack cat concat concatenate hstack vstack dstack column_stack row_stack nonzero unique "
    "unique_consecutive histc cartesian_prod combinations argwhere tril_indices triu_indices atleast_1d "
    "atleast_2d atleast_3d block_diag cdist".split()
)
# losses whose `weight` is one weight per class (a 1-D tensor; `pos_weight` and BCE's `weight`
# broadcast, and a 0-dim CPU one may meet device tensors)
CLASS_WEIGHTED = frozenset({"cross_entropy", "nll_loss", "multi_margin_loss"})
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
    "tensor module optimizer scheduler loader dataset scaler device metric dtype tokenizer transform".split()
)


@dataclass(frozen=True)
class Func:
    returns: str  # tensor, tensors, tensor_or_tensors, or a kind (module, ...), other, none
    tensor_params: tuple | None  # names of tensor operand parameters, positional order
    creates: bool  # a factory: takes device=
    shape_same: bool  # the result has the operands' shape (for "not a scalar")
    random: bool = False
    slots: tuple = ()  # the tensor parameters by position, None between them (see kb.FuncInfo)


def canonical(q: str) -> str:
    return _kb.canonical(q) or q


def is_dtype(q: str) -> bool:
    return q.startswith("torch.") and q.rsplit(".", 1)[-1] in _DTYPES


# legacy typed-tensor constructors (`torch.FloatTensor([...])`: on the host; `torch.cuda.*`: on the
# current CUDA device). torch builds them dynamically, so introspection does not list them.
_LEGACY_NAMES = "Float Double Half BFloat16 Byte Char Short Int Long Bool".split()
LEGACY_TENSOR_TYPES = frozenset(
    [f"torch.{n}Tensor" for n in _LEGACY_NAMES] + [f"torch.cuda.{n}Tensor" for n in _LEGACY_NAMES]
)


@lru_cache(maxsize=4096)
def class_kind(q: str | None) -> str | None:
    """The engine kind of instances of the class `q` (None: not a class the engine knows)."""
    if not q:
        return None
    if is_wrapper(q):
        return "module"
    if q in LEGACY_TENSOR_TYPES:
        return "tensor"
    k = _kb.class_kind(q)
    if k is None:
        return None
    k = _KIND_MAP.get(k, k)
    return k if k in _ENGINE_KINDS else None


def builds_on_host(q: str) -> bool:
    """Constructing `q` puts its parameters on the host (nn layers, torchvision models)."""
    return q.startswith(("torch.", "torchvision.", "timm.", "torchmetrics."))


def dataset_on_host(q: str) -> bool:
    return q.startswith(("torch.utils.data.", "torchvision."))


# functions whose result may have no dimension whatever their operands' shapes: reductions (a
# dimension argument may keep one: the engine reads it), and losses (a 0-dim mean unless
# `reduction="none"`, which the engine reads too)
_SCALAR_RESULTS = frozenset(
    "sum mean max min norm prod std var dot vdot trace dist logsumexp argmax argmin amax amin all any "
    "median nanmedian nansum nanmean count_nonzero cross_entropy kl_div binary_cross_entropy "
    "binary_cross_entropy_with_logits".split()
)


def _scalar_result(last: str) -> bool:
    return last in _SCALAR_RESULTS or last.endswith("_loss")


@lru_cache(maxsize=4096)
def function(q: str) -> Func | None:
    info = _kb.function(q)
    if info is None:
        return None
    q = info.qualname
    last = q.rsplit(".", 1)[-1]
    returns = info.returns
    if returns in _KIND_MAP or returns in _ENGINE_KINDS and returns not in ("tensor",):
        returns = _KIND_MAP.get(returns, returns)
    # a factory: takes device= (made on the host unless told otherwise when no tensor operand is
    # given); `torch.tensor(t)` / `as_tensor(t)` keep the device of a tensor they are given
    creates = info.device_param and last not in _LIKE
    tp = info.tensor_params
    if last in ("tensor", "as_tensor", "from_numpy", "asarray"):
        tp = ("data",)
    return Func(returns, tp, creates, not _scalar_result(last), info.random,
                info.slots if tp is info.tensor_params else ())


def tensor_method(name: str) -> str | None:
    return _kb.tensor_method(name)


def tensor_attribute(name: str) -> str | None:
    return _kb.tensor_attribute(name)


@lru_cache(maxsize=512)
def module_method(name: str) -> str | None:
    found = _kb.module_method(name)
    if found in ("inplace_move", "inplace_host", "inplace_cast"):
        return "inplace_move"
    if found == "returns_self":
        return "same"
    if found is not None:
        return found
    if name in ("to", "cuda", "cpu", "half", "float", "double", "bfloat16", "type", "to_empty", "xpu", "mps"):
        return "inplace_move"
    if name in ("train", "eval", "requires_grad_", "apply", "share_memory", "zero_grad"):
        return "same"
    if name in ("parameters", "buffers"):
        return "tensor_iter"
    return None


def class_tags(q: str | None) -> tuple:
    return _kb.class_tags(q) if q else ()
