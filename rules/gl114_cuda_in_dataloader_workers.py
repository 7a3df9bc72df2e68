"""GL114 cuda-in-dataloader-workers."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.devices import DeviceFacts
from gpulint.model import DATALOADER_CLASSES, DATASET_BASES, TENSOR_FACTORIES
from gpulint.rule import Context, Rule
from gpulint.sites import line_ref

_SPAWN = ("spawn", "forkserver")
_TENSOR_DATASETS = frozenset({"torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset"})


class CudaInDataloaderWorkers(Rule):
    code = "GL114"
    name = "cuda-in-dataloader-workers"
    summary = "A Dataset or collate_fn puts tensors on the GPU while its DataLoader uses worker processes or pinned memory."
    message = "{what} puts tensors on the GPU inside {where}, but the DataLoader ({line}) uses {why}; keep data loading on the CPU and move the batch in the training loop"
    fix_safety = "none"
    default = True
    kind = "crash"
    prefilter = r"DataLoader"
    ast_prefilter = r"DataLoader"
    explanation = '''
DataLoader workers are separate processes, forked from the training process on Linux. CUDA
cannot be used in a forked child once the parent has initialised it, so a Dataset whose
`__getitem__` (or whose tensors built in `__init__`, or a transform or function of the file it
calls, such as one handed to its constructor and called as `self.transform(x)`) or a
`collate_fn` that calls `.cuda()` / `.to("cuda")` fails in every worker: `RuntimeError: Caught RuntimeError in DataLoader worker
process 0 ... Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing,
you must use the 'spawn' start method`. With `pin_memory=True` the loader pins each batch, and
a batch already on the GPU cannot be pinned: `RuntimeError: cannot pin 'torch.cuda.FloatTensor'
only dense CPU tensors can be pinned`.

Keep datasets and collate functions on the CPU, let the loader pin host memory, and move each
batch in the training loop (`x = x.to(device, non_blocking=True)`). There is no automatic fix:
where the move belongs depends on the loop.

The rule fires when the loader has `num_workers` > 0 (without a spawn/forkserver
`multiprocessing_context`, and in a file that does not set a spawn/forkserver start method with
`torch.multiprocessing.set_start_method`) or `pin_memory=True`, and the Dataset class or collate
function of the file creates a tensor with a CUDA device or moves one to a device that can be CUDA,
or the loader reads a `TensorDataset` holding a tensor the analysis places on the GPU
(`TensorDataset(features.to(device), labels.to(device))`: the workers index GPU tensors).

Bad:

```python
class Frames(Dataset):
    def __getitem__(self, i):
        return self.x[i].to(device), self.y[i].to(device)

loader = DataLoader(Frames(), batch_size=32, num_workers=4)
```

Good:

```python
class Frames(Dataset):
    def __getitem__(self, i):
        return self.x[i], self.y[i]

loader = DataLoader(Frames(), batch_size=32, num_workers=4, pin_memory=True)
for x, y in loader:
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        facts = m.facts(DeviceFacts)
        reported: set = set()
        for loader in m.iter_calls(*DATALOADER_CLASSES):
            why = self._why(ctx, loader)
            if why is None:
                continue
            line = line_ref(ctx, loader)
            targets: list[tuple[cst.CSTNode, str]] = []
            cls, made = self._dataset_class(ctx, loader)
            if cls is not None:
                for meth in ("__getitem__", "__init__", "__getitems__"):
                    fn = m.classes[cls].methods.get(meth)
                    if fn is not None:
                        targets.append((fn, f"`{cls}.{meth}`"))
                roots = [fn for meth, fn in m.classes[cls].methods.items() if meth in ("__getitem__", "__init__", "__getitems__")]
                if made is not None:
                    roots.append(made)
                for tcls in _callable_classes(m, roots):
                    if tcls != cls:
                        call_fn = m.classes[tcls].methods["__call__"]
                        targets.append((call_fn, f"`{tcls}.__call__` (a transform of `{cls}`)"))
                for fn in _functions_called_in(m, [f for f, _ in targets]):
                    # `self.transform(x)` in `__getitem__` of a function of the file handed to the
                    # constructor (pytorch#20260's GPU transform, E48-2): the engine resolved the call
                    targets.append((fn, f"`{fn.name.value}` (called from `{cls}`)"))
            collate = self._collate(ctx, loader)
            if collate is not None:
                targets.append(collate)
            held = self._tensor_dataset_on_gpu(ctx, loader)
            if held is not None and held[0] not in reported:
                made, tensor = held
                reported.add(made)
                yield ctx.finding(made, (
                    f"`TensorDataset` holds `{ctx.code(tensor)}`, a tensor on the GPU, but the DataLoader ({line}) "
                    f"uses {why}: {'the workers index it in forked processes, where CUDA cannot be used' if 'worker' in why else 'a batch on the GPU cannot be pinned'}; "
                    "keep the dataset's tensors on the CPU and move each batch in the training loop"))
            for body, where in targets:
                for call, what in self._cuda_sites(ctx, facts, body):
                    if call in reported:
                        continue
                    reported.add(call)
                    yield ctx.finding(call, self.message.format(what=what, where=where, line=line, why=why))

    @staticmethod
    def _kw(call: cst.Call, name: str) -> cst.BaseExpression | None:
        for a in call.args:
            if a.keyword is not None and a.keyword.value == name:
                return a.value
        return None

    def _why(self, ctx: Context, loader: cst.Call) -> str | None:
        m = ctx.model
        pin = self._kw(loader, "pin_memory")
        pinned = (isinstance(pin, cst.Name) and pin.value == "True") or (
            isinstance(pin, cst.Call) and m.qualname(pin.func) == "torch.cuda.is_available"
        )
        workers = self._kw(loader, "num_workers")
        forked = workers is not None and _positive(m, workers)
        context = self._kw(loader, "multiprocessing_context")
        if forked and isinstance(context, cst.SimpleString) and context.evaluated_value in _SPAWN:
            forked = False
        if context is not None and not isinstance(context, cst.SimpleString):
            forked = False  # a context object: cannot tell
        if forked and context is None and _spawn_start_method(m):
            forked = False  # `torch.multiprocessing.set_start_method("spawn")`: the workers are not forked
        if forked and pinned:
            return "worker processes and `pin_memory=True`"
        if forked:
            return "worker processes (`num_workers` > 0)"
        if pinned:
            return "`pin_memory=True`"
        return None

    @staticmethod
    def _dataset_class(ctx: Context, loader: cst.Call) -> tuple[str | None, cst.Call | None]:
        """The file's Dataset class the loader reads, and the call that made the instance."""
        m = ctx.model
        ds = None
        pos = [a for a in loader.args if a.keyword is None]
        if pos and not pos[0].star:
            ds = pos[0].value
        for a in loader.args:
            if a.keyword is not None and a.keyword.value == "dataset":
                ds = a.value
        if isinstance(ds, cst.Name):
            bs = m.bindings_of(ds)
            if len(bs) != 1 or bs[0].how != "assign":
                return None, None
            ds = bs[0].value
        elif isinstance(ds, cst.Attribute):
            ds = _made_by(m, ds)
        if isinstance(ds, cst.Call) and isinstance(ds.func, cst.Name) and ds.func.value in m.classes:
            name = ds.func.value
            info = m.classes[name]
            if m.class_is(name, DATASET_BASES) or "__getitem__" in info.methods:
                return name, ds
        return None, None

    @staticmethod
    def _tensor_dataset_on_gpu(ctx: Context, loader: cst.Call):
        """(the `TensorDataset(...)` call, its first tensor argument on the GPU) when the loader reads
        a `torch.utils.data.TensorDataset` made (in place or through a name bound once) of tensors the
        engine places on an accelerator on every path (pytorch/pytorch#4377: CUDA features and labels,
        `num_workers=2`). None when no argument is known to be there."""
        m = ctx.model
        ds = None
        pos = [a for a in loader.args if a.keyword is None]
        if pos and not pos[0].star:
            ds = pos[0].value
        for a in loader.args:
            if a.keyword is not None and a.keyword.value == "dataset":
                ds = a.value
        if isinstance(ds, cst.Name):
            bs = m.bindings_of(ds)
            if len(bs) != 1 or bs[0].how != "assign":
                return None
            ds = bs[0].value
        elif isinstance(ds, cst.Attribute):
            ds = _made_by(m, ds)
        if not (isinstance(ds, cst.Call) and m.qualname(ds.func) in _TENSOR_DATASETS):
            return None
        for a in ds.args:
            if a.star or a.keyword is not None:
                continue
            dev = m.device_of(a.value)
            if dev is not None and dev.where == "acc" and m.value_of(a.value).kind == "tensor":
                return ds, a.value
        return None

    @staticmethod
    def _collate(ctx: Context, loader: cst.Call):
        m = ctx.model
        fn = None
        for a in loader.args:
            if a.keyword is not None and a.keyword.value == "collate_fn":
                fn = a.value
        if isinstance(fn, cst.Call) and m.qualname(fn.func) == "functools.partial" and fn.args:
            fn = fn.args[0].value
        if isinstance(fn, cst.Lambda):
            return fn, "the `collate_fn` lambda"
        if isinstance(fn, cst.Name):
            defs = m.functions.get(fn.value, [])
            if len(defs) == 1 and m.class_of(defs[0]) is None:
                return defs[0], _collate_label(fn.value)
            bs = m.bindings_of(fn)
            if len(bs) == 1 and isinstance(bs[0].value, cst.Lambda):
                return bs[0].value, _collate_label(fn.value)
        return None

    @staticmethod
    def _cuda_sites(ctx: Context, facts: DeviceFacts, body: cst.CSTNode):
        m = ctx.model
        out = []
        for call in m.calls:
            if not any(a is body for a in m.ancestors(call)):
                continue
            mv = m.move_of_call(call)
            if mv is None or mv.to_cpu:
                continue
            if mv.method == "cuda":
                out.append((call, "`.cuda()`"))
                continue
            if mv.method == "device=":
                q = m.qualname(call.func)
                if not (q and q.startswith("torch.") and q[6:] in TENSOR_FACTORIES):
                    continue
            if facts.device_may_be_accelerator(mv.device):
                label = f"`.to({ctx.code(mv.device)})`" if mv.method == "to" else f"`device={ctx.code(mv.device)}`"
                out.append((call, label))
        return out


