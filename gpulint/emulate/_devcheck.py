"""Device-mismatch checks with the messages a real CUDA build of PyTorch produces.

On a GPU, PyTorch rejects an operator whose tensors live on different devices in one of a few
places, each with its own wording:

* TensorIterator kernels (pointwise ops and reductions, marked ``device_check: NoCheck`` in
  ``native_functions.yaml``) accept 0-dim CPU tensors as scalars and otherwise raise
  ``Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!``
  where the first device is the first non-CPU operand's (outputs first, then inputs).
* Every other operator with a CUDA kernel goes through a generated wrapper that checks the
  out-arguments and then the positional arguments in schema order, the first defined one setting
  the "common" device (``c10::impl::check_and_update_common_device``):
  ``Expected all tensors to be on the same device, but got mat1 is on cpu, different from other
  tensors on cuda:0 (when checking argument in method wrapper_CUDA_addmm)``. The wrapper is named
  ``wrapper_CUDA_<name>`` for structured kernels and ``wrapper_CUDA_<overload>_<name>`` otherwise.
* Convolutions compare the input's and weight's tensor types first:
  ``Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same or
  input should be a MKLDNN tensor and weight is a dense tensor``.
* ``embedding`` is ``weight.index_select(0, indices)`` on CUDA, so it fails in
  ``wrapper_CUDA__index_select`` with argument ``index``.
* ``masked_fill`` checks its mask first: ``expected self and mask to be on the same device, but got
  mask on cpu and self on cuda:0``.
* Advanced indexing accepts CPU index tensors for a CUDA tensor, but not the reverse:
  ``indices should be either on cpu or on the same device as the indexed tensor (cpu)``.

Which kind an operator is comes from the ``native_functions.yaml`` shipped with torch (in the
``torchgen`` package), read lazily and only when tensors on different devices meet.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["OpInfo", "op_info", "resolve_mixed"]

CPU = -1  # device code of a plain CPU tensor; emulated cuda:i is i; -2 means "another device"


@dataclass(frozen=True)
class OpInfo:
    nocheck: bool  # device_check: NoCheck (TensorIterator-style rules)
    structured: bool
    has_cuda: bool


_YAML_INDEX: dict[str, OpInfo] | None = None
_FUNC_CACHE: dict[Any, OpInfo | None] = {}

_ENTRY_RE = re.compile(r"^- func: ([A-Za-z0-9_.]+)\(", re.MULTILINE)


def _load_yaml_index() -> dict[str, OpInfo]:
    global _YAML_INDEX
    if _YAML_INDEX is not None:
        return _YAML_INDEX
    index: dict[str, OpInfo] = {}
    text = ""
    try:
        import torchgen

        path = os.path.join(os.path.dirname(torchgen.__file__), "packaged", "ATen", "native", "native_functions.yaml")
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except Exception:  # pragma: no cover - torchgen missing: fall back to generic messages
        text = ""
    starts = [m.start() for m in _ENTRY_RE.finditer(text)]
    raw: dict[str, tuple[bool, bool, bool, str | None]] = {}
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(text)
        block = text[start:end]
        name = _ENTRY_RE.match(block).group(1)  # type: ignore[union-attr]
        nocheck = "device_check: NoCheck" in block
        structured = "structured: True" in block
        delegate = None
        m = re.search(r"structured_delegate: ([A-Za-z0-9_.]+)", block)
        if m:
            delegate = m.group(1)
        has_cuda = False
        dm = re.search(r"\n  dispatch:\n((?:    .*\n?)+)", block)
        if dm:
            for line in dm.group(1).splitlines():
                keys = line.split(":", 1)[0]
                if any(k.strip() == "CUDA" for k in keys.split(",")):
                    has_cuda = True
                    break
        raw[name] = (nocheck, structured, has_cuda, delegate)
    for name, (nocheck, structured, has_cuda, delegate) in raw.items():
        if delegate is not None:
            structured = True
            has_cuda = has_cuda or raw.get(delegate, (False, False, True, None))[2]
        index[name] = OpInfo(nocheck=nocheck, structured=structured, has_cuda=has_cuda)
    _YAML_INDEX = index
    return index


def _yaml_key(func: Any) -> str:
    name = func._schema.name.split("::", 1)[-1]
    overload = func._overloadname
    return name if overload in ("default", "") else f"{name}.{overload}"


def op_info(func: Any) -> OpInfo | None:
    try:
        return _FUNC_CACHE[func]
    except KeyError:
        pass
    info = None
    if func.namespace == "aten":
        info = _load_yaml_index().get(_yaml_key(func))
    _FUNC_CACHE[func] = info
    return info


def _wrapper_name(func: Any, info: OpInfo) -> str:
    name = func._schema.name.split("::", 1)[-1]
    overload = func._overloadname
    if overload == "default":
        overload = ""
    is_out = any(a.is_out for a in func._schema.arguments)
    if info.structured:
        return f"wrapper_CUDA_{name}{'_out' if is_out else ''}"
    return f"wrapper_CUDA_{overload}_{name}{'_out' if is_out else ''}"


def _fmt(code: int) -> str:
    return "cpu" if code == CPU else f"cuda:{code}"


def _is_tensor_type(type_str: str) -> bool:
    # "Tensor", "Optional[Tensor]", "List[Tensor]", "List[Optional[Tensor]]"
    return "Tensor" in type_str


def _bound_arguments(func: Any, args: tuple, kwargs: dict) -> list[tuple[Any, Any]]:
    """(schema argument, value) pairs for out-arguments then positional arguments."""
    schema_args = func._schema.arguments
    values: list[tuple[Any, Any]] = []
    positional = [a for a in schema_args if not a.kwarg_only]
    outs = [a for a in schema_args if a.is_out]
    for a in outs:
        values.append((a, kwargs.get(a.name)))
    for i, a in enumerate(positional):
        if i < len(args):
            values.append((a, args[i]))
        else:
            values.append((a, kwargs.get(a.name)))
    return values


def _flat_tensors(value: Any) -> list[Any]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, torch.Tensor)]
    return []


def _legacy_type(t: torch.Tensor, code: int) -> str:
    base = torch._C.TensorBase.type(t)  # "torch.FloatTensor" for the CPU data
    if code >= 0 and base.startswith("torch."):
        return "torch.cuda." + base[len("torch.") :]
    return base


def resolve_mixed(func: Any, args: tuple, kwargs: dict, code_of: Callable[[Any], int]) -> int:
    """Decide an operator whose tensors are on different devices, as real CUDA would.

    Returns the device code the outputs live on, or raises the error a GPU raises.
    ``code_of(t)`` gives the device code of a tensor (CPU, a cuda index, or -2 for others).
    """
    name = func._schema.name
    # --- operators that legitimately take tensors from several devices ---------------------
    if name in _COPY_OPS:
        dst = args[0] if args else None
        return code_of(dst) if isinstance(dst, torch.Tensor) else CPU
    if name in CPU_ARGUMENTS:
        cpu_ok = CPU_ARGUMENTS[name]
        common: int | None = None
        for arg, value in _bound_arguments(func, args, kwargs):
            for t in _flat_tensors(value):
                c = code_of(t)
                if c < CPU or (arg.name in cpu_ok and c == CPU):
                    continue
                if common is None:
                    common = c
                elif c != common:
                    raise RuntimeError(
                        "Expected all tensors to be on the same device, but found at least two devices, "
                        f"{_fmt(common)} and {_fmt(c)}!"
                    )
        return common if common is not None else CPU
    if name in ("aten::masked_fill", "aten::masked_fill_"):
        self_t, mask = args[0], args[1]
        sc, mc = code_of(self_t), code_of(mask)
        if sc != mc and sc >= CPU and mc >= CPU:
            raise RuntimeError(
                f"expected self and mask to be on the same device, but got mask on {_fmt(mc)} and self on {_fmt(sc)}"
            )
    if name == "aten::embedding":
        weight, indices = args[0], args[1]
        wc, ic = code_of(weight), code_of(indices)
        raise RuntimeError(
            "Expected all tensors to be on the same device, but got index is on "
            f"{_fmt(ic)}, different from other tensors on {_fmt(wc)} "
            "(when checking argument in method wrapper_CUDA__index_select)"
        )
    if name == "aten::convolution" or name == "aten::convolution_backward":
        if name == "aten::convolution":
            inp, weight = args[0], args[1]
            bias = args[2] if len(args) > 2 else None
        else:
            inp, weight = args[1], args[2]
            bias = None
        ic, wc = code_of(inp), code_of(weight)
        if ic != wc:
            raise RuntimeError(
                f"Input type ({_legacy_type(inp, ic)}) and weight type ({_legacy_type(weight, wc)}) should be "
                "the same or input should be a MKLDNN tensor and weight is a dense tensor"
            )
        if isinstance(bias, torch.Tensor) and code_of(bias) != ic:
            bc = code_of(bias)
            raise RuntimeError(
                f"Input type ({_legacy_type(inp, ic)}) and bias type ({_legacy_type(bias, bc)}) should be "
                "the same or input should be a MKLDNN tensor and bias is a dense tensor"
            )
    if name in _INDEX_OPS:
        self_t = args[0]
        sc = code_of(self_t)
        indices = args[1] if len(args) > 1 else kwargs.get("indices", [])
        for idx in _flat_tensors(indices):
            c = code_of(idx)
            if c != sc and c != CPU and c >= CPU:
                raise RuntimeError(
                    f"indices should be either on cpu or on the same device as the indexed tensor ({_fmt(sc)})"
                )
        rest = list(args[2:]) + [v for k, v in kwargs.items() if k != "indices"]
        for v in rest:
            for t in _flat_tensors(v):
                c = code_of(t)
                if c != sc and c >= CPU and not (c == CPU and t.dim() == 0):
                    raise RuntimeError(
                        "Expected all tensors to be on the same device, but found at least two devices, "
                        f"{_fmt(sc)} and {_fmt(c)}!"
                    )
        return sc

    if name in _STACK_OPS:
        return _stack_check(func, args, kwargs, code_of)

    info = op_info(func)
    if info is not None and not info.nocheck and info.has_cuda:
        common: int | None = None
        for arg, value in _bound_arguments(func, args, kwargs):
            if not _is_tensor_type(str(arg.type)):
                continue
            for t in _flat_tensors(value):
                c = code_of(t)
                if c < CPU:
                    continue
                if common is None:
                    common = c
                elif c != common:
                    raise RuntimeError(
                        f"Expected all tensors to be on the same device, but got {arg.name} is on {_fmt(c)}, "
                        f"different from other tensors on {_fmt(common)} "
                        f"(when checking argument in method {_wrapper_name(func, info)})"
                    )
        return common if common is not None else CPU

    # --- TensorIterator rules (also the fallback for composite and unknown operators) --------
    return _tensor_iterator_check(func, args, kwargs, code_of)


def _stack_check(func: Any, args: tuple, kwargs: dict, code_of: Callable[[Any], int]) -> int:
    """``stack`` has no CUDA kernel: its composite unsqueezes the tensors and calls ``cat`` (or
    ``cat_out``), whose CUDA wrapper checks ``out`` and then every tensor, so even a 0-dim CPU
    tensor beside a CUDA one fails there (TensorShape.cpp ``stack``/``stack_out``)."""
    tensors = _flat_tensors(args[0] if args else kwargs.get("tensors", []))
    out = kwargs.get("out")
    shapes = {tuple(t.shape) for t in tensors}
    if len(shapes) > 1:
        # the composite checks the shapes before cat's devices: the CPU kernel raises its error
        return code_of(tensors[0])
    cat = torch.ops.aten.cat.out if isinstance(out, torch.Tensor) else torch.ops.aten.cat.default
    info = op_info(cat)
    method = _wrapper_name(cat, info) if info is not None else "wrapper_CUDA_cat"
    common: int | None = None
    for arg_name, values in (("out", _flat_tensors(out)), ("tensors", tensors)):
        for t in values:
            c = code_of(t)
            if c < CPU:
                continue
            if common is None:
                common = c
            elif c != common:
                raise RuntimeError(
                    f"Expected all tensors to be on the same device, but got {arg_name} is on {_fmt(c)}, "
                    f"different from other tensors on {_fmt(common)} (when checking argument in method {method})"
                )
    return common if common is not None else CPU


def _tensor_iterator_check(func: Any, args: tuple, kwargs: dict, code_of: Callable[[Any], int]) -> int:
    schema_args = func._schema.arguments
    mutable_first = bool(schema_args) and schema_args[0].alias_info is not None and schema_args[0].alias_info.is_write
    operands: list[tuple[Any, bool]] = []  # (tensor, is_output)
    for a in schema_args:
        if a.is_out:
            for t in _flat_tensors(kwargs.get(a.name)):
                operands.append((t, True))
    if mutable_first and args and isinstance(args[0], torch.Tensor):
        operands.append((args[0], True))
    for v in list(args) + [v for k, v in kwargs.items() if not _is_out_name(func, k)]:
        for t in _flat_tensors(v):
            operands.append((t, False))
    common = CPU
    for t, _ in operands:
        c = code_of(t)
        if c >= 0:
            common = c
            break
    for t, is_out in operands:
        c = code_of(t)
        if c < CPU or c == common:
            continue
        if common != CPU and c == CPU and not is_out and t.dim() == 0:
            continue
        raise RuntimeError(
            "Expected all tensors to be on the same device, but found at least two devices, "
            f"{_fmt(common)} and {_fmt(c)}!"
        )
    return common


def _is_out_name(func: Any, key: str) -> bool:
    for a in func._schema.arguments:
        if a.name == key:
            return bool(a.is_out)
    return False


_COPY_OPS = frozenset(
    {
        "aten::copy_",
        "aten::copy",
        "aten::_copy_from",
        "aten::_copy_from_and_resize",
        "aten::_to_copy",
        "aten::set_",
        "aten::_has_compatible_shallow_copy_type",
        "aten::is_same_size",
        "aten::_foreach_copy_",
    }
)

#: operators whose named arguments are CPU tensors by contract (packed-sequence batch sizes)
CPU_ARGUMENTS: dict[str, frozenset[str]] = {
    "aten::_pack_padded_sequence": frozenset({"lengths"}),
    "aten::_pad_packed_sequence": frozenset({"batch_sizes"}),
    "aten::_pack_padded_sequence_backward": frozenset({"batch_sizes"}),
    "aten::lstm": frozenset({"batch_sizes"}),
    "aten::gru": frozenset({"batch_sizes"}),
    "aten::rnn_tanh": frozenset({"batch_sizes"}),
    "aten::rnn_relu": frozenset({"batch_sizes"}),
    # ctc_loss with tensor lengths: CUDA copies the lengths to the host and the targets to the
    # device of log_probs itself (LossCTC.cpp), so CPU lengths and targets are valid
    "aten::_ctc_loss": frozenset({"targets", "input_lengths", "target_lengths"}),
    "aten::_ctc_loss_backward": frozenset({"targets", "input_lengths", "target_lengths"}),
}

#: outputs (by position) that stay on the CPU whatever the inputs' device
CPU_OUTPUTS: dict[str, frozenset[int]] = {
    "aten::_pack_padded_sequence": frozenset({1}),
    "aten::_pad_packed_sequence": frozenset({1}),
}

_STACK_OPS = frozenset({"aten::stack", "aten::_stack"})

_INDEX_OPS = frozenset({"aten::index", "aten::index_put_", "aten::index_put", "aten::_index_put_impl_", "aten::_unsafe_index", "aten::_unsafe_index_put"})
