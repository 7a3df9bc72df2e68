"""GL110 load-without-map-location."""

from __future__ import annotations

import re

import libcst as cst

from gpulint.analysis.devices import DeviceFacts
from gpulint.flow import _CPU_FLAGS, _GPU_FLAGS
from gpulint.model import dotted
from gpulint.rule import Context, Kind, Rule

_STATE_HOLDERS = (Kind.MODULE, Kind.OPTIMIZER, Kind.SCHEDULER, Kind.SCALER)
_HARMLESS_METHODS = frozenset({"keys", "items", "values", "get", "pop"})


class LoadWithoutMapLocation(Rule):
    code = "GL110"
    name = "load-without-map-location"
    summary = "`torch.load` without `map_location` in a script that uses a GPU: fails on CPU-only machines."
    message = "`torch.load` without `map_location` restores tensors on the device they were saved from; pass `map_location={device}`"
    fix_safety = "mixed"  # safe or unsafe per fix (see the explanation)
    fix_partial = True
    default = True
    kind = "crash"
    prefilter = r"torch|load"
    ast_prefilter = r"^load$"  # a module-level load runs in a library too (see check)
    explanation = '''
`torch.load` puts every tensor back on the device it was saved from. A checkpoint written during
GPU training therefore cannot be opened on a machine without CUDA (an evaluation box, a laptop, a
CPU CI job): `RuntimeError: Attempting to deserialize object on a CUDA device but
torch.cuda.is_available() is False. If you are running on a CPU-only machine, please use
torch.load with map_location=torch.device('cpu') to map your storages to the CPU.` On a
multi-GPU machine it also puts every process's copy on `cuda:0`.

The rule fires in files that move things to a device or check device availability. It is silent
when every checkpoint the file writes holds host tensors (`torch.save(x.cpu(), p)`, the state
dict of a model moved to the CPU before the save, also inside a checkpoint dict
`{"net": model.state_dict(), "epoch": e}`), on a data file of a library module read at import by a
path built from `__file__` (the package's own constants), and
on a load that re-reads what this run wrote (a save earlier in the same function, or in a function
of the file that the loading code called before, to the same path: `train()` keeps the best model,
then the script reloads it to test it; early stopping in the epoch loop that loads the best epoch's
checkpoint on one branch of an `if` and saves this epoch's on the other, with the same path or path
builder, directly or through a saving function of the file; the path a function of the file returns
after saving to it, `best_model_path = self._train(...)`; the path given to an early-stopping or checkpoint object of an imported class,
`EarlyStopping(..., path=P)`, which saves the best model there while the run trains; a saving
function imported from the project, `save_model(model, P)`, called earlier in the loading function
with the load's path), and on a load
in the body of `if torch.cuda.is_available():`
in a single-process script (the devices the checkpoint names are there); a name bound to that check
(`use_cuda = torch.cuda.is_available()`, `GPU = True if torch.cuda.device_count() > 0 else False`)
and the script's own GPU flag (`if args.cuda:`, the `else:` of `if not args.cuda:`, also a plain name such as
a `cpu_run` or `use_cuda` parameter) count as the check,
and so does its device spelled as a string (`if device == 'cuda':`, Wav2Lip's loader; the `else:` of
`if device == torch.device("cpu"):`, latent_ode's data sets). It is also silent, in a single-process
script, on a load in the body of a `try:` whose handler (bare, `Exception` or `RuntimeError`) loads the
same path again with `map_location` (GRU4REC-pytorch's `main.py`): where the saved devices are
missing, the first load raises and the handler maps the tensors. A file of random-number-generator
states needs no mapping either: a load whose every read goes to an RNG setter, whole or one item
(`rng = torch.load(p)`, then `torch.cuda.set_rng_state(rng[0])` and `torch.set_rng_state(rng[1])`),
holds CPU byte tensors, which is what `torch.get_rng_state()` and `torch.cuda.get_rng_state()` return.

Fix: when the loaded object only feeds `load_state_dict` of a module, optimizer, scheduler or
scaler (directly, by key, or through a renaming comprehension), `map_location="cpu"` is safe:
`load_state_dict` copies the values onto the device of the object that receives them (not with
`assign=True`). Otherwise the fix (unsafe) maps to the script's device expression,
`map_location=device`, when one is defined before the load.

Bad:

```python
model = Net().to(device)
model.load_state_dict(torch.load("model.pt"))
```

Good:

```python
model = Net().to(device)
model.load_state_dict(torch.load("model.pt", map_location="cpu"))
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        loads = [c for c in m.iter_calls("torch.load", "torch.serialization.load")]
        if not loads or m.frameworks or not self._uses_devices(ctx):
            return
        if not m.is_script:
            # a library's loader is called by scripts that choose where tensors go. But a load at
            # module level runs at import, and so does one in a function a module-level statement
            # runs (`history = fit(...)`, `print(sample(args))`): a notebook exported to .py,
            # with no loop or `__main__` guard
            top = _functions_run_at_top_level(m)
            loads = [c for c in loads if m.scope_of(c) is m.module or m.enclosing(c, cst.FunctionDef) in top]
            # a data file shipped inside the package, read at import (enformer-pytorch's
            # `TF_GAMMAS = torch.load(str(DIR / "precomputed" / "tf_gammas.pt"))` with
            # `DIR = Path(__file__).parents[0]`): every user imports it, on any machine; what it
            # holds is the package's constants, not a checkpoint of a training run
            loads = [c for c in loads if not _package_data_file(m, c)]
        if not loads:
            return
        facts = m.facts(DeviceFacts)
        saves = list(m.iter_calls("torch.save", "torch.serialization.save"))
        if saves and all(_saves_host_values(m, s) for s in saves):
            return  # the file's own checkpoints hold host tensors: loading them needs no map_location
        hooks = _saved_tensor_hook_functions(m) if saves else set()
        for call in loads:
            scope = m.scope_of(call)
            if any(m.scope_of(s) is scope and m.precedes(s, call) for s in saves):
                continue  # a save/load round trip in one function: same machine, same devices
            if isinstance(scope, cst.FunctionDef) and scope.name.value in hooks:
                continue  # unpacks what this process saved in its pack hook: same devices
            if _saved_by_own_init(ctx, saves, call, scope):
                continue  # the object wrote the file in its __init__: same process, same devices
            if _saved_earlier_by_called_function(ctx, saves, call, scope):
                continue  # `train()` saved the best model, then the script reloads it: same run, same devices
            if _fresh_path_of_this_run(ctx, saves, call):
                continue  # a path made unique for this run (`uuid4().hex`): only this process wrote it
            if _saved_by_earlier_iteration(ctx, saves, call, scope):
                continue  # early stopping: the best epoch's checkpoint, written by this loop's `else:`
            if _path_returned_by_saver(ctx, saves, call, scope):
                continue  # `best = self._train(...)` saved the best model and returned its path: same run
            if _path_of_imported_checkpointer(ctx, call):
                continue  # `EarlyStopping(..., path=P)` saves the best model to P while training: same run
            if _saved_by_imported_helper(ctx, call, scope) and not _multi_process(m):
                continue  # `save_model(model, P)` (a project's helper) earlier in this function: same run
            if _in_availability_branch(m, call) and not _multi_process(m):
                continue  # `if torch.cuda.is_available(): torch.load(p)`: the CUDA devices are there
            if _retried_with_map_location(ctx, call) and not _multi_process(m):
                continue  # `try: torch.load(p)` / `except: torch.load(p, map_location=...)`: the CPU case is handled
            pos = [a for a in call.args if a.keyword is None]
            if any(a.star for a in call.args) or len(pos) != 1:
                continue  # no path, **kwargs, or map_location given positionally
            if any(a.keyword is not None and a.keyword.value == "map_location" for a in call.args):
                continue
            if _feeds_scheduler(m, call):
                continue  # an LR scheduler's state holds numbers, no tensors: nothing to map
            if _feeds_rng_setters_only(m, facts, call):
                continue  # RNG states: CPU byte tensors whatever generator they came from
            if _vocabulary_file(ctx, call, scope):
                continue  # a pickled vocabulary (words and indices), written by preprocessing: no tensors
            if _arguments_file(ctx, call):
                continue  # `torch.load(".../training_args.bin")`: the run's pickled options, no tensors
            if _data_cache(ctx, saves, call, scope):
                continue  # a preprocessing cache this code writes itself, not a checkpoint
            if _file_written_with_host_values(ctx, saves, call):
                continue  # `torch.save(pred.cpu(), '.../best_pred_run{}.pt')` wrote it: host tensors only
            if self._feeds_state_dicts_only(ctx, facts, call):
                text, safe = '"cpu"', True
            elif _moved_later(m, call):
                # `model = torch.load(p)` then `model = model.cuda()` (under `if opt.cuda:`): the
                # code places it itself; loading on the host is what the unmoved path needs
                # (pytorch/examples#599's super_resolve.py)
                text, safe = '"cpu"', False
            else:
                text, safe = self._device_text(ctx, facts, call), False
            fix = None
            if text is not None:
                fix = ctx.fix(self._insert(ctx, call, pos[0], f"map_location={text}"), safe=safe, message=f"Add `map_location={text}`")
            if text is None:
                # no device expression visible at the load: name none that does not exist
                msg = ("`torch.load` without `map_location` restores tensors on the device they were saved from; "
                       "pass `map_location=` the device the script runs on (`\"cpu\"` on a machine without a GPU)")
                yield ctx.finding(call, msg, fix)
                continue
            yield ctx.finding(call, self.message.format(device=text), fix)

    @staticmethod
    def _insert(ctx: Context, call: cst.Call, first: cst.Arg, kw: str):
        """Add `kw` right after the path argument, in the layout the call already uses."""
        src = ctx.source
        v_end = ctx.span(first)[1]  # the argument, parentheses of its value included
        i = list(call.args).index(first)
        if i + 1 < len(call.args):
            n_start = ctx.span(call.args[i + 1])[0]
            between = src[v_end:n_start]
            sep = between[between.index(",") + 1:] if "," in between else " "
            return ctx.insert_text(n_start, f"{kw},{sep}")
        tail = src[v_end:ctx.span(call)[1]]
        if isinstance(first.comma, cst.Comma) and "," in tail:
            comma_at = v_end + tail.index(",") + 1
            after = src[comma_at:ctx.span(call)[1]]
            if "\n" in after:
                line_start = src.rfind("\n", 0, ctx.span(first)[0]) + 1
                indent = src[line_start:ctx.span(first)[0]]
                return ctx.insert_text(comma_at, f"{ctx.newline}{indent}{kw},")
            return ctx.insert_text(comma_at, f" {kw},")
        return ctx.insert_text(v_end, f", {kw}")

    @staticmethod
    def _uses_devices(ctx: Context) -> bool:
        m = ctx.model
        if m.checks_availability:
            return True
        facts = m.facts(DeviceFacts)
        for call in m.calls:
            mv = m.move_of_call(call)
            if mv is None or mv.to_cpu or facts.device_is_cpu(mv.device):
                continue
            if mv.method == "cuda" or facts.device_may_be_accelerator(mv.device) or m.is_device_expr(mv.device):
                return True
        return False

    # where the loaded object goes ---------------------------------------------------------------
    def _feeds_state_dicts_only(self, ctx: Context, facts: DeviceFacts, call: cst.Call) -> bool:
        m = ctx.model
        node: cst.CSTNode = call
        parent = m.parent(node)
        # torch.load(p)["model"]
        while isinstance(parent, (cst.Subscript, cst.SubscriptElement, cst.Index)):
            node, parent = parent, m.parent(parent)
        if isinstance(parent, cst.Arg):
            return self._state_dict_arg(ctx, parent)
        if isinstance(parent, (cst.Assign, cst.AnnAssign)):
            return self._name_feeds_only(ctx, facts, parent, 0)
        return False

    @staticmethod
    def _state_dict_arg(ctx: Context, arg: cst.Arg) -> bool:
        m = ctx.model
        outer = m.parent(arg)
        if not isinstance(outer, cst.Call) or not isinstance(outer.func, cst.Attribute):
            return False
        if outer.func.attr.value != "load_state_dict" or arg.keyword is not None:
            return False
        if outer.args[0] is not arg:
            return False
        for a in outer.args:
            if a.keyword is not None and a.keyword.value == "assign" and not (
                isinstance(a.value, cst.Name) and a.value.value == "False"
            ):
                return False  # assign=True keeps the loaded tensors (and their device)
        recv = outer.func.value
        if m.kind_of(recv) in _STATE_HOLDERS:
            return True
        # `self.model.load_state_dict(...)` in a plain class's method: the class facts do not type
        # the attribute, the flow engine knows it holds a module there (pykg2vec#223's Trainer);
        # `self.load_state_dict(...)` in a method of a module class of the file loads into the
        # module itself (DialogRPT#7's `Scorer.load()`), which copies onto its own device too
        if isinstance(recv, cst.Name) and recv.value == "self":
            return m.value_of(recv).kind == "module"
        return isinstance(recv, cst.Attribute) and m.value_of(recv).kind == "module"

    def _name_feeds_only(self, ctx: Context, facts: DeviceFacts, assign: cst.CSTNode, depth: int) -> bool:
        """Every read of the assigned name ends in `load_state_dict` (or is harmless)."""
        m = ctx.model
        if depth > 3:
            return False
        if isinstance(assign, cst.Assign):
            if len(assign.targets) != 1:
                return False
            target = assign.targets[0].target
        else:
            target = assign.target  # type: ignore[attr-defined]
        if not isinstance(target, cst.Name):
            return False
        bindings = m.bindings_of(target)
        refs = facts.references(target.value, bindings)
        if not refs:
            return False
        for ref in refs:
            if not self._harmless_use(ctx, facts, ref, target.value, depth):
                return False
        return True

    def _harmless_use(self, ctx: Context, facts: DeviceFacts, ref: cst.Name, name: str, depth: int) -> bool:
        m = ctx.model
        node: cst.CSTNode = ref
        parent = m.parent(node)
        # sd["model"], sd.get("model"), sd.items()
        while True:
            if isinstance(parent, (cst.Subscript, cst.SubscriptElement, cst.Index)):
                node, parent = parent, m.parent(parent)
                continue
            if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value in _HARMLESS_METHODS:
                call = m.parent(parent)
                if isinstance(call, cst.Call) and call.func is parent:
                    node, parent = call, m.parent(call)
                    continue
                return False
            break
        if isinstance(parent, cst.Arg):
            return self._state_dict_arg(ctx, parent)
        if isinstance(parent, cst.Comparison):
            return True  # `"optimizer" in ckpt`
        if isinstance(parent, cst.ComparisonTarget) and isinstance(parent.operator, (cst.In, cst.NotIn)):
            return True
        if isinstance(parent, cst.Del):
            return True
        # `sd = sd["state_dict"]`, `sd = {k.replace(...): v for k, v in sd.items()}`
        stmt = m.statement_of(ref)
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
            inner = stmt.body[0]
            if isinstance(inner, cst.Assign) and len(inner.targets) == 1 and isinstance(inner.targets[0].target, cst.Name):
                value = inner.value
                if value is node or self._inside_comprehension_iter(m, ref, value):
                    if inner.targets[0].target.value == name:
                        return True  # re-bound: its reads are checked with the others
                    return self._name_feeds_only(ctx, facts, inner, depth + 1)
        return False

    @staticmethod
    def _inside_comprehension_iter(m, ref: cst.CSTNode, value: cst.BaseExpression) -> bool:
        if not isinstance(value, (cst.DictComp, cst.ListComp, cst.GeneratorExp)):
            return False
        for anc in m.ancestors(ref):
            if isinstance(anc, cst.CompFor) and any(a is anc.iter for a in [ref, *m.ancestors(ref)]):
                return True
            if anc is value:
                break
        return False

    # the device expression for the unsafe fix -------------------------------------------------------
    @staticmethod
    def _device_text(ctx: Context, facts: DeviceFacts, at: cst.Call) -> str | None:
        m = ctx.model
        own = _own_device_attribute(ctx, facts, at)
        if own is not None:
            return own  # a method of a class that keeps its device: not the script's global
        candidates: list[cst.BaseExpression] = []
        for call in m.calls:
            mv = m.move_of_call(call)
            if mv is None or mv.to_cpu or mv.device is None or mv.method == "cuda":
                continue
            d = mv.device
            arg = m.parent(d)
            if isinstance(arg, cst.Arg) and arg.keyword is not None and arg.keyword.value == "device_map":
                continue  # a loader's placement plan ("auto", {"": rank}), not a valid map_location
            if isinstance(d, (cst.Name, cst.Attribute)) and m.is_device_expr(d) and not facts.device_is_cpu(d):
                if isinstance(d, cst.Attribute) and d.attr.value == "device" and m.kind_of(d.value) in (Kind.TENSOR, Kind.MODULE):
                    continue
                if _index_like(m, d):
                    continue  # `.to(local_rank)` takes an index; `torch.load(map_location=<int>)` raises TypeError
                candidates.append(d)
        for d in candidates:
            if facts.visible_at(d, at) and not _known_none_at(ctx, d, at):
                return ctx.code(d)
        return None


def _index_like(m, d: cst.BaseExpression) -> bool:
    """A device index rather than a device: `local_rank`, `args.gpu`, `rank`, `gpu_id` (named so,
    not bound to `torch.device(...)` or a string). `.to(i)` and `.cuda(i)` take an int, but
    `torch.load` calls any `map_location` that is not a str, dict or torch.device:
    `map_location=local_rank` raises `TypeError: 'int' object is not callable` (zphang/minimal-llama
    tinypar, lukemelas/EfficientNet-PyTorch examples/imagenet/main.py in the fixes13 audit)."""
    last = d.value if isinstance(d, cst.Name) else d.attr.value
    low = last.lower()
    if "device" in low or not ("rank" in low or low in ("gpu", "gpu_id", "gpu_idx", "local_gpu", "dev_id", "device_id")):
        return False
    bindings = m.bindings_of(d)
    if bindings and all(_device_valued(m, b.value) for b in bindings):
        return False
    return True


def _device_valued(m, value) -> bool:
    if isinstance(value, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
        return True
    if isinstance(value, cst.Call) and m.qualname(value.func) == "torch.device":
        return True
    if isinstance(value, cst.IfExp):
        return _device_valued(m, value.body) and _device_valued(m, value.orelse)
    return False


def _known_none_at(ctx: Context, expr: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """`at` runs only where `expr` is None: in the body of `if <expr> is None:` (or the `else:` of
    `if <expr> is not None:`). moco's `if args.gpu is None: checkpoint = torch.load(args.resume)`
    `else: ... map_location="cuda:{}".format(args.gpu)`: `map_location=args.gpu` is no mapping there."""
    m = ctx.model
    text = ctx.code(expr)
    prev = at
    for anc in m.ancestors(at):
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
        if isinstance(anc, cst.If) and prev is not anc.test:
            t = anc.test
            if (isinstance(t, cst.Comparison) and len(t.comparisons) == 1 and ctx.code(t.left) == text
                    and isinstance(t.comparisons[0].comparator, cst.Name) and t.comparisons[0].comparator.value == "None"):
                op = t.comparisons[0].operator
                if (isinstance(op, cst.Is) and prev is anc.body) or (isinstance(op, cst.IsNot) and prev is anc.orelse):
                    return True
        prev = anc
    return False


def _own_device_attribute(ctx: Context, facts: DeviceFacts, at: cst.Call) -> str | None:
    """`self.<attr>` when `at` is in a method (first parameter `self`) of a class whose `__init__`
    assigns `self.<attr> = <device expression>` at its top level (`self.device = device`): the
    device the instance's modules live on, the one the method means."""
    m = ctx.model
    fn = m.enclosing(at, cst.FunctionDef)
    cls = m.class_of(fn) if fn is not None else None
    if fn is None or cls is None or m.enclosing(fn, cst.FunctionDef, cst.ClassDef) is not cls:
        return None
    if any(isinstance(d.decorator, (cst.Name, cst.Attribute)) and dotted(d.decorator) in ("staticmethod", "classmethod")
           for d in fn.decorators):
        return None
    params = fn.params.params
    if not params or not isinstance(cls.body, cst.IndentedBlock):
        return None
    me = params[0].name.value
    found = []
    for stmt in cls.body.body:
        if not (isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__init__"):
            continue
        init_params = stmt.params.params
        if not init_params or not isinstance(stmt.body, cst.IndentedBlock):
            continue
        init_self = init_params[0].name.value
        for line in stmt.body.body:
            if not isinstance(line, cst.SimpleStatementLine):
                continue
            for small in line.body:
                if not isinstance(small, cst.Assign) or len(small.targets) != 1:
                    continue
                t = small.targets[0].target
                if not (isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == init_self):
                    continue
                v = small.value
                if not m.is_device_expr(v) or isinstance(v, cst.Integer) or facts.device_is_cpu(v):
                    continue
                if m.value_of(v).kind != "device" or _compared_to_other_strings(m, cls, t.attr.value):
                    continue  # a string the class interprets itself (YOLOX's `self.device == "gpu"`)
                if "device" in t.attr.value:
                    found.append(t.attr.value)
    if len(set(found)) != 1:
        return None
    return f"{me}.{found[0]}"


_DEVICE_TYPES = ("cpu", "cuda", "mps", "xpu", "meta", "hpu", "npu", "xla")


def _compared_to_other_strings(m, cls: cst.ClassDef, attr: str) -> bool:
    """The class compares `self.<attr>` with a string that names no torch device type
    (`if self.device == "gpu":`): its values are the class's own vocabulary."""
    for n in m.walk(cls):
        if isinstance(n, cst.Comparison) and isinstance(n.left, cst.Attribute) and n.left.attr.value == attr \
                and isinstance(n.left.value, cst.Name) and n.left.value.value == "self":
            for c in n.comparisons:
                if isinstance(c.comparator, cst.SimpleString):
                    text = c.comparator.evaluated_value
                    if isinstance(text, str) and text.split(":")[0] not in _DEVICE_TYPES:
                        return True
    return False




def _functions_run_at_top_level(m) -> set:
    """The module-level functions of the file that a module-level simple statement calls
    (`losses = train(...)`, `print(sample(args))`), and those they call by name in turn (two
    levels): code that runs when the file runs. Also the methods a module-level statement runs on
    an instance of a class of the file that a module-level assignment built (`model =
    MatchingModel()` then `model.load_state(path)`, deepmatcher#54's notebook shape: `__init__`
    and `load_state`), and the methods those call on `self`."""
    def called_names(node) -> set[str]:
        return {
            n.func.value
            for n in (node, *m.walk(node))
            if isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value in m.functions
        }

    instances = _module_level_instances(m)
    names: set[str] = set()
    methods: set = set()
    for stmt in m.module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            names |= called_names(stmt)
            methods |= _methods_run_on_instances(m, stmt, instances)
    found: set = set()
    frontier = names
    for _ in range(3):
        nxt: set[str] = set()
        for name in frontier:
            for fn in m.functions.get(name, []):
                if fn in found or m.class_of(fn) is not None or m.enclosing(fn, cst.FunctionDef) is not None:
                    continue
                found.add(fn)
                nxt |= called_names(fn.body)
        frontier = nxt
    frontier_methods = methods
    for _ in range(3):
        nxt_methods: set = set()
        for fn, cls in frontier_methods:
            if fn in found:
                continue
            found.add(fn)
            for n in m.walk(fn.body):
                f = n.func if isinstance(n, cst.Call) else None
                if (isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == "self"):
                    got = m.method_of_class(cls, f.attr.value)
                    if got is not None:
                        nxt_methods.add((got[0], cls))
        frontier_methods = nxt_methods
    return found


def _module_level_instances(m) -> dict:
    """name -> the file's class whose instance every module-level assignment of `name` builds
    (`model = MatchingModel()`); names bound otherwise anywhere at module level are left out."""
    classes: dict[str, set] = {}
    other: set[str] = set()
    for stmt in m.module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if not isinstance(small, cst.Assign):
                continue
            for t in small.targets:
                if not isinstance(t.target, cst.Name):
                    continue
                v = small.value
                if isinstance(v, cst.Call) and isinstance(v.func, cst.Name) and v.func.value in m.classes:
                    classes.setdefault(t.target.value, set()).add(v.func.value)
                else:
                    other.add(t.target.value)
    out = {}
    for name, found in classes.items():
        if len(found) != 1 or name in other:
            continue
        # every binding of the name in the module scope is one of those assignments (no loop
        # variable, `with ... as`, import of the same name)
        if any(b.how != "assign" for b in m.bindings.get((m.module, name), ())):
            continue
        out[name] = next(iter(found))
    return out


def _methods_run_on_instances(m, stmt, instances: dict) -> set:
    """(method, class) pairs a module-level statement runs: `__init__` of a file class it builds,
    `name.method(...)` on a module-level instance of a file class."""
    out = set()
    for n in m.walk(stmt):
        if not isinstance(n, cst.Call):
            continue
        f = n.func
        cls = meth = None
        if isinstance(f, cst.Name) and f.value in m.classes:
            cls, meth = f.value, "__init__"
        elif isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value in instances:
            cls, meth = instances[f.value.value], f.attr.value
        if cls is None:
            continue
        got = m.method_of_class(cls, meth)
        if got is not None:
            out.add((got[0], cls))
    return out


def _saves_host_values(m, save: cst.Call) -> bool:
    """`torch.save(x.cpu(), ...)`, `torch.save(model.state_dict(), ...)` of a model on the host
    (moved there by `model.cpu()` / `model.eval().cpu()` before the save, as pytorch/examples
    fast_neural_style does before saving): what the file writes holds host tensors only."""
    args = [a for a in save.args if a.keyword is None or a.keyword.value == "obj"]
    if not args or args[0].star:
        return False
    obj = args[0].value
    d = m.device_of(obj)
    if d is not None and d.where == "host":
        return True
    if isinstance(obj, cst.Call) and isinstance(obj.func, cst.Attribute) and obj.func.attr.value == "state_dict" and not obj.args:
        owner = obj.func.value
        if _moved_to_host_before(m, owner, save):
            return True  # (the engine does not see the in-place move of `model.eval().cpu()`)
        d = m.device_of(owner)
        return d is not None and d.where == "host"
    if isinstance(obj, cst.Name):
        return _host_checkpoint_dict(m, obj, save)
    return False


def _host_state_dict_call(m, node, save: cst.Call) -> bool:
    """`model.state_dict()` of a module moved to the host before the save."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "state_dict" and not node.args):
        return False
    owner = node.func.value
    if _moved_to_host_before(m, owner, save):
        return True
    d = m.device_of(owner)
    return d is not None and d.where == "host"


def _host_checkpoint_dict(m, name: cst.Name, save: cst.Call) -> bool:
    """`state = {'net': self.model.state_dict()}` with `self.model.to('cpu')` before it, then
    `torch.save(state, path)` (DIG's benchmarks/xgraph/train_gnns.py `save_model`, which moves the
    model back to its device after saving): a checkpoint dict built in the save's function whose
    tensors are the state of modules moved to the host, plus plain values (numbers, strings, the
    epoch) set in the display or stored by key. Any other value of the display, a second binding
    of the name, or a stored `state_dict()` / tensor known to be on a device: not known to be host."""
    scope = m.scope_of(save)
    bindings = m.bindings_of(name)
    if len(bindings) != 1:
        return False
    b = bindings[0]
    if b.how != "assign" or not isinstance(b.value, cst.Dict) or m.scope_of(b.node) is not scope:
        return False
    held = False
    for el in b.value.elements:
        if not isinstance(el, cst.DictElement):
            return False  # `**other`
        if _host_state_dict_call(m, el.value, save):
            held = True
        elif not isinstance(el.value, (cst.Integer, cst.Float, cst.SimpleString, cst.FormattedString)):
            return False
    if not held:
        return False
    for node in m.walk(scope):
        # `state[key] = value` in the same function: a stored state dict or device tensor is not host
        if isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Subscript) and (
                isinstance(node.target.value, cst.Name) and node.target.value.value == name.value):
            assign = m.parent(node)
            value = getattr(assign, "value", None)
            if value is None:
                return False
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "state_dict":
                if not _host_state_dict_call(m, value, save):
                    return False
                continue
            d = m.device_of(value)
            if d is not None and d.where != "host":
                return False
    return True


def _moved_to_host_before(m, owner: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """The last statement-level move of `owner` in the scope of `at`, before it, is `.cpu()`
    (through `.eval()`/`.train()`/`.float()` chains: `model.eval().cpu()`)."""
    key = dotted(owner)
    if key is None:
        return False
    scope = m.scope_of(at)
    last = None
    for call in m.calls:
        if m.scope_of(call) is not scope or not m.precedes(call, at):
            continue
        f = call.func
        if not isinstance(f, cst.Attribute) or f.attr.value not in ("cpu", "to", "cuda"):
            continue
        base = f.value
        while isinstance(base, cst.Call) and isinstance(base.func, cst.Attribute) and base.func.attr.value in ("eval", "train", "float", "double"):
            base = base.func.value
        if dotted(base) != key:
            continue
        last = call
    if last is None:
        return False
    mv = m.move_of_call(last)
    return last.func.attr.value == "cpu" or (mv is not None and mv.to_cpu)


def _path_text(ctx: Context, call: cst.Call, index: int, keyword: str) -> str | None:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == keyword:
            return ctx.code(a.value)
    pos = [a for a in call.args if a.keyword is None and not a.star]
    return ctx.code(pos[index].value) if len(pos) > index else None


def _saved_by_own_init(ctx: Context, saves: list[cst.Call], load: cst.Call, scope) -> bool:
    """A load in a method of a class whose `__init__` saves to the same path expression (an LR
    finder keeping the initial weights in `self.path` / a literal): every instance writes the file
    before its methods can read it, in the same process."""
    m = ctx.model
    if not isinstance(scope, cst.FunctionDef):
        return False
    cls = m.class_of(scope)
    if cls is None:
        return False
    return _saved_to_same_path(ctx, saves, load, lambda where: isinstance(where, cst.FunctionDef)
                               and where.name.value == "__init__" and m.class_of(where) is cls)


def _saved_to_same_path(ctx: Context, saves: list[cst.Call], load: cst.Call, where_ok) -> bool:
    """One of `saves`, in a scope `where_ok` accepts, writes to the load's path expression."""
    path = _path_text(ctx, load, 0, "f")
    if path is None:
        return False
    return any(where_ok(ctx.model.scope_of(save)) and _path_text(ctx, save, 1, "f") == path for save in saves)


_AVAILABILITY_CALLS = frozenset(
    {"torch.cuda.is_available", "torch.accelerator.is_available", "torch.backends.mps.is_available", "torch.xpu.is_available"}
)


def _availability_sign(m, test: cst.BaseExpression, depth: int = 0) -> int:
    """1 for `torch.cuda.is_available()`, -1 for its negation, 0 for any other test. A test that
    implies availability counts as the check itself: `a and torch.cuda.is_available()`, and a name
    every binding of which is such a test (wavenet_vocoder's module-level
    `use_cuda = torch.cuda.is_available()`, then `if use_cuda: torch.load(path)` in a function)."""
    sign = 1
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        sign, test = -sign, test.expression
    if isinstance(test, cst.Call) and not test.args and m.qualname(test.func) in _AVAILABILITY_CALLS:
        return sign
    if isinstance(test, cst.Attribute) and isinstance(test.value, (cst.Name, cst.Attribute)):
        # a GPU flag of the script's own (`if args.cuda:` / `if not args.cuda: ... else:`): the branch
        # runs where the user asked for the GPU, which the script then uses (awd-lstm-lm pointer.py)
        if test.attr.value in _GPU_FLAGS:
            return sign
        if test.attr.value in _CPU_FLAGS:
            return -sign
    if isinstance(test, cst.Name) and test.value in _GPU_FLAGS and _caller_flag(m, test):
        return sign  # `def load_and_setup_model(..., use_cuda):`, `if use_cuda: torch.load(p)`
    if isinstance(test, cst.Name) and test.value in _NAMED_CPU_FLAGS and _caller_flag(m, test):
        # `if cpu_run: torch.load(p, map_location=torch.device('cpu')) else: torch.load(p)`: the
        # `else:` runs where the caller asked for the GPU (NVIDIA DeepLearningExamples' Tacotron2
        # `load_and_setup_model`, PRECISION47 P47-5)
        return -sign
    named = _device_string_sign(test, m)
    if named:
        # `if device == 'cuda': torch.load(p) else: torch.load(p, map_location=...)` (Wav2Lip's
        # `_load`): the branch runs only where the script placed itself on the GPU
        return sign * named
    if depth > 3:
        return 0
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and _truthy_comparison(test.comparisons[0]):
        # `if args.cuda > 0:` (jwyang/faster-rcnn.pytorch demo.py, an int flag): the flag's own truth
        if (isinstance(test.left, cst.Call) and not test.left.args
                and m.qualname(test.left.func) == "torch.cuda.device_count"):
            return sign  # `torch.cuda.device_count() > 0`: a CUDA device is there
        inner = _availability_sign(m, test.left, depth + 1)
        return sign * inner
    if (isinstance(test, cst.IfExp) and isinstance(test.body, cst.Name) and isinstance(test.orelse, cst.Name)
            and {test.body.value, test.orelse.value} == {"True", "False"}):
        # `GPU = True if torch.cuda.device_count() > 0 else False` (MODNet's video matting demos)
        inner = _availability_sign(m, test.test, depth + 1)
        return sign * inner * (1 if test.body.value == "True" else -1)
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        parts = (test.left, test.right)
        if any(_availability_sign(m, p, depth + 1) > 0 for p in parts):
            return sign  # true only where an accelerator is
        return 0
    if isinstance(test, cst.Name):
        bound = m.bindings_of(test)
        if bound and all(
            b.how == "assign" and b.value is not None and _availability_sign(m, b.value, depth + 1) > 0
            for b in bound
        ):
            return sign
    return 0


_NAMED_CPU_FLAGS = _CPU_FLAGS | {"cpu_run", "run_on_cpu"}


def _caller_flag(m, name: cst.Name) -> bool:
    """A plain-name GPU flag that is a parameter of its function on every binding: the caller's
    choice per run, as `args.cuda` is. A name the file binds itself (`use_cuda = True`, or bound
    to the availability check: the binding rules below read it) is not."""
    bs = m.bindings_of(name)
    return bool(bs) and all(b.how == "param" for b in bs)


def _device_string_sign(test: cst.BaseExpression, m=None) -> int:
    """1 for `<device> == "cuda"` (or `"cuda:0"`, `<device>.type == "cuda"`, `str(<device>) == ...`),
    -1 for `!=` or a comparison with `"cpu"`: the script's own device choice, spelled as a string.
    The left side must be a name or an attribute chain (`device`, `self.device`, `args.device.type`).
    The string may be wrapped in `torch.device(...)`: `device == torch.device("cpu")`
    (YuliaRubanova/latent_ode's data sets load with `map_location='cpu'` in that branch and
    without it in the `else:`, which runs only on the GPU)."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return 0
    c = test.comparisons[0]
    left, right = test.left, c.comparator
    if m is not None:
        left, right = _unwrap_torch_device(m, left), _unwrap_torch_device(m, right)
    if isinstance(left, cst.SimpleString) and not isinstance(right, cst.SimpleString):
        left, right = right, left
    if (isinstance(left, cst.Call) and isinstance(left.func, cst.Name) and left.func.value == "str"
            and len(left.args) == 1):
        left = left.args[0].value
    if not isinstance(left, (cst.Name, cst.Attribute)) or not isinstance(right, cst.SimpleString):
        return 0
    value = right.evaluated_value
    if not isinstance(value, str):
        return 0
    if value == "cuda" or value.startswith("cuda:"):
        named = 1
    elif value == "cpu":
        named = -1
    else:
        return 0
    if isinstance(c.operator, cst.Equal):
        return named
    if isinstance(c.operator, cst.NotEqual):
        return -named
    return 0


def _unwrap_torch_device(m, node: cst.BaseExpression) -> cst.BaseExpression:
    """`torch.device("cpu")` -> the string `"cpu"`; any other node unchanged."""
    if (isinstance(node, cst.Call) and len(node.args) == 1 and node.args[0].keyword is None
            and isinstance(node.args[0].value, cst.SimpleString)
            and m.qualname(node.func) == "torch.device"):
        return node.args[0].value
    return node


def _truthy_comparison(c: cst.ComparisonTarget) -> bool:
    """`> 0`, `>= 1`, `!= 0`, `!= False`, `== 1`, `== True`, `is True`: the comparison holds exactly
    when the compared flag (an int or bool) is true."""
    op, right = c.operator, c.comparator
    num = right.value if isinstance(right, cst.Integer) else None
    name = right.value if isinstance(right, cst.Name) else None
    if isinstance(op, cst.GreaterThan):
        return num == "0"
    if isinstance(op, cst.GreaterThanEqual):
        return num == "1"
    if isinstance(op, cst.NotEqual):
        return num == "0" or name == "False"
    if isinstance(op, (cst.Equal, cst.Is)):
        return num == "1" or name == "True"
    return False


def _in_availability_branch(m, load: cst.Call) -> bool:
    """The load runs only when an accelerator is there: in the body of an
    `if torch.cuda.is_available():` (or the `else:` of its negation) of its own function
    (pytorch-retinanet's validation scripts keep a CUDA branch and a CPU branch). Tensors saved
    from `cuda:0` come back on a device that exists."""
    prev = load
    for anc in m.ancestors(load):
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
        if isinstance(anc, cst.If) and prev is not anc.test:
            sign = _availability_sign(m, anc.test)
            if (sign > 0 and prev is anc.body) or (sign < 0 and prev is anc.orelse):
                return True
        prev = anc
    return False


_RETRY_CATCHES = frozenset({"Exception", "BaseException", "RuntimeError"})


def _catches_load_error(handler: cst.ExceptHandler) -> bool:
    """Does the handler catch the RuntimeError a CUDA checkpoint raises on a machine without
    CUDA (a bare `except:`, `Exception`, `BaseException`, `RuntimeError`, or a tuple with one)?"""
    t = handler.type
    if t is None:
        return True
    names = t.elements if isinstance(t, cst.Tuple) else [t]
    for e in names:
        node = e.value if isinstance(e, cst.Element) else e
        if isinstance(node, cst.Name) and node.value in _RETRY_CATCHES:
            return True
        if isinstance(node, cst.Attribute) and node.attr.value in _RETRY_CATCHES:
            return True
    return False


def _retried_with_map_location(ctx: Context, load: cst.Call) -> bool:
    """The load sits in the body of a `try:` whose handler loads the same path again with
    `map_location` (hungthanhpham94/GRU4REC-pytorch main.py: `try: checkpoint = torch.load(p)`
    `except: checkpoint = torch.load(p, map_location=lambda storage, loc: storage)`). Where the
    saved devices are missing the first load raises and the handler maps the tensors: the case
    the rule warns about is handled."""
    m = ctx.model
    path = _path_text(ctx, load, 0, "f")
    if path is None:
        return False
    prev = load
    for anc in m.ancestors(load):
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
        if isinstance(anc, cst.Try) and prev is anc.body:
            for handler in anc.handlers:
                if not _catches_load_error(handler):
                    continue
                for other in m.iter_calls("torch.load", "torch.serialization.load"):
                    if (m.contains(handler.body, other)
                            and any(a.keyword is not None and a.keyword.value == "map_location" for a in other.args)
                            and _path_text(ctx, other, 0, "f") == path):
                        return True
        prev = anc
    return False


def _multi_process(m) -> bool:
    """Does the file start or join several processes (DDP, torch.distributed, mp.spawn,
    accelerate, DeepSpeed)? Then a load without map_location puts every process's copy on the
    device the tensors were saved from (`cuda:0`), even with the devices present."""
    for call in m.calls:
        q = m.qualname(call.func) or ""
        if q.startswith(("torch.distributed.", "torch.nn.parallel.Distributed", "torch.multiprocessing.spawn",
                         "accelerate.", "deepspeed.", "horovod.")):
            return True
    return False


def _resolved_path_text(ctx: Context, call: cst.Call, index: int, keyword: str) -> str | None:
    """The path expression of a save/load, through a file handle of an enclosing
    `with open(<path>, ...) as f:` (transformer-xl writes and reads `model.pt` that way)."""
    node = _path_node(ctx, call, index, keyword)
    return None if node is None else ctx.code(node)


def _path_node(ctx: Context, call: cst.Call, index: int, keyword: str) -> cst.BaseExpression | None:
    m = ctx.model
    arg = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == keyword), None)
    if arg is None:
        pos = [a for a in call.args if a.keyword is None and not a.star]
        arg = pos[index].value if len(pos) > index else None
    if arg is None:
        return None
    if isinstance(arg, cst.Name):
        for anc in m.ancestors(call):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda)):
                break
            if not isinstance(anc, cst.With):
                continue
            for item in anc.items:
                if (item.asname is not None and isinstance(item.asname.name, cst.Name)
                        and item.asname.name.value == arg.value and isinstance(item.item, cst.Call)
                        and isinstance(item.item.func, cst.Name) and item.item.func.value == "open" and item.item.args):
                    return item.item.args[0].value
    return arg


_UNIQUE_NAME_CALLS = frozenset({"uuid.uuid1", "uuid.uuid4"})


def _fresh_path_of_this_run(ctx: Context, saves: list[cst.Call], load: cst.Call) -> bool:
    """`checkpt_file = 'pretrained/' + uuid.uuid4().hex + '.pt'`, the best model saved there in the
    epoch loop and reloaded by `test()` (GCNII's train.py, full-supervised.py, ppi.py): the name is
    drawn at random by this process, so the only file it can open is one this run wrote (with
    `torch.save` to the same path in this file), on this machine's devices."""
    m = ctx.model
    node = _path_node(ctx, load, 0, "f")
    if not isinstance(node, cst.Name):
        return False
    bindings = m.bindings_of(node)
    if not bindings or any(b.how != "assign" or b.value is None for b in bindings):
        return False
    for b in bindings:
        if not any(isinstance(n, cst.Call) and m.qualname(n.func) in _UNIQUE_NAME_CALLS
                   for n in (b.value, *m.walk(b.value))):
            return False
    text = ctx.code(node)
    return any(_path_text(ctx, save, 1, "f") == text for save in saves)


def _saved_earlier_by_called_function(ctx: Context, saves: list[cst.Call], load: cst.Call, scope) -> bool:
    """The load's own code first calls a function of the file that saves to the same path
    (through `with open(...) as f` too), on the same path of execution (not in another branch of
    an `if`): `train()` in the epoch loop saves the best model, then the script reloads it to test
    it. Same process, same devices."""
    m = ctx.model
    path = _resolved_path_text(ctx, load, 0, "f")
    if path is None:
        return False
    def local_names(fn) -> set[str]:
        return {name for (where, name) in m.bindings if where is fn}

    def path_names(call, index) -> set[str]:
        node = _path_node(ctx, call, index, "f")
        return {n.value for n in (node, *m.walk(node)) if isinstance(n, cst.Name)} if node is not None else set()

    if isinstance(scope, cst.FunctionDef) and path_names(load, 0) & local_names(scope):
        return False  # the load's path is a local of its function: another variable than the saver's
    savers = []
    for save in saves:
        fn = m.enclosing(save, cst.FunctionDef)
        if fn is None or m.contains(fn, load) or _resolved_path_text(ctx, save, 1, "f") != path:
            continue
        if path_names(save, 1) & local_names(fn):
            continue  # `def earlier_run(path, ...)`: the same spelling, another variable
        savers.append(fn)
    if not savers:
        return False
    for c in (m.calls_in(scope) if scope is not m.module else m.calls):
        if m.scope_of(c) is not scope or not m.precedes(c, load) or m.exclusive(c, load):
            continue
        f = c.func
        target = None
        if isinstance(f, cst.Name):
            target = f.value
        elif isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == "self":
            target = f.attr.value
        if target is None:
            continue
        for fn in savers:
            if fn.name.value != target:
                continue
            if isinstance(f, cst.Name) and m.class_of(fn) is not None:
                continue  # a plain call reaches a module-level function, not a method
            if isinstance(f, cst.Attribute) and m.class_of(fn) is not m.class_of(c):
                continue
            return True
    return False


# an object of an imported class that writes the model to the path it is given while training
# (pytorchtools' `EarlyStopping(patience, path=...)`, `ModelCheckpoint(filepath=...)`, `CheckpointSaver`)
_CHECKPOINTER_CLASS = re.compile(r"(?i)early_?stop|checkpoint|saver")
_CHECKPOINTER_PATH_KEYWORDS = frozenset(
    {"path", "save_path", "filepath", "file_path", "checkpoint_path", "ckpt_path", "model_path", "save_file"}
)


def _path_of_imported_checkpointer(ctx: Context, load: cst.Call) -> bool:
    """The load reads the path an early-stopping / checkpoint object of an imported class was given
    (hazdzz/STGCN main.py: `es = earlystopping.EarlyStopping(..., path="STGCN_" + args.dataset +
    ".pt")` in `prepare_model`, `es(val_loss, model)` in `train`, then `test` does
    `model.load_state_dict(torch.load("STGCN_" + args.dataset + ".pt"))`): the object saves the best
    model there while this run trains (its class, in another module, calls `torch.save`), so the load
    re-reads what this process wrote. The class must not be defined in this file (then the rule sees
    its saves itself), its name must say that it checkpoints, and the path must be passed by a
    path keyword with the same text as the load's."""
    m = ctx.model
    path = _resolved_path_text(ctx, load, 0, "f")
    if path is None:
        return False
    for c in m.calls:
        f = c.func
        name = f.value if isinstance(f, cst.Name) else f.attr.value if isinstance(f, cst.Attribute) else None
        if name is None or name in m.classes or name in m.functions or not _CHECKPOINTER_CLASS.search(name):
            continue
        if (m.qualname(f) or "").startswith("torch.") or m.exclusive(c, load):
            continue
        if not isinstance(m.parent(c), cst.Assign):
            continue  # the object is kept: it is the one the training code calls
        if any(a.keyword is not None and a.keyword.value in _CHECKPOINTER_PATH_KEYWORDS and ctx.code(a.value) == path
               for a in c.args):
            return True
    return False


# a saving helper of the project, imported from another module (UER-py's `uer.model_saver.save_model`)
_SAVER_NAME = re.compile(r"(?i)(?:^|_)save(?:_|$)")
# libraries whose `save` functions write something other than a checkpoint `torch.load` reads
_NOT_CHECKPOINT_SAVERS = ("numpy.", "np.", "PIL.", "matplotlib.", "cv2.", "imageio.", "scipy.", "pandas.",
                          "json.", "pickle.", "joblib.", "torchaudio.", "torchvision.", "soundfile.")


def _package_data_file(m, load: cst.Call) -> bool:
    """The load's path is built from `__file__` (directly, or through module-level names bound
    to expressions that use it): a file that ships next to the module."""
    pos = [a for a in load.args if a.keyword is None and not a.star]
    path = pos[0].value if pos else next(
        (a.value for a in load.args if a.keyword is not None and a.keyword.value == "f"), None)
    return path is not None and _mentions_file_dunder(m, path, 0)


def _mentions_file_dunder(m, node, depth: int) -> bool:
    if depth > 3:
        return False
    for n in [node, *m.walk(node)]:
        if isinstance(n, cst.Name):
            if n.value == "__file__":
                return True
            bindings = m.bindings_of(n)
            if (bindings and len(bindings) == 1 and bindings[0].how == "assign" and bindings[0].value is not None
                    and m.scope_of(bindings[0].node) is m.module
                    and _mentions_file_dunder(m, bindings[0].value, depth + 1)):
                return True
    return False


def _saved_by_imported_helper(ctx: Context, load: cst.Call, scope) -> bool:
    """A call earlier in the load's function of a saving function imported from the project
    (UER-py's finetune scripts: `from uer.model_saver import save_model`, `save_model(model,
    args.output_model_path)` in the epoch loop whenever the dev score improves, then
    `args.model.load_state_dict(torch.load(args.output_model_path))` to test the best model): the
    helper (in another module, so the rule cannot see its `torch.save`) writes the path it is given,
    so the load re-reads what this process wrote, from these devices. The callee must be a plain
    function imported into the file (not defined in it: then the rule sees its saves itself; not
    torch, NumPy, pickle, image or audio libraries), its name must say that it saves (`save_model`,
    `save_checkpoint`, `save`), it must not be on a branch exclusive with the load, and one of its
    arguments must be the load's path expression, as written."""
    m = ctx.model
    if not isinstance(scope, cst.FunctionDef):
        return False
    path = _path_text(ctx, load, 0, "f")
    if path is None:
        return False
    for c in m.calls:
        if m.scope_of(c) is not scope or not m.precedes(c, load) or m.exclusive(c, load):
            continue
        f = c.func
        if not isinstance(f, cst.Name) or f.value in m.functions or f.value in m.classes:
            continue
        q = m.qualname(f)
        if q is None and m.star_import and not m.bindings_of(f):
            q = f.value  # `from finetune.run_classifier import *` brings `save_model` (UER-py's run_regression.py)
        if q is None or q.startswith(("torch.",) + _NOT_CHECKPOINT_SAVERS) or not _SAVER_NAME.search(f.value):
            continue  # not imported (a local or a parameter), or a library's writer
        if any(not a.star and ctx.code(a.value) == path for a in c.args):
            return True
    return False


def _saved_by_earlier_iteration(ctx: Context, saves: list[cst.Call], load: cst.Call, scope) -> bool:
    """Early stopping in the epoch loop (twitter-research/tgn train_self_supervised.py:
    `if early_stopper.early_stop_check(val_ap): best_model_path = get_checkpoint_path(best_epoch);
    tgn.load_state_dict(torch.load(best_model_path)); break` / `else: torch.save(tgn.state_dict(),
    get_checkpoint_path(epoch))`): a save on the other branch of an `if`, in the same scope and in
    a loop that holds both, writes to a path built the same way (the same text, or a call of the
    same function: the checkpoint of another epoch). The load reads what an earlier iteration of
    this run wrote, from these devices. Outside a loop the two branches never both run."""
    m = ctx.model
    lnode = _path_node(ctx, load, 0, "f")
    if lnode is None:
        return False
    lkey = _path_key(ctx, lnode, scope)
    loop = next((a for a in m.ancestors(load) if a is scope or isinstance(a, (cst.For, cst.While))), None)
    if loop is None or loop is scope:
        return False
    for save in saves:
        if m.scope_of(save) is not scope or not m.exclusive(save, load) or not m.contains(loop, save):
            continue
        snode = _path_node(ctx, save, 1, "f")
        if snode is not None and _path_key(ctx, snode, scope) == lkey:
            return True
    # the save through a function of the file called on the other branch (Yura52/tabular-dl-
    # revisiting-models bin/node.py: `if progress.success: save_checkpoint(stage)` / `elif
    # progress.fail: ... torch.load(get_checkpoint_path(stage))`, `save_checkpoint(suffix)` saving
    # to `get_checkpoint_path(suffix)`): the path is built the same way in the saver
    if lkey[0] != "call":
        return False
    for c in (m.calls_in(scope) if isinstance(scope, cst.FunctionDef) else m.calls):
        if m.scope_of(c) is not scope or not m.contains(loop, c) or not m.exclusive(c, load):
            continue
        fn = _file_function_called(m, c)
        if fn is None:
            continue
        for save in saves:
            if m.enclosing(save, cst.FunctionDef) is not fn:
                continue
            snode = _path_node(ctx, save, 1, "f")
            if snode is not None and _path_key(ctx, snode, fn) == lkey:
                return True
    return False


def _file_function_called(m, call: cst.Call) -> cst.FunctionDef | None:
    """The function of the file `call` runs: `name(...)` of a module-level function defined once,
    or `self.name(...)` of a method of the calling method's class."""
    f = call.func
    if isinstance(f, cst.Name):
        defs = m.functions.get(f.value, [])
        if len(defs) == 1 and m.class_of(defs[0]) is None:
            return defs[0]
        return None
    if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == "self":
        cls = m.class_of(call)
        if cls is None:
            return None
        for stmt in cls.body.body:
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value == f.attr.value:
                return stmt
    return None


_EXISTENCE_TESTS = ("exists", "isfile", "is_file")


def _path_returned_by_saver(ctx: Context, saves: list[cst.Call], load: cst.Call, scope) -> bool:
    """`best_model_path = self._train(...)` then `torch.load(best_model_path)` (songyouwei/ABSA-PyTorch
    train.py): the called function of the file saves the best model with `torch.save(..., path)` and
    ends with `return path`, and the call runs before the load on the same path of execution. The
    file is what this run wrote, from these devices. A save under an existence test (`if not
    os.path.exists(p): torch.save(x, p)`) may leave an older file in place: not taken."""
    m = ctx.model
    node = _path_node(ctx, load, 0, "f")
    if not isinstance(node, cst.Name):
        return False
    bindings = m.bindings_of(node)
    if not bindings:
        return False
    for b in bindings:
        v = b.value
        if b.how != "assign" or not isinstance(v, cst.Call) or m.scope_of(v) is not scope:
            return False
        if not m.precedes(v, load) or m.exclusive(v, load):
            return False
        fn = _file_function_called(m, v)
        if fn is None:
            return False
        own = [s for s in saves if m.enclosing(s, cst.FunctionDef) is fn]
        paths = {_path_text(ctx, s, 1, "f") for s in own}
        paths.discard(None)
        if not paths:
            return False
        for s in own:
            for anc in m.ancestors(s):
                if anc is fn:
                    break
                if isinstance(anc, cst.If) and any(t in ctx.code(anc.test) for t in _EXISTENCE_TESTS):
                    return False
        returns = [n for n in m.walk(fn, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda)) if isinstance(n, cst.Return)]
        if not returns or any(r.value is None or ctx.code(r.value) not in paths for r in returns):
            return False
    return True


def _path_key(ctx: Context, node: cst.BaseExpression, scope):
    """What a path is built from: a name bound once in its scope stands for its value; a call of a
    plain function name is that function (`get_checkpoint_path(epoch)`), whatever the arguments."""
    m = ctx.model
    if isinstance(node, cst.Name):
        bs = m.bindings_of(node)
        if len(bs) == 1 and bs[0].how == "assign" and bs[0].value is not None and m.scope_of(bs[0].value) is scope:
            node = bs[0].value
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
        return ("call", node.func.value)
    return ("text", ctx.code(node))


def _feeds_scheduler(m, load: cst.Call) -> bool:
    """`scheduler.load_state_dict(torch.load(p))` for an LR scheduler: its state dict holds
    Python numbers (last epoch, base learning rates), no tensors, so no device is restored."""
    arg = m.parent(load)
    if not isinstance(arg, cst.Arg) or arg.keyword is not None:
        return False
    outer = m.parent(arg)
    return (isinstance(outer, cst.Call) and isinstance(outer.func, cst.Attribute)
            and outer.func.attr.value == "load_state_dict" and outer.args[0] is arg
            and m.kind_of(outer.func.value) is Kind.SCHEDULER)


# setters of random-number-generator state: each takes a CPU `ByteTensor` (or, for Python's and
# NumPy's generators, plain Python / NumPy values), and `torch.cuda.get_rng_state()` returns one on
# the host too, so a file of such states holds no device storage
_RNG_SETTERS = frozenset({
    "torch.set_rng_state", "torch.random.set_rng_state", "torch.cuda.set_rng_state",
    "torch.cuda.random.set_rng_state", "torch.cuda.set_rng_state_all", "torch.cuda.random.set_rng_state_all",
    "random.setstate", "numpy.random.set_state",
})


def _feeds_rng_setters_only(m, facts: DeviceFacts, load: cst.Call) -> bool:
    """The loaded object is random-number-generator state: `torch.set_rng_state(torch.load(p))`,
    or `rng = torch.load(p)` (`cuda_state, cpu_state = torch.load(p)`) whose every read is the
    argument of an RNG setter, whole or one item (`rng[0]`, `rng["cuda"]`). Saved by
    `torch.cuda.get_rng_state()` / `torch.get_rng_state()`, these are CPU byte tensors (NVIDIA
    sentiment-discovery's main.py resumes `rng.pt` so, PRECISION54): nothing to map."""

    def setter_arg(node: cst.CSTNode) -> bool:
        parent = m.parent(node)
        if isinstance(parent, cst.Subscript) and parent.value is node:  # `rng[0]`, `rng["cuda"]`
            if not (len(parent.slice) == 1 and isinstance(parent.slice[0].slice, cst.Index)):
                return False
            node, parent = parent, m.parent(parent)
        if not (isinstance(parent, cst.Arg) and parent.keyword is None and not parent.star):
            return False
        call = m.parent(parent)
        return isinstance(call, cst.Call) and call.args[0] is parent and m.qualname(call.func) in _RNG_SETTERS

    if setter_arg(load):
        return True
    assign = m.parent(load)
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and assign.value is load):
        return False
    target = assign.targets[0].target
    if isinstance(target, cst.Name):
        names = [target]
    elif isinstance(target, (cst.Tuple, cst.List)) and all(
            isinstance(el, cst.Element) and isinstance(el.value, cst.Name) for el in target.elements):
        names = [el.value for el in target.elements]
    else:
        return False
    for name in names:
        bindings = m.bindings_of(name)
        if len(bindings) != 1:
            return False  # the name holds something else elsewhere
        refs = facts.references(name.value, bindings)
        if not refs or not all(setter_arg(ref) for ref in refs):
            return False
    return True


# `args.vocab`, `vocab_file`, `src_vocab_path`: an identifier that names a vocabulary (not
# `vocab_size`, `vocab_emb`: a number, an embedding matrix)
_VOCAB_IDENTIFIER = re.compile(r"^(?:[a-z0-9]+_)?vocab(?:s|ulary)?(?:_(?:path|file|filename|fname|fn|pt|pkl|pickle))?$")
# a literal that names a vocabulary file (`"vocab.pt"`, `".vocab"`, `"data/src.vocab.pkl"`)
_VOCAB_LITERAL = re.compile(r"(?<![a-z])vocab(?:s|ulary)?(?![a-z])")
# words of a literal that say tensors are in it after all (`"vocab_embeddings.pt"`, `"model_vocab.pt"`)
_TENSOR_WORDS = re.compile(r"(?<![a-z])(?:emb|embs|embed|embeds|embedding|embeddings|vector|vectors|weight|weights|"
                           r"model|models|checkpoint|ckpt|state|params)(?![a-z])")


def _vocabulary_file(ctx: Context, load: cst.Call, scope) -> bool:
    """`vocab = torch.load(args.vocab)`, `v = torch.load(filename)` after `filename += ".vocab"`
    (pcyin/pytorch_nmt, ymfa/seq2seq-summarizer): the file is a pickled vocabulary object that the
    project's preprocessing script wrote with `torch.save(vocab, path)`: words and indices, no
    tensor on a device, so there is nothing for `map_location` to map. Recognised when the load is
    assigned to a name that names a vocabulary, or its path expression (through the assignments of
    a plain name in the same scope) is spelled with one, and nothing in the path names a model,
    a checkpoint or an embedding; never for a load handed to `load_state_dict`."""
    m = ctx.model
    up = m.parent(load)
    if isinstance(up, cst.Arg):
        outer = m.parent(up)
        if isinstance(outer, cst.Call) and isinstance(outer.func, cst.Attribute) and outer.func.attr.value == "load_state_dict":
            return False
    path = _path_node(ctx, load, 0, "f")
    if path is None:
        return False
    parts: list[cst.CSTNode] = [path]
    if isinstance(path, cst.Name):
        for node in (m.walk(scope) if isinstance(scope, (cst.FunctionDef, cst.Module)) else ()):
            if isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name) and node.target.value == path.value:
                value = node.value
            elif isinstance(node, cst.Assign) and any(
                    isinstance(t.target, cst.Name) and t.target.value == path.value for t in node.targets):
                value = node.value
            else:
                continue
            # only what runs on the way to the load: earlier, in a block that holds the load
            # (not `filename = args.model` in the other branch of an `if`)
            block = m.parent(m.parent(node))
            if m.precedes(node, load) and block is not None and m.contains(block, load):
                parts.append(value)
    named = False
    for part in parts:
        for n in (part, *m.walk(part)):
            if isinstance(n, cst.SimpleString):
                text = n.value.lower()
                if _TENSOR_WORDS.search(text):
                    return False
                named = named or bool(_VOCAB_LITERAL.search(text))
            elif isinstance(n, cst.Name):
                ident = n.value.lower()
                if _TENSOR_WORDS.search(ident.replace("_", " ")):
                    return False
                named = named or bool(_VOCAB_IDENTIFIER.match(ident))
    if not named and isinstance(up, cst.Assign) and len(up.targets) == 1:
        target = up.targets[0].target
        named = isinstance(target, cst.Name) and bool(_VOCAB_IDENTIFIER.match(target.value.lower()))
    return named


# a literal naming a pickled options object: transformers' TRAINING_ARGS_NAME ("training_args.bin")
# and the like (`"args.bin"`, `"train_args.pt"`)
_ARGS_LITERAL = re.compile(r"(?:^|[/\\])(?:[a-z0-9]+_)?args\.(?:bin|pt|pth|pkl)$")
# a name bound to one (`args = torch.load(...)`, `train_args = ...`)
_ARGS_IDENTIFIER = re.compile(r"^(?:[a-z0-9]+_)?args$")


def _arguments_file(ctx: Context, load: cst.Call) -> bool:
    """`torch.load(os.path.join(model_dir, "training_args.bin"))` (monologg/R-BERT predict.py's
    `get_args`, the legacy transformers examples): the file is the argparse namespace or
    TrainingArguments the training run pickled with `torch.save(args, ...)`: options, no tensor on
    a device, nothing for `map_location` to map. Recognised when a string literal of the path
    expression names such a file, or the load is assigned to a name such as `args` /
    `train_args`; never for a load handed to `load_state_dict`."""
    m = ctx.model
    up = m.parent(load)
    if isinstance(up, cst.Arg):
        return False  # handed to a call (`model.load_state_dict(torch.load(p))`): not read as options
    path = _path_node(ctx, load, 0, "f")
    if path is None:
        return False
    for n in (path, *m.walk(path)):
        if isinstance(n, cst.SimpleString):
            text = n.value.strip("'\"").lower()
            if _ARGS_LITERAL.search(text) and not _TENSOR_WORDS.search(text.replace("_", " ")):
                return True
    if isinstance(up, cst.Assign) and len(up.targets) == 1:
        target = up.targets[0].target
        if isinstance(target, cst.Name):
            ident = target.value.lower()
            return bool(_ARGS_IDENTIFIER.match(ident)) and not _TENSOR_WORDS.search(ident.replace("_", " "))
    return False


def _data_cache(ctx: Context, saves: list[cst.Call], load: cst.Call, scope) -> bool:
    """`if os.path.exists(cached_features_file): features = torch.load(cached_features_file)`
    `else: features = ...; torch.save(features, cached_features_file)`: the same function (or
    another method of its class) writes the file with the same path expression, and what is
    loaded never reaches a `load_state_dict`: a cache of the script's own preprocessing (the
    legacy transformers examples), not a checkpoint from a training run."""
    m = ctx.model
    cls = m.class_of(scope) if isinstance(scope, cst.FunctionDef) else None
    if not (isinstance(scope, cst.FunctionDef) and _saved_to_same_path(ctx, saves, load, lambda where: where is scope or (
            cls is not None and isinstance(where, cst.FunctionDef) and m.class_of(where) is cls))) \
            and not _path_from_saving_helper(ctx, saves, load) \
            and not _module_level_cache(ctx, saves, load, scope):
        return False
    stmt = m.statement_of(load)
    names: set[str] = set()
    if isinstance(stmt, cst.SimpleStatementLine):
        for inner in stmt.body:
            if isinstance(inner, cst.Assign):
                for t in inner.targets:
                    # (the model's walk gives a node's descendants: a plain name target is the node)
                    names.update(n.value for n in (t.target, *m.walk(t.target)) if isinstance(n, cst.Name))
    if not names and not isinstance(m.parent(load), (cst.Assign, cst.Arg)):
        return False
    for call in (m.calls_in(scope) if isinstance(scope, cst.FunctionDef) else m.calls):
        f = call.func
        if isinstance(f, cst.Attribute) and f.attr.value == "load_state_dict":
            if any(m.contains(a, load) for a in call.args):
                return False
            if any(isinstance(n, cst.Name) and n.value in names for a in call.args for n in m.walk(a)):
                return False
    return True


def _module_level_cache(ctx: Context, saves: list[cst.Call], load: cst.Call, scope) -> bool:
    """A script's top level: `if os.path.isfile(args.vector_cache): vectors = torch.load(args.vector_cache)`
    `else: vectors = ...; torch.save(vectors, args.vector_cache)` (pytorch/examples' legacy SNLI
    script): the load and a save to the same path expression are the two branches of one `if`,
    so the file is the script's own cache, written by this code on whatever the value was on."""
    if not isinstance(scope, cst.Module):
        return False
    m = ctx.model
    path = _path_text(ctx, load, 0, "f")
    if path is None:
        return False
    branch = m.enclosing(load, cst.If)
    if branch is None or m.scope_of(branch) is not scope or not isinstance(branch.orelse, cst.Else):
        return False
    load_in_body = m.contains(branch.body, load)
    other = branch.orelse.body if load_in_body else branch.body
    if not load_in_body and not m.contains(branch.orelse.body, load):
        return False
    return any(m.contains(other, save) and _path_text(ctx, save, 1, "f") == path for save in saves)


def _path_from_saving_helper(ctx: Context, saves: list[cst.Call], load: cst.Call) -> bool:
    """`path = preprocess(dataset)` then `torch.load(path)`, where `preprocess` is a function of
    the file that writes the cache with `torch.save(data, p)` when it is missing and returns `p`
    (ogb's `preprocess_fp` of fingerprints): the file holds what the script itself computed, on
    the host side of its own preprocessing, not a checkpoint of a training run."""
    m = ctx.model
    pos = [a for a in load.args if a.keyword is None]
    if not pos or not isinstance(pos[0].value, cst.Name):
        return False
    bindings = m.bindings_of(pos[0].value)
    if not bindings:
        return False
    for b in bindings:
        v = b.value
        if b.how != "assign" or not isinstance(v, cst.Call) or not isinstance(v.func, cst.Name):
            return False
        defs = m.functions.get(v.func.value, [])
        if len(defs) != 1 or m.class_of(defs[0]) is not None:
            return False
        fn = defs[0]
        paths = {_path_text(ctx, s, 1, "f") for s in saves if m.scope_of(s) is fn}
        paths.discard(None)
        returns = [n for n in m.walk(fn, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda)) if isinstance(n, cst.Return)]
        if not paths or not returns or any(r.value is None or ctx.code(r.value) not in paths for r in returns):
            return False
    return True


def _saved_tensor_hook_functions(m) -> set[str]:
    """Names of the functions given to `torch.autograd.graph.saved_tensors_hooks(pack, unpack)`
    (directly, or through `super().__init__(pack, unpack)` in a subclass of it): they save and
    load tensors of the running process (activation offloading), not checkpoints."""
    names: set[str] = set()
    hook_classes = {
        name for name, info in m.classes.items()
        if any(b.endswith("saved_tensors_hooks") for b in info.bases)
    }
    for call in m.calls:
        q = m.qualname(call.func) or ""
        inside_hook_class = False
        if not q.endswith("saved_tensors_hooks"):
            f = call.func
            if not (isinstance(f, cst.Attribute) and f.attr.value == "__init__" and isinstance(f.value, cst.Call)):
                continue
            cls = m.class_of(call)
            if cls is None or cls.name.value not in hook_classes:
                continue
            inside_hook_class = True
        for a in call.args:
            v = a.value
            if isinstance(v, cst.Name):
                names.add(v.value)
            elif isinstance(v, cst.Attribute) and (inside_hook_class or isinstance(v.value, cst.Name)):
                names.add(v.attr.value)
    return names


def _moved_later(m, call: cst.Call) -> bool:
    """`name = torch.load(...)`, and later in the same scope `name.cuda()` / `name.to(...)`."""
    parent = m.parents.get(call)
    if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name)):
        return False
    name = parent.targets[0].target.value
    scope = m.scope_of(call)
    for c, recv, _meth in m.method_calls("cuda", "to"):
        if isinstance(recv, cst.Name) and recv.value == name and m.scope_of(c) is scope and m.precedes(call, c):
            return True
    return False


_PLACEHOLDER = re.compile(r"\{[^{}]*\}|%[-+ #0-9.]*[sdifr]")
_FILE_NAME = re.compile(r"[A-Za-z_][^/\\]*\.[A-Za-z0-9]+$")


def _file_names(m, node: cst.CSTNode | None, depth: int = 0) -> set[str]:
    """The file names (last path segment, placeholders written `{}`) that the string literals of a
    path expression spell: `'./{}/best_pred_run{}.pt'.format(d, n)` and
    `os.path.join(kd_dir, 'best_pred_run{}.pt'.format(n))` both give `best_pred_run{}.pt`. A name
    is followed to the values it is assigned (one level)."""
    out: set[str] = set()
    if node is None or depth > 1:
        return out
    for n in (node, *m.walk(node)):
        text = None
        if isinstance(n, cst.SimpleString):
            try:
                text = n.evaluated_value
            except (ValueError, SyntaxError):
                text = None
            if isinstance(text, bytes):
                text = None
        elif isinstance(n, cst.FormattedString):
            text = "".join(p.value if isinstance(p, cst.FormattedStringText) else "{}" for p in n.parts)
        elif isinstance(n, cst.Name) and depth == 0:
            for b in m.bindings_of(n):
                if b.how == "assign" and b.value is not None:
                    out |= _file_names(m, b.value, depth + 1)
        if text:
            last = _PLACEHOLDER.sub("{}", text).replace("\\", "/").rsplit("/", 1)[-1]
            if _FILE_NAME.match(last):
                out.add(last)
    return out


def _file_written_with_host_values(ctx: Context, saves: list[cst.Call], load: cst.Call) -> bool:
    """The load reads a file whose name (`best_pred_run{}.pt`) a save of the file writes with host
    values only (`torch.save(pred.cpu(), fname)`, deep_gcns_torch's ogbn-arxiv DGL example keeping
    teacher predictions for distillation, PRECISION40), and no save of a device value in the file
    writes that name: what is loaded holds host tensors, `map_location` changes nothing."""
    m = ctx.model
    names = _file_names(m, _path_node(ctx, load, 0, "f"))
    if not names:
        return False
    host = False
    for save in saves:
        if not names & _file_names(m, _path_node(ctx, save, 1, "f")):
            continue
        if not _saves_host_values(m, save):
            return False
        host = True
    return host