def _made_by(m, ds: cst.Attribute) -> cst.Call | None:
    """The construction a dataset kept in an attribute comes from (`self.train_set =
    DummyDataset(...)` in a trainer's `__init__`, then `DataLoader(self.train_set, ...)`), when the
    engine knows it; None otherwise."""
    v = m.value_of(ds)
    o = v.origin
    if v.kind in ("dataset", "object") and isinstance(o, cst.Call):
        return o
    return None


def _spawn_start_method(m) -> bool:
    """The file sets a spawn/forkserver start method (`torch.multiprocessing.set_start_method("spawn")`,
    the maintainers' answer in pytorch/pytorch#20260): its DataLoader workers start fresh."""
    for call in m.calls:
        q = m.qualname(call.func) or ""
        if q.endswith("set_start_method") and ("multiprocessing" in q or q == "set_start_method"):
            first = call.args[0].value if call.args and call.args[0].keyword is None else None
            if isinstance(first, cst.SimpleString) and first.evaluated_value in _SPAWN:
                return True
    return False


def _positive(m, e: cst.BaseExpression, depth: int = 0) -> bool:
    """An int literal > 0, a name bound only to such literals, or a `cpu_count()`-based value."""
    if depth > 3:
        return False
    if isinstance(e, cst.Integer):
        return int(e.value, 0) > 0
    if isinstance(e, cst.Call):
        q = m.qualname(e.func) or ""
        if q.endswith("cpu_count") or q in ("os.sched_getaffinity",):
            return True
        if isinstance(e.func, cst.Name) and e.func.value in ("min", "max") and e.args:
            vals = [a.value for a in e.args]
            if e.func.value == "min":
                return all(_positive(m, v, depth + 1) for v in vals)
            return any(_positive(m, v, depth + 1) for v in vals)
        return False
    if isinstance(e, cst.Name):
        bs = m.bindings_of(e)
        return bool(bs) and all(b.how == "assign" and b.value is not None and _positive(m, b.value, depth + 1) for b in bs)
    return False


