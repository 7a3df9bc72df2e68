"""Generate gpulint's torch API knowledge base from the installed torch.

    python scripts/gen_torch_kb.py            # rewrite gpulint/data/torch_api.json
    python scripts/gen_torch_kb.py --check    # exit 1 when the shipped file differs

A development tool: it imports torch; `gpulint check` never does (it reads the JSON this writes,
through `gpulint.kb`). What it records, all derived from torch itself:

- classes: every public class reachable from the public torch modules below, with its kind from
  its real MRO (`torch.optim.swa_utils.AveragedModel` is a Module, not an optimizer) and tags
  (loss, wrapper, container, lazy, norm, embedding...);
- aliases: other public dotted names of the same object (`torch.nn.modules.linear.Linear` ->
  `torch.nn.Linear`);
- functions: what they return (from the ATen operator schemas for C-bound functions, from
  annotations for Python ones, from the docstring's signature line for the few bindings that have
  neither), which parameters are tensor operands, whether they take `device=` / `dtype=` and
  whether they draw from a random generator;
- tensor_methods / tensor_attributes: how each public `Tensor` method relates to its receiver
  (same device, moves, in place, host value...);
- module_methods: the same for `nn.Module` methods.

The output is deterministic (sorted keys), so a test can regenerate it and compare.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import re
import sys
import typing
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "gpulint" / "data" / "torch_api.json"
FORMAT = 1

# Public modules whose names users import. Order matters: the first module that exposes an
# object gives its canonical name.
PRIVATE_BASES = ["torch.optim.lr_scheduler._LRScheduler"]

MODULES = [
    "torch",
    "torch.nn",
    "torch.nn.functional",
    "torch.nn.init",
    "torch.nn.utils",
    "torch.nn.utils.rnn",
    "torch.nn.utils.parametrizations",
    "torch.nn.parallel",
    "torch.nn.parameter",
    "torch.optim",
    "torch.optim.lr_scheduler",
    "torch.optim.swa_utils",
    "torch.amp",
    "torch.autocast_mode",
    "torch.cuda",
    "torch.cuda.amp",
    "torch.cpu",
    "torch.cpu.amp",
    "torch.mps",
    "torch.backends.cudnn",
    "torch.accelerator",
    "torch.autograd",
    "torch.autograd.functional",
    "torch.linalg",
    "torch.fft",
    "torch.special",
    "torch.sparse",
    "torch.distributions",
    "torch.distributed",
    "torch.distributed.fsdp",
    "torch.distributed.optim",
    "torch.utils.data",
    "torch.utils.data.distributed",
    "torch.utils.checkpoint",
    "torch.random",
    "torch.testing",
    "torch.jit",
    "torch.profiler",
    "torch.hub",
    "torch.nn.modules",
    "torch.nn.modules.loss",
    "torch.nn.modules.module",
]

# Tensor methods whose relation to the receiver is not in their schema (or not only there).
TENSOR_METHOD_OVERRIDES = {
    "to": "move", "cuda": "move", "type": "move", "xpu": "move", "mps": "move", "ipu": "move",
    "mtia": "move", "hpu": "move",
    "cpu": "host",
    "half": "cast", "float": "cast", "double": "cast", "bfloat16": "cast", "long": "cast",
    "int": "cast", "short": "cast", "byte": "cast", "char": "cast", "bool": "cast",
    "cfloat": "cast", "cdouble": "cast", "type_as": "move",
    "item": "host_value", "tolist": "host_value", "numpy": "host_value",
    "backward": "none", "register_hook": "other", "data_ptr": "host_value",
    "get_device": "host_value", "size": "host_value", "dim": "host_value", "numel": "host_value",
    "stride": "host_value", "element_size": "host_value", "nelement": "host_value",
    "pin_memory": "same", "detach": "same", "clone": "same", "contiguous": "same",
    "requires_grad_": "inplace", "share_memory_": "inplace", "record_stream": "none",
    "untyped_storage": "other", "storage": "other", "new_tensor": "same", "new_zeros": "same",
    "new_ones": "same", "new_empty": "same", "new_full": "same",
}
TENSOR_ATTRIBUTE_OVERRIDES = {
    "device": "device", "dtype": "dtype", "shape": "host_value", "ndim": "host_value",
    "is_cuda": "host_value", "requires_grad": "host_value", "is_leaf": "host_value",
    "grad_fn": "other", "layout": "other", "names": "host_value", "is_sparse": "host_value",
    "is_quantized": "host_value", "is_meta": "host_value", "itemsize": "host_value",
    "nbytes": "host_value", "is_mps": "host_value", "is_cpu": "host_value",
}
TENSOR_SAME_ATTRIBUTES = ("T", "mT", "H", "mH", "data", "grad", "real", "imag")

# nn.Module methods: what they do to the receiver.
MODULE_METHODS = {
    "to": "inplace_move", "cuda": "inplace_move", "xpu": "inplace_move", "ipu": "inplace_move",
    "mtia": "inplace_move", "to_empty": "inplace_move", "type": "inplace_move",
    "cpu": "inplace_host",
    "half": "inplace_cast", "float": "inplace_cast", "double": "inplace_cast",
    "bfloat16": "inplace_cast",
    "train": "returns_self", "eval": "returns_self", "apply": "returns_self",
    "requires_grad_": "returns_self", "share_memory": "returns_self",
    "parameters": "tensor_iter", "buffers": "tensor_iter", "named_parameters": "named_tensor_iter",
    "named_buffers": "named_tensor_iter",
    "children": "module_iter", "modules": "module_iter", "named_children": "named_module_iter",
    "named_modules": "named_module_iter", "get_submodule": "module",
    "get_parameter": "tensor", "get_buffer": "tensor",
    "state_dict": "state_dict", "load_state_dict": "other", "zero_grad": "none",
    "forward": "call", "compile": "none", "register_buffer": "none",
    "register_parameter": "none", "add_module": "none", "register_module": "none",
}

TAG_BASES = [
    ("loss", "torch.nn.modules.loss._Loss"),
    ("wrapper", "torch.nn.DataParallel"),
    ("wrapper", "torch.nn.parallel.DistributedDataParallel"),
    ("container", "torch.nn.Sequential"),
    ("container", "torch.nn.ModuleList"),
    ("container", "torch.nn.ModuleDict"),
    ("container", "torch.nn.ParameterList"),
    ("container", "torch.nn.ParameterDict"),
    ("lazy", "torch.nn.modules.lazy.LazyModuleMixin"),
    ("norm", "torch.nn.modules.batchnorm._NormBase"),
    ("embedding", "torch.nn.Embedding"),
    ("embedding", "torch.nn.EmbeddingBag"),
    ("iterable", "torch.utils.data.IterableDataset"),
    ("averaged", "torch.optim.swa_utils.AveragedModel"),
    ("plateau", "torch.optim.lr_scheduler.ReduceLROnPlateau"),
]


def _obj(path: str):
    mod, _, name = path.rpartition(".")
    return getattr(importlib.import_module(mod), name)


def _kind_bases(torch):
    import torch.utils.data as tud

    sched = [torch.optim.lr_scheduler.LRScheduler]
    plateau = getattr(torch.optim.lr_scheduler, "ReduceLROnPlateau", None)
    if plateau is not None:
        sched.append(plateau)
    streams = [torch.cuda.Stream]
    if hasattr(torch, "Stream"):
        streams.append(torch.Stream)
    events = [torch.cuda.Event]
    if hasattr(torch, "Event"):
        events.append(torch.Event)
    grad_modes = [torch.no_grad, torch.enable_grad, torch.inference_mode, torch.set_grad_enabled]
    return [
        ("module", [torch.nn.Module]),
        ("optimizer", [torch.optim.Optimizer]),
        ("scheduler", sched),
        ("dataloader", [tud.DataLoader]),
        ("sampler", [tud.Sampler]),
        ("dataset", [tud.Dataset]),
        ("scaler", [torch.amp.GradScaler]),
        ("tensor", [torch.Tensor]),
        ("device", [torch.device]),
        ("dtype", [torch.dtype]),
        ("generator", [torch.Generator]),
        ("stream", streams),
        ("event", events),
        ("autocast", [torch.autocast]),
        ("grad_mode", grad_modes),
        ("distribution", [torch.distributions.Distribution]),
    ]


def class_kind(cls, kind_bases) -> str:
    for kind, bases in kind_bases:
        for b in bases:
            try:
                if isinstance(b, type) and issubclass(cls, b):
                    return kind
            except TypeError:
                continue
    return "class"


def class_tags(cls) -> list[str]:
    tags = []
    for tag, path in TAG_BASES:
        try:
            base = _obj(path)
        except (ImportError, AttributeError):
            continue
        if isinstance(base, type) and issubclass(cls, base) and tag not in tags:
            tags.append(tag)
    return tags


# ----------------------------------------------------------------------------- functions
_TENSOR_TYPES = ("Tensor", "Optional[Tensor]", "List[Tensor]", "List[Optional[Tensor]]")


def _schema_info(schemas) -> dict:
    returns = set()
    tensor_params: list[str] = []
    positions: dict[str, int | None] = {}  # a tensor parameter's positional index (None: overloads differ)
    device = dtype = random = False
    for sc in schemas:
        if sc.overload_name == "out" or sc.overload_name.endswith("_out") or any(
            a.name == "out" for a in sc.arguments
        ):
            continue
        rets = [str(r.type) for r in sc.returns]
        takes_tensor = any(str(a.type) in _TENSOR_TYPES for a in sc.arguments)
        if not takes_tensor and not (rets and all(r in ("Tensor", "List[Tensor]") for r in rets)):
            continue  # a TorchScript scalar overload (aten::add.int), not the tensor function
        if rets == ["Tensor"]:
            returns.add("tensor")
        elif rets and all(r in ("Tensor", "List[Tensor]") for r in rets):
            returns.add("tensors")
        elif rets:
            returns.add("other")
        else:
            returns.add("none")
        for j, a in enumerate(sc.arguments):
            t = str(a.type)
            if t in _TENSOR_TYPES and not a.kwarg_only and a.name not in tensor_params:
                tensor_params.append(a.name)
            if t in _TENSOR_TYPES and not a.kwarg_only:
                positions[a.name] = j if positions.get(a.name, j) == j else None
            if a.name == "device":
                device = True
            if a.name == "dtype":
                dtype = True
            if a.name == "generator":
                random = True
    if not returns:
        return {}
    ret = _merge_returns(returns)
    return {"returns": ret, "tensor_params": tensor_params, "positions": positions, "device": device,
            "dtype": dtype, "random": random}


def _merge_returns(returns: set) -> str:
    """One answer for all overloads: tensor | tensors | tensor_or_tensors | mixed | other | none."""
    if returns == {"tensor"}:
        return "tensor"
    if returns == {"tensors"}:
        return "tensors"
    if returns == {"tensor", "tensors"}:
        return "tensor_or_tensors"
    if returns & {"tensor", "tensors"}:
        return "mixed"
    return "other" if "other" in returns else sorted(returns)[0]


def _ann_str(ann) -> str:
    if ann is inspect.Parameter.empty or ann is inspect.Signature.empty:
        return ""
    if isinstance(ann, str):
        return ann
    return getattr(ann, "__name__", None) if isinstance(ann, type) else str(ann)


def _is_tensor_ann(s: str) -> bool:
    return bool(re.search(r"\bTensor\b", s)) and "Iterable" not in s and "Callable" not in s


def _returns_from_ann(s: str) -> str | None:
    if not s:
        return None
    s = s.replace("torch.", "")
    if re.fullmatch(r"(Tensor|Parameter)", s):
        return "tensor"
    if re.fullmatch(r"(tuple|Tuple|list|List)\[(Tensor|, |\.\.\.| )+\]", s):
        return "tensors"
    if "Tensor" in s:
        return "mixed"
    if s in ("None", "NoneType"):
        return "none"
    return "other"


def _signature_info(fn) -> dict:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return {}
    params = sig.parameters
    positional = [n for n, p in params.items() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    info = {
        "returns": _returns_from_ann(_ann_str(sig.return_annotation)),
        "positions": {n: j for j, n in enumerate(positional) if _is_tensor_ann(_ann_str(params[n].annotation))},
        "tensor_params": [n for n, p in params.items()
                          if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                          and _is_tensor_ann(_ann_str(p.annotation))]
                         + [f"*{n}" for n, p in params.items() if p.kind == p.VAR_POSITIONAL],
        "device": "device" in params,
        "dtype": "dtype" in params,
        "random": "generator" in params,
    }
    return info


_DOC_SIG = re.compile(r"^\s*(\w+)\((.*)\)\s*->\s*(.+?)\s*$")


def _doc_info(fn) -> dict:
    doc = inspect.getdoc(fn) or ""
    first = doc.strip().splitlines()[0] if doc.strip() else ""
    m = _DOC_SIG.match(first)
    if not m:
        return {}
    args, ret = m.group(2), m.group(3)
    names = [a.strip().split(":")[0].split("=")[0].strip() for a in args.split(",")]
    pos = []
    for n in names:
        if n in ("*", ""):
            break
        pos.append(n)
    return {
        "returns": _returns_from_ann(ret),
        "tensor_params": [n for n in pos if n in ("input", "other", "tensor", "tensors", "self")],
        "positions": {n: j for j, n in enumerate(pos) if n in ("input", "other", "tensor", "tensors", "self")},
        "device": "device" in names,
        "dtype": "dtype" in names,
        "random": "generator" in names,
    }


def function_info(name: str, fn, schemas_by_name) -> dict | None:
    info = {}
    base = getattr(fn, "__name__", name) or name
    sch = schemas_by_name.get(base) or schemas_by_name.get(name)
    if sch and (inspect.isbuiltin(fn) or type(fn).__name__ in ("builtin_function_or_method",)):
        info = _schema_info(sch)
    if not info or not info.get("returns"):
        sinfo = _signature_info(fn)
        if sinfo.get("returns"):
            info = sinfo
        elif sch:
            info = _schema_info(sch) or sinfo
    if not info or not info.get("returns"):
        dinfo = _doc_info(fn)
        if dinfo.get("returns"):
            info = dinfo
    if not info or not info.get("returns"):
        return None
    flags = "".join(f for f, k in (("d", "device"), ("t", "dtype"), ("r", "random")) if info.get(k))
    out = {"r": info["returns"], "p": info.get("tensor_params", []), "f": flags}
    slots = _positional_slots(out["p"], info.get("positions") or {})
    if slots is not None:
        out["a"] = slots
    return out


def _positional_slots(tensor_params: list, positions: dict) -> list | None:
    """Where the tensor parameters sit among the positional ones, when that differs from their own
    order (`torch.stft(input, n_fft, hop_length, win_length, window)`: window is the fifth
    positional argument): a list with each tensor parameter's name at its position, null at the
    others; None when they are the first positional parameters in order, or overloads disagree."""
    names = list(tensor_params)
    if not names or any(n.startswith("*") or positions.get(n) is None for n in names):
        return None
    if all(positions[n] == i for i, n in enumerate(names)):
        return None
    if len({positions[n] for n in names}) != len(names):
        return None  # overloads name the same position differently (`torch.eq(self, other)` / `(a, b)`)
    slots: list = [None] * (max(positions[n] for n in names) + 1)
    for n in names:
        slots[positions[n]] = n
    return slots


# ----------------------------------------------------------------------------- tensor methods
def tensor_method_kind(name: str, attr, schemas_by_name) -> str | None:
    if name in TENSOR_METHOD_OVERRIDES:
        return TENSOR_METHOD_OVERRIDES[name]
    sch = schemas_by_name.get(name)
    if sch:
        self_sch = [s for s in sch if s.arguments and s.arguments[0].name == "self"
                    and str(s.arguments[0].type) == "Tensor"
                    and not any(a.name == "out" for a in s.arguments)]
        if self_sch:
            s0 = self_sch[0]
            alias = s0.arguments[0].alias_info
            if name.endswith("_") and alias is not None and alias.is_write:
                return "inplace"
            rets = {tuple(str(r.type) for r in s.returns) for s in self_sch}
            if all(r == ("Tensor",) for r in rets):
                return "same"
            if all(r and all(x in ("Tensor", "List[Tensor]") for x in r) for r in rets):
                return "tensors"
            if all(r and all(x in ("int", "float", "bool", "number", "Scalar", "complex",
                                   "List[int]") for x in r) for r in rets):
                return "host_value"
            if all(r == () for r in rets):
                return "none"
            return None
    info = _signature_info(attr) if callable(attr) else {}
    r = info.get("returns")
    if r == "tensor":
        return "same"
    if r == "tensors":
        return "tensors"
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the shipped file, write nothing")
    ap.add_argument("-o", "--output", type=Path, default=OUT)
    args = ap.parse_args()
    data = generate()
    text = json.dumps(data, indent=0, sort_keys=True, separators=(",", ":")) + "\n"
    if args.check:
        old = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if old != text:
            print(f"{args.output} is out of date; run: python scripts/gen_torch_kb.py", file=sys.stderr)
            return 1
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output}: {len(data['classes'])} classes, {len(data['functions'])} functions, "
          f"{len(data['tensor_methods'])} tensor methods (torch {data['torch_version']})")
    return 0


def generate() -> dict:
    import warnings

    warnings.simplefilter("ignore")
    import torch

    schemas_by_name: dict[str, list] = {}
    for sc in torch._C._jit_get_all_schemas():
        ns, _, nm = sc.name.partition("::")
        if ns == "aten":
            schemas_by_name.setdefault(nm, []).append(sc)

    kind_bases = _kind_bases(torch)
    classes: dict[str, dict] = {}
    functions: dict[str, dict] = {}
    aliases: dict[str, str] = {}
    canonical_of: dict[int, str] = {}

    for modname in MODULES:
        try:
            mod = importlib.import_module(modname)
        except Exception:  # noqa: BLE001 - optional modules (e.g. distributed on some builds)
            continue
        public = getattr(mod, "__all__", None)
        names = set(public) if public else {n for n in dir(mod) if not n.startswith("_")}
        if modname == "torch":
            # `from torch.functional import *` puts torch.unique, torch.split, torch.einsum... on
            # `torch` without listing them in `torch.__all__`
            functional = importlib.import_module("torch.functional")
            names |= {n for n in getattr(functional, "__all__", ()) if hasattr(mod, n)}
        names = sorted(names)
        for n in names:
            if n.startswith("_"):
                continue
            try:
                obj = getattr(mod, n)
            except Exception:  # noqa: BLE001
                continue
            q = f"{modname}.{n}"
            if inspect.ismodule(obj):
                continue
            key = id(obj)
            if type(obj).__name__ == "tensortype":  # torch.FloatTensor, torch.cuda.LongTensor
                classes[q] = {"k": "tensor_type", "t": ["cuda"] if modname == "torch.cuda" else ["host"]}
                continue
            if isinstance(obj, type):
                if key in canonical_of and canonical_of[key] != q:
                    aliases[q] = canonical_of[key]
                    continue
                canonical_of[key] = q
                entry = {"k": class_kind(obj, kind_bases)}
                tags = class_tags(obj)
                if tags:
                    entry["t"] = tags
                classes[q] = entry
            elif callable(obj):
                info = function_info(n, obj, schemas_by_name)
                if info is None:
                    continue
                if key in canonical_of and canonical_of[key] != q and not inspect.isbuiltin(obj):
                    aliases[q] = canonical_of[key]
                    continue
                canonical_of.setdefault(key, q)
                functions[q] = info

    # Private base classes that training code subclasses by name all the same (a warm-up schedule
    # written as `class Warmup(_LRScheduler)`, fixtures41 G41-1): listed like the public ones.
    for q in PRIVATE_BASES:
        try:
            obj = _obj(q)
        except Exception:  # noqa: BLE001 - gone in this torch
            continue
        if isinstance(obj, type) and q not in classes:
            entry = {"k": class_kind(obj, kind_bases)}
            tags = class_tags(obj)
            if tags:
                entry["t"] = tags
            classes[q] = entry

    # Classes users import from their defining module too (torch.nn.modules.linear.Linear).
    for q, entry in list(classes.items()):
        cls = _obj(q)
        defining = f"{cls.__module__}.{cls.__qualname__}"
        if defining != q and defining not in classes and "<" not in defining:
            aliases.setdefault(defining, q)

    tensor_methods: dict[str, str] = {}
    tensor_attributes: dict[str, str] = {}
    for n in sorted(dir(torch.Tensor)):
        if n.startswith("_"):
            continue
        attr = getattr(torch.Tensor, n)
        if n in TENSOR_ATTRIBUTE_OVERRIDES:
            tensor_attributes[n] = TENSOR_ATTRIBUTE_OVERRIDES[n]
            continue
        if n in TENSOR_SAME_ATTRIBUTES:
            tensor_attributes[n] = "same"
            continue
        if not callable(attr):
            continue
        k = tensor_method_kind(n, attr, schemas_by_name)
        if k:
            tensor_methods[n] = k

    module_methods = {n: MODULE_METHODS[n] for n in sorted(MODULE_METHODS)
                      if hasattr(torch.nn.Module, n)}

    return {
        "format": FORMAT,
        "torch_version": torch.__version__,
        "classes": classes,
        "aliases": aliases,
        "functions": functions,
        "tensor_methods": tensor_methods,
        "tensor_attributes": tensor_attributes,
        "module_methods": module_methods,
    }


if __name__ == "__main__":
    raise SystemExit(main())
