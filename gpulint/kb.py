"""What torch's API does, as data: the knowledge base the flow engine reads.

`gpulint check` never imports torch. `scripts/gen_torch_kb.py` introspects an installed torch at
development time and writes `gpulint/data/torch_api.json` (kinds of classes from their real MRO,
what functions return and which arguments are tensor operands, how Tensor and nn.Module methods
relate to their receiver); `tests/test_kb.py` regenerates it and fails when it is stale.
Libraries beside torch (torchvision, timm, torchmetrics, transformers, ...) get a small
hand-written table, `gpulint/data/ecosystem.json`, consulted only where torch's data is silent.

Answers are strings (kinds and categories below) or None for "unknown": callers stay silent on
None.

Class kinds: module, optimizer, scheduler, dataset, dataloader, sampler, scaler, tensor,
tensor_type (legacy `torch.FloatTensor`), device, dtype, generator, stream, event, autocast,
grad_mode, distribution, class (anything else), and from the ecosystem table metric, transform,
tokenizer, trainer, accelerator.

Function results (`FuncInfo.returns`): tensor, tensors (a tuple/list of tensors),
tensor_or_tensors (depends on the overload), mixed, other, none; from the ecosystem table also a
kind (module, scheduler, optimizer, dataloader, ...).

Tensor methods (`tensor_method`): same (a tensor on the receiver's device), tensors (several,
same device), move (`to`, `cuda`, `type`...), host (`cpu`), cast (`half`, `float`...: same device,
other dtype), inplace (mutates and returns the receiver), host_value (`item`, `tolist`,
`numpy`, `size`...), none, other.

Module methods (`module_method`): inplace_move, inplace_host, inplace_cast, returns_self,
tensor_iter, named_tensor_iter, module_iter, named_module_iter, module, tensor, state_dict,
call, none, other.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path

_DATA = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True)
class FuncInfo:
    qualname: str
    returns: str
    tensor_params: tuple[str, ...] = ()  # positional order; "*args" = every further positional
    device_param: bool = False  # takes device=
    dtype_param: bool = False  # takes dtype=
    random: bool = False  # draws from a random generator
    tags: tuple[str, ...] = ()  # ecosystem facts, e.g. ("host",): the result is on the host
    # where the tensor parameters sit among the positional ones when other parameters come between
    # them (`torch.stft(input, n_fft, hop_length, win_length, window)`): a name per position, None
    # at a non-tensor one; empty when the tensor parameters are the first positional ones in order
    slots: tuple = ()

    @property
    def is_tensor(self) -> bool:
        return self.returns in ("tensor", "tensors", "tensor_or_tensors")


@lru_cache(maxsize=1)
def _torch() -> dict:
    with open(_DATA / "torch_api.json", encoding="utf-8") as f:
        return json.load(f)


@lru_cache(maxsize=1)
def _eco() -> dict:
    with open(_DATA / "ecosystem.json", encoding="utf-8") as f:
        return json.load(f)


def torch_version() -> str:
    """The torch version the knowledge base was generated from."""
    return _torch()["torch_version"]


def canonical(qualname: str) -> str:
    """The knowledge base's name for a public alias (`torch.nn.modules.linear.Linear` ->
    `torch.nn.Linear`, `torch.amp.GradScaler` -> `torch.GradScaler`); other names unchanged."""
    return _torch()["aliases"].get(qualname, qualname)


def _last_is_upper(q: str) -> bool:
    last = q.rsplit(".", 1)[-1]
    return bool(last) and last[0].isupper()


@lru_cache(maxsize=4096)
def _class_entry(qualname: str) -> tuple[str, tuple[str, ...]] | None:
    q = canonical(qualname)
    e = _torch()["classes"].get(q)
    if e is not None:
        return e["k"], tuple(e.get("t", ()))
    if q.startswith("torch."):
        return None
    upper = _last_is_upper(q)
    for prefix, pattern, kind, case, tags in _eco_globs("classes"):
        if (case == "upper") != upper or not q.startswith(prefix):
            continue
        if fnmatchcase(q, pattern):
            return kind, tuple(tags)
    return None


def _literal_prefix(pattern: str) -> str:
    """The part of an fnmatch glob before its first wildcard: every name it matches starts so."""
    cut = min((i for i in (pattern.find("*"), pattern.find("?"), pattern.find("[")) if i >= 0), default=len(pattern))
    return pattern[:cut]


@lru_cache(maxsize=2)
def _eco_globs(table: str) -> tuple[tuple, ...]:
    """The ecosystem table's rows with their patterns' literal prefixes first: a name is matched
    against (and fnmatch compiles) only the patterns of its own library."""
    return tuple((_literal_prefix(row[0]), *row) for row in _eco()[table])


def class_kind(qualname: str | None) -> str | None:
    """The kind of the class a dotted name denotes, or None when unknown."""
    if not qualname:
        return None
    e = _class_entry(qualname)
    return e[0] if e else None


def class_tags(qualname: str | None) -> tuple[str, ...]:
    """Tags of a known class: loss, wrapper, container, lazy, norm, embedding, iterable,
    averaged, plateau (torch); stateful, hf, lightning, timm, ema... (ecosystem)."""
    if not qualname:
        return ()
    e = _class_entry(qualname)
    return e[1] if e else ()


@lru_cache(maxsize=4096)
def function(qualname: str | None) -> FuncInfo | None:
    """What calling a known function does, or None when unknown."""
    if not qualname:
        return None
    q = canonical(qualname)
    e = _torch()["functions"].get(q)
    if e is not None:
        f = e.get("f", "")
        return FuncInfo(q, e["r"], tuple(e.get("p", ())), "d" in f, "t" in f, "r" in f, slots=tuple(e.get("a", ())))
    if q.startswith("torch.") or _last_is_upper(q):
        return None
    for prefix, pattern, returns, tags in _eco_globs("functions"):
        if q.startswith(prefix) and fnmatchcase(q, pattern):
            return FuncInfo(q, returns, tags=tuple(tags))
    return None


def tensor_method(name: str) -> str | None:
    """How `t.<name>(...)` relates to the tensor t (see the module docstring)."""
    return _torch()["tensor_methods"].get(name)


def tensor_attribute(name: str) -> str | None:
    """`t.<name>` without a call: same (`T`, `data`, `grad`...), device, dtype, host_value."""
    return _torch()["tensor_attributes"].get(name)


def module_method(name: str) -> str | None:
    """How `m.<name>(...)` relates to the nn.Module m (see the module docstring)."""
    return _torch()["module_methods"].get(name)


def is_instance_constructor(method: str) -> bool:
    """`Cls.from_pretrained(...)` and friends return an instance of Cls."""
    return method in _eco()["instance_constructors"]