def _collate_label(name: str) -> str:
    """How the message names a collate function: `collate_fn` once when that is its name."""
    return "`collate_fn`" if name == "collate_fn" else f"`{name}` (the loader's `collate_fn`)"


def _callable_classes(m, roots: list[cst.CSTNode], depth: int = 3) -> list[str]:
    """File classes with a `__call__` (transforms) instantiated in `roots`: the Dataset's own
    methods and the call that made the Dataset, following the names they read to their
    assignments (`transform = Compose([ToTensor(), ToCuda()])`, then `Dataset(transform)`), up to
    `depth` assignments away. A Dataset calls the transforms it is given or makes."""
    found: list[str] = []
    seen: set = set()
    todo = [(r, 0) for r in roots]
    while todo:
        node, d = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for sub in (node, *m.walk(node)):
            if isinstance(sub, cst.Call) and isinstance(sub.func, cst.Name):
                info = m.classes.get(sub.func.value)
                if info is not None and "__call__" in info.methods and sub.func.value not in found:
                    found.append(sub.func.value)
            elif isinstance(sub, cst.Name) and d < depth and not isinstance(node, cst.FunctionDef):
                for b in m.bindings_of(sub):
                    if b.how == "assign" and b.value is not None:
                        todo.append((b.value, d + 1))
            elif (isinstance(sub, cst.Attribute) and isinstance(sub.value, cst.Name) and sub.value.value == "self"
                  and d < depth and not isinstance(node, cst.FunctionDef)):
                # `Dataset(self.transform)` in a trainer that built `self.transform = Compose([...])`
                # (the probes' classify of the ToCuda fixture)
                for b in m.bindings_of(sub):
                    if b.how == "assign" and b.value is not None:
                        todo.append((b.value, d + 1))
    return found


def _functions_called_in(m, bodies: list, depth: int = 2) -> list:
    """Module-level functions of the file that the flow engine resolved a call to inside one of
    `bodies` (the Dataset's methods, its transforms), and those they call in turn, `depth` levels
    down. A function a worker runs is worker code too."""
    inside = list(bodies)
    found: list = []
    for _ in range(depth):
        new = []
        for name, defs in m.functions.items():
            for fn in defs:
                if fn in found or fn in inside or m.enclosing(fn, cst.ClassDef) is not None:
                    continue
                sites = m.resolved_sites(fn) or m.call_sites(fn)
                if any(any(a is b for b in inside for a in m.ancestors(site)) for site in sites):
                    new.append(fn)
        if not new:
            break
        found.extend(new)
        inside.extend(new)
    return found
