"""GL113 hardcoded-device-index."""

from __future__ import annotations

import re

import libcst as cst

from gpulint.analysis.devices import DeviceFacts
from gpulint.analysis.modules import ModuleFacts
from gpulint.model import MODULE_BASES, WRAPPER_CLASSES
from gpulint.rule import Context, Rule
from gpulint.sites import line_ref, lines_of

DDP_CLASSES = frozenset(q for q in WRAPPER_CLASSES if "Distributed" in q)
_INDEXED = re.compile(r"cuda:\d+")
_QUIET_CALLS = frozenset({"print", "format", "info", "debug", "warning", "warn", "error", "log", "write", "startswith", "endswith"})


class HardcodedDeviceIndex(Rule):
    code = "GL113"
    name = "hardcoded-device-index"
    summary = "A fixed GPU index (`cuda:0`, `.cuda(0)`) inside a module or in a multi-GPU script; `.cuda()` in `forward`."
    message = "hard-coded device index `{what}`: {advice}"
    fix_safety = "none"
    default = False
    kind = "crash"
    prefilter = r"cuda|\.type\("
    ast_prefilter = r"cuda|^\.type\($"
    explanation = '''
A device index written into the code pins work to one GPU. Inside an `nn.Module`, a tensor made
with `device="cuda:0"` (or `.cuda(0)`, `torch.device("cuda", 0)`) meets inputs that live on
another GPU as soon as the module runs under DistributedDataParallel, DataParallel or model
parallelism: `RuntimeError: Expected all tensors to be on the same device, but found at least two
devices, cuda:1 and cuda:0!`. In a DDP script, every process then also allocates on GPU 0, which
runs out of memory or silently serialises the training. An index-less `.cuda()` or
`torch.device("cuda")` inside `forward` has the same problem: it means "the current device", not the
input's device; so does one in a module-level helper of the file that only `forward` calls (a
`move_to_device(batch)` whose device defaults to `torch.device("cuda")`), or in a method of the
module that only `forward` calls (`self.get_target(x)`). Converting a host tensor to a CUDA tensor
type (`t.type(x.type())` with x on a GPU, `t.type(torch.cuda.FloatTensor)`) is the same move to the
current GPU, unless the chain then moves it (`.to(x.device)`) or the file sets the current GPU
(`torch.cuda.set_device`). An index-less `.cuda()`
anywhere in a file that puts its other tensors on a GPU chosen by an option
(`torch.device("cuda:%d" % opt.gpu)`) is the same latent mix: with `--gpu 1` the two meet, unless
the file makes that GPU the current one (`torch.cuda.set_device(opt.gpu)`).

There is no automatic fix: use the device of an input or parameter (`x.device`,
`torch.zeros(n, device=x.device)`) inside modules, and the local rank
(`torch.device("cuda", local_rank)`, `f"cuda:{local_rank}"`) in distributed scripts.

The rule is off by default: single-GPU scripts use `"cuda:0"` legitimately. It looks at code
inside `nn.Module` methods, and at the whole file when the file uses DistributedDataParallel or a
process group (one process per GPU). A script that only uses `nn.DataParallel` is left alone
outside modules: DataParallel runs in one process and needs the model on its first device,
`cuda:0` by default, except for that very mistake: a `"cuda:N"` literal the wrapped model (or the
wrapper) is moved to while `nn.DataParallel` has no `device_ids` (its first device is GPU 0) or a
literal list starting with another GPU, which fails at the first forward with "module must have its
parameters and buffers on device cuda:0 (device_ids[0])" (BiT#73). Keys of a `map_location` dict
(`{"cuda:0": f"cuda:{rank}"}`) are fine.

Bad:

```python
class Net(nn.Module):
    def forward(self, x):
        mask = torch.ones(x.shape[0], device="cuda:0")
        return self.fc(x) * mask[:, None]
```

Good:

```python
class Net(nn.Module):
    def forward(self, x):
        mask = torch.ones(x.shape[0], device=x.device)
        return self.fc(x) * mask[:, None]
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        facts = m.facts(DeviceFacts)
        # one process per GPU (DDP, a process group): each must use its own index. DataParallel is
        # one process that needs the model on `device_ids[0]`, `cuda:0` by default: no advice there.
        # the call that makes the file distributed, named in the message (the site itself may sit
        # on a branch that runs without it: transformers' training_args single-process path)
        evidence = next(
            (
                c
                for c in m.calls
                if (m.qualname(c.func) or "") in DDP_CLASSES
                or (m.qualname(c.func) or "") in ("torch.distributed.init_process_group", "torch.distributed.run")
            ),
            None,
        )
        distributed = evidence is not None

        def run_by(node):
            short = (m.qualname(evidence.func) or "").rsplit(".", 1)[-1]
            at = lines_of(ctx, node, [evidence]) or "this line"
            return f"the file can run one process per GPU (`{short}` on {at}), and each such process must use its own GPU"

        def where(node, index="0"):
            in_module = self._in_module_method(ctx, node)
            if in_module:
                return "inside a module use the device of an input or parameter (`x.device`)"
            if distributed:
                if index == "0" and _rank_zero_only(m, node):
                    return None  # only rank 0 runs it: device 0 is its own
                return f"{run_by(node)}: use the local rank (`torch.device(\"cuda\", local_rank)`)"
            return None

        dp_targets = None if distributed else _dataparallel_move_strings(m)
        for s in facts.strings:
            v = s.evaluated_value
            if not isinstance(v, str) or not _INDEXED.fullmatch(v) or not self._device_position(ctx, s):
                continue
            advice = where(s, v.rpartition(":")[2])
            if advice:
                yield ctx.finding(s, self.message.format(what=v, advice=advice))
            elif dp_targets and id(s) in dp_targets and not self._in_module_method(ctx, s):
                dp, first = dp_targets[id(s)]
                given = "no `device_ids` (every visible GPU, the first is `cuda:0`)" if first == "0" and not any(
                    a.keyword is not None and a.keyword.value == "device_ids" for a in dp.args) else (
                    f"`device_ids` starting with {first}")
                yield ctx.finding(
                    s,
                    f"hard-coded device index `{v}`: the model is moved there, but `{ctx.code(dp.func)}(...)` on "
                    f"{line_ref(ctx, dp)} has {given}, and DataParallel needs the model on its first device: "
                    f"the first forward fails (\"module must have its parameters and buffers on device "
                    f"cuda:{first} (device_ids[0])\"); pass that GPU first (`device_ids=[{v.rpartition(':')[2]}, ...]`, "
                    f"or `[device.index]`) or move the model to `cuda:{first}`",
                )
        chosen = _gpu_chosen_by_option(ctx)
        for call, _recv, _meth in m.method_calls("cuda"):
            pos = [a for a in call.args if a.keyword is None]
            dev = [a for a in call.args if a.keyword is not None and a.keyword.value == "device"]
            arg = (pos or dev or [None])[0]
            if arg is not None and isinstance(arg.value, cst.Integer):
                advice = where(call, arg.value.value)
                if advice:
                    yield ctx.finding(call, self.message.format(what=f".cuda({arg.value.value})", advice=advice))
            elif arg is None and self._in_forward(ctx, call):
                yield ctx.finding(
                    call,
                    "`.cuda()` in `forward` moves to the current GPU, not to the input's: use `.to(x.device)`",
                )
            elif arg is None and (helper := self._forward_helper(ctx, call)) is not None:
                yield ctx.finding(
                    call,
                    f"`.cuda()` in `{helper}` (called only from `forward`) moves to the current GPU, not to "
                    "the input's: use `.to(x.device)`",
                )
            elif arg is None and chosen is not None and not call.args:
                # SCANimate#8: `cuda = torch.device("cuda:%d" % opt.gpu)` for the networks and the
                # scans, an index-less `.cuda()` for the SMPL tensors: with `--gpu 1` they meet on
                # two GPUs
                dev_call, index = chosen
                yield ctx.finding(
                    call,
                    f"`.cuda()` moves to the current GPU (GPU 0 unless it is set), but the file puts its other "
                    f"tensors on the GPU chosen by `{ctx.code(index)}` ({line_ref(ctx, dev_call)}): with any other "
                    "choice they meet on two GPUs; move it to that device (`.to(device)`)",
                )
        # `t.type(x.type())` with x on a GPU (`"torch.cuda.FloatTensor"`), `t.type(torch.cuda.FloatTensor)`:
        # a conversion to a CUDA tensor type lands on the current GPU, as an index-less `.cuda()`
        # does (MONAI GenerativeModels#371); not when the chain then moves it (`.to(x.device)`) or
        # the file makes a GPU the current one (`torch.cuda.set_device`)
        sets_current = any((m.qualname(c.func) or "") in _CURRENT_DEVICE_SETTERS for c in m.calls) or (
            "CUDA_VISIBLE_DEVICES" in ctx.source
        )
        for call, _recv, _meth in () if sets_current else m.method_calls("type"):
            what = _cuda_type_conversion(m, call)
            if what is None or _moved_after(m, call):
                continue
            # a tensor already on a GPU keeps its index under `.type(...)`: only a conversion from
            # the host picks the current GPU (`(x > 0).type(x.type())` is fine)
            d = m.device_of(_recv)
            if d is None or not d.is_host:
                continue
            if self._in_forward(ctx, call):
                place = "`forward`"
            else:
                helper = self._forward_helper(ctx, call)
                place = f"`{helper}` (called only from `forward`)" if helper else None
            if place:
                yield ctx.finding(
                    call,
                    f"`.type({what})` in {place} converts to a CUDA tensor type, which lands on the current "
                    "GPU, not on the input's: use `.to(x.device)` (or `.type_as(x)`, which keeps the device "
                    "index)",
                )
        for call in m.iter_calls("torch.device"):
            if self._indexless_cuda_device(call):
                # `torch.device("cuda")` is the current GPU: in forward (or in a helper only forward
                # calls, DrugOOD's `move_to_device`) it is not the device of the module's input
                if self._in_forward(ctx, call):
                    place = "`forward`"
                else:
                    helper = self._forward_helper(ctx, call)
                    place = f"`{helper}` (called only from `forward`)" if helper else None
                if place:
                    yield ctx.finding(
                        call,
                        f'`torch.device("cuda")` in {place} is the current GPU, not the input\'s: use the '
                        "device of an input or parameter (`x.device`)",
                    )
                continue
            if len(call.args) >= 2 and isinstance(call.args[1].value, cst.Integer):
                first = call.args[0].value
                if isinstance(first, cst.SimpleString) and first.evaluated_value == "cuda":
                    advice = where(call, call.args[1].value.value)
                    if advice:
                        what = f'torch.device("cuda", {call.args[1].value.value})'
                        yield ctx.finding(call, self.message.format(what=what, advice=advice))

    @staticmethod
    def _device_position(ctx: Context, s: cst.SimpleString) -> bool:
        """The string is used as a device (an argument, an assigned value, a default), not a
        comparison operand, a message, a docstring or a `map_location` dict key."""
        m = ctx.model
        node: cst.CSTNode = s
        parent = m.parent(node)
        while isinstance(parent, cst.IfExp):
            node, parent = parent, m.parent(parent)
        if isinstance(parent, cst.Arg):
            call = m.parent(parent)
            if isinstance(call, cst.Call):
                f = call.func
                name = f.attr.value if isinstance(f, cst.Attribute) else f.value if isinstance(f, cst.Name) else ""
                if name in _QUIET_CALLS:
                    return False
            return True
        if isinstance(parent, (cst.Assign, cst.AnnAssign)):
            return True
        if isinstance(parent, cst.Param):
            return True
        if isinstance(parent, cst.DictElement):
            return parent.value is node
        return False

    @staticmethod
    def _in_module_method(ctx: Context, node: cst.CSTNode) -> bool:
        m = ctx.model
        fn = m.enclosing(node, cst.FunctionDef)
        if fn is None:
            return False
        cls = m.class_of(fn)
        return cls is not None and m.class_is(cls.name.value, MODULE_BASES)

    @staticmethod
    def _indexless_cuda_device(call: cst.Call) -> bool:
        """`torch.device("cuda")`: one positional string argument, exactly "cuda"."""
        if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
            return False
        arg = call.args[0].value
        return isinstance(arg, cst.SimpleString) and arg.evaluated_value == "cuda"

    @classmethod
    def _forward_helper(cls, ctx: Context, node: cst.CSTNode) -> str | None:
        """The name of the module-level function of the file holding `node` when that function is
        called, outside itself, only from `forward` methods of the file's modules (at least once);
        or of a method of a module class that its `forward` reaches through `self.<m>(...)` calls
        and that nothing else calls (MONAI's `get_target_tensor`, GenerativeModels#371)."""
        m = ctx.model
        fn = m.enclosing(node, cst.FunctionDef)
        if fn is None or m.enclosing(fn, cst.FunctionDef) is not None:
            return None
        if m.class_of(fn) is not None:
            return cls._forward_method(ctx, fn)
        sites = [c for c in m.call_sites(fn) if not m.contains(fn, c)]
        if not sites or not all(cls._in_forward(ctx, c) for c in sites):
            return None
        return fn.name.value

    @staticmethod
    def _forward_method(ctx: Context, fn: cst.FunctionDef) -> str | None:
        """`fn` (not `forward`) is a method of a module class of the file that `forward` reaches
        through `self.<m>(...)` calls, and every call of a method of that name in the file is a
        `self.<m>(...)` call inside a method `forward` reaches: a method only `forward` runs."""
        m = ctx.model
        cls_node = m.class_of(fn)
        name = fn.name.value
        if cls_node is None or name == "forward" or name.startswith("__"):
            return None
        if not m.class_is(cls_node.name.value, MODULE_BASES):
            return None
        facts = m.facts(ModuleFacts)
        sites = 0
        for c, recv, _meth in m.method_calls(name):
            caller = m.enclosing(c, cst.FunctionDef)
            if caller is fn:
                continue
            if not (isinstance(recv, cst.Name) and recv.value == "self") or caller is None:
                return None  # `obj.get_target(...)`: maybe this method, run from outside forward
            caller_cls = m.class_of(caller)
            cmc = facts.by_name.get(caller_cls.name.value) if caller_cls is not None else None
            if cmc is None:
                return None
            if cmc.methods.get(name) is not fn:
                continue  # another class's method of the same name
            if caller not in cmc.reachable:
                return None
            sites += 1
        if not sites:
            return None
        # the method's name read as a value elsewhere (`hook = self.get_target`): other callers
        for node in m.nodes:
            if (isinstance(node, cst.Attribute) and node.attr.value == name
                    and not isinstance(m.parent(node), cst.Call)):
                return None
        return name

    @staticmethod
    def _in_forward(ctx: Context, node: cst.CSTNode) -> bool:
        m = ctx.model
        for anc in m.ancestors(node):
            if isinstance(anc, cst.FunctionDef) and anc.name.value == "forward":
                cls = m.class_of(anc)
                return cls is not None and m.class_is(cls.name.value, MODULE_BASES)
        return False


def _cuda_type_conversion(m, call: cst.Call) -> str | None:
    """The argument's text when `call` is `t.type(<a CUDA tensor type>)`: another tensor's type
    (`x.type()`, a CUDA type when x is on a GPU), `torch.cuda.FloatTensor`, or a string naming a
    `torch.cuda.` type. `t.type()` (reading the type) and dtypes (`torch.float32`) are not."""
    if len(call.args) != 1 or call.args[0].star:
        return None
    arg = call.args[0]
    if arg.keyword is not None and arg.keyword.value != "dtype":
        return None
    v = arg.value
    if (isinstance(v, cst.Call) and isinstance(v.func, cst.Attribute) and v.func.attr.value == "type"
            and not v.args and isinstance(v.func.value, (cst.Name, cst.Attribute, cst.Subscript))):
        return m.module.code_for_node(v)
    q = m.qualname(v) or ""
    if q.startswith("torch.cuda.") and q.endswith("Tensor"):
        return q
    if isinstance(v, cst.SimpleString):
        sv = v.evaluated_value
        if isinstance(sv, str) and sv.startswith("torch.cuda.") and sv.endswith("Tensor"):
            return repr(sv).replace("'", '"')
    return None


_MOVES_AFTER = frozenset({"to", "cuda", "cpu", "type_as", "to_device"})


def _moved_after(m, call: cst.Call) -> bool:
    """A later call of the same chain moves the result (`.type(x.type()).to(x.device)`)."""
    node: cst.CSTNode = call
    while True:
        parent = m.parent(node)
        if not isinstance(parent, cst.Attribute) or parent.value is not node:
            return False
        outer = m.parent(parent)
        if not isinstance(outer, cst.Call) or outer.func is not parent:
            return False
        if parent.attr.value in _MOVES_AFTER:
            return True
        node = outer


def _is_rank_zero_test(m, test: cst.BaseExpression) -> bool:
    """`rank == 0`, `args.local_rank == 0`, `0 == global_rank`, `dist.get_rank() == 0`."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    comp = test.comparisons[0]
    if not isinstance(comp.operator, cst.Equal):
        return False
    left, right = test.left, comp.comparator
    if isinstance(left, cst.Integer):
        left, right = right, left
    if not (isinstance(right, cst.Integer) and right.value == "0"):
        return False
    if isinstance(left, cst.Call):
        return (m.qualname(left.func) or "").endswith("get_rank")
    name = left.attr.value if isinstance(left, cst.Attribute) else left.value if isinstance(left, cst.Name) else ""
    return "rank" in name.lower()


def _rank_zero_only(m, node: cst.CSTNode, depth: int = 0) -> bool:
    """The code runs on rank 0 only: in the body of an `if rank == 0:` (not its else), or in a
    function of the file whose every call site does (followed two calls deep)."""
    child = node
    for anc in m.ancestors(node):
        if isinstance(anc, cst.If) and child is anc.body and _is_rank_zero_test(m, anc.test):
            return True
        if isinstance(anc, cst.FunctionDef):
            if depth >= 2:
                return False
            sites = m.call_sites(anc)
            return bool(sites) and all(_rank_zero_only(m, c, depth + 1) for c in sites)
        child = anc
    return False


_CURRENT_DEVICE_SETTERS = ("torch.cuda.set_device", "torch.cuda.device")


def _gpu_chosen_by_option(ctx: Context):
    """(the `torch.device(...)` call, its index expression) when the file builds a CUDA device
    from a GPU index it reads from an option or a variable (`torch.device("cuda:%d" % opt.gpu)`,
    `torch.device(f"cuda:{args.gpu}")`, `torch.device("cuda", local_rank)`) and never makes that GPU
    the current one (`torch.cuda.set_device`, `with torch.cuda.device(...)`, `CUDA_VISIBLE_DEVICES`);
    None otherwise."""
    m = ctx.model
    if "CUDA_VISIBLE_DEVICES" in ctx.source:
        return None
    for c in m.calls:
        if (m.qualname(c.func) or "") in _CURRENT_DEVICE_SETTERS:
            return None
    for call in m.iter_calls("torch.device"):
        args = [a for a in call.args if a.keyword is None and not a.star]
        if not args or len(args) != len(call.args):
            continue
        index = None
        first = args[0].value
        if len(args) == 2 and isinstance(first, cst.SimpleString) and first.evaluated_value == "cuda":
            index = args[1].value
        elif len(args) == 1:
            index = _cuda_index_of_string(first)
        if index is not None and _option_like(m, index):
            return call, index
    return None


def _cuda_index_of_string(e):
    """The index expression of `"cuda:%d" % i`, `f"cuda:{i}"`, `"cuda:{}".format(i)`."""
    if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, cst.Modulo):
        if isinstance(e.left, cst.SimpleString) and e.left.evaluated_value in ("cuda:%d", "cuda:%s", "cuda:%i"):
            return e.right
    if isinstance(e, cst.FormattedString) and len(e.parts) == 2:
        a, b = e.parts
        if isinstance(a, cst.FormattedStringText) and a.value == "cuda:" and isinstance(b, cst.FormattedStringExpression):
            return b.expression
    if (isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) and e.func.attr.value == "format"
            and isinstance(e.func.value, cst.SimpleString) and e.func.value.evaluated_value == "cuda:{}"
            and len(e.args) == 1):
        return e.args[0].value
    return None


def _option_like(m, index) -> bool:
    """An option's field (`opt.gpu`, `args.local_rank`, `self.opt.gpu_id`) or a name that is a
    parameter or assigned once: one chosen GPU, not a loop over GPUs (`for i in range(n)`)."""
    if isinstance(index, cst.Attribute):
        return True
    if isinstance(index, cst.Name):
        binds = m.bindings_of(index)
        return bool(binds) and all(b.how in ("assign", "param") for b in binds)
    return False



_DATA_PARALLEL = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
                            "torch.nn.parallel.data_parallel.DataParallel"})


def _dataparallel_move_strings(m) -> dict:
    """{id(string): (DataParallel call, its first device index as text)} for each `"cuda:N"` literal
    that names where a model wrapped by `nn.DataParallel` is moved (`model.to(device)` with `device =
    torch.device("cuda:1" if ... else "cpu")`, before or after the wrap) when N is not the wrapper's
    first device: `device_ids` absent or None (GPU 0 first), or a literal list whose first item is
    another number (BiT#73, G65-5). Wrappers whose `device_ids` the file computes are left alone."""
    out: dict = {}
    for dp in m.calls:
        if m.qualname(dp.func) not in _DATA_PARALLEL:
            continue
        ids = next((a.value for a in dp.args if a.keyword is not None and a.keyword.value == "device_ids"), None)
        if ids is None:
            pos = [a for a in dp.args if a.keyword is None]
            ids = pos[1].value if len(pos) > 1 else None
        if ids is None or (isinstance(ids, cst.Name) and ids.value == "None"):
            first = "0"
        elif (isinstance(ids, (cst.List, cst.Tuple)) and ids.elements
              and isinstance(ids.elements[0].value, cst.Integer)):
            first = ids.elements[0].value.value
        else:
            continue
        names = []
        inner = next((a.value for a in dp.args if a.keyword is None), None)
        if isinstance(inner, (cst.Name, cst.Attribute)):
            names.append(inner)
        stmt = m.statement_of(dp)
        if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Assign):
            for t in stmt.body[0].targets:
                if isinstance(t.target, (cst.Name, cst.Attribute)):
                    names.append(t.target)
        devices = [mv.device for name in names for mv in m.moves_of(name)]
        # the wrapper itself moved in the same expression: `nn.DataParallel(net).to(self.device)`
        # (HOReID#28's trainer class, where no move of a plain name records it)
        attr = m.parent(dp)
        if isinstance(attr, cst.Attribute) and attr.value is dp and attr.attr.value == "to":
            call = m.parent(attr)
            if isinstance(call, cst.Call) and call.func is attr:
                arg = next((a.value for a in call.args if a.keyword is None or a.keyword.value == "device"), None)
                if arg is not None:
                    devices.append(arg)
        for device in devices:
            for lit in _index_literals(m, device):
                if lit.evaluated_value.rpartition(":")[2] != first:
                    out[id(lit)] = (dp, first)
    return out


def _index_literals(m, expr, depth: int = 0) -> list:
    """The `"cuda:N"` string literals a device expression is made of: in the expression, or in the
    assigned values of a name it is (every binding)."""
    if expr is None or depth > 2:
        return []
    if isinstance(expr, cst.Name) or (
            isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"):
        # a name, or `self.device` (its bindings in the methods of the class)
        out = []
        for b in m.bindings_of(expr):
            if b.how == "assign" and b.value is not None:
                out.extend(_index_literals(m, b.value, depth + 1))
        return out
    return [n for n in m.walk(expr) if isinstance(n, cst.SimpleString)
            and isinstance(n.evaluated_value, str) and _INDEXED.fullmatch(n.evaluated_value)]
