"""CUDA autocast's op lists on the emulated device.

Emulated CUDA tensors are CPU tensors to C++, so CUDA autocast regions are mirrored onto CPU
autocast (see ``_engine``), and the CPU autocast kernels would apply the *CPU* lists. This module
registers Python kernels for the ``AutocastCPU`` dispatch key on the operators whose CUDA policy
differs from the CPU one, so that inside ``torch.autocast("cuda")`` they follow CUDA's lists
(``aten/src/ATen/autocast_mode.cpp``):

* ``binary_cross_entropy`` is banned (the GPU's "unsafe to autocast" error);
* ops CUDA runs in float16/bfloat16 that CPU autocast leaves alone (``addmv``, ``addr``, ``mv``,
  RNN cells, ...);
* ops CUDA runs in float32 (``exp``, ``log``, ``pow``, ``softplus``, ``layer_norm``, ``group_norm``,
  ``logsumexp``, upsampling, ...), and reductions given ``dtype=float32`` (``sum``, ``softmax``,
  ``log_softmax``, ``cumsum``, ``prod``, norms);
* ops CUDA runs in the widest input type (``addcmul``, ``addcdiv``, ``atan2``, ``cross``, ``dot``,
  ``index_put``, ``scatter_add``, ...).

Operators whose policy is the same on both devices (``mm``, ``addmm``, ``conv2d``, ``linear``,
``matmul``, the float32 losses) keep PyTorch's own kernels. Outside a CUDA autocast region, the
overridden operators behave as CPU autocast does (the few in CPU's float32 list are cast, the
others are left alone). The kernels are registered when emulation starts and removed when it ends;
they only run while an autocast region is active.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["BCE_MESSAGE", "install"]

BCE_MESSAGE = (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast."
)

LOWER = (
    "addmv", "addr", "mv", "chain_matmul", "linalg_multi_dot", "lstm_cell", "gru_cell", "rnn_tanh_cell",
    "rnn_relu_cell", "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell",
)  # fmt: skip
FP32 = (
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt",
    "sinh", "tan", "pow.Tensor_Scalar", "pow.Tensor_Tensor", "pow.Scalar", "softplus", "layer_norm",
    "native_layer_norm", "group_norm", "frobenius_norm.dim", "nuclear_norm", "nuclear_norm.dim",
    "cosine_similarity", "dist", "pdist", "renorm", "logsumexp", "upsample_nearest1d.vec",
    "upsample_nearest2d.vec", "upsample_nearest3d.vec", "upsample_linear1d.vec", "upsample_bilinear2d.vec",
    "upsample_trilinear3d.vec", "upsample_bicubic2d.vec", "upsample_nearest1d", "upsample_nearest2d",
    "upsample_nearest3d", "upsample_linear1d", "upsample_bilinear2d", "upsample_trilinear3d", "upsample_bicubic2d",
)  # fmt: skip
SET_OPT_DTYPE = (
    "prod", "prod.dim_int", "softmax.int", "log_softmax.int", "cumprod", "cumsum", "linalg_vector_norm",
    "linalg_matrix_norm", "linalg_matrix_norm.str_ord", "sum", "sum.dim_IntList",
)  # fmt: skip
PROMOTE = ("addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot", "grid_sampler", "index_put", "tensordot", "scatter_add")
BANNED = ("binary_cross_entropy",)
#: of the overridden operators, those CPU autocast runs in float32 (the rest it leaves alone)
CPU_FP32 = frozenset({"prod", "binary_cross_entropy", "upsample_nearest3d", "upsample_trilinear3d"})

_LOW = (torch.float16, torch.bfloat16)
_AUTOCAST_CPU = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)


def _op(qualified: str) -> Any:
    name, _, overload = qualified.partition(".")
    packet = getattr(torch.ops.aten, name, None)
    if packet is None:
        return None
    return getattr(packet, overload or "default", None)


def _eligible(t: Any, is_emulated: Any) -> bool:
    return isinstance(t, torch.Tensor) and t.is_floating_point() and t.dtype != torch.float64 and is_emulated(t)


def _cast(value: Any, dtype: torch.dtype, is_emulated: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if _eligible(value, is_emulated) and value.dtype != dtype else value
    if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
        return type(value)(_cast(v, dtype, is_emulated) for v in value)
    return value


def _tensors(args: tuple, kwargs: dict) -> list[torch.Tensor]:
    out = []
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            out.append(value)
        elif isinstance(value, (list, tuple)):
            out.extend(v for v in value if isinstance(v, torch.Tensor))
    return out


def _kernel(op: Any, policy: str, cpu_fp32: bool, is_emulated: Any) -> Any:
    def kernel(*args: Any, **kwargs: Any) -> Any:
        tensors = _tensors(args, kwargs)
        cuda_region = torch.is_autocast_enabled("cuda") and any(is_emulated(t) for t in tensors)
        if cuda_region:
            if policy == "banned":
                raise RuntimeError(BCE_MESSAGE)
            if policy == "lower":
                dtype = torch.get_autocast_dtype("cuda")
                args, kwargs = _cast(args, dtype, is_emulated), {k: _cast(v, dtype, is_emulated) for k, v in kwargs.items()}
            elif policy == "fp32":
                args, kwargs = _cast(args, torch.float32, is_emulated), {k: _cast(v, torch.float32, is_emulated) for k, v in kwargs.items()}
            elif policy == "set_opt_dtype":
                if args and _eligible(args[0], is_emulated) and kwargs.get("dtype") is None:
                    kwargs = {**kwargs, "dtype": torch.float32}
            elif policy == "promote":
                floats = [t.dtype for t in tensors if _eligible(t, is_emulated)]
                if floats:
                    widest = floats[0]
                    for d in floats[1:]:
                        widest = torch.promote_types(widest, d)
                    args, kwargs = _cast(args, widest, is_emulated), {k: _cast(v, widest, is_emulated) for k, v in kwargs.items()}
        elif cpu_fp32 and torch.is_autocast_enabled("cpu") and not torch.is_autocast_enabled("cuda"):
            plain = lambda t: True  # noqa: E731 - CPU autocast casts CPU tensors
            args, kwargs = _cast(args, torch.float32, plain), {k: _cast(v, torch.float32, plain) for k, v in kwargs.items()}
        with torch._C._ExcludeDispatchKeyGuard(_AUTOCAST_CPU):
            return op(*args, **kwargs)

    return kernel


def install(is_emulated: Any) -> Any:
    """Register the kernels; returns the ``torch.library.Library`` whose ``_destroy()`` removes them."""
    import warnings

    lib = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Overriding a previously registered kernel"
        for policy, names in (("lower", LOWER), ("fp32", FP32), ("set_opt_dtype", SET_OPT_DTYPE), ("promote", PROMOTE), ("banned", BANNED)):
            for qualified in names:
                op = _op(qualified)
                if op is None:
                    continue
                name = qualified if "." in qualified else qualified
                try:
                    lib.impl(name, _kernel(op, policy, qualified.split(".")[0] in CPU_FP32, is_emulated), "AutocastCPU")
                except Exception:  # noqa: BLE001 - an operator this torch version lacks
                    continue
    return lib
