"""GL120 default-device-with-cpu-generator."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.amp import AmpFacts
from gpulint.flow import runs_on_gpu
from gpulint.model import DATALOADER_CLASSES, dotted
from gpulint.rule import Context, Rule
from gpulint.sites import lines_of

SET_DEFAULT_DEVICE = frozenset({"torch.set_default_device"})
SET_DEFAULT_TENSOR_TYPE = frozenset({"torch.set_default_tensor_type"})
RANDOM_SAMPLERS = frozenset({"torch.utils.data.RandomSampler", "torch.utils.data.sampler.RandomSampler"})
# a DistributedSampler that shuffles seeds a fresh `torch.Generator()` (CPU) in every `__iter__` and
# takes no `generator=`: under a CUDA default its `randperm` refuses it
DISTRIBUTED_SAMPLERS = frozenset(
    {"torch.utils.data.DistributedSampler", "torch.utils.data.distributed.DistributedSampler"}
)
GENERATORS = frozenset({"torch.Generator", "torch._C.Generator"})
# `random_split(dataset, lengths, generator=default_generator)` draws its permutation when called,
# with the default CPU generator unless one is passed
RANDOM_SPLITS = frozenset({"torch.utils.data.random_split", "torch.utils.data.dataset.random_split"})
# frameworks that build or re-build the loaders and samplers themselves
LOADER_FRAMEWORKS = frozenset({"lightning", "accelerate", "hf-trainer", "deepspeed", "ignite", "composer"})


class DefaultDeviceWithCpuGenerator(Rule):
    code = "GL120"
    name = "default-device-with-cpu-generator"
    summary = "CUDA made the default device while a shuffling DataLoader / RandomSampler draws from a CPU generator."
    message = "{setter} makes CUDA the default device, but the shuffling {what} at {line} draws its permutation with a CPU `torch.Generator`: iterating it raises \"Expected a 'cuda' device type for generator but found 'cpu'\"; {advice}"
    fix_safety = "none"
    default = True
    kind = "crash"
    prefilter = r"set_default_device|set_default_tensor_type|torch\.device\("
    ast_prefilter = r"set_default_device|set_default_tensor_type|^device$"
    explanation = '''
`torch.set_default_device("cuda")` (and the older `torch.set_default_tensor_type(torch.cuda.FloatTensor)`,
or a `with torch.device("cuda"):` block) makes every tensor factory allocate on the GPU, the ones
inside PyTorch included. A `DataLoader(..., shuffle=True)` samples with a `RandomSampler`, which
creates a plain `torch.Generator()` (a CPU generator) and calls `torch.randperm(n, generator=...)`. `torch.utils.data.random_split` does the same when it is called, with the
default CPU generator unless `generator=` is given.
With CUDA as the default device, `randperm` runs on the GPU and refuses the CPU generator: the first
iteration raises `RuntimeError: Expected a 'cuda' device type for generator but found 'cpu'`.

Give the loader (or the sampler) a generator on the default device,
`generator=torch.Generator(device="cuda")`, or leave the default device alone and move the model and
the batches with `.to(device)`. No automatic fix: which device the generator belongs on, and
whether the data pipeline should build its tensors on the GPU at all, is the author's choice.

The rule fires when the file makes a CUDA device the default and builds a shuffling `DataLoader` or
a `RandomSampler` without a generator (or with a CPU one), or a shuffling `DistributedSampler` (it
seeds its own CPU `torch.Generator()` in every `__iter__` and takes no `generator=`, so the only
cure there is to keep the default device on the CPU). It stays silent when the file also sets
a non-CUDA default device (the order then decides), for loaders with `generator=` on another
device, and in scripts driven by Lightning, Accelerate or the Hugging Face Trainer.

Bad:

```python
torch.set_default_device("cuda")
loader = DataLoader(dataset, batch_size=32, shuffle=True)
for x, y in loader:
    ...
```

Good:

```python
torch.set_default_device("cuda")
loader = DataLoader(dataset, batch_size=32, shuffle=True, generator=torch.Generator(device="cuda"))
for x, y in loader:
    ...
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        if m.frameworks & LOADER_FRAMEWORKS:
            return
        setters, others = [], []
        for call in m.calls:
            q = m.qualname(call.func)
            if q in SET_DEFAULT_DEVICE or q in SET_DEFAULT_TENSOR_TYPE:
                if _sets_cuda(m, call, q in SET_DEFAULT_TENSOR_TYPE):
                    setters.append(call)
                elif runs_on_gpu(m, call):
                    others.append(call)  # a reset on a branch a GPU run skips does not count
        # a non-CUDA (or unknown) default set where a CUDA one may also run: the order decides
        # (the AMP facts are built only when a setter or a `with torch.device(...)` needs them)
        samplers = _cpu_shuffling(m)
        # a reset made after a shuffling loader was iterated, in the same scope (the default type
        # restored at the end of the script), comes too late for that loader
        others = [o for o in others if not any(_iterated_before(m, s, o) for s in samplers)]
        if any(not m.exclusive(o, s) for o in others for s in setters):
            return
        contexts = [w for w in m.withs if _cuda_device_context(m, w) is not None]
        if not setters and not contexts:
            return
        # a loader built and used up before every setter runs never draws under the CUDA default
        # (a tutorial notebook that demonstrates `set_default_tensor_type` in a late cell)
        if setters and not contexts:
            samplers = [s for s in samplers if not all(_used_up_before(m, s, o) for o in setters)]
        if not samplers:
            return
        first = samplers[0]
        q = m.qualname(first.func)
        what = "DataLoader" if q in DATALOADER_CLASSES else "DistributedSampler" if q in DISTRIBUTED_SAMPLERS else "RandomSampler"
        advice = (
            "it takes no `generator=`: keep the default device on the CPU and move the model and batches with `.to(device)`"
            if q in DISTRIBUTED_SAMPLERS
            else "pass `generator=torch.Generator(device=...)` (the default device) to it, or keep the default device and move tensors explicitly"
        )
        message = self.message
        if q in RANDOM_SPLITS:
            message = (
                "{setter} makes CUDA the default device, but `random_split` at {line} draws its permutation with "
                "the default CPU generator: it raises \"Expected a 'cuda' device type for generator but found "
                "'cpu'\"; {advice}"
            )
            advice = "pass `generator=torch.Generator(device=...)` (the default device) to it, or keep the default device and move tensors explicitly"
        for call in setters:
            setter = f"`{ctx.code(call)}`"
            yield ctx.finding(call, message.format(setter=setter, what=what, line=_where(ctx, call, first), advice=advice))
        for with_stmt in contexts:
            # a `with torch.device("cuda"):` block matters only where the loader runs inside it
            inside = [s for s in samplers if _iterated_inside(m, s, with_stmt)]
            if not inside:
                continue
            item = _cuda_device_context(m, with_stmt)
            setter = f"`with {ctx.code(item)}:`"
            yield ctx.finding(item, message.format(setter=setter, what=what, line=_where(ctx, item, inside[0]), advice=advice))


def _where(ctx, reported: cst.CSTNode, loader: cst.CSTNode) -> str:
    """`line 12`, or in a notebook the loader's cell and its line there (`cell 4, line 2`, as the
    reporter numbers cells), never a line of the joined script."""
    if ctx.line_of(reported) == ctx.line_of(loader):
        return "this line"
    return lines_of(ctx, reported, [loader]) or f"line {ctx.line_of(loader)}"


def _sets_cuda(m, call: cst.Call, tensor_type: bool) -> bool | None:
    """True when the call may make a CUDA device the default; None when it sets something else
    or the file does not show what."""  # noqa: D401
    args = [a for a in call.args if not a.star]
    if len(args) != len(call.args) or not args:
        return None
    value = args[0].value
    if tensor_type:
        q = m.qualname(value)
        if q is not None and q.startswith("torch.cuda.") and q.endswith("Tensor"):
            return True
        if isinstance(value, cst.SimpleString):
            text = value.evaluated_value
            if isinstance(text, str) and text.startswith("torch.cuda.") and text.endswith("Tensor"):
                return True
        return None
    devices = m.facts(AmpFacts).possible_devices(value)
    if devices is not None and "cuda" in devices:
        return True
    return None


def _cuda_device_context(m, with_stmt: cst.With) -> cst.Call | None:
    for item in with_stmt.items:
        it = item.item
        if isinstance(it, cst.Call) and m.qualname(it.func) == "torch.device" and it.args:
            devices = m.facts(AmpFacts).possible_devices(it)
            if devices is not None and "cuda" in devices:
                return it
    return None


def _cpu_shuffling(m) -> list[cst.Call]:
    """DataLoaders built with `shuffle=True` and RandomSamplers, without a generator or with a
    known CPU one, and DistributedSamplers that shuffle, in source order."""
    out = []
    for call in m.calls:
        q = m.qualname(call.func)
        if q in DATALOADER_CLASSES:
            if any(a.star for a in call.args):
                continue
            shuffle = _arg(call, "shuffle", 2)
            if not (isinstance(shuffle, cst.Name) and shuffle.value == "True"):
                continue
            if _arg(call, "sampler", 3) is not None or _arg(call, "batch_sampler", 4) is not None:
                continue
            if _cpu_generator(m, _arg(call, "generator", None)):
                out.append(call)
        elif q in RANDOM_SAMPLERS:
            if any(a.star for a in call.args):
                continue
            if _cpu_generator(m, _arg(call, "generator", 3)):
                out.append(call)
        elif q in RANDOM_SPLITS:
            if any(a.star for a in call.args):
                continue
            if _cpu_generator(m, _arg(call, "generator", 2)) or _default_generator(m, _arg(call, "generator", 2)):
                out.append(call)
        elif q in DISTRIBUTED_SAMPLERS:
            if any(a.star for a in call.args):
                continue
            # shuffles unless `shuffle=` is given and is not the literal True
            shuffle = _arg(call, "shuffle", 3)
            if shuffle is None or (isinstance(shuffle, cst.Name) and shuffle.value == "True"):
                out.append(call)
    return out


def _default_generator(m, expr) -> bool:
    """`torch.default_generator` (random_split's own default): the CPU generator."""
    return expr is not None and m.qualname(expr) in ("torch.default_generator", "torch._C.default_generator")


def _split_before(m, split: cst.Call, node: cst.CSTNode) -> bool:
    """`random_split(...)` runs (and draws) before `node`: both in the same scope, the split in
    no loop of it, and first in source order."""
    if m.scope_of(split) is not m.scope_of(node) or m.contains(split, node):
        return False
    loop = m.enclosing(split, cst.For, cst.While, cst.FunctionDef, cst.Lambda, cst.ClassDef)
    if loop is not None and isinstance(loop, (cst.For, cst.While)):
        return False
    return m.precedes(split, node)


def _arg(call: cst.Call, name: str, position: int | None) -> cst.BaseExpression | None:
    for i, a in enumerate(call.args):
        if a.keyword is not None and a.keyword.value == name:
            return a.value
        if a.keyword is None and position is not None and i == position:
            return a.value
    return None


def _cpu_generator(m, expr: cst.BaseExpression | None, depth: int = 0) -> bool:
    """No generator (the sampler makes a CPU one), or one the file shows to be on the CPU."""
    if expr is None:
        return True
    if depth > 4:
        return False
    if isinstance(expr, cst.Name) and expr.value == "None":
        return True
    # `torch.Generator().manual_seed(0)` returns the generator
    while (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == "manual_seed"
    ):
        expr = expr.func.value
    if isinstance(expr, cst.Call) and m.qualname(expr.func) in GENERATORS:
        device = _arg(expr, "device", 0)
        if device is None:
            return True
        if isinstance(device, cst.SimpleString):
            v = device.evaluated_value
            return isinstance(v, str) and v.split(":", 1)[0] == "cpu"
        return False
    if isinstance(expr, cst.Name):
        bindings = m.bindings_of(expr)
        if len(bindings) == 1 and bindings[0].how == "assign" and isinstance(bindings[0].value, cst.BaseExpression):
            return _cpu_generator(m, bindings[0].value, depth + 1)
    return False


def _iterated_before(m, loader_call: cst.Call, node: cst.CSTNode) -> bool:
    """A loop over the name the loader is bound to (or `iter(name)`) ends before `node`, in
    `node`'s scope."""
    if m.qualname(loader_call.func) in RANDOM_SPLITS:
        return _split_before(m, loader_call, node)
    parent = m.parent(loader_call)
    if not isinstance(parent, cst.Assign) or len(parent.targets) != 1 or not isinstance(parent.targets[0].target, cst.Name):
        return False
    name = parent.targets[0].target.value
    scope = m.scope_of(node)
    for loop in m.fors:
        source, _ = m.unwrap_iterable(loop.iter)
        if (isinstance(source, cst.Name) and source.value == name and m.scope_of(loop) is scope
                and m.precedes(loop, node) and not m.contains(loop, node)):
            return True
    return False


_LOOPS_AND_SCOPES = (cst.For, cst.While, cst.FunctionDef, cst.Lambda, cst.ClassDef)


def _used_up_before(m, loader_call: cst.Call, setter: cst.Call) -> bool:
    """The loader is bound to a name at module level before `setter`, which runs once at module
    level (no loop, no function around it), and every reading of that name comes before `setter`,
    at module level, as a loop's iterable, `len(name)`, `next(iter(name))`, or `it = iter(name)`
    whose readings follow the same rule. Any other use (handed to a function, stored, read after
    the setter or inside a function) may iterate it later: not used up."""
    if m.qualname(loader_call.func) in RANDOM_SPLITS:
        return _split_before(m, loader_call, setter)
    if m.enclosing(setter, *_LOOPS_AND_SCOPES) is not None:
        return False
    parent = m.parent(loader_call)
    if (not isinstance(parent, cst.Assign) or len(parent.targets) != 1
            or not isinstance(parent.targets[0].target, cst.Name)
            or m.enclosing(loader_call, *_LOOPS_AND_SCOPES) is not None
            or not m.precedes(loader_call, setter)):
        return False
    return _readings_before(m, parent.targets[0].target.value, setter, parent.targets[0].target, 0)


_ITER_WRAPPERS = frozenset({"enumerate", "iter", "zip", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm"})


def _loop_sources(m) -> set[int]:
    """The ids of the expressions a `for` loop iterates, seen through enumerate / zip / iter / tqdm."""
    out = set()
    for loop in m.fors:
        todo = [loop.iter]
        while todo:
            it = todo.pop()
            out.add(id(it))
            if isinstance(it, cst.Call):
                q = m.qualname(it.func) or (it.func.value if isinstance(it.func, cst.Name) else None)
                if q in _ITER_WRAPPERS:
                    todo.extend(a.value for a in it.args if a.keyword is None and not a.star)
    return out


def _readings_before(m, name: str, setter: cst.CSTNode, own_target: cst.Name, depth: int) -> bool:
    """Every reading of `name` comes before `setter`, at module level, and only iterates it."""
    sources = _loop_sources(m)
    for n in m.nodes:
        if type(n) is not cst.Name or n.value != name or n is own_target:
            continue
        p = m.parent(n)
        if isinstance(p, cst.Attribute) and p.attr is n:
            continue  # `obj.name`: another thing
        if isinstance(p, cst.Arg) and p.keyword is n:
            continue  # `f(name=...)`: a keyword
        if not m.precedes(n, setter) or m.enclosing(n, *_LOOPS_AND_SCOPES[2:]) is not None:
            return False
        if isinstance(p, cst.AssignTarget):
            continue  # rebound before the setter: the new value is a loader of its own, or not one
        if id(n) in sources:
            continue
        if isinstance(p, cst.Arg) and p.value is n:
            call = m.parent(p)
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and len(call.args) == 1:
                if call.func.value == "len" and depth == 0:
                    continue
                if call.func.value == "next" and depth == 1:
                    continue  # `next(it)` of `it = iter(loader)`: a batch drawn now
                if call.func.value == "iter":
                    outer = m.parent(call)
                    if isinstance(outer, cst.Arg):
                        nxt = m.parent(outer)
                        if isinstance(nxt, cst.Call) and isinstance(nxt.func, cst.Name) and nxt.func.value == "next":
                            continue  # `next(iter(loader))`: one batch, drawn now
                    if (depth == 0 and isinstance(outer, cst.Assign) and len(outer.targets) == 1
                            and isinstance(outer.targets[0].target, cst.Name)
                            and _readings_before(m, outer.targets[0].target.value, setter,
                                                 outer.targets[0].target, 1)):
                        continue  # `it = iter(loader)`, itself used up before the setter
        return False
    return True


def _iterated_inside(m, loader_call: cst.Call, with_stmt: cst.With) -> bool:
    """The loader is built inside the block, or a loop / `iter()` inside the block reads the name
    it is bound to."""
    if m.contains(with_stmt, loader_call):
        return True
    if m.qualname(loader_call.func) in RANDOM_SPLITS:
        return False  # it drew its permutation where it was called
    parent = m.parent(loader_call)
    if not isinstance(parent, cst.Assign) or len(parent.targets) != 1:
        return False
    target = parent.targets[0].target
    if isinstance(target, cst.Name):
        name = target.value
    elif (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self"
          and m.class_of(loader_call) is not None and m.class_of(loader_call) is m.class_of(with_stmt)):
        name = f"self.{target.attr.value}"  # a loader kept on the trainer, iterated in another method
    else:
        return False
    for loop in m.fors:
        if not m.contains(with_stmt, loop):
            continue
        source, _ = m.unwrap_iterable(loop.iter)
        if dotted(source) == name:
            return True
    for call in m.calls_in(with_stmt):
        if isinstance(call.func, cst.Name) and call.func.value == "iter" and call.args:
            if dotted(call.args[0].value) == name:
                return True
    return False
