"""The emulated CUDA device: how it works, and what it cannot do.

Mechanism
=========
A CPU build of PyTorch cannot hold a tensor whose C++ ``TensorImpl`` says "cuda": creating one is
possible (``_make_wrapper_subclass(device="cuda")``, which is what ``FakeTensorMode`` does), but the
autograd engine asks the CUDA device-guard for the tensor's stream as soon as a graph is built, and
a CPU build has no CUDA guard, so the process aborts (``PyTorch is not linked with support for
cuda devices``; even ``torch._C._ensureCUDADeviceGuardSet()`` does not help on a CPU-only wheel).
The ``privateuse1`` backend could have a Python guard, but it cannot be named "cuda", so scripts
would see ``privateuseone:0``. The "meta" device and ``FakeTensorMode`` carry no values, so nothing
could train or print a loss. A ``TorchFunctionMode`` alone would miss every tensor made below the
Python API (gradients from the autograd engine, optimizer ``foreach`` results, tensors made inside
C++ composites) and would turn each ``.shape``/``.device`` access into a Python call.

So the emulator keeps every tensor a genuine CPU tensor for C++ (autograd, kernels, the dispatcher
and the CPU device-guard all see ``cpu``) and puts the CUDA identity in the *Python* layer:

1. **Tagged tensors.** A tensor on emulated ``cuda:i`` is an ordinary CPU tensor whose Python class
   is switched (``obj.__class__ = ...``; no copy, no new ``TensorImpl``) to a per-device subclass of
   ``torch.Tensor`` (or of ``nn.Parameter``) that overrides ``device``, ``is_cuda``, ``get_device``,
   ``to``/``cuda``/``cpu``, ``numpy``, ``type``, ``new_tensor`` and pickling. PyTorch preserves a
   tensor's Python object while C++ holds the tensor (e.g. saved for backward), so the tag survives.
   ``__torch_function__`` is disabled on these classes so results are not re-wrapped. Their
   metaclass makes them compare equal to the class they stand for (``type(x) == torch.Tensor``,
   ``type(x) == type(y)`` across devices) and print as it; ``type(x) is torch.Tensor`` stays false.
2. **A ``TorchDispatchMode``** sees every ATen operator call below autograd, forward and backward.
   It reads the devices of the operands from their tags, raises the error real CUDA raises when
   devices mix (messages in ``_devcheck.py``), rewrites ``device=cuda`` arguments of factories and
   copies to ``cpu``, runs the CPU kernel, and tags the outputs with the operator's device. Gradients,
   optimizer state and views are produced by operators, so they are tagged like on a GPU. Random
   operators on the emulated device draw from a per-device generator (``torch.cuda.manual_seed``).
   Each new emulated storage is counted (rounded to the CUDA allocator's 512-byte blocks) until a
   weakref callback on the storage fires: that is the emulated memory, its peak, and the
   ``--gpu-memory`` limit that raises ``torch.OutOfMemoryError``.
3. **Python-level patches**, active only inside :class:`EmulatedCuda`: ``torch.cuda`` queries
   (``is_available``, ``device_count``, ``get_device_properties``, memory statistics, seeding,
   ``torch.cuda.device``, events, the default stream), ``torch.cuda._lazy_init`` (so the C++
   argument parser accepts ``device="cuda"``), ``torch.accelerator``, ``Tensor.data`` (so
   ``Module.to("cuda")``'s in-place ``param.data = ...`` re-tags the parameter object, keeping its
   identity for optimizers), ``nn.Parameter(...)``, ``Tensor.to(other)``/``type_as``,
   ``torch.save``/``torch.load`` (a serialization tagger writes ``cuda:i`` locations like a GPU does;
   loading restores ``cuda`` locations as emulated tensors unless ``map_location`` says otherwise),
   autocast (CUDA autocast state is mirrored to CPU autocast, because the CPU kernels consult the
   CPU autocast key), the foreach grouping used by optimizers and ``clip_grad_norm_`` (regrouped by
   emulated device, with CUDA's same-index device check), ``torch.Generator(device="cuda")``,
   ``nn.DataParallel``'s scatter/gather, RNN device checks, and threads (see below).
4. **Buffers made by C++ internals.** A factory reaching the mode with ``device=cpu`` but without
   the ``pin_memory`` argument the Python argument parser always passes comes from C++ code using
   some tensor's ``options()``: with an emulated input it belongs to that input's device; with no
   tensor input (``F.one_hot``'s ``zeros``) it is a "wild" buffer that adopts the device of the first
   tensor written into it: an emulated one's, or the CPU when a CPU tensor of 1+ dimensions is
   written (a 0-dim one is a scalar to CUDA too, so it decides nothing). The legacy constructors
   (``torch.Tensor(n)``, ``torch.FloatTensor(n)``..., ``x.new(n)``) reach the mode the same way, so
   they are wrapped to run marked (``_LEGACY``): their result is a CPU tensor (``x.new``: ``x``'s
   device). Pinning returns a copy remembered as pinned; CUDA work in a
   child forked while emulating raises CUDA's "Cannot re-initialize CUDA in forked subprocess".

The dispatch mode is thread-local, so Python threads started while emulating (DataLoader's pin
thread, prefetchers) enter it too; work on threads started earlier, or on C++ threads, is not
checked. ``nn.DataParallel`` works: CUDA's scatter/gather/broadcast are replaced by copies and the
replicas run one after another. The zeros the autograd engine materializes for an unused output
of a custom ``autograd.Function`` (DataParallel's Broadcast of a head whose output is dropped) are
built from C++ options, so they are given the output's device recorded at forward (``reduce_add``
requires them on GPUs). RNNs check hidden state and weights against the input's device in
C++ composite code the mode cannot see, so ``torch._VF.lstm/gru/rnn_*`` are wrapped to do it.

What it cannot emulate
======================
* custom CUDA kernels and C++/CUDA extensions (``torch.utils.cpp_extension`` with CUDA sources,
  operators registered only for CUDA): there is no GPU code to run;
* Triton kernels and ``torch.compile`` with Inductor (it generates Triton/CUDA code for a real GPU;
  the ``eager``/``aot_eager`` backends run the model eagerly);
* CUDA graphs (``torch.cuda.graph``, ``CUDAGraph``, ``make_graphed_callables``) and external streams;
* stream semantics: streams and events exist (``_Stream``, ``_Event``) but everything runs in program
  order, so races a real GPU could expose are invisible; ``non_blocking`` copies are synchronous;
* NCCL beyond its device rules: ``init_process_group("nccl")`` is served by Gloo (``_EmulatedNccl``
  adds NCCL's duplicate-GPU and no-CPU-backend errors); timeouts and async errors are not emulated;
* numerics: cuDNN/cuBLAS algorithms, TF32 and CUDA RNG streams differ from the CPU kernels that
  actually run (results are real but not bit-identical to a GPU); CUDA autocast's op lists are
  applied through ``AutocastCPU`` kernels (``_autocast.py``);
* speed and the caching allocator's fragmentation (memory is counted per live storage);
* the identity of a CUDA tensor's class: it is a per-device subclass, so ``type(x) is torch.Tensor``
  is false and a dict or set keyed by ``torch.Tensor`` does not find ``type(x)`` (``==``,
  ``isinstance`` and ``issubclass`` behave as on a GPU). Making the class ``torch.Tensor`` itself
  would leave the device nowhere to live (C++ sees a CPU tensor), and giving the variants the
  hash of ``torch.Tensor`` would make every table keyed by class confuse a CPU tensor with a CUDA one.

When a script reaches one of the refused features, :class:`EmulationUnsupported` is raised and
``gpulint run`` prints ``gpulint run: <feature> cannot be emulated: <why>`` and exits with 3.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import time
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes
from torch.overrides import TorchFunctionMode

from gpulint.emulate import _devcheck
from gpulint.emulate._errors import EmulationUnsupported
from gpulint.emulate.sizes import format_cuda_size

__all__ = ["DEFAULT_TOTAL_MEMORY", "EmulatedCuda", "EmulationUnsupported", "active"]

_TB = torch._C.TensorBase
_Tensor = torch.Tensor
_CPU = torch.device("cpu")
CPU = _devcheck.CPU
OTHER = -2
DEFAULT_TOTAL_MEMORY = 80 * 1024**3  # reported when --gpu-memory is not given (no limit enforced)
_BLOCK = 512  # CUDA caching allocator rounds every block to 512 bytes

_ACTIVE: EmulatedCuda | None = None


def active() -> EmulatedCuda | None:
    """The emulator currently installed in this process, if any."""
    return _ACTIVE


def _need_active() -> EmulatedCuda:
    emu = _ACTIVE
    if emu is None:
        raise RuntimeError("gpulint emulated CUDA is not active")
    return emu


# --------------------------------------------------------------------------------------------
# Tagged tensor classes
# --------------------------------------------------------------------------------------------
_INDEX_OF: dict[type, int] = {}  # variant class -> cuda index
_BASE_OF: dict[type, type] = {}  # variant class -> the class it stands for (Tensor, Parameter, ...)
_VARIANTS: dict[tuple[type, int], type] = {}


_METAS: dict[type, type] = {}


def _variant_meta(meta: type) -> type:
    """The metaclass of the variants of classes whose metaclass is ``meta`` (``_TensorMeta``,
    ``_ParameterMeta``, a script's own): a variant compares equal to the class it stands for.

    On a GPU ``type(x) == torch.Tensor`` holds for a CUDA tensor, and scripts test it (collate
    functions: ``if type(x) == torch.Tensor: x = x.to(device)``); the variant is a subclass, so it
    says so through its metaclass, and prints as the class it stands for. Its hash stays its own
    (the emulator's tables keyed by class must tell a variant from its base): a dict or set keyed
    by ``torch.Tensor`` does not find ``type(x)``, and ``type(x) is torch.Tensor`` stays false.
    """
    found = _METAS.get(meta)
    if found is not None:
        return found
    parent_eq = meta.__eq__

    def __eq__(cls: type, other: object) -> Any:
        if other is cls:
            return True
        base = cls.__dict__.get("_gl_base")
        # the class itself, or its variant for another device (type(x) == type(x.to("cuda:1")))
        if base is not None and isinstance(other, type) and (other is base or other.__dict__.get("_gl_base") is base):
            return True
        return parent_eq(cls, other)

    def __ne__(cls: type, other: object) -> Any:
        eq = __eq__(cls, other)
        return eq if eq is NotImplemented else not eq

    def __repr__(cls: type) -> str:
        base = cls.__dict__.get("_gl_base")
        return repr(base) if base is not None else type.__repr__(cls)

    found = type(meta)(
        meta.__name__,
        (meta,),
        {"__eq__": __eq__, "__ne__": __ne__, "__hash__": meta.__hash__, "__repr__": __repr__,
         "__module__": __name__, "__qualname__": meta.__qualname__},
    )
    _METAS[meta] = found
    return found


def _variant(base: type, index: int) -> type:
    key = (base, index)
    cls = _VARIANTS.get(key)
    if cls is not None:
        return cls
    ns: dict[str, Any] = {"__slots__": (), "__module__": __name__}
    # a subclass of the script's own (`class MyTensor(torch.Tensor)`) keeps its __torch_function__,
    # so its operations return MyTensor as on a real GPU; its moves return MyTensor too
    module = getattr(base, "__module__", "") or ""
    user = base.__torch_function__ is not _disabled_tf and module != "torch" and not module.startswith("torch.")
    for name, value in _MIXIN.items():
        if base is not _Tensor and name in base.__dict__ and name != "__repr__":
            continue  # e.g. Parameter's own __repr__/__reduce_ex__/__deepcopy__
        if user and name == "__torch_function__":
            value = _subclass_torch_function(base)
        elif user and name in _RETURNS_TENSOR:
            value = _keeps_subclass(value, base)
        ns[name] = value
    ns["_gl_index"] = index
    ns["_gl_device"] = torch.device("cuda", index)
    ns["_gl_base"] = base
    ns["__qualname__"] = base.__name__
    cls = _variant_meta(type(base))(base.__name__, (base,), ns)
    _VARIANTS[key] = cls
    _INDEX_OF[cls] = index
    _BASE_OF[cls] = base
    return cls


_disabled_tf = torch._C._disabled_torch_function_impl
_RETURNS_TENSOR = frozenset({"to", "cuda", "cpu", "type", "new_tensor"})


def _subclass_torch_function(base: type) -> Any:
    """The ``__torch_function__`` of an emulated CUDA variant of a script's own Tensor subclass: the
    subclass's own, seeing the subclass (not the variant) among the types, as on a real GPU."""
    impl = base.__torch_function__  # bound to `base` (a classmethod)

    def __torch_function__(cls: type, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        return impl(func, tuple(_BASE_OF.get(t, t) for t in types), args, kwargs)

    return classmethod(__torch_function__)


def _keeps_subclass(method: Callable[..., Any], base: type) -> Callable[..., Any]:
    """A move (``to``, ``cuda``, ``cpu``...) of a script's Tensor subclass returns that subclass, as
    its ``__torch_function__`` makes it do on a real GPU."""

    @functools.wraps(method)
    def moved(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        out = method(self, *args, **kwargs)
        if isinstance(out, _Tensor) and not isinstance(out, base):
            out = out.as_subclass(base)
        return out

    return moved


WILD = -3  # a CPU tensor made by PyTorch's C++ internals (device from options): adopts a device


class _WildTensor(torch.Tensor, metaclass=_variant_meta(torch._C._TensorMeta)):  # type: ignore[misc]
    """A buffer that C++ composite code created with ``tensor.options()``-style ``device=cpu``.

    The emulator cannot know which tensor those options came from, so the buffer (and views of it)
    behaves as a CPU tensor until an operator writes into it in place: emulated CUDA data (or an
    emulated CUDA operand) makes its storage adopt that device, and every tensor object on that
    storage turns into a CUDA tensor the next time it is looked at; CPU data of 1+ dimensions makes
    it a plain CPU tensor for good (``F.one_hot`` builds ``zeros(...)`` and ``scatter_``s the labels
    into it; ``pad_sequence``/``pad_packed_sequence`` copy into slices of a ``full(...)`` buffer).
    """

    __slots__ = ()
    __torch_function__ = torch._C._disabled_torch_function_impl
    _gl_base = torch.Tensor


def _adopted(t: torch.Tensor) -> int | None:
    """The device a wild tensor's storage adopted (re-tagging the object), or None."""
    emu = _ACTIVE
    if emu is None or not emu._wild_adopted:
        return None
    idx = emu._wild_adopted.get(t.untyped_storage()._cdata)
    if idx is not None:
        t.__class__ = _Tensor if idx == CPU else _variant(_Tensor, idx)
    return idx


def _cpu_evidence(name: str, args: tuple, kwargs: dict) -> bool:
    """Whether an in-place operator writing into a wild buffer reads a CPU tensor of 1+ dimensions.

    Such an operand cannot meet a CUDA tensor in a real CUDA operator (a 0-dim CPU tensor can, as a
    scalar; so can the CPU indices of advanced indexing), so the buffer it is written into is a CPU
    tensor: ``pad_sequence`` of CPU sequences copies them into its ``full(...)`` buffer,
    ``F.one_hot`` of CPU labels scatters them into its ``zeros(...)``.
    """
    operands = list(args[1:]) + [v for k, v in kwargs.items() if k != "out"]
    if name in _devcheck._INDEX_OPS:  # (self, indices, values, ...): CPU indices are allowed on CUDA
        operands = list(args[2:]) + [v for k, v in kwargs.items() if k not in ("out", "indices")]
    for value in operands:
        items = value if type(value) is list or type(value) is tuple else (value,)
        for t in items:
            if isinstance(t, torch.Tensor) and _INDEX_OF.get(type(t)) is None and t.is_cpu and t.dim() > 0:
                return True
    return False


def _wild_forward(name: str, is_property: bool = False) -> Any:
    if is_property:
        plain = getattr(_Tensor, name)

        def getter(self: torch.Tensor) -> Any:
            if _adopted(self) is not None:
                return getattr(self, name)
            return plain.__get__(self)

        return property(getter)

    def method(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if _adopted(self) is not None:
            return getattr(self, name)(*args, **kwargs)
        return getattr(_Tensor, name)(self, *args, **kwargs)  # looked up late: may be patched

    return method


for _name in ("device", "is_cuda", "is_cpu"):
    setattr(_WildTensor, _name, _wild_forward(_name, is_property=True))
for _name in ("get_device", "numpy", "to", "cuda", "cpu", "type", "new_tensor", "__repr__", "__reduce_ex__"):
    setattr(_WildTensor, _name, _wild_forward(_name))


_INDEX_OF[_WildTensor] = WILD
_BASE_OF[_WildTensor] = _Tensor


class _LegacyState(threading.local):
    """How deep this thread is inside a legacy constructor (``torch.Tensor(n)``, ``torch.FloatTensor(n)``,
    ``x.new(n)``). Their ``empty(size, dtype, layout, device=cpu)`` reaches the mode exactly like a C++
    composite's ``empty(size, self.options())``; inside one it is a CPU tensor (or ``x``'s device),
    never a wild buffer."""

    depth = 0


_LEGACY = _LegacyState()


def _run_legacy(ctor: Any, *args: Any, **kwargs: Any) -> Any:
    state = _LEGACY
    state.depth += 1
    try:
        return ctor(*args, **kwargs)
    finally:
        state.depth -= 1


#: ATen's names of scalar types, as its error messages print them
_SCALAR_NAMES = {torch.int64: "Long", torch.int32: "Int", torch.int16: "Short", torch.int8: "Char",
                 torch.uint8: "Byte", torch.bool: "Bool", torch.float32: "Float", torch.float64: "Double",
                 torch.float16: "Half", torch.bfloat16: "BFloat16"}


def code_of(t: Any) -> int:
    """Device code of a tensor: its emulated cuda index, CPU (-1) or OTHER (-2)."""
    idx = _INDEX_OF.get(type(t))
    if idx is not None:
        return idx
    return CPU if t.is_cpu else OTHER


def _tag(t: torch.Tensor, index: int, track: bool = True) -> torch.Tensor:
    """Turn a CPU tensor object into an emulated ``cuda:index`` tensor in place."""
    cls = type(t)
    base = _BASE_OF.get(cls, cls)
    t.__class__ = _variant(base, index)
    if track and _ACTIVE is not None:
        _ACTIVE._track(t, index)
    return t


def _untag(t: torch.Tensor) -> torch.Tensor:
    base = _BASE_OF.get(type(t))
    if base is not None:
        t.__class__ = base
    return t


def _cuda_index(device: Any, default_current: bool = True) -> int:
    """Index of a cuda device spec (None/"cuda"/"cuda:1"/1/torch.device); validates the ordinal."""
    emu = _need_active()
    if device is None:
        return emu.current
    if isinstance(device, int):
        idx = device
    else:
        dev = torch.device(device)
        if dev.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {dev}")
        idx = emu.current if dev.index is None else dev.index
    emu.check_ordinal(idx)
    return idx


def _target_code(device: Any) -> int:
    """Device code for a ``device=`` argument: CPU, a cuda index, or OTHER."""
    dev = torch.device(device) if not isinstance(device, torch.device) else device
    if dev.type == "cuda":
        return _cuda_index(dev)
    if dev.type == "cpu":
        return CPU
    return OTHER


def _itemsize(dtype: Any) -> int:
    try:
        return torch.empty((), dtype=dtype).element_size() if not isinstance(dtype, torch.dtype) else dtype.itemsize
    except Exception:  # pragma: no cover - exotic dtypes
        return 1


def _m_device(self: torch.Tensor) -> torch.device:
    return type(self)._gl_device


def _m_get_device(self: torch.Tensor) -> int:
    return type(self)._gl_index


def _m_numpy(self: torch.Tensor, *, force: bool = False) -> Any:
    if not force:
        raise TypeError(
            f"can't convert {type(self)._gl_device} device type tensor to numpy. "
            "Use Tensor.cpu() to copy the tensor to host memory first."
        )
    return self.detach().cpu().numpy(force=True)


def _raw_copy(t: torch.Tensor, code: int, dtype: Any = None, memory_format: Any = None) -> torch.Tensor:
    # pin_memory=False marks an explicit, user-level target (see EmulatedCuda._dispatch)
    kwargs: dict[str, Any] = {"device": _CPU if code == CPU else torch.device("cuda", code), "pin_memory": False}
    if dtype is not None:
        kwargs["dtype"] = dtype
    if memory_format is not None:
        kwargs["memory_format"] = memory_format
    return torch.ops.aten._to_copy.default(t, **kwargs)


class _DeviceMove(torch.autograd.Function):
    """A differentiable copy between (emulated) devices whose backward moves the gradient back.

    ATen's own ``_to_copy`` backward calls ``grad.to(self.options())``, and for a tensor that C++
    sees as a CPU tensor those options cannot say whether the source was emulated CUDA or the CPU.
    """

    @staticmethod
    def forward(ctx: Any, t: torch.Tensor, code: int, dtype: Any, memory_format: Any) -> torch.Tensor:
        ctx.src = code_of(t)
        ctx.src_dtype = t.dtype if dtype is not None and dtype != t.dtype else None
        return _raw_copy(t, code, dtype, memory_format)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Any:
        if grad is None:
            return None, None, None, None
        return _raw_copy(grad, max(ctx.src, CPU), ctx.src_dtype), None, None, None


def _copy_to(t: torch.Tensor, code: int, dtype: Any = None, memory_format: Any = None) -> torch.Tensor:
    if t.requires_grad and torch.is_grad_enabled():
        return _DeviceMove.apply(t, code, dtype, memory_format)
    return _raw_copy(t, code, dtype, memory_format)


def _parse_to(args: tuple, kwargs: dict) -> tuple[Any, Any, bool, bool, Any]:
    """(device, dtype, non_blocking, copy, memory_format) of a ``Tensor.to`` call."""
    kwargs = dict(kwargs)
    copy = bool(kwargs.pop("copy", False))
    other = None
    if args and isinstance(args[0], torch.Tensor):
        other, args = args[0], args[1:]
    elif isinstance(kwargs.get("other"), torch.Tensor):
        other = kwargs.pop("other")
    if other is not None:
        non_blocking = bool(args[0]) if args else bool(kwargs.pop("non_blocking", False))
        if len(args) > 1:
            copy = bool(args[1])
        return other.device, other.dtype, non_blocking, copy, kwargs.get("memory_format")
    if len(args) >= 4 and isinstance(args[3], bool) and not isinstance(args[0], torch.dtype):
        copy = args[3]
        args = args[:3]
    elif len(args) >= 3 and isinstance(args[0], torch.dtype) and isinstance(args[2], bool):
        copy = args[2]
        args = args[:2]
    device, dtype, non_blocking, memory_format = torch._C._nn._parse_to(*args, **kwargs)
    return device, dtype, non_blocking, copy, memory_format


def _m_to(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    device, dtype, non_blocking, copy, memory_format = _parse_to(args, kwargs)
    here = type(self)._gl_index
    code = here if device is None else _target_code(device)
    if code == here or code == OTHER:
        if code == OTHER:
            return _TB.to(self, *args, **kwargs)
        kw: dict[str, Any] = {"non_blocking": non_blocking, "copy": copy}
        if memory_format is not None:
            kw["memory_format"] = memory_format
        return _TB.to(self, dtype if dtype is not None else self.dtype, **kw)
    return _copy_to(self, code, dtype, memory_format)


def _m_cuda(self: torch.Tensor, device: Any = None, non_blocking: bool = False, memory_format: Any = torch.preserve_format) -> torch.Tensor:
    code = _cuda_index(device)
    if code == type(self)._gl_index:
        return self
    return _copy_to(self, code, None, memory_format)


def _m_cpu(self: torch.Tensor, memory_format: Any = torch.preserve_format) -> torch.Tensor:
    return _copy_to(self, CPU, None, memory_format)


_LEGACY_TYPES = (
    "DoubleTensor", "FloatTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
    "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor",
)  # fmt: skip


_CPU_LEGACY = {getattr(torch, n).dtype: getattr(torch, n) for n in ("DoubleTensor", "FloatTensor", "HalfTensor", "BFloat16Tensor")}


def _legacy_target(spec: Any) -> tuple[bool, Any] | None:
    """(on_cuda, dtype) of a legacy type spec: ``"torch.cuda.HalfTensor"``, ``torch.cuda.FloatTensor``..."""
    if isinstance(spec, str):
        if not spec.startswith("torch."):
            return None
        on_cuda = spec.startswith("torch.cuda.")
        legacy = getattr(torch, spec.rsplit(".", 1)[-1], None)
        target_dtype = getattr(legacy, "dtype", None)
        if target_dtype is None or spec.count(".") != (2 if on_cuda else 1):
            raise ValueError(f"invalid type: '{spec}'")
        return on_cuda, target_dtype
    if isinstance(spec, type) and isinstance(getattr(spec, "dtype", None), torch.dtype) and hasattr(spec, "is_cuda"):
        return bool(spec.is_cuda), spec.dtype
    return None


def _m_type(self: torch.Tensor, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    if dtype is None:
        base = _TB.type(self)
        return "torch.cuda." + base[len("torch.") :] if base.startswith("torch.") else base
    legacy = _legacy_target(dtype)
    if legacy is not None:
        on_cuda, target_dtype = legacy
        if on_cuda:
            return self.to(dtype=target_dtype, non_blocking=non_blocking)
        return self.to(device="cpu", dtype=target_dtype, non_blocking=non_blocking)
    return self.to(dtype=dtype, non_blocking=non_blocking)


def _plain_type(self: torch.Tensor, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    """``Tensor.type`` of a CPU tensor: ``t.type(torch.cuda.FloatTensor)`` moves it to the emulated GPU."""
    if dtype is not None:
        legacy = _legacy_target(dtype) if not isinstance(dtype, torch.dtype) else None
        if legacy is not None and legacy[0]:
            return self.to(device=torch.device("cuda", _need_active().current), dtype=legacy[1], non_blocking=non_blocking)
        if legacy is not None:
            return _TB.type(self, legacy[1], non_blocking, **kwargs)
        return _TB.type(self, dtype, non_blocking, **kwargs)
    return _TB.type(self)


def _m_format(self: torch.Tensor, format_spec: str) -> str:
    """``Tensor.__format__``: a 0-dim tensor formats as its number (exact Tensor class only, as in torch)."""
    if self.dim() == 0 and _BASE_OF.get(type(self)) is _Tensor:
        return self.detach().item().__format__(format_spec)
    return object.__format__(self, format_spec)


def _m_new_tensor(self: torch.Tensor, data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False, **kwargs: Any) -> torch.Tensor:
    return torch.tensor(
        data,
        dtype=self.dtype if dtype is None else dtype,
        device=self.device if device is None else device,
        requires_grad=requires_grad,
    )


def _m_as_subclass(self: torch.Tensor, cls: type) -> torch.Tensor:
    """``x.as_subclass(MyTensor)`` of an emulated CUDA tensor: a MyTensor on the same device."""
    out = _TB.as_subclass(self, _BASE_OF.get(cls, cls))
    return _tag(out, type(self)._gl_index)


def _m_is_pinned(self: torch.Tensor, device: Any = None) -> bool:
    return False


def _m_pin_memory(self: torch.Tensor, device: Any = None) -> torch.Tensor:
    raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")


def _m_reduce_ex(self: torch.Tensor, proto: int) -> Any:
    """Pickle like a real CUDA tensor: plain ``_rebuild_tensor_v2`` with a ``cuda:i`` storage."""
    emu = _ACTIVE
    if emu is not None and emu._io_depth > 0:  # inside torch.save: the tagger will write cuda:i
        emu._mark_for_save(self)
    elif emu is not None:
        # another pickler (multiprocessing queues and process arguments, pickle.dumps): send the
        # plain tensor (shared memory under torch.multiprocessing) and re-tag it on the other side
        base = _BASE_OF.get(type(self), _Tensor)
        with _disable_current_modes():
            plain = _TB._make_subclass(base, self, self.requires_grad)
        return (_rebuild_tagged, (plain, type(self)._gl_index))
    state = torch._utils._get_obj_state(self)
    if isinstance(state, dict) and state.get("_is_param"):
        return (torch._utils._rebuild_parameter, (self.detach(), self.requires_grad, OrderedDict()))
    func, args = self._reduce_ex_internal(proto)
    if not state:
        return func, args
    return (torch._utils._rebuild_from_type_v2, (func, torch.Tensor, args, state))


def _rebuild_tagged(plain: torch.Tensor, index: int) -> torch.Tensor:
    """Unpickle an emulated CUDA tensor: tagged again when the receiving process emulates."""
    emu = _ACTIVE
    if emu is not None and 0 <= index < emu.gpus:
        _tag(plain, index)
    return plain


def _m_repr(self: torch.Tensor, *, tensor_contents: Any = None) -> str:
    """PyTorch's own formatting, as for a plain CUDA tensor (``tensor(..., device='cuda:0')``)."""
    cls = type(self)
    base = _BASE_OF.get(cls, _Tensor)
    device = cls._gl_device
    saved = _Tensor.__dict__.get("device", _MISSING)

    def device_of(t: torch.Tensor) -> torch.device:
        return device if t is self else _TB.device.__get__(t)

    self.__class__ = base  # the formatter prints plain "tensor(" only for exact Tensor/Parameter
    _Tensor.device = property(device_of)  # type: ignore[assignment, method-assign]
    try:
        # as Tensor.__repr__ through a subclass's __torch_function__: the elements it formats are
        # plain tensors (a script's own Tensor subclass would not format its 0-dim elements)
        with torch._C.DisableTorchFunctionSubclass():
            text = torch._tensor_str._str(self, tensor_contents=tensor_contents)
    finally:
        if saved is _MISSING:
            del _Tensor.device
        else:
            _Tensor.device = saved  # type: ignore[method-assign]
        self.__class__ = cls
    if issubclass(base, torch.nn.Parameter):
        return "Parameter containing:\n" + text
    return text


_MIXIN: dict[str, Any] = {
    "__torch_function__": torch._C._disabled_torch_function_impl,
    "device": property(_m_device),
    "is_cuda": property(lambda self: True),
    "is_cpu": property(lambda self: False),
    "get_device": _m_get_device,
    "numpy": _m_numpy,
    "to": _m_to,
    "cuda": _m_cuda,
    "cpu": _m_cpu,
    "type": _m_type,
    "__format__": _m_format,
    "new_tensor": _m_new_tensor,
    "as_subclass": _m_as_subclass,
    "is_pinned": _m_is_pinned,
    "pin_memory": _m_pin_memory,
    "__reduce_ex__": _m_reduce_ex,
    "__repr__": _m_repr,
}


# --------------------------------------------------------------------------------------------
# Patched plain-tensor methods (installed on torch.Tensor while emulating)
# --------------------------------------------------------------------------------------------
_DATA = _TB.data  # the C getset descriptor


def _data_get(self: torch.Tensor) -> torch.Tensor:
    d = _DATA.__get__(self)
    idx = _INDEX_OF.get(type(self))
    if idx is not None:
        d.__class__ = _variant(_Tensor, idx)
    return d


def _data_set(self: torch.Tensor, value: torch.Tensor) -> None:
    _DATA.__set__(self, value)
    if isinstance(self, _UNINITIALIZED):
        self._gl_lazy_device = getattr(value, "_gl_lazy_device", None)
    idx = _INDEX_OF.get(type(value))
    if idx is not None:
        _tag(self, idx, track=False)
    else:
        _untag(self)


_UNINITIALIZED: Any = torch.nn.parameter.UninitializedTensorMixin


def _lazy_moved(self: torch.Tensor, code: int, dtype: Any) -> torch.Tensor:
    """An uninitialized (lazy) parameter or buffer "moved" to ``code``: materializes there later."""
    with torch._C.DisableTorchFunctionSubclass():
        out = type(self)(requires_grad=self.requires_grad, dtype=dtype if dtype is not None else _TB.dtype.__get__(self))
    out._gl_lazy_device = None if code < 0 else torch.device("cuda", code)
    return out


def _plain_to(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    device, dtype, non_blocking, copy, memory_format = _parse_to(args, kwargs)
    if isinstance(self, _UNINITIALIZED) and device is not None:
        code = _target_code(device)
        if code >= 0 or getattr(self, "_gl_lazy_device", None) is not None:
            return _lazy_moved(self, code, dtype)
    if device is not None:
        code = _target_code(device)
        if code >= 0:
            return _copy_to(self, code, dtype, memory_format)
        if (args and isinstance(args[0], torch.Tensor)) or isinstance(kwargs.get("other"), torch.Tensor):
            kw: dict[str, Any] = {"device": device, "dtype": dtype, "non_blocking": non_blocking, "copy": copy}
            if memory_format is not None:
                kw["memory_format"] = memory_format
            return _TB.to(self, **kw)
    return _TB.to(self, *args, **kwargs)


def code_of_device(device: torch.device) -> int:
    return _target_code(device)


def _plain_cuda(self: torch.Tensor, device: Any = None, non_blocking: bool = False, memory_format: Any = torch.preserve_format) -> torch.Tensor:
    if isinstance(self, _UNINITIALIZED):
        return _lazy_moved(self, _cuda_index(device), None)
    return _copy_to(self, _cuda_index(device), None, memory_format)


def _plain_type_as(self: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    return self.to(device=other.device, dtype=other.dtype)


def _plain_new_tensor(self: torch.Tensor, data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False, **kwargs: Any) -> torch.Tensor:
    """``cpu_tensor.new_tensor(data, device="cuda")`` (latent_ode's ``torch.Tensor().new_tensor(x,
    device=self.device)``): C++ builds it on the real device, which a CPU build cannot; made like
    ``torch.tensor(data, device=...)``, which the mode serves. Without a device: torch's own."""
    if device is None or _target_code(device) == CPU:
        return _TB.new_tensor(self, data, dtype=dtype, device=device, requires_grad=requires_grad, **kwargs)
    return _m_new_tensor(self, data, dtype=dtype, device=device, requires_grad=requires_grad)


# --------------------------------------------------------------------------------------------
# The dispatch mode
# --------------------------------------------------------------------------------------------
_COPY_IN_PLACE = frozenset({"aten::copy_", "aten::_copy_from", "aten::_copy_from_and_resize", "aten::set_", "aten::_foreach_copy_"})


_FLAGS: dict[int, tuple[Any, bool, bool, str]] = {}

# GEMMs and convolutions in float16/bfloat16: CPU kernels for those are many times slower than the
# float32 ones; a GPU accumulates them in float32 and rounds the output once, which is what
# computing in float32 and rounding the result gives (numbers, not just speed, stay GPU-like)
_UPCAST_OPS = frozenset({
    "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::mv", "aten::addmv",
    "aten::convolution", "aten::convolution_backward",
})  # fmt: skip
_LOW_FLOATS = (torch.float16, torch.bfloat16)


def _run_upcast(func: Any, args: tuple, kwargs: dict) -> Any:
    if "out" in kwargs:
        return func(*args, **kwargs)
    low = None
    for a in args:
        if isinstance(a, torch.Tensor) and a.is_floating_point():
            if a.dtype not in _LOW_FLOATS or (low is not None and a.dtype != low):
                return func(*args, **kwargs)  # mixed or full precision: PyTorch's own checks and kernels
            low = a.dtype
    if low is None:
        return func(*args, **kwargs)
    up = tuple(a.float() if isinstance(a, torch.Tensor) and a.dtype == low else a for a in args)
    result = func(*up, **kwargs)
    if isinstance(result, torch.Tensor):
        return result.to(low)
    return tuple(r.to(low) if isinstance(r, torch.Tensor) and r.dtype == torch.float32 else r for r in result)


def _func_flags(func: Any) -> tuple[Any, bool, bool, str]:
    """(func, is_random, is_mutating, qualified name), cached by identity (OpOverload hashing is slow)."""
    flags = _FLAGS.get(id(func))
    if flags is None:
        try:
            tags = func.tags
        except Exception:  # pragma: no cover
            tags = ()
        schema = func._schema
        flags = (func, torch.Tag.nondeterministic_seeded in tags, bool(schema.is_mutable), schema.name)
        _FLAGS[id(func)] = flags  # keeps func alive, so its id stays unique
    return flags


class _IntDeviceMode(TorchFunctionMode):
    """`torch.zeros(n, device=local_rank)`: an integer device is a CUDA ordinal on a GPU machine.
    C++ resolves it through the current accelerator while parsing the arguments, before the
    dispatch mode sees the call, and a CPU build has none ("Cannot access accelerator device when
    none is available"); rewritten here to `torch.device("cuda", n)` (ordinal checked)."""

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if kwargs:
            d = kwargs.get("device")
            if type(d) is int:
                kwargs = dict(kwargs)
                kwargs["device"] = torch.device("cuda", _cuda_index(d))
        return func(*args, **(kwargs or {}))


class _EmulationMode(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch.compile is refused under emulation; without this, every operator would pass through
        # a torch._dynamo.disable wrapper (and the first one would import torch._dynamo: ~2 s)
        return False

    def __init__(self, emu: EmulatedCuda) -> None:
        super().__init__()
        self.emu = emu

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        return self.emu._dispatch(func, args, kwargs or {})


class EmulatedCuda:
    """Activate emulated CUDA in this process: ``with EmulatedCuda(gpus=2): ...``.

    Not re-entrant and one at a time per process. ``memory`` (bytes) limits live emulated memory
    per device; without it the devices report ``DEFAULT_TOTAL_MEMORY`` and allocate without limit.
    """

    def __init__(self, gpus: int = 1, memory: int | None = None) -> None:
        if gpus < 1:
            raise ValueError("gpus must be >= 1")
        self.gpus = int(gpus)
        self.memory = memory
        self.total_memory = int(memory) if memory else DEFAULT_TOTAL_MEMORY
        self.current = 0
        self.allocated = [0] * self.gpus
        self.peak = [0] * self.gpus
        self.peak_total = 0
        self._total = 0
        self._live: dict[int, tuple[int, int, Any]] = {}
        self._wild_adopted: dict[int, int] = {}  # storage -> the device a wild buffer adopted
        self._wild_cpu: dict[int, Any] = {}  # storage -> weakref, for buffers that adopted the CPU
        self._pinned: set[int] = set()
        self._forked = False  # set in a child forked while emulating: CUDA cannot be used there
        self.generators = [torch.Generator() for _ in range(self.gpus)]
        self.unsupported_seen: list[EmulationUnsupported] = []
        self._patches: list[tuple[Any, str, Any]] = []
        self._mode: _EmulationMode | None = None
        self._save_tags: dict[int, tuple[Any, int]] = {}
        self._load_tags: dict[int, tuple[Any, int]] = {}
        self._io_depth = 0
        self._thread = threading.get_ident()
        self._streams = threading.local()  # the current stream is per thread, as in CUDA
        self._nccl: _EmulatedNccl | None = None
        self._cuda_generators: dict[int, torch.device] = {}
        self._legacy_cuda_default = False  # torch.set_default_tensor_type(torch.cuda.FloatTensor)

    @property
    def streams(self) -> dict[int, Any]:
        current = getattr(self._streams, "by_device", None)
        if current is None:
            current = self._streams.by_device = {}
        return current

    def set_stream(self, s: Any) -> Any:
        """Make ``s`` current on its device (and its device current); returns the previous stream."""
        prev = self.streams.get(s.device_index) or _default_stream(s.device_index)
        self.streams[s.device_index] = s
        self.current = s.device_index
        return prev

    # ---- pinned host memory (a copy, remembered as pinned) ------------------------------------
    def _pin(self, t: torch.Tensor) -> torch.Tensor:
        out = t.clone()
        storage = out.untyped_storage()
        key = storage._cdata
        self._pinned.add(key)
        weakref.finalize(storage, self._pinned.discard, key)
        return out

    # ---- wild buffers -------------------------------------------------------------------------
    def _adopt(self, t: torch.Tensor, index: int) -> None:
        storage = t.untyped_storage()
        key = storage._cdata
        if index == CPU:  # a CPU buffer after all: untracked, so forget it when its storage dies
            t.__class__ = _Tensor
            self._wild_cpu[key] = weakref.ref(storage, functools.partial(self._wild_cpu_dead, key))
        else:
            _tag(t, index)
        self._wild_adopted[key] = index

    def _wild_cpu_dead(self, key: int, ref: Any) -> None:
        if self._wild_cpu.get(key) is ref:
            del self._wild_cpu[key]
            self._wild_adopted.pop(key, None)

    # ---- memory -----------------------------------------------------------------------------
    def _track(self, t: torch.Tensor, index: int) -> None:
        try:
            storage = t.untyped_storage()
        except NotImplementedError:  # sparse tensors: their indices and values are tracked
            return
        key = storage._cdata
        if key in self._live:
            return
        nbytes = storage.nbytes()
        size = ((nbytes + _BLOCK - 1) // _BLOCK) * _BLOCK
        if self.memory is not None and self.allocated[index] + size > self.memory:
            self._raise_oom(index, size)
        # a plain weakref with a callback is much cheaper than weakref.finalize
        self._live[key] = (index, size, weakref.ref(storage, functools.partial(self._on_dead, key)))
        allocated = self.allocated[index] + size
        self.allocated[index] = allocated
        self._total += size
        if allocated > self.peak[index]:
            self.peak[index] = allocated
        if self._total > self.peak_total:
            self.peak_total = self._total

    def _on_dead(self, key: int, ref: Any) -> None:
        rec = self._live.get(key)
        if rec is not None and rec[2] is ref:
            self._release(key)

    def _precheck_allocation(self, args: tuple, kwargs: dict, index: int) -> None:
        """Refuse a factory or a host-to-device copy that cannot fit, before the CPU allocates it."""
        nbytes = None
        first = args[0] if args else None
        if isinstance(first, torch.Tensor):
            dtype = kwargs.get("dtype") or first.dtype
            nbytes = first.numel() * _itemsize(dtype)
        elif isinstance(first, (list, tuple)) and all(isinstance(n, int) for n in first):
            numel = 1
            for n in first:
                numel *= n
            nbytes = numel * _itemsize(kwargs.get("dtype") or torch.get_default_dtype())
        if nbytes is not None:
            size = ((nbytes + _BLOCK - 1) // _BLOCK) * _BLOCK
            if self.allocated[index] + size > self.memory:  # type: ignore[operator]
                self._raise_oom(index, size)

    def _release(self, key: int) -> None:
        self._wild_adopted.pop(key, None)
        rec = self._live.pop(key, None)
        if rec is not None:
            index, size, _ = rec
            self.allocated[index] -= size
            self._total -= size

    def _raise_oom(self, index: int, size: int) -> None:
        total = self.total_memory
        used = self.allocated[index]
        free = max(total - used, 0)
        raise torch.OutOfMemoryError(
            f"CUDA out of memory. Tried to allocate {format_cuda_size(size)}. GPU {index} has a total capacity of "
            f"{format_cuda_size(total)} of which {format_cuda_size(free)} is free. Including non-PyTorch memory, "
            f"this process has {format_cuda_size(used)} memory in use. Of the allocated memory "
            f"{format_cuda_size(used)} is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated. "
            "If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
            "to avoid fragmentation.  See documentation for Memory Management  "
            "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
        )

    def check_ordinal(self, idx: int) -> None:
        if not 0 <= idx < self.gpus:
            raise RuntimeError(
                "CUDA error: invalid device ordinal\n"
                "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
                "below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
                "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
            )

    # ---- the operator hook --------------------------------------------------------------------
    def _dispatch(self, func: Any, args: tuple, kwargs: dict) -> Any:
        index_of = _INDEX_OF
        dev: int | None = None
        mixed = False
        wild = False
        for seq in (args, kwargs.values()):
            for a in seq:
                ta = type(a)
                if ta is list or ta is tuple:
                    for b in a:
                        tb = type(b)
                        d = index_of.get(tb)
                        if d is None:
                            if not isinstance(b, torch.Tensor):
                                continue
                            d = CPU if b.is_cpu else OTHER
                        if d == WILD:
                            d = _adopted(b)
                            if d is None:
                                wild = True
                                continue
                        elif d < CPU:
                            continue
                        if dev is None:
                            dev = d
                        elif d != dev:
                            mixed = True
                    continue
                d = index_of.get(ta)
                if d is None:
                    if not isinstance(a, torch.Tensor):
                        continue
                    d = CPU if a.is_cpu else OTHER
                if d == WILD:
                    d = _adopted(a)
                    if d is None:
                        wild = True
                        continue
                elif d < CPU:
                    continue
                if dev is None:
                    dev = d
                elif d != dev:
                    mixed = True

        out_dev = dev
        make_wild = False
        device_kw = kwargs.get("device") if kwargs else None
        if device_kw is not None:
            target = _target_code(device_kw)
            # the Python argument parser always passes pin_memory (False); C++ code building a tensor
            # from an input's options passes None (sparse gradients of nn.Embedding(sparse=True))
            explicit = "pin_memory" in kwargs and (dev is None or kwargs["pin_memory"] is not None)
            if target >= 0:
                kwargs = dict(kwargs)
                kwargs["device"] = _CPU
                if kwargs.get("pin_memory"):
                    kwargs["pin_memory"] = False
                out_dev = target
            elif target == CPU and not explicit:
                # device=cpu from C++ internals (``self.options()``): that is the device of the tensor
                # the options came from; with an emulated input it is that input's device
                if dev is None:
                    # ... unless a legacy constructor (torch.Tensor(n), x.new(n)) runs: a CPU tensor
                    make_wild = not _LEGACY.depth
                    out_dev = None
                # else: keep out_dev = dev
            else:
                out_dev = target
        elif kwargs and kwargs.get("pin_memory"):
            kwargs = dict(kwargs)
            kwargs["pin_memory"] = False

        _, is_random, is_mutating, name = _func_flags(func)
        if is_random and kwargs:
            gen = kwargs.get("generator")
            if gen is not None:
                want = "cuda" if out_dev is not None and out_dev >= 0 else "cpu"
                have = "cuda" if gen._cdata in self._cuda_generators else "cpu"
                if want != have:
                    raise RuntimeError(f"Expected a '{want}' device type for generator but found '{have}'")
        if self._nccl is not None and name.startswith("c10d::") and not self._nccl.busy:
            self._nccl.check(name, args, dev)
        if name == "aten::is_pinned":
            return code_of(args[0]) == CPU and args[0].untyped_storage()._cdata in self._pinned
        if name == "aten::_pin_memory":
            return self._pin(args[0])
        if name == "aten::_pack_padded_sequence" and len(args) > 1 and isinstance(args[1], torch.Tensor):
            lengths = args[1]
            if code_of(lengths) >= 0:
                # PackedSequence.cpp checks `lengths` is a CPU tensor whatever the input's device
                raise RuntimeError(
                    "'lengths' argument should be a 1D CPU int64 tensor, but got "
                    f"{lengths.dim()}D {_devcheck._fmt(code_of(lengths))} {_SCALAR_NAMES.get(lengths.dtype, lengths.dtype)} tensor"
                )

        if mixed:
            common = _devcheck.resolve_mixed(func, args, kwargs, code_of)
            if device_kw is None:
                out_dev = common
        if name in _COPY_IN_PLACE:
            if wild and dev is not None and args and type(args[0]) is _WildTensor:
                if dev >= 0:
                    self._adopt(args[0], dev)
                elif dev == CPU and _cpu_evidence(name, args, kwargs):
                    self._adopt(args[0], CPU)
            result = func(*args, **kwargs)
            if name == "aten::set_" and dev is not None and dev >= 0 and isinstance(result, torch.Tensor):
                self._track(result, dev)
            return result

        if out_dev is None or out_dev < 0:
            result = func(*args, **kwargs)
            if wild and is_mutating and dev == CPU and _cpu_evidence(name, args, kwargs):
                for a in (args[0] if args else None, kwargs.get("out")):
                    if type(a) is _WildTensor:
                        self._adopt(a, CPU)
            if make_wild or (wild and dev is None):
                # a C++-internal buffer, or a view/result computed from wild buffers only
                if type(result) is _Tensor:
                    result.__class__ = _WildTensor
                elif type(result) is tuple or type(result) is list:
                    for r in result:
                        if type(r) is _Tensor:
                            r.__class__ = _WildTensor
            return result

        if self._forked:
            raise RuntimeError(
                "Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, "
                "you must use the 'spawn' start method"
            )
        if self.memory is not None and dev != out_dev:
            self._precheck_allocation(args, kwargs, out_dev)
        try:
            if is_random:
                result = self._run_random(func, args, kwargs, out_dev)
            elif name in _UPCAST_OPS:
                result = _run_upcast(func, args, kwargs)
            else:
                result = func(*args, **kwargs)
        except NotImplementedError as exc:
            if func.namespace not in ("aten", "prim", "prims", "_c10d_functional", "c10d", "quantized"):
                unsupported = EmulationUnsupported(
                    f"custom operator {func._schema.name}",
                    "it has no CPU implementation (a CUDA-only kernel or extension); there is no GPU code to run",
                )
                self.unsupported_seen.append(unsupported)
                raise unsupported from exc
            raise
        if wild and is_mutating:
            for a in (args[0] if args else None, kwargs.get("out")):
                if type(a) is _WildTensor:
                    self._adopt(a, out_dev)
        cpu_outputs = _devcheck.CPU_OUTPUTS.get(name)
        if cpu_outputs is not None and isinstance(result, (tuple, list)):
            for i, r in enumerate(result):
                if i not in cpu_outputs and type(r) is _Tensor:
                    _tag(r, out_dev)
            return result
        return self._tag_result(result, out_dev, args if is_mutating else None)

    def _run_random(self, func: Any, args: tuple, kwargs: dict, index: int) -> Any:
        if kwargs.get("generator") is not None:
            return func(*args, **kwargs)
        cpu_gen = torch.default_generator
        saved = cpu_gen.get_state()
        gen = self.generators[index]
        cpu_gen.set_state(gen.get_state())
        try:
            return func(*args, **kwargs)
        finally:
            gen.set_state(cpu_gen.get_state())
            cpu_gen.set_state(saved)

    def _tag_result(self, result: Any, index: int, inputs: tuple | None) -> Any:
        tr = type(result)
        if tr is _Tensor:
            if inputs is None or not any(result is a for a in inputs):
                _tag(result, index)
        elif tr is tuple or tr is list:
            for r in result:
                if type(r) is _Tensor and (inputs is None or not any(r is a for a in inputs)):
                    _tag(r, index)
                elif type(r) is list:
                    for q in r:
                        if type(q) is _Tensor:
                            _tag(q, index)
        return result

    # ---- serialization -------------------------------------------------------------------------
    def _mark_for_save(self, t: torch.Tensor) -> None:
        storage = t.untyped_storage()
        self._save_tags[storage._cdata] = (storage, type(t)._gl_index)

    def _tagger(self, storage: Any) -> str | None:
        if _ACTIVE is not self:
            return None
        rec = self._save_tags.get(getattr(storage, "_cdata", None))
        if rec is None:
            return None
        return f"cuda:{rec[1]}"

    def _deserializer(self, obj: Any, location: str) -> Any:
        if _ACTIVE is not self or not location.startswith("cuda"):
            return None
        idx = self.current if location == "cuda" else int(location.split(":", 1)[1])
        if idx >= self.gpus:
            raise RuntimeError(
                f"Attempting to deserialize object on CUDA device {idx} but torch.cuda.device_count() is "
                f"{self.gpus}. Please use torch.load with map_location to map your storages to an existing device."
            )
        untyped = getattr(obj, "_untyped_storage", obj)
        self._load_tags[untyped._cdata] = (untyped, idx)
        return obj

    # ---- install / uninstall -----------------------------------------------------------------
    def _patch(self, obj: Any, name: str, value: Any) -> None:
        old = obj.__dict__.get(name, _MISSING) if isinstance(obj, type) else getattr(obj, name, _MISSING)
        self._patches.append((obj, name, old))
        setattr(obj, name, value)

    def __enter__(self) -> EmulatedCuda:
        global _ACTIVE
        if _ACTIVE is not None:
            raise RuntimeError("emulated CUDA is already active in this process")
        _ACTIVE = self
        try:
            _install(self)
            self._mode = _EmulationMode(self)
            self._mode.__enter__()
            self._fmode = _IntDeviceMode()
            self._fmode.__enter__()
        except BaseException:
            self._uninstall()
            _ACTIVE = None
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        global _ACTIVE
        try:
            if getattr(self, "_fmode", None) is not None:
                self._fmode.__exit__(*exc)
                self._fmode = None
            if self._mode is not None:
                self._mode.__exit__(*exc)
                self._mode = None
        finally:
            self._uninstall()
            _ACTIVE = None

    def _uninstall(self) -> None:
        while self._patches:
            obj, name, old = self._patches.pop()
            if old is _MISSING:
                try:
                    delattr(obj, name)
                except AttributeError:
                    pass
            else:
                setattr(obj, name, old)
        reg = torch.serialization._package_registry
        reg[:] = [entry for entry in reg if getattr(entry[1], "__self__", None) is not self]

    # ---- reporting -----------------------------------------------------------------------------
    def peak_line(self) -> str:
        from gpulint.emulate.sizes import format_size

        line = f"gpulint run: emulated cuda peak memory {format_size(self.peak_total)}"
        if self.gpus > 1:
            per = ", ".join(f"cuda:{i} {format_size(p)}" for i, p in enumerate(self.peak))
            line += f" ({per})"
        return line


_MISSING = object()


def _after_fork_in_child() -> None:
    if _ACTIVE is not None:
        _ACTIVE._forked = True


os.register_at_fork(after_in_child=_after_fork_in_child)
_COPY_CONSTRUCT_WARNING = (
    "To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
    "sourceTensor.detach().clone().requires_grad_(True), rather than torch.tensor(sourceTensor)."
)


class _OnUndo:
    """Calls ``fn`` when the patch list unwinds (for undo actions that are not attribute restores)."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        object.__setattr__(self, "_fn", fn)

    def __setattr__(self, name: str, value: Any) -> None:
        self._fn()


class _LiftRestore:
    """Restores ``torch._C._set_only_lift_cpu_tensors`` when the patch list unwinds."""

    def __setattr__(self, name: str, value: Any) -> None:
        torch._C._set_only_lift_cpu_tensors(bool(value))


# --------------------------------------------------------------------------------------------
# torch.cuda & friends
# --------------------------------------------------------------------------------------------
class _DeviceProperties:
    """What ``torch.cuda.get_device_properties`` returns for an emulated device."""

    def __init__(self, index: int, total_memory: int) -> None:
        self.name = "gpulint emulated CUDA device"
        self.major = 8
        self.minor = 0
        self.total_memory = total_memory
        self.multi_processor_count = 108
        self.is_integrated = False
        self.is_multi_gpu_board = False
        self.max_threads_per_multi_processor = 2048
        self.warp_size = 32
        self.L2_cache_size = 40 * 1024**2
        self.gcnArchName = "NVIDIA Ampere (emulated)"
        self.uuid = f"00000000-0000-0000-0000-{index:012d}"
        self.pci_bus_id = index
        self.pci_device_id = 0
        self.pci_domain_id = 0

    def __repr__(self) -> str:
        return (
            f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory // 1024**2}MB, multi_processor_count={self.multi_processor_count}, "
            f"uuid={self.uuid}, pci_bus_id={self.pci_bus_id}, pci_device_id={self.pci_device_id}, "
            f"pci_domain_id={self.pci_domain_id}, L2_cache_size={self.L2_cache_size // 1024**2}MB)"
        )


class _Stream:
    """``torch.cuda.Stream`` of an emulated device.

    All work runs on the host thread in program order, so every ordering a stream, an event or
    ``wait_stream`` asks for already holds: queries report completion and waits return at once.
    Stream 0 of each device is its default stream.
    """

    _next_id = 1

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs: Any) -> Any:
        return cls._make(_cuda_index(device), priority)

    @classmethod
    def _make(cls, index: int, priority: int = 0, stream_id: int | None = None) -> Any:
        self = object.__new__(cls)
        if stream_id is None:
            stream_id = _Stream._next_id
            _Stream._next_id += 1
        self.device_index = index
        self.device = torch.device("cuda", index)
        self.stream_id = stream_id
        self.cuda_stream = 0 if stream_id == 0 else 0x1000 + stream_id
        self.priority = int(priority)
        return self

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def query(self) -> bool:
        return True

    def is_capturing(self) -> bool:
        return False

    def wait_stream(self, stream: Any) -> None:
        if not isinstance(stream, _Stream):
            raise TypeError(f"wait_stream(): expected a torch.cuda.Stream, got {type(stream).__name__}")

    def wait_event(self, event: Any) -> None:
        event.wait(self)

    def record_event(self, event: Any = None) -> Any:
        event = event if event is not None else _Event()
        event.record(self)
        return event

    def __enter__(self) -> _Stream:
        self._gl_prev = _need_active().set_stream(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _need_active().set_stream(self._gl_prev)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Stream) and (other.device_index, other.stream_id) == (self.device_index, self.stream_id)

    def __hash__(self) -> int:
        return hash(("gpulint-stream", self.device_index, self.stream_id))

    def __repr__(self) -> str:
        return f"<torch.cuda.Stream device=cuda:{self.device_index} cuda_stream={self.cuda_stream:#x}>"


_Stream.__name__ = _Stream.__qualname__ = "Stream"
_Stream.__module__ = "torch.cuda.streams"
_DefaultStream = _Stream


def _check_stream(s: Any) -> None:
    if not isinstance(s, _Stream):
        if type(s).__name__ == "ExternalStream":
            _unsupported("CUDA streams", "external streams need a CUDA driver")()
        raise TypeError(f"expected a torch.cuda.Stream, got {type(s).__name__}")


def _default_stream(index: int) -> _Stream:
    return _Stream._make(index, 0, stream_id=0)


class _Event:
    """``torch.cuda.Event`` on the emulated default stream: records wall-clock time."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False, **kw: Any) -> None:
        self.enable_timing = enable_timing
        self._time: float | None = None

    def record(self, stream: Any = None) -> None:
        self._time = time.perf_counter()

    def wait(self, stream: Any = None) -> None:
        pass

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end_event: _Event) -> float:
        if not self.enable_timing or not end_event.enable_timing:
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._time is None or end_event._time is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._time - self._time) * 1000.0


def _default_device() -> torch.device | None:
    """The device of the innermost ``DeviceContext`` (``torch.set_default_device``), when it is CUDA."""
    from torch.overrides import _get_current_function_mode_stack
    from torch.utils._device import DeviceContext

    for mode in reversed(_get_current_function_mode_stack()):
        if isinstance(mode, DeviceContext):
            return mode.device if mode.device.type == "cuda" else None
    return None


def _check_rnn_devices(args: tuple) -> None:
    """``check_attributes`` of ATen's RNN.h: hidden state and weights on the input's device."""
    if len(args) < 4:
        return
    packed = not isinstance(args[3], bool)
    inp, hx, params = (args[0], args[2], args[3]) if packed else (args[0], args[1], args[2])
    if not isinstance(inp, torch.Tensor):
        return
    here = code_of(inp)
    hiddens = [hx] if isinstance(hx, torch.Tensor) else list(hx or ())
    for name, tensors in (("hidden", hiddens), ("parameter", list(params or ()))):
        for t in tensors:
            if isinstance(t, torch.Tensor) and code_of(t) != here and code_of(t) >= CPU and here >= CPU:
                raise RuntimeError(
                    f"Input and {name} tensors are not at the same device, found input tensor at "
                    f"{_devcheck._fmt(here)} and {name} tensor at {_devcheck._fmt(code_of(t))}"
                )


def _generator_factory(real: type) -> type:
    class _GeneratorMeta(type(real)):  # type: ignore[misc]
        def __instancecheck__(cls, obj: Any) -> bool:
            return isinstance(obj, real)

        def __subclasscheck__(cls, sub: type) -> bool:
            return issubclass(sub, real)

    class Generator(real, metaclass=_GeneratorMeta):  # type: ignore[misc, valid-type]
        """``torch.Generator`` that accepts ``device="cuda"`` (a CPU generator underneath)."""

        def __new__(cls, device: Any = "cpu") -> Any:
            dev = torch.device(device) if not isinstance(device, int) else torch.device("cuda", device)
            if dev.type == "cuda":
                gen = super().__new__(cls, "cpu")
                gen._gl_device = torch.device("cuda", _cuda_index(dev))
                emu = _ACTIVE
                if emu is not None:  # operators receive a new wrapper object: remember the C++ generator
                    emu._cuda_generators[gen._cdata] = gen._gl_device
                    weakref.finalize(gen, emu._cuda_generators.pop, gen._cdata, None)
                return gen
            return real(dev)

        def __init__(self, device: Any = "cpu") -> None:
            pass

        @property
        def device(self) -> torch.device:  # type: ignore[override]
            return getattr(self, "_gl_device", None) or real.device.__get__(self)

    Generator.__module__ = "torch"
    Generator.__qualname__ = "Generator"
    return Generator


_FOREACH_DEVICE_MESSAGE = (
    "Tensors of the same index must be on the same device and the same dtype except `step` tensors that "
    "can be CPU and float32/64, and optimizer states that can be bfloat16 for mixed-precision training"
)


def _regroup(groups: dict) -> dict:
    """Split ``_group_tensors_by_device_and_dtype`` results by emulated device."""
    out: dict = {}
    for (device, dtype), (lists, indices) in groups.items():
        if device.type != "cpu" or not lists or not lists[0]:
            out[(device, dtype)] = (lists, indices)
            continue
        buckets: dict[int, list[int]] = {}
        for pos in range(len(lists[0])):
            code = None
            for lst in lists:
                t = lst[pos] if lst else None
                if t is None:
                    continue
                c = max(code_of(t), CPU)
                if code is None:
                    code = c
                elif c != code and not (c == CPU and t.numel() == 1 and t.dtype in (torch.float32, torch.float64)):
                    raise RuntimeError(_FOREACH_DEVICE_MESSAGE)
            buckets.setdefault(CPU if code is None else code, []).append(pos)
        if len(buckets) == 1:
            code = next(iter(buckets))
            key_dev = device if code == CPU else torch.device("cuda", code)
            out[(key_dev, dtype)] = (lists, indices)
            continue
        for code, positions in buckets.items():
            key_dev = device if code == CPU else torch.device("cuda", code)
            new_lists = [[lst[i] for i in positions] if lst else lst for lst in lists]
            new_indices = [indices[i] for i in positions] if indices else indices
            out[(key_dev, dtype)] = (new_lists, new_indices)
    return out


class _LegacyCudaMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, torch.Tensor) and code_of(obj) >= 0 and obj.dtype == cls.dtype and obj.layout == torch.strided

    def __subclasscheck__(cls, sub: type) -> bool:
        return sub is cls

    def __repr__(cls) -> str:
        return f"<class 'torch.cuda.{cls.__name__}'>"


class _LegacyCpuMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, torch.Tensor) and not obj.is_cuda and isinstance(obj, cls._gl_orig)

    def __subclasscheck__(cls, sub: type) -> bool:
        return sub is cls or sub is cls._gl_orig

    def __repr__(cls) -> str:
        return f"<class 'torch.{cls.__name__}'>"


def _legacy_type_error(cpu_type: Any, other: torch.Tensor, expected_device: str) -> TypeError:
    """The TypeError of a legacy constructor given a tensor of another device type or dtype
    (``torch.FloatTensor(cuda_tensor)``): torch/csrc/utils/tensor_new.cpp checks
    ``other.options().type_equal(options)`` and raises ``expected <options> (got <other's options>)``.
    The text is torch's own, from the same check on a CPU tensor, with the devices put in: the
    constructor's device type without an index (``cuda``), the tensor's device with one (``cuda:0``)."""
    same_dtype = other.dtype == cpu_type.dtype
    probe = other.dtype if not same_dtype else (torch.float64 if other.dtype != torch.float64 else torch.float32)
    text = ""
    try:
        with _disable_current_modes():
            cpu_type(torch.empty(0, dtype=probe))
    except TypeError as exc:
        text = str(exc)
    want, sep, got = text.partition(" (got ")
    if not (want.startswith("expected TensorOptions(") and sep and got.endswith(")")):  # pragma: no cover
        return TypeError(f"expected {cpu_type.dtype} on {expected_device} (got {other.dtype} on {other.device})")
    want = want[len("expected ") :]
    got = want if same_dtype else got[:-1]
    want = want.replace("device=cpu,", f"device={expected_device},", 1)
    got = got.replace("device=cpu,", f"device={other.device},", 1)
    return TypeError(f"expected {want} (got {got})")


def _tensor_argument(args: tuple, kwargs: dict) -> torch.Tensor | None:
    """The tensor of the legacy constructor form ``torch.FloatTensor(other)`` (dense), else None."""
    if len(args) == 1 and not kwargs and isinstance(args[0], torch.Tensor) and args[0].layout == torch.strided:
        return args[0]
    return None


def _legacy_cpu_class(name: str, cpu_type: Any) -> type:
    """``torch.FloatTensor`` & co. (a type C++ does not let us patch): its constructor, marked as legacy
    so that ``torch.FloatTensor(3)``'s ``empty(...)`` is a CPU tensor, not a wild buffer. Given an
    emulated CUDA tensor it raises torch's TypeError, as it does for a real one."""

    def __new__(cls: type, *args: Any, **kwargs: Any) -> torch.Tensor:
        other = _tensor_argument(args, kwargs)
        if other is not None and code_of(other) >= 0:
            raise _legacy_type_error(cpu_type, other, "cpu")
        return _run_legacy(cpu_type, *args, **kwargs)

    ns = {
        "__new__": __new__, "dtype": cpu_type.dtype, "is_cuda": False, "is_sparse": False,
        "_gl_orig": cpu_type, "__module__": "torch",
    }  # fmt: skip
    return _LegacyCpuMeta(name, (), ns)


def _legacy_cuda_class(name: str, cpu_type: Any) -> type:
    """``torch.cuda.FloatTensor`` & co.: the CPU constructor, then a copy to the current device; given
    a tensor, an alias of it when it is a CUDA tensor of this dtype, else torch's TypeError."""

    def __new__(cls: type, *args: Any, **kwargs: Any) -> torch.Tensor:
        other = _tensor_argument(args, kwargs)
        if other is not None:
            # an alias of a CUDA tensor of this dtype (on its own device); a TypeError for any other
            if code_of(other) < 0 or other.dtype != cpu_type.dtype:
                raise _legacy_type_error(cpu_type, other, "cuda")
            return _run_legacy(cpu_type, other)
        device = kwargs.pop("device", None)
        index = _need_active().current if device is None else _cuda_index(device)
        return _run_legacy(cpu_type, *args, **kwargs).to(torch.device("cuda", index))

    ns = {"__new__": __new__, "dtype": cpu_type.dtype, "is_cuda": True, "is_sparse": False, "__module__": "torch.cuda"}
    return _LegacyCudaMeta(name, (), ns)


def _unsupported(feature: str, reason: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        exc = EmulationUnsupported(feature, reason)
        emu = _ACTIVE
        if emu is not None:
            emu.unsupported_seen.append(exc)
        raise exc

    return refuse


class _RefusedClass:
    """Stands in for a CUDA class that cannot be emulated (e.g. ``torch.cuda.Stream``)."""

    _feature = ""
    _reason = ""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        _unsupported(cls._feature, cls._reason)()


def _refused_class(name: str, feature: str, reason: str) -> type:
    return type(name, (_RefusedClass,), {"_feature": feature, "_reason": reason})


_NCCL_HEADER = (
    "NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.21.5 (emulated)\n"
    "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\nLast error:\n"
)


class _EmulatedNccl:
    """An NCCL process group served by Gloo, with the device rules NCCL enforces.

    Gloo computes the collectives on the (CPU-backed) emulated tensors with the same semantics. NCCL
    additionally needs every tensor on a GPU (a pure ``nccl`` group has no CPU backend) and one GPU per
    rank: at a rank's first collective the ranks publish their devices in the store and two ranks on
    one GPU fail with NCCL's "Duplicate GPU detected" error, as when a real communicator is created.
    """

    def __init__(self, emu: EmulatedCuda, dist: Any, cpu_backend: bool, bound: int | None) -> None:
        self.emu = emu
        self.dist = dist
        self.cpu_backend = cpu_backend  # "cpu:gloo,cuda:nccl" (or the default): CPU tensors use Gloo
        self.bound = bound
        self.device: int | None = None
        self.busy = False

    def check(self, name: str, args: tuple, dev: int | None) -> None:
        if name in ("c10d::monitored_barrier_",):
            return
        if self.device is not None:
            return
        if dev is not None and dev >= 0:
            device = dev
        elif name == "c10d::barrier":
            ids = args[2] if len(args) > 2 and isinstance(args[2], (list, tuple)) else []
            rank = self.dist.get_rank()
            device = ids[0] if ids else self.bound if self.bound is not None else rank % self.emu.gpus
        else:
            return  # no device known yet (e.g. a C++-internal metadata buffer): decide later
        self.device = device
        self._check_unique(device)

    def _check_unique(self, device: int) -> None:
        dist = self.dist
        world = dist.get_world_size()
        if world < 2:
            return
        rank = dist.get_rank()
        store = dist.distributed_c10d._get_default_store()
        key = "gpulint-emulated-nccl-device-{}"
        self.busy = True
        try:
            with _disable_current_modes():
                store.set(key.format(rank), str(device))
                keys = [key.format(r) for r in range(world)]
                try:
                    store.wait(keys, __import__("datetime").timedelta(seconds=60))
                except Exception:  # a peer never reached a collective: cannot tell, stay silent
                    return
                devices = [int(store.get(k)) for k in keys]
        finally:
            self.busy = False
        for other, other_device in enumerate(devices):
            if other != rank and other_device == device:
                raise dist.DistBackendError(
                    _NCCL_HEADER + f"Duplicate GPU detected : rank {rank} and rank {other} both on CUDA device {device + 1}000"
                )


def _install_nccl(emu: EmulatedCuda, p: Callable[..., None], dist: Any) -> None:
    """``init_process_group("nccl")`` (or the default backend): served by Gloo with NCCL's rules."""
    orig_init_pg = dist.init_process_group
    orig_get_backend = dist.get_backend

    def init_process_group(*args: Any, **kwargs: Any) -> Any:
        if args:
            kwargs["backend"] = args[0]
            args = args[1:]
        backend = kwargs.get("backend")
        text = str(backend).lower() if backend is not None else None
        if text is not None and "nccl" not in text:
            return orig_init_pg(*args, **kwargs)
        cpu_backend = text is None or "cpu:" in text
        device_id = kwargs.pop("device_id", None)
        bound = None
        if device_id is not None:
            bound = _cuda_index(device_id)
        kwargs["backend"] = "gloo"
        result = orig_init_pg(*args, **kwargs)
        emu._nccl = _EmulatedNccl(emu, dist, cpu_backend, bound)
        return result

    def get_backend(group: Any = None) -> Any:
        name = orig_get_backend(group)
        nccl = emu._nccl
        if nccl is not None and str(name) == "gloo":
            return "cpu:gloo,cuda:nccl" if nccl.cpu_backend else "nccl"
        return name

    # a pure NCCL group has no CPU backend: user-level collectives on CPU tensors fail (checked at
    # the Python API: torch's own helpers such as all_gather_object pick the device themselves)
    for fname in (
        "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter_tensor",
        "reduce", "reduce_scatter", "gather", "scatter", "all_to_all", "all_to_all_single",
        "send", "recv", "isend", "irecv",
    ):  # fmt: skip
        orig_fn = getattr(dist, fname, None)
        if orig_fn is None:
            continue

        def collective(*args: Any, __orig: Any = orig_fn, **kwargs: Any) -> Any:
            nccl = emu._nccl
            if nccl is not None and not nccl.cpu_backend:
                for value in (*args, *kwargs.values()):
                    for t in value if isinstance(value, (list, tuple)) else (value,):
                        if isinstance(t, torch.Tensor) and code_of(t) == CPU:
                            raise RuntimeError("No backend type associated with device type cpu")
            return __orig(*args, **kwargs)

        functools.update_wrapper(collective, orig_fn)
        p(dist, fname, collective)

    functools.update_wrapper(init_process_group, orig_init_pg)
    functools.update_wrapper(get_backend, orig_get_backend)
    p(dist, "init_process_group", init_process_group)
    p(dist, "get_backend", get_backend)
    p(dist, "is_nccl_available", lambda: True)
    c10d = sys.modules.get("torch.distributed.distributed_c10d")
    if c10d is not None:
        p(c10d, "init_process_group", init_process_group)
        p(c10d, "get_backend", get_backend)
        p(c10d, "is_nccl_available", lambda: True)


def _install(emu: EmulatedCuda) -> None:
    cuda = torch.cuda
    p = emu._patch

    # A DataLoader worker collating CUDA tensors asks for shared CUDA storage directly (not
    # through an operator): in a child forked while emulating, that is CUDA's fork error too.
    orig_new_shared = torch.UntypedStorage._new_shared

    def _new_shared(cls: Any, size: Any, *, device: Any = "cpu") -> Any:
        if emu._forked and torch.device(device).type == "cuda":
            raise RuntimeError(
                "Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, "
                "you must use the 'spawn' start method"
            )
        return orig_new_shared.__func__(cls, size, device=device)

    p(torch.UntypedStorage, "_new_shared", classmethod(_new_shared))

    def idx_of(device: Any = None) -> int:
        if isinstance(device, str) and device == "cuda":
            return emu.current
        if isinstance(device, torch.device) and device.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {device}")
        return _cuda_index(device)

    def set_device(device: Any) -> None:
        if device is None or (isinstance(device, int) and device < 0):
            return
        emu.current = idx_of(device)

    def exchange_device(device: int) -> int:
        prev = emu.current
        if device is not None and device >= 0:
            emu.check_ordinal(device)
            emu.current = device
        return prev

    def manual_seed(seed: int) -> None:
        emu.generators[emu.current].manual_seed(int(seed))

    def manual_seed_all(seed: int) -> None:
        for g in emu.generators:
            g.manual_seed(int(seed))

    def seed() -> None:
        emu.generators[emu.current].seed()

    def seed_all() -> None:
        s = emu.generators[emu.current].seed()
        for g in emu.generators:
            g.manual_seed(s)

    def initial_seed() -> int:
        return emu.generators[emu.current].initial_seed()

    def get_rng_state(device: Any = "cuda") -> torch.Tensor:
        return emu.generators[idx_of(device)].get_state()

    def set_rng_state(new_state: torch.Tensor, device: Any = "cuda") -> None:
        emu.generators[idx_of(device)].set_state(new_state.cpu() if code_of(new_state) >= 0 else new_state)

    def memory_allocated(device: Any = None) -> int:
        return emu.allocated[idx_of(device)]

    def max_memory_allocated(device: Any = None) -> int:
        return emu.peak[idx_of(device)]

    def reset_peak_memory_stats(device: Any = None) -> None:
        i = idx_of(device)
        emu.peak[i] = emu.allocated[i]

    def memory_stats(device: Any = None) -> dict[str, int]:
        i = idx_of(device)
        return {
            "allocated_bytes.all.current": emu.allocated[i],
            "allocated_bytes.all.peak": emu.peak[i],
            "reserved_bytes.all.current": emu.allocated[i],
            "reserved_bytes.all.peak": emu.peak[i],
            "active_bytes.all.current": emu.allocated[i],
            "active_bytes.all.peak": emu.peak[i],
            "num_ooms": 0,
        }

    def mem_get_info(device: Any = None) -> tuple[int, int]:
        i = idx_of(device)
        return (max(emu.total_memory - emu.allocated[i], 0), emu.total_memory)

    def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
        i = idx_of(device)
        return (
            f"gpulint emulated CUDA memory summary, device {i}: allocated {emu.allocated[i]} bytes, "
            f"peak {emu.peak[i]} bytes, total {emu.total_memory} bytes\n"
        )

    def get_device_properties(device: Any = None) -> _DeviceProperties:
        return _DeviceProperties(idx_of(device), emu.total_memory)

    def synchronize(device: Any = None) -> None:
        if device is not None:
            idx_of(device)

    def current_stream(device: Any = None) -> _Stream:
        idx = idx_of(device)
        return emu.streams.get(idx) or _default_stream(idx)

    def default_stream(device: Any = None) -> _Stream:
        return _default_stream(idx_of(device))

    @contextlib.contextmanager
    def stream(s: Any) -> Iterator[None]:
        if s is None:
            yield
            return
        _check_stream(s)
        prev_device = emu.current
        prev = emu.set_stream(s)
        try:
            yield
        finally:
            emu.set_stream(prev)
            emu.current = prev_device

    def set_stream(s: Any) -> None:
        if s is not None:
            _check_stream(s)
            emu.set_stream(s)

    def noop(*args: Any, **kwargs: Any) -> None:
        return None

    simple: dict[str, Any] = {
        "is_available": lambda: True,
        "device_count": lambda: emu.gpus,
        "current_device": lambda: emu.current,
        "set_device": set_device,
        "_exchange_device": exchange_device,
        "_maybe_exchange_device": exchange_device,
        "get_device_name": lambda device=None: get_device_properties(device).name,
        "get_device_capability": lambda device=None: (idx_of(device), (8, 0))[1],
        "get_device_properties": get_device_properties,
        "get_arch_list": lambda: ["sm_80"],
        "synchronize": synchronize,
        "manual_seed": manual_seed,
        "manual_seed_all": manual_seed_all,
        "seed": seed,
        "seed_all": seed_all,
        "initial_seed": initial_seed,
        "get_rng_state": get_rng_state,
        "set_rng_state": set_rng_state,
        "get_rng_state_all": lambda: [g.get_state() for g in emu.generators],
        "set_rng_state_all": lambda states: [g.set_state(s) for g, s in zip(emu.generators, states)] and None,
        "memory_allocated": memory_allocated,
        "max_memory_allocated": max_memory_allocated,
        "memory_reserved": memory_allocated,
        "max_memory_reserved": max_memory_allocated,
        "reset_peak_memory_stats": reset_peak_memory_stats,
        "reset_max_memory_allocated": reset_peak_memory_stats,
        "reset_accumulated_memory_stats": noop,
        "memory_stats": memory_stats,
        "mem_get_info": mem_get_info,
        "memory_summary": memory_summary,
        "empty_cache": noop,
        "ipc_collect": noop,
        "is_bf16_supported": lambda including_emulation=True: True,
        "is_tf32_supported": lambda: True,
        "is_initialized": lambda: True,
        "init": noop,
        "_lazy_init": noop,
        "current_stream": current_stream,
        "default_stream": default_stream,
        "is_current_stream_capturing": lambda: False,
        "stream": stream,
        "set_stream": set_stream,
        "Event": _Event,
        "Stream": _Stream,
        "ExternalStream": _refused_class("ExternalStream", "CUDA streams", "external streams need a CUDA driver"),
        "CUDAGraph": _refused_class("CUDAGraph", "CUDA graphs", "graph capture records GPU kernel launches"),
        "graph": _unsupported("CUDA graphs", "graph capture records GPU kernel launches"),
        "make_graphed_callables": _unsupported("CUDA graphs", "graph capture records GPU kernel launches"),
    }
    for name, value in simple.items():
        p(cuda, name, value)
    streams_mod = getattr(cuda, "streams", None)
    if streams_mod is not None:
        p(streams_mod, "Stream", _Stream)
        p(streams_mod, "Event", _Event)
    for name in ("range_push", "range_pop", "mark", "range_start", "range_end"):
        p(cuda.nvtx, name, noop)
    p(cuda.nvtx, "range", lambda *a, **k: contextlib.nullcontext())
    if hasattr(cuda, "amp") and hasattr(cuda.amp, "common"):
        p(cuda.amp.common, "amp_definitely_not_available", lambda: False)

    # cuDNN: flags work on a CPU build already; report it as present.
    cudnn = torch.backends.cudnn
    p(cudnn, "is_available", lambda: True)
    p(cudnn, "version", lambda: 91000)
    # cuDNN-specific paths (RNN weight flattening) would call CUDA kernels: never take them
    p(cudnn, "is_acceptable", lambda tensor: False)

    # torch.accelerator (DataLoader pinning, device-generic code)
    acc = getattr(torch, "accelerator", None)
    if acc is not None:
        for name, value in {
            "is_available": lambda: True,
            "device_count": lambda: emu.gpus,
            "current_accelerator": lambda check_available=False: torch.device("cuda"),
            "current_device_index": lambda: emu.current,
            "current_device_idx": lambda: emu.current,
            "set_device_index": set_device,
            "set_device_idx": set_device,
            "synchronize": synchronize,
            "current_stream": current_stream,
            "set_stream": set_stream,
        }.items():
            if hasattr(acc, name):
                p(acc, name, value)

    # torch.tensor(..., device="cuda"): build on the CPU, then move with an operator we see
    prev_lift = torch._C._only_lift_cpu_tensors()
    torch._C._set_only_lift_cpu_tensors(True)
    emu._patches.append((_LiftRestore(), "restore", prev_lift))

    # torch.tensor(..., device="cuda") needs an index in C++ (a CPU build has no CUDA guard to ask)
    for fname in ("tensor", "as_tensor", "asarray"):
        orig_factory = getattr(torch, fname, None)
        if orig_factory is None:
            continue

        def factory(*args: Any, __orig: Any = orig_factory, __name: str = fname, **kwargs: Any) -> Any:
            device = kwargs.get("device")
            if device is None and not (args and isinstance(args[0], torch.Tensor)):
                device = _default_device()  # torch.set_default_device("cuda")
                if device is not None:
                    kwargs["device"] = device
            if device is not None:
                dev = device if isinstance(device, torch.device) else torch.device(device) if not isinstance(device, int) else torch.device("cuda", device)
                if dev.type == "cuda":
                    kwargs["device"] = dev = torch.device("cuda", _cuda_index(dev))
            data = args[0] if args else kwargs.get("data", kwargs.get("obj"))
            if isinstance(data, torch.Tensor) and code_of(data) >= 0:
                # C++ would see a CPU tensor and skip (or mis-tag) the device copy
                target = kwargs.get("device", data.device)
                dtype = kwargs.get("dtype") or data.dtype
                if __name == "tensor":
                    warnings.warn(_COPY_CONSTRUCT_WARNING, UserWarning, stacklevel=2)
                    out = data.detach().to(device=target, dtype=dtype, copy=True)
                    return out.requires_grad_(bool(kwargs.get("requires_grad", False)))
                return data.to(device=target, dtype=dtype, copy=bool(kwargs.get("copy", False)))
            return __orig(*args, **kwargs)

        functools.update_wrapper(factory, orig_factory)
        p(torch, fname, factory)

    # Lazy modules moved to the GPU before their first forward materialize there
    orig_materialize = _UNINITIALIZED.materialize

    def materialize(self: Any, shape: Any, device: Any = None, dtype: Any = None) -> None:
        lazy_device = getattr(self, "_gl_lazy_device", None)
        if device is None and lazy_device is not None:
            device = lazy_device
        orig_materialize(self, shape, device=device, dtype=dtype)
        if device is not None and torch.device(device).type == "cuda":
            _tag(self, _cuda_index(device), track=False)

    p(_UNINITIALIZED, "materialize", materialize)

    # ctc_loss with tensor lengths: for plain tensors ATen copies the lengths to the host and takes the
    # IntArrayRef path; under a dispatch mode it would take the subclass path (a CPU/CUDA mix a GPU
    # never sees), so take the plain-tensor path here
    orig_ctc = torch.ctc_loss

    def ctc_loss(*args: Any, **kwargs: Any) -> Any:
        if len(args) >= 4 and isinstance(args[0], torch.Tensor) and code_of(args[0]) >= 0:
            lengths = list(args[2:4])
            for i, (name, value) in enumerate(zip(("input_lengths", "target_lengths"), lengths)):
                if isinstance(value, torch.Tensor):
                    if value.dtype.is_floating_point or value.dtype.is_complex or value.dtype == torch.bool:
                        raise RuntimeError(f"{name} must be integral")
                    lengths[i] = value.to("cpu", torch.long).tolist()
            args = (*args[:2], *lengths, *args[4:])
        return orig_ctc(*args, **kwargs)

    functools.update_wrapper(ctc_loss, orig_ctc)
    p(torch, "ctc_loss", ctc_loss)

    # torch.set_default_tensor_type(torch.cuda.FloatTensor) (deprecated, still in old scripts)
    orig_default_type = torch.set_default_tensor_type

    def set_default_tensor_type(t: Any) -> None:
        legacy = _legacy_target(t)
        if legacy is not None and legacy[0]:
            if legacy[1] not in _CPU_LEGACY:
                raise TypeError("only floating-point types are supported as the default type")
            orig_default_type(_CPU_LEGACY[legacy[1]])
            torch.set_default_device("cuda")
            emu._legacy_cuda_default = True
            return
        if legacy is not None and _default_device() is not None:
            torch.set_default_device("cpu")
        orig_default_type(getattr(t, "_gl_orig", t))
        emu._legacy_cuda_default = False

    functools.update_wrapper(set_default_tensor_type, orig_default_type)
    p(torch, "set_default_tensor_type", set_default_tensor_type)

    # The legacy constructor torch.Tensor(n) makes a CPU tensor (a CUDA one after
    # set_default_tensor_type(torch.cuda.FloatTensor); set_default_device does not change it), and
    # x.new(n) a tensor on x's device: mark them so their empty(...) is not taken for a wild buffer
    # (*args only: torch._dynamo's polyfill for Tensor.__new__ accepts a wildcard signature)
    def legacy_tensor_new(*args: Any, **kwargs: Any) -> torch.Tensor:
        if args[0] is not _Tensor and not any(code_of(a) >= 0 for a in args[1:] if isinstance(a, torch.Tensor)):
            # a subclass (class S(torch.Tensor), S(2)): built below the mode, the C++ tensor gets its
            # Python object of class S (through the mode it would already have a plain one)
            with _disable_current_modes():
                return _TB.__new__(*args, **kwargs)
        index = emu.current
        if emu._legacy_cuda_default and args[0] is _Tensor and kwargs.get("device") is not None:
            # the default type is CUDA: device="cuda" is what the constructor expects (C++ would
            # see the CPU type and refuse it)
            device = kwargs["device"]
            device = torch.device("cuda", device) if isinstance(device, int) else torch.device(device)
            if device.type == "cuda":
                kwargs = {k: v for k, v in kwargs.items() if k != "device"}
                index = _cuda_index(device)
        out = _run_legacy(_TB.__new__, *args, **kwargs)
        if emu._legacy_cuda_default and args[0] is _Tensor and type(out) is _Tensor:
            out = out.to(torch.device("cuda", index))
        return out

    p(_Tensor, "__new__", staticmethod(legacy_tensor_new))
    orig_tensor_new = _Tensor.new

    def legacy_new(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        idx = _INDEX_OF.get(type(self))
        if idx == WILD:
            idx = _adopted(self)
            if idx is None:  # a wild buffer's device is not known yet: its new() is wild too
                return orig_tensor_new(self, *args, **kwargs)
        out = _run_legacy(orig_tensor_new, self, *args, **kwargs)
        if (
            idx is not None
            and idx >= 0
            and type(out) is _Tensor
            and kwargs.get("device") is None
            and not any(isinstance(a, torch.Tensor) for a in args)
        ):
            _tag(out, idx)
        return out

    functools.update_wrapper(legacy_new, orig_tensor_new)
    p(_Tensor, "new", legacy_new)

    # Legacy typed constructors: torch.cuda.FloatTensor(3), torch.cuda.LongTensor([1, 2]), isinstance
    for legacy_name in _LEGACY_TYPES:
        cpu_type = getattr(torch, legacy_name, None)
        if cpu_type is not None:
            p(cuda, legacy_name, _legacy_cuda_class(legacy_name, cpu_type))
            p(torch, legacy_name, _legacy_cpu_class(legacy_name, cpu_type))

    # Tensor.record_stream: the emulated caching allocator frees a block when Python frees the tensor
    def record_stream(self: torch.Tensor, stream: Any) -> None:
        if not isinstance(stream, (_DefaultStream, torch.Stream)):
            raise TypeError(f"record_stream(): argument 'stream' must be torch.Stream, not {type(stream).__name__}")

    p(_Tensor, "record_stream", record_stream)

    # Allocator and sync-debug settings: the torch.cuda wrappers validate, these hold the values
    fractions = [1.0] * emu.gpus
    sync_debug = [0]

    def set_memory_fraction(fraction: float, device: int) -> None:
        emu.check_ordinal(device)
        fractions[device] = fraction
        limit = int(min(fractions) * emu.total_memory)
        emu.memory = limit if fraction < 1.0 or emu.memory is not None else None

    for name, value in {
        "_cuda_setMemoryFraction": set_memory_fraction,
        "_cuda_getMemoryFraction": lambda device: fractions[device],
        "_cuda_getAllocatorBackend": lambda: "native",
        "_cuda_set_sync_debug_mode": lambda mode: sync_debug.__setitem__(0, int(mode)),
        "_cuda_get_sync_debug_mode": lambda: sync_debug[0],
    }.items():
        p(torch._C, name, value)

    # .to(0) / module.to(local_rank): an integer device is a CUDA ordinal (C++ would ask for an accelerator)
    orig_parse_to = torch._C._nn._parse_to

    def parse_to(*args: Any, **kwargs: Any) -> Any:
        if args and type(args[0]) is int:
            args = (torch.device("cuda", _cuda_index(args[0])), *args[1:])
        if type(kwargs.get("device")) is int:
            kwargs["device"] = torch.device("cuda", _cuda_index(kwargs["device"]))
        return orig_parse_to(*args, **kwargs)

    p(torch._C._nn, "_parse_to", parse_to)

    # Tensor-level hooks
    p(_Tensor, "type", _plain_type)
    p(_Tensor, "data", property(_data_get, _data_set))
    p(_Tensor, "to", _plain_to)
    p(_Tensor, "cuda", _plain_cuda)
    p(_Tensor, "type_as", _plain_type_as)
    p(_Tensor, "new_tensor", _plain_new_tensor)

    param_cls = torch.nn.Parameter
    orig_param_new = param_cls.__dict__["__new__"]
    orig_param_new_fn = orig_param_new.__func__ if isinstance(orig_param_new, staticmethod) else orig_param_new

    def param_new(cls: type, data: Any = None, requires_grad: bool = True) -> Any:
        base = _BASE_OF.get(cls, cls)
        if data is not None:
            idx = _INDEX_OF.get(type(data))
            if idx is not None:
                with _disable_current_modes():
                    param = _TB._make_subclass(base, data, requires_grad)
                param.__class__ = _variant(base, idx)
                return param
        return orig_param_new_fn(base, data, requires_grad)

    p(param_cls, "__new__", staticmethod(param_new))

    # Foreach paths: optimizers and clip_grad_norm_ group tensors by device; C++ sees "cpu" for all of
    # them, so regroup by emulated device (and let optimizers take the foreach path as on CUDA).
    supported = [_Tensor, param_cls]
    supported += [_variant(_Tensor, i) for i in range(emu.gpus)] + [_variant(param_cls, i) for i in range(emu.gpus)]
    orig_group = torch._C._group_tensors_by_device_and_dtype

    def group_tensors(tensorlistlist: Any, with_indices: bool = False) -> Any:
        return _regroup(orig_group(tensorlistlist, with_indices))

    p(torch._C, "_group_tensors_by_device_and_dtype", group_tensors)
    for modname in ("torch.utils._foreach_utils", "torch.optim.optimizer", "torch.nn.utils.clip_grad"):
        mod = sys.modules.get(modname)
        if mod is None:
            continue
        if hasattr(mod, "_foreach_supported_types"):
            p(mod, "_foreach_supported_types", supported)
        if modname != "torch.utils._foreach_utils" and hasattr(mod, "_group_tensors_by_device_and_dtype"):
            p(mod, "_group_tensors_by_device_and_dtype", lambda tll, with_indices=False: group_tensors(tll, with_indices))

    # Autocast: mirror CUDA autocast state onto CPU autocast (our kernels run on the CPU key).
    orig_set_enabled = torch.set_autocast_enabled
    orig_set_dtype = torch.set_autocast_dtype

    def set_autocast_enabled(*args: Any) -> None:
        orig_set_enabled(*args)
        if len(args) == 2 and args[0] == "cuda":
            orig_set_enabled("cpu", args[1])
        elif len(args) == 1:
            orig_set_enabled("cpu", args[0])

    def set_autocast_dtype(device_type: str, dtype: torch.dtype) -> None:
        orig_set_dtype(device_type, dtype)
        if device_type == "cuda":
            orig_set_dtype("cpu", dtype)

    p(torch, "set_autocast_enabled", set_autocast_enabled)
    p(torch, "set_autocast_dtype", set_autocast_dtype)
    from gpulint.emulate import _autocast

    autocast_lib = _autocast.install(lambda t: code_of(t) >= 0)
    emu._patches.append((_OnUndo(autocast_lib._destroy), "undo", None))

    # Serialization
    torch.serialization.register_package(-1000, emu._tagger, emu._deserializer)
    orig_save = torch.serialization.save
    orig_load = torch.serialization.load
    orig_rebuild = torch._utils._rebuild_tensor

    def save(*args: Any, **kwargs: Any) -> Any:
        emu._io_depth += 1
        try:
            return orig_save(*args, **kwargs)
        finally:
            emu._io_depth -= 1
            if emu._io_depth == 0:
                emu._save_tags.clear()

    def load(*args: Any, **kwargs: Any) -> Any:
        emu._io_depth += 1
        try:
            return orig_load(*args, **kwargs)
        finally:
            emu._io_depth -= 1
            if emu._io_depth == 0:
                emu._load_tags.clear()

    def rebuild_tensor(storage: Any, storage_offset: int, size: Any, stride: Any) -> torch.Tensor:
        t = orig_rebuild(storage, storage_offset, size, stride)
        untyped = getattr(storage, "_untyped_storage", storage)
        rec = emu._load_tags.get(getattr(untyped, "_cdata", None))
        if rec is not None:
            _tag(t, rec[1])
        return t

    functools.update_wrapper(save, orig_save)
    functools.update_wrapper(load, orig_load)
    p(torch, "save", save)
    p(torch, "load", load)
    p(torch.serialization, "save", save)
    p(torch.serialization, "load", load)
    p(torch._utils, "_rebuild_tensor", rebuild_tensor)

    # nn.DataParallel: CUDA's scatter/gather/broadcast are C++ CUDA code; emulate them with copies,
    # and run the replicas one after another on this thread (the emulation is thread-local).
    def dp_scatter(tensor: torch.Tensor, devices: Any, chunk_sizes: Any = None, dim: int = 0, streams: Any = None) -> Any:
        chunks = tensor.split(list(chunk_sizes), dim) if chunk_sizes else tensor.chunk(len(devices), dim)
        return tuple(c.contiguous().to(torch.device("cuda", _cuda_index(d))) for c, d in zip(chunks, devices))

    def dp_gather(tensors: Any, dim: int = 0, destination: Any = None) -> torch.Tensor:
        if destination is None or (isinstance(destination, int) and destination < 0):
            target: Any = "cpu" if destination == -1 else torch.device("cuda", emu.current)
        else:
            target = torch.device("cuda", _cuda_index(destination))
        return torch.cat([t.to(target) for t in tensors], dim)

    def dp_broadcast_coalesced(tensors: Any, devices: Any, buffer_size: int = 0) -> Any:
        return [[t.to(torch.device("cuda", _cuda_index(d))) for t in tensors] for d in devices]

    def dp_broadcast(tensor: torch.Tensor, devices: Any) -> Any:
        return [tensor.to(torch.device("cuda", _cuda_index(d))) for d in devices]

    for name, value in {
        "_scatter": dp_scatter,
        "_gather": dp_gather,
        "_broadcast_coalesced": dp_broadcast_coalesced,
        "_broadcast": dp_broadcast,
    }.items():
        p(torch._C, name, value)

    def parallel_apply(modules: Any, inputs: Any, kwargs_tup: Any = None, devices: Any = None) -> list[Any]:
        kwargs_tup = kwargs_tup if kwargs_tup is not None else ({},) * len(modules)
        devices = devices if devices is not None else [None] * len(modules)
        outputs = []
        for module, inp, kw, device in zip(modules, inputs, kwargs_tup, devices):
            if not isinstance(inp, (list, tuple)):
                inp = (inp,)
            with torch.cuda.device(device if device is not None else emu.current):
                outputs.append(module(*inp, **kw))
        return outputs

    __import__("torch.nn.parallel.data_parallel")  # submodules are shadowed by same-named functions
    functions_mod = sys.modules.get("torch.nn.parallel._functions")
    comm_mod = sys.modules.get("torch.nn.parallel.comm")
    if functions_mod is not None and comm_mod is not None:

        def scatter_forward(ctx: Any, target_gpus: Any, chunk_sizes: Any, dim: int, input: torch.Tensor) -> Any:
            # the real one copies from the CPU on background streams; here copies are synchronous
            target_gpus = [_cuda_index(x) for x in target_gpus]
            ctx.dim = dim
            ctx.input_device = input.get_device() if input.device.type != "cpu" else -1
            return comm_mod.scatter(input, target_gpus, chunk_sizes, ctx.dim, None)

        p(functions_mod.Scatter, "forward", staticmethod(scatter_forward))
    p(cuda.nccl, "is_available", lambda tensors=None: False)
    # the package re-exports it too (`from torch.nn.parallel import parallel_apply`, as custom
    # DataParallel wrappers and scripts that replicate by hand do)
    for modname in ("torch.nn.parallel.parallel_apply", "torch.nn.parallel.data_parallel", "torch.nn.parallel"):
        mod = sys.modules.get(modname)
        if mod is not None:
            p(mod, "parallel_apply", parallel_apply)

    # Custom autograd.Function: the gradient of an output the loss does not reach is materialized
    # by the autograd engine as zeros built from the output's options, which C++ sees as CPU
    # options, so it reaches the mode as a wild buffer. On a GPU it is a zeros tensor on the
    # output's device: DataParallel's Broadcast/Gather backward (reduce_add) and any backward that
    # reads ``grad.device`` depend on it. Record the outputs' devices at forward; give the zeros
    # those devices when the node's backward is called.
    fn_cls = torch.autograd.function.Function
    bw_cls = torch.autograd.function.BackwardCFunction
    orig_fn_apply = fn_cls.__dict__["apply"].__func__
    orig_bw_apply = bw_cls.__dict__["apply"]
    orig_bw_boxed = bw_cls.__dict__["apply_boxed"]

    def fn_apply(cls: Any, *args: Any, **kwargs: Any) -> Any:
        out = orig_fn_apply(cls, *args, **kwargs)
        outs = out if type(out) is tuple else (out,)
        node = None
        for o in outs:
            if isinstance(o, _Tensor):
                node = o.grad_fn
                if node is not None:
                    break
        if node is not None and isinstance(node, bw_cls):
            node._gl_out_devices = tuple(code_of(o) if isinstance(o, _Tensor) else None for o in outs)
        return out

    def _place_materialized(node: Any, grads: Any) -> None:
        codes = node.__dict__.get("_gl_out_devices")
        if codes is None:
            return
        for g, code in zip(grads, codes):
            if type(g) is _WildTensor and code is not None and code >= CPU and _adopted(g) is None:
                emu._adopt(g, code)

    def bw_apply(self: Any, *args: Any) -> Any:
        _place_materialized(self, args)
        return orig_bw_apply(self, *args)

    def bw_apply_boxed(self: Any, *args: Any) -> Any:
        if args and type(args[0]) is list:
            _place_materialized(self, args[0])
        return orig_bw_boxed(self, *args)

    functools.update_wrapper(fn_apply, orig_fn_apply)
    p(fn_cls, "apply", classmethod(fn_apply))
    p(bw_cls, "apply", functools.update_wrapper(bw_apply, orig_bw_apply))
    p(bw_cls, "apply_boxed", functools.update_wrapper(bw_apply_boxed, orig_bw_boxed))

    # Threads started while emulating run under the emulation too (the dispatch mode is per thread).
    orig_bootstrap = threading.Thread._bootstrap_inner  # type: ignore[attr-defined]

    def bootstrap_inner(thread: threading.Thread) -> None:
        if _ACTIVE is emu:
            with _EmulationMode(emu), _IntDeviceMode():
                return orig_bootstrap(thread)
        return orig_bootstrap(thread)

    p(threading.Thread, "_bootstrap_inner", bootstrap_inner)

    # torch.Generator(device="cuda"): a CPU generator that reports the CUDA device
    p(torch, "Generator", _generator_factory(torch.Generator))

    # RNNs: the device check happens inside C++ composite code that the dispatch mode cannot see
    vf = torch._VF
    for rnn_name in ("lstm", "gru", "rnn_tanh", "rnn_relu"):
        orig_rnn = getattr(vf, rnn_name)

        def rnn(*args: Any, __orig: Any = orig_rnn, **kwargs: Any) -> Any:
            _check_rnn_devices(args)
            return __orig(*args, **kwargs)

        p(vf, rnn_name, rnn)

    # Features that cannot be emulated
    orig_compile = torch.compile
    refuse_compile = _unsupported("torch.compile", "TorchInductor generates Triton/CUDA kernels that need a real GPU")

    def compile(*args: Any, **kwargs: Any) -> Any:
        backend = kwargs.get("backend", "inductor")
        if backend not in ("eager", "aot_eager"):
            return refuse_compile()
        # no generated kernels: the captured graph would run the same operators eagerly, so run the
        # model eagerly (Dynamo cannot trace through the emulator's dispatch mode), in the wrapper
        # torch.compile returns (``_orig_mod``, prefixed state_dict keys)
        model = args[0] if args else kwargs.get("model")
        if model is None:
            return lambda m: compile(m, **{k: v for k, v in kwargs.items() if k != "model"})
        from torch._dynamo.eval_frame import DisableContext, OptimizedModule

        if isinstance(model, torch.nn.Module):
            return OptimizedModule(model, DisableContext())
        return functools.wraps(model)(lambda *a, **k: model(*a, **k))

    functools.update_wrapper(compile, orig_compile)
    p(torch, "compile", compile)
    try:
        import torch.distributed as dist

        if dist.is_available():
            _install_nccl(emu, p, dist)
    except ImportError:  # pragma: no cover
        pass
    try:
        import torch.utils.cpp_extension as cpp_ext

        for fname in ("load", "load_inline"):
            orig = getattr(cpp_ext, fname)

            def guarded(*args: Any, __orig: Any = orig, **kwargs: Any) -> Any:
                sources = kwargs.get("sources", args[1] if len(args) > 1 else ())
                cuda_sources = kwargs.get("cuda_sources")
                if isinstance(sources, str):
                    sources = [sources]
                if kwargs.get("with_cuda") or cuda_sources or any(str(s).endswith((".cu", ".cuh")) for s in sources or ()):
                    _unsupported("CUDA extensions", "custom CUDA kernels need nvcc and a real GPU")()
                return __orig(*args, **kwargs)

            p(cpp_ext, fname, guarded)
    except Exception:  # pragma: no cover
        pass
