"""GL106 unregistered-tensor-attribute."""

from __future__ import annotations

import re

import libcst as cst

from gpulint.analysis.mismatch import (
    accelerator_named_cpu,
    attribute_root,
    file_function_call,
    given_host_tensors,
    reachable_from_forward,
)
from gpulint.analysis.devices import runs_on_cpu_only
from gpulint.analysis.modules import (
    AttrAssign,
    ModuleClass,
    ModuleFacts,
    self_attr,
    super_init_index,
    top_statement_index,
)
from gpulint.analysis.paths import is_test_path
from gpulint.rule import Context, Rule
from gpulint.sites import line_ref

_PLACING_METHODS = frozenset({"to", "cuda"})
_PARAMETER = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
_CONVERSIONS = frozenset("to cuda cpu half float double bfloat16 type".split())


class UnregisteredTensorAttribute(Rule):
    code = "GL106"
    name = "unregistered-tensor-attribute"
    summary = "A tensor stored as a plain attribute in `__init__` does not move with `model.to(device)`."
    message = (
        "`self.{attr}` is a plain tensor attribute, not a parameter or buffer: `model.to(device)` leaves it "
        "on the CPU, and forward combines it with tensors on the device; register it with "
        "`self.register_buffer(\"{attr}\", ..., persistent=False)`"
    )
    fix_safety = "safe"
    default = True
    kind = "crash"
    prefilter = r"def forward\b"
    ast_prefilter = r"^base (?:Module|Sequential|ModuleList|ModuleDict|LightningModule)$"
    explanation = '''
`model.to(device)` (and `.cuda()`, `.half()`, DDP's broadcast, `state_dict()`) only sees what the
module registered: parameters, buffers and submodules. A tensor stored with a plain
`self.mask = torch.tril(...)` in `__init__` is an ordinary Python attribute: it stays on the CPU
when the model moves, and the first operation in `forward` that combines it with the input or a
parameter fails on a GPU with `RuntimeError: Expected all tensors to be on the same device`.

The rule fires when such an attribute is read in `forward` (or a method that forward calls) in an
operation with a device tensor, or in another method of the class that the file calls on a moved
instance (`policy.sample(state)` after `policy.to(device)`); not when the attribute is a `nn.Parameter`, a registered buffer,
a Python number, a 0-dim scalar tensor (`torch.tensor(w)` counts as one unless `w` is known to be
a sequence: a list or tuple display, `list(...)`, or an `__init__` parameter whose default and every
argument the file's constructions pass are such), is reassigned in forward, is only used in `__init__`, as
an index or for its shape, is moved with `.to(x.device)` where it is used, or is moved by the
class's own `_apply`/`to`/`cuda` override (a `to` override that moves other attributes by hand does
not move this one), or is read only on the CPU branch of a device test (`if x.is_cuda:` using a
`.cuda()` copy, `else: out = (x - self.mean) / self.std`); nor when it is the gradient-checkpointing dummy (a `requires_grad=True` factory handed only whole to
`torch.utils.checkpoint.checkpoint(...)` and to the block it checkpoints); nor when it is a tensor the caller hands to `__init__` (`self.support =
support`) and no construction of the class in the file passes one known to be on the host. An
attribute that `__init__` makes a Parameter on one branch and a plain tensor on the other
(`if requires_grad: self.beta = Parameter(...)` / `else: self.beta = torch.zeros(1)`) is reported
when a construction of the file takes the plain branch and that instance meets the device.

An attribute that forward moves lazily (`if self.anchor_vec.device != x.device: self.anchor_vec =
self.anchor_vec.to(x.device)`) is reported in one case: the file wraps a model in
`nn.DataParallel` and reads the attribute from outside the class through the wrapper's `.module`
(`model.module.module_list[j].anchor_vec` in a loss), without moving what it read. With two or more
GPUs forward runs on replicas, the lazy move never reaches the original module, and that read gets
the CPU tensor (PyTorch_YOLOv4#296; one GPU trains, DataParallel then calls the module itself).

A tensor attribute put on one GPU in `__init__` (`.cuda()`, `.to("cuda")`, or `.to(device)` of
the script's accelerator device handed to the constructor, the seq2seq tutorials' attention
`scale`) of a class the file wraps in `nn.DataParallel` is reported: the replicas copy parameters
and buffers only, so the replica on the second GPU reads the first GPU's tensor.

An attribute made on a literal GPU in `__init__` (`torch.arange(n, device="cuda")`, `.cuda()`,
`.to("cuda")`) is reported when the file moves the module's instances with another device
expression (a variable, a flag, the CPU): the move leaves it on that GPU, forward meets it with
tensors elsewhere (SAM 3's coordinate cache on a CPU run), and without CUDA the construction itself
fails. The fix registers the buffer made without the literal device (none for random factories).

The fix registers it as a non-persistent buffer, which moves with the module and leaves the
`state_dict` keys unchanged: `self.register_buffer("mask", torch.tril(...), persistent=False)`.
When the attribute is assigned on several branches (`if isinstance(mask, torch.Tensor): ...
else: ...`), each assignment that can run first registers it; one that always runs after a
registering one (`self.mask = self.mask.float()`) stays an assignment to the buffer. No fix when
such a branch assigns something other than a tensor (None, a Parameter).

The rule is silent in test files (`test_*.py`, `*_test.py`, files under `tests/`/`testing/`): a
test suite's modules run where its tests put them, and a mismatch fails the test that runs it.

Bad:

```python
class Decoder(nn.Module):
    def __init__(self, steps):
        super().__init__()
        self.mask = torch.tril(torch.ones(steps, steps))

    def forward(self, scores):
        return scores.masked_fill(self.mask == 0, float("-inf"))
```

Good:

```python
class Decoder(nn.Module):
    def __init__(self, steps):
        super().__init__()
        self.register_buffer("mask", torch.tril(torch.ones(steps, steps)), persistent=False)

    def forward(self, scores):
        return scores.masked_fill(self.mask == 0, float("-inf"))
```
'''

    def check(self, ctx: Context):
        if is_test_path(ctx.path):
            return  # a test suite's modules run where its tests put them: a mismatch fails that test itself
        if runs_on_cpu_only(ctx.model, ctx.source, ctx.path, scripts=False):
            return  # a notebook that never asks for an accelerator: nothing is moved (d2l notebooks)
        facts: ModuleFacts = ctx.model.facts(ModuleFacts)
        seen = set()
        for cls in facts.classes:
            for attr in sorted(cls.flow.attr_meets):
                if _moves_own_state(ctx, cls, attr):
                    continue  # the class moves it itself
                assigns = cls.init_assigns.get(attr, [])
                tensors = [a for a in assigns if a.kind == "tensor"]
                tensors = _live(ctx.model, tensors)
                if not tensors or any(self._placed(ctx, a.value) or self._maybe_scalar(ctx, cls, a.value) for a in tensors):
                    continue
                if any(_from_caller_not_host(ctx.model, a) for a in tensors):
                    continue  # the caller chose where it lives
                if any(_converted_parameter(ctx.model, a.value) for a in tensors):
                    continue  # GL117's shape: a buffer would stop training it
                if _read_as_scalars(ctx.model, cls.node, attr, tensors):
                    continue  # a flat table read only as `self.sigmas[0]`: 0-dim tensors meet the device
                if _read_off_device_only(ctx.model, cls.node, attr):
                    continue  # read only where the input is on the host (`else:` of `if x.is_cuda:`)
                if _checkpoint_dummy(ctx.model, cls.node, attr, tensors):
                    continue  # `requires_grad=True` dummy handed to `checkpoint(...)`: never combined
                first = tensors[0]
                if first.node in seen:
                    continue
                seen.add(first.node)
                msg = self.message.format(attr=attr)
                where = cls.flow.attr_meet_methods.get(attr, set())
                if where and not any(fn in cls.reachable for fn in where):
                    # met only in methods the file calls on the moved module (`policy.sample(s)`)
                    names = ", ".join(sorted(f"`{fn.name.value}()`" for fn in where))
                    msg = msg.replace("and forward combines it", f"and {names} combines it")
                yield ctx.finding(first.node, msg, self._fix(ctx, cls, attr, assigns))
        yield from self._data_parallel(ctx, facts, seen)
        yield from self._literal_device(ctx, facts, seen)
        yield from self._engine(ctx, facts, seen)
        yield from self._lazy_read_through_data_parallel(ctx, facts, seen)

    def _lazy_read_through_data_parallel(self, ctx: Context, facts: ModuleFacts, seen: set):
        """A plain tensor attribute made on the host in `__init__` that the module moves lazily in
        the methods forward runs (`if self.anchor_vec.device != device: self.anchor_vec =
        self.anchor_vec.to(device)`), in a file that wraps a model in `nn.DataParallel` and reads the
        attribute from outside the class through the wrapper's `.module`
        (`model.module.module_list[jj].anchor_vec`, PyTorch_YOLOv4#296, E63-4). With two or more
        GPUs forward runs on replicas: the lazy move never reaches the original module, whose
        attribute stays on the CPU for that reader (one GPU trains: DataParallel then calls the
        module itself). Not reported when the reader moves what it read (`anchors =
        anchors.to(targets.device)`, the thread's fix) or converts it at the read."""
        m = ctx.model
        if not any(m.qualname(c.func) in _DATA_PARALLEL for c in m.calls):
            return
        for cls in facts.classes:
            if cls.registers_dynamically:
                continue
            for attr in sorted(cls.init_assigns):
                if attr in cls.buffers or attr in cls.parameters or attr in cls.submodules:
                    continue
                assigns = cls.init_assigns[attr]
                tensors = _live(m, [a for a in assigns if a.kind == "tensor"])
                if not tensors or len(tensors) != len(assigns) or any(self._placed(ctx, a.value) for a in tensors):
                    continue
                if _moves_own_state(ctx, cls, attr) or any(_converted_parameter(m, a.value) for a in tensors):
                    continue
                lazy = _lazy_moves(m, cls, attr)
                if not lazy:
                    continue
                reads = _unmoved_reads_through_module(m, cls, attr)
                if not reads:
                    continue
                first = tensors[0]
                if first.node in seen:
                    continue
                seen.add(first.node)
                msg = (
                    f"`self.{attr}` is a plain tensor attribute that the module moves lazily in forward "
                    f"({line_ref(ctx, lazy[0])}), and the file reads it through the `nn.DataParallel` wrapper's "
                    f"`.module` ({line_ref(ctx, reads[0])}): with two or more GPUs forward runs on replicas, the "
                    "lazy move never reaches this module, and that read gets the CPU tensor (one GPU trains); "
                    f"register it with `self.register_buffer(\"{attr}\", ..., persistent=False)`"
                )
                yield ctx.finding(first.node, msg, self._fix(ctx, cls, attr, assigns))

    def _literal_device(self, ctx: Context, facts: ModuleFacts, seen: set):
        """A plain tensor attribute made in `__init__` on a literal accelerator (`torch.arange(...,
        device="cuda")`, `.cuda()`, `.to("cuda")`) of a class whose instances the file moves with
        another device expression (`Dec().to(device)`, `device` a variable, a flag, the CPU): the
        move leaves the attribute on that GPU, and forward meets it with tensors wherever the model
        runs (SAM 3's coordinate cache on a CPU run of a GPU machine, G65-4; on a machine without
        CUDA the construction itself fails). The fix registers it as a non-persistent buffer made
        without the literal device, so that it follows the module; not for random factories
        (the numbers drawn would change)."""
        m = ctx.model
        for cls in facts.classes:
            if cls.registers_dynamically:
                continue
            for attr in sorted(cls.flow.attr_meets):
                if attr in cls.buffers or attr in cls.parameters or attr in cls.submodules:
                    continue
                if _moves_own_state(ctx, cls, attr):
                    continue
                assigns = cls.init_assigns.get(attr, [])
                tensors = _live(m, [a for a in assigns if a.kind == "tensor"])
                if not tensors or len(tensors) != len(assigns):
                    continue
                literals = [_literal_accelerator(m, a.value, list(self._expr_nodes(ctx, a.value))) for a in tensors]
                if not all(literals):
                    continue
                if any(_converted_parameter(m, a.value) for a in tensors):
                    continue
                moves = _instance_moves(m, cls)
                if not moves:
                    continue  # never moved: where its inputs are decides (not this shape)
                texts = {t for lit in literals for t in lit[1]}
                if any(_move_text(mv) in texts for mv in moves):
                    continue  # moved to the same literal device somewhere: not provably elsewhere
                first = tensors[0]
                if first.node in seen:
                    continue
                seen.add(first.node)
                where = texts.pop() if len(texts) == 1 else "a literal GPU"
                mv = moves[0]
                moved = f"`{ctx.code(mv.call)}` on {line_ref(ctx, mv.call)}"
                msg = (
                    f"`self.{attr}` is a plain tensor attribute made on `\"{where}\"` in `__init__`, and {moved} moves "
                    f"parameters and buffers, not plain attributes: on any other device (the CPU, another GPU) forward "
                    f"combines it with tensors there, and without CUDA the construction fails; register it with "
                    f"`self.register_buffer(\"{attr}\", ..., persistent=False)` made without the literal device, so "
                    f"that it follows the module"
                )
                fix = None
                if not any(_random_draw(m, a.value) for a in tensors):
                    fix = self._fix(ctx, cls, attr, assigns, strip=lambda v: _without_literal_device(ctx, v))
                yield ctx.finding(first.node, msg, fix)

    def _data_parallel(self, ctx: Context, facts: ModuleFacts, seen: set):
        """A plain tensor attribute pinned to one GPU in `__init__` (`torch.tensor(v).cuda()`) of a
        class the file wraps in `nn.DataParallel`: fine on one GPU, but DataParallel's replicas
        copy parameters and buffers only, so the replica on cuda:1 reads the cuda:0 tensor
        (bert-loves-chemistry#15). DDP is left out: each rank sets its device first, so `.cuda()`
        puts the tensor on the rank's own GPU."""
        m = ctx.model
        wrapped = _data_parallel_classes(m, facts)
        for cls in facts.classes:
            if cls.name not in wrapped or cls.registers_dynamically:
                continue
            for attr in sorted(cls.init_assigns):
                if attr in cls.buffers or attr in cls.parameters or attr in cls.submodules:
                    continue
                assigns = cls.init_assigns[attr]
                tensors = [a for a in assigns if a.kind == "tensor"]
                if not tensors or len(tensors) != len(assigns) or not all(_pinned_to_one_gpu(m, a.value) for a in tensors):
                    continue
                if _moves_own_state(ctx, cls, attr) or any(_converted_parameter(m, a.value) for a in tensors):
                    continue
                reads = [r for r in cls.forward_reads.get(attr, []) if not _moved_at_use(m, r)]
                if not reads or attr in cls.forward_writes:
                    continue
                first = tensors[0]
                if first.node in seen:
                    continue
                seen.add(first.node)
                msg = (
                    f"`self.{attr}` is a plain tensor attribute put on one GPU in `__init__`, and the module "
                    "is wrapped in `nn.DataParallel`: its replicas copy parameters and buffers only, so the "
                    "replica on another GPU reads this cuda:0 tensor and forward fails with a device mismatch; "
                    f"register it with `self.register_buffer(\"{attr}\", ..., persistent=False)`"
                )
                yield ctx.finding(first.node, msg, self._fix(ctx, cls, attr, assigns))

    def _engine(self, ctx: Context, facts: ModuleFacts, seen: set):
        """The flow engine's mismatches whose CPU operand is `self.<attr>`, a plain tensor the
        module's `__init__` assigned (and no method moves): the shapes the forward dataflow does
        not follow (an index with device indices in a helper method, keyword-only factories)."""
        m = ctx.model
        by_name = {c.name: c for c in facts.classes}
        for mm in m.mismatches():
            if accelerator_named_cpu(m, mm):
                continue  # `device = "cpu"`: both operands are on the host
            if mm.op == "module-host":
                continue
            owner = m.class_of(mm.node)
            cls = by_name.get(owner.name.value) if owner is not None else None
            if cls is None:
                continue
            # the CPU operand or what it was computed from (`torch.cos(self.phase_advance * rate)`)
            host = attribute_root(m, mm.host)
            if host is None:
                continue
            attr = host.attr.value
            if _moves_own_state(ctx, cls, attr):
                continue
            if attr in cls.buffers or attr in cls.submodules or (
                    attr in cls.parameters and not _parameter_never_made(m, cls, attr)
                    and not _plain_assignment_met(m, cls, attr, mm)):
                continue
            assigns = cls.init_assigns.get(attr, [])
            tensors = _live(m, [a for a in assigns if a.kind == "tensor" or host_tensor_from_file_function(m, a.value)
                                or _variable_host_tensor(m, a.value) or given_host_tensors(m, a.method, a.value)])
            if not tensors or any(self._placed(ctx, a.value) for a in tensors):
                continue
            if any(_from_caller_not_host(m, a) for a in tensors):
                continue  # the caller chose where it lives
            if any(_converted_parameter(m, a.value) for a in tensors):
                continue  # GL117's shape: a buffer would stop training it
            if _read_off_device_only(m, cls.node, attr):
                continue  # read only where the input is on the host (`else:` of `if x.is_cuda:`)
            if _checkpoint_dummy(m, cls.node, attr, tensors):
                continue  # `requires_grad=True` dummy handed to `checkpoint(...)`: never combined
            first = tensors[0]
            if first.node in seen:
                continue
            seen.add(first.node)
            msg = self.message.format(attr=attr)
            fn = m.enclosing(mm.node, cst.FunctionDef)
            if fn is not None and fn.name.value != "forward" and not reachable_from_forward(m, fn):
                # met only in a method the file calls on the moved module (`policy.sample(s)`)
                msg = msg.replace("and forward combines it", f"and `{fn.name.value}()` combines it")
            yield ctx.finding(first.node, msg, self._fix(ctx, cls, attr, assigns))

    # -------------------------------------------------------------------------------------------
    @staticmethod
    def _expr_nodes(ctx: Context, value: cst.BaseExpression, depth: int = 0):
        """The value's nodes, and those of the values of the local names it uses (one level)."""
        m = ctx.model
        for node in (value, *m.walk(value)):
            yield node
            if isinstance(node, cst.Name) and depth == 0:
                for b in m.bindings_of(node):
                    if b.how == "assign" and b.value is not None and b.value is not value:
                        yield from UnregisteredTensorAttribute._expr_nodes(ctx, b.value, depth + 1)

    def _placed(self, ctx: Context, value) -> bool:
        """The tensor is created on a chosen device (`device=...`, `.to(...)`, `.cuda()`)."""
        if value is None:
            return True
        for node in self._expr_nodes(ctx, value):
            if isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value == "device":
                if _device_of_host_tensor(ctx.model, node.value):
                    continue  # `device=x.device`, `x` a constructor argument on the CPU (xLSTM's example input)
                return True
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _PLACING_METHODS:
                return True
            if (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "type"
                    and node.args and ctx.model.flow.cuda_tensor_type(node.args[0].value)):
                return True  # `.type(torch.cuda.FloatTensor)` (STDC's kernels, PRECISION31 A5)
        return False

    def _maybe_scalar(self, ctx: Context, cls: ModuleClass, value) -> bool:
        """Built from `torch.tensor(<number>)`, or a full reduction (`torch.sqrt(torch.sum(w))`):
        a 0-dim tensor, which may meet device tensors (PyTorch lets a CPU scalar tensor into an
        operation on CUDA tensors)."""
        if _zero_dim(ctx.model, value):
            return True
        v = ctx.model.value_of(value)
        if v.kind == "tensor" and v.nonscalar:
            return False  # the engine knows it has a dimension (`torch.tensor(arr).unsqueeze(0)`)
        for node in self._expr_nodes(ctx, value):
            if isinstance(node, cst.Call) and ctx.model.qualname(node.func) in ("torch.tensor", "torch.as_tensor"):
                args = [a for a in node.args if a.keyword is None]
                if not args or not _sequence_data(ctx.model, cls, args[0].value):
                    return True
        return False

    def _fix(self, ctx: Context, cls: ModuleClass, attr: str, assigns: list[AttrAssign], strip=None):
        if not assigns or assigns[0].kind == "none":
            return None
        if any(x.kind == "parameter" for x in assigns):
            return None  # a Parameter on another branch (E42-2): registering it as a buffer would stop training it
        m = ctx.model
        a = assigns[0]
        node = a.node
        # the assignments that register the buffer: the first, and every other one that can run
        # without an earlier one having run (`if isinstance(mask, torch.Tensor): self.mask = ...`
        # `else: self.mask = torch.tensor(mask)`: each branch registers it); those that always run
        # after a registering one assign the registered buffer (`self.fb = self.fb.to(self.device)`)
        registering = [a]
        for other in assigns[1:]:
            if other.method is not a.method or not isinstance(other.node, cst.Assign):
                return None
            if m.order.get(other.node, -1) <= m.order.get(node, 0):
                return None
            if any(_dominates(m, r.node, other.node) for r in registering) or _reads_itself(other.value, attr):
                # (or it reads the attribute first, `self.fb = self.fb.to(self.device)` under its own
                # `if`: it runs only once an earlier assignment, which registers it, has run)
                if other.kind != "tensor" and not _engine_host_tensor(m, other.value):
                    return None  # (`self.tem = self.tem.permute(2, 0, 1)` after `self.tem = self.one_hot(...)`)
                continue
            # another branch: it must register a tensor too (a Parameter, a module, None there: no fix)
            if not (other.kind == "tensor" or other.kind == "other" and m.value_of(other.value).kind == "tensor"):
                return None
            if _converted_parameter(m, other.value):
                return None
            registering.append(other)
        for r in registering:
            if not isinstance(r.node, cst.Assign) or len(r.node.targets) != 1 or r.node.targets[0].target is not r.target:
                return None
        # register_buffer needs Module.__init__ to have run
        init, ats = a.method, [r.node for r in registering]
        if a.method.name.value != "__init__":
            # assigned in a helper that `__init__` calls (`self._build_mask(n)`): the call must
            # come after `super().__init__()`
            init = cls.init
            at = _helper_call(m, init, a.method.name.value) if init is not None else None
            if at is None:
                return None
            ats = [at]
        start = super_init_index(m, init)
        for at in ats:
            here = top_statement_index(m, init, at)
            if start is None or here is None or here <= start:
                return None
        # other assignments of the attribute (outside __init__) must keep it a tensor (or None)
        facts = cls._facts
        for name, fn in cls.methods.items():
            if fn is a.method:
                continue
            for other in _assignments(ctx.model, fn, attr):
                if other is None or not _keeps_buffer(ctx.model, facts, other):
                    return None
        values = [strip(r.node.value) if strip is not None else ctx.code(r.node.value) for r in registering]
        if any(v is None for v in values):
            return None
        edits = [ctx.replace(r.node, f'self.register_buffer("{attr}", {v}, persistent=False)')
                 for r, v in zip(registering, values)]
        return ctx.fix(*edits, message=f"Register `{attr}` as a non-persistent buffer")


_DATA_PARALLEL = frozenset({
    "torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel",
})


def _data_parallel_classes(m, facts) -> set:
    """Names of the file's module classes an `nn.DataParallel(...)` of the file wraps: the class
    instantiated in its argument (through `.cuda()`/`.to()` chains and names assigned from it), and
    the file classes those instantiate in their `__init__` (submodules are replicated too)."""
    names = {c.name for c in facts.classes}
    found: set = set()

    def origin(e, depth=0):
        if depth > 4 or e is None:
            return
        if isinstance(e, cst.Call):
            f = e.func
            if isinstance(f, cst.Name) and f.value in names:
                found.add(f.value)
            elif isinstance(f, cst.Attribute) and f.attr.value in _CONVERSIONS:
                origin(f.value, depth + 1)
        elif isinstance(e, cst.Name) or (isinstance(e, cst.Attribute) and isinstance(e.value, cst.Name)
                                          and e.value.value == "self"):
            # (`self.model = nn.DataParallel(self.model)` of a trainer: what `self.model` was built as)
            for b in m.bindings_of(e):
                if b.how == "assign" and b.value is not None and b.value is not e:
                    origin(b.value, depth + 1)

    for call in m.calls:
        if m.qualname(call.func) not in _DATA_PARALLEL:
            continue
        arg = next((a for a in call.args if a.keyword is None and not a.star), None)
        if arg is None:
            arg = next((a for a in call.args if a.keyword is not None and a.keyword.value == "module"), None)
        if arg is not None:
            origin(arg.value)
    by_name = {c.name: c for c in facts.classes}
    todo = list(found)
    while todo:
        cls = by_name.get(todo.pop())
        if cls is None or cls.init is None:
            continue
        for node in m.walk(cls.init):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in names:
                if node.func.value not in found:
                    found.add(node.func.value)
                    todo.append(node.func.value)
    return found


def _lazy_moves(m, cls, attr: str) -> list:
    """`self.<attr> = self.<attr>.to(...)` (or `.cuda(...)`) in a method forward runs (forward itself
    or one it reaches): the module moves the attribute itself when forward runs."""
    out = []
    for fn in cls.reachable:
        for node in m.walk(fn):
            if not isinstance(node, cst.Assign) or len(node.targets) != 1 or self_attr(node.targets[0].target) != attr:
                continue
            v = node.value
            if (isinstance(v, cst.Call) and isinstance(v.func, cst.Attribute) and v.func.attr.value in _PLACING_METHODS
                    and self_attr(v.func.value) == attr):
                out.append(node)
    return out


_THROUGH_MODULE = re.compile(r"\.module\b")


def _unmoved_reads_through_module(m, cls, attr: str) -> list:
    """Reads `<wrapper>.module<...>.<attr>` outside the class whose value is not moved: not the
    receiver of a conversion (`.to(...)`), nor bound to a name that the same function moves
    (`anchors = anchors.to(targets.device)`) after it."""
    out = []
    for node in m.nodes:
        if type(node) is not cst.Attribute or node.attr.value != attr or m.contains(cls.node, node):
            continue
        if not _THROUGH_MODULE.search(m.module.code_for_node(node.value)):
            continue
        root = node.value
        while isinstance(root, (cst.Attribute, cst.Subscript, cst.Call)):
            root = root.func if isinstance(root, cst.Call) else root.value
        if isinstance(root, cst.Name) and root.value == "self":
            continue  # `self.module.<attr>` of another class (an EMA copy's `module`): no DataParallel wrapper known
        up = m.parents.get(node)
        if isinstance(up, cst.Attribute) and up.value is node and up.attr.value in _CONVERSIONS:
            continue  # `model.module.head.anchors.to(x.device)`
        stmt = m.enclosing(node, cst.Assign)
        names = []
        if stmt is not None:
            names = [t.target.value for t in stmt.targets if isinstance(t.target, cst.Name)]
        scope = m.scope_of(node)
        moved = False
        for name in names:
            for call in m.calls_in(scope):
                f = call.func
                if (isinstance(f, cst.Attribute) and f.attr.value in _CONVERSIONS | {"type_as"}
                        and isinstance(f.value, cst.Name) and f.value.value == name and m.precedes(stmt, call)
                        and m.scope_of(call) is scope):
                    moved = True
        if not moved:
            out.append(node)
    return out


def _pinned_to_one_gpu(m, value) -> bool:
    """`value` ends by putting the tensor on a fixed GPU: `.cuda()`, `.cuda(0)`, `.to("cuda")`,
    `.to("cuda:0")`."""
    if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute):
        return False
    meth = value.func.attr.value
    args = [a for a in value.args if a.keyword is None]
    if meth == "cuda":
        return not value.args or (len(value.args) == 1 and len(args) == 1 and isinstance(args[0].value, cst.Integer))
    if meth == "to" and args and isinstance(args[0].value, cst.SimpleString):
        dev = args[0].value.evaluated_value
        return isinstance(dev, str) and (dev == "cuda" or dev.startswith("cuda:"))
    if meth == "to" and len(args) == 1 and isinstance(args[0].value, (cst.Name, cst.Attribute)):
        # `.to(device)` of the script's device handed to the constructor (the seq2seq tutorials'
        # `self.scale = torch.sqrt(torch.FloatTensor([d])).to(device)`, pytorch-seq2seq#4, G69-5):
        # on a GPU run that is one GPU, the current one
        d = m.value_of(args[0].value)
        v = m.value_of(value)
        return (d.kind == "device" and d.dev is not None and d.dev.where == "acc"
                and v.kind == "tensor" and v.dev is not None and v.dev.where == "acc")
    return False


def _moved_at_use(m, read: cst.Attribute) -> bool:
    """`self.x.to(...)` / `self.x.cuda()` / `self.x.type_as(...)` at the read: the copy follows the
    replica's device (DataParallel runs each replica under its own current device)."""
    parent = m.parent(read)
    if isinstance(parent, cst.Attribute) and parent.value is read and parent.attr.value in ("to", "cuda", "type_as"):
        return isinstance(m.parent(parent), cst.Call)
    return False


def _reads_itself(value: cst.BaseExpression | None, attr: str) -> bool:
    """Evaluating `value` reads `self.<attr>` before anything else can happen: `self.fb`,
    `self.fb.to(d)`, `self.fb[0]`, `self.fb * 2` (the attribute at the root of the left-most
    chain)."""
    cur = value
    while cur is not None:
        if self_attr(cur) == attr:
            return True
        if isinstance(cur, cst.Call):
            cur = cur.func.value if isinstance(cur.func, cst.Attribute) else None
        elif isinstance(cur, (cst.Attribute, cst.Subscript)):
            cur = cur.value
        elif isinstance(cur, cst.BinaryOperation):
            cur = cur.left
        else:
            return False
    return False


def _dominates(m, first: cst.CSTNode, later: cst.CSTNode) -> bool:
    """`later` runs only after `first` has run: it lies in a statement that follows `first`'s
    statement in `first`'s own block (the same block, or nested in a later statement of it),
    with no function definition in between."""
    stmt = m.parent(first)
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False  # (`if c: self.m = t` on one line: its statement is the `if`)
    block = m.parent(stmt)
    body = getattr(block, "body", None)
    if not isinstance(body, (list, tuple)):
        return False
    index = next((i for i, s in enumerate(body) if s is stmt), None)
    if index is None:
        return False
    cur = later
    while cur is not None and cur is not block:
        parent = m.parent(cur)
        if parent is block:
            return any(s is cur for s in body[index + 1:])
        if isinstance(cur, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
        cur = parent
    return False


def _engine_host_tensor(m, value) -> bool:
    """The flow engine knows `value` is a tensor on the host (the class facts may answer "other"
    for a method chain on an attribute set from a helper's result)."""
    if value is None:
        return False
    v = m.value_of(value)
    return v.kind == "tensor" and v.dev is not None and v.dev.is_host


def host_tensor_from_file_function(m, value) -> bool:
    """`self.attn_bias = get_2dalibi(heads, patches)`: a call of a function of this file (or of a
    method of the class itself, `self.one_hot(...)`) whose result the flow engine knows to be a
    tensor on the host (torchgeo's CROMA). The attribute's
    kind is "other" for the class facts (they do not follow a function's return), but the engine
    does. GL116 leaves these attributes to this rule (its `_gl106_owns`)."""
    if not file_function_call(m, value):
        return False
    v = m.value_of(value)
    return v.kind == "tensor" and v.dev is not None and v.dev.is_host


def _moves_own_state(ctx: Context, cls: ModuleClass, attr: str) -> bool:
    """The class moves `self.<attr>` itself: an `_apply` override (it sees every move), or a `to`
    / `cuda` override that names the attribute or walks the instance's attributes generically
    (`self.__dict__`, `vars(self)`, `getattr`/`setattr`, a loop). A `to` override that moves
    other attributes by hand (SAC's DeterministicPolicy) leaves this one where it was made."""
    if "_apply" in cls.methods:
        return True
    for name in ("to", "cuda"):
        fn = cls.methods.get(name)
        if fn is None:
            continue
        for node in ctx.model.walk(fn):
            if isinstance(node, (cst.For, cst.While, cst.CompFor)):
                return True
            if isinstance(node, cst.Attribute) and node.attr.value == "__dict__":
                return True
            if isinstance(node, cst.Name) and node.value in ("vars", "getattr", "setattr", "__dict__"):
                return True
            if self_attr(node) == attr:
                return True
            if isinstance(node, cst.SimpleString) and attr in node.value:
                return True
    return False


def _from_caller_not_host(m, a: AttrAssign) -> bool:
    """`self.support = support`, `support` a parameter of `__init__`: the tensor is the caller's,
    placed where the caller put it (rainbow-is-all-you-need builds it with
    `torch.linspace(...).to(self.device)` in the agent and passes it to `Network(...)`). Reported
    only when a construction of the class in this file passes a tensor the engine knows is on
    the host; silent when no call site is found or none is known to be on the host."""
    value = a.value
    d = m.device_of(value)
    if d is not None and d.where == "acc" and _from_parameter(m, a):
        # `self.target = target.detach()` (the style-transfer losses) of a tensor every
        # construction passes from the device: the caller put it there (PRECISION30 A5)
        return True
    if not isinstance(value, cst.Name):
        return False
    bindings = m.bindings_of(value)
    if not bindings or any(b.how != "param" or m.function_of_param(b) is not a.method for b in bindings):
        return False
    cls = m.class_of(a.method)
    if cls is None:
        return False
    name = value.value
    params = a.method.params
    positional = [p.name.value for p in (*params.posonly_params, *params.params)][1:]  # without self
    for call in m.calls:
        if not (isinstance(call.func, cst.Name) and call.func.value == cls.name.value):
            continue
        found, pos = None, 0
        for arg in call.args:
            if arg.star:
                break
            if arg.keyword is None:
                if pos < len(positional) and positional[pos] == name:
                    found = arg.value
                pos += 1
            elif arg.keyword.value == name:
                found = arg.value
        if found is None:
            continue
        d = m.device_of(found)
        if d is not None and d.is_host:
            return False  # a host tensor passed in: the attribute stays on the host
    return True


def _variable_host_tensor(m, value) -> bool:
    """`Variable(torch.zeros(1), requires_grad=False)`, the pre-0.4 wrapper that is the tensor
    itself today, that the flow engine knows is on the host (pytorch-AGNN, E42-1)."""
    if not isinstance(value, cst.Call) or m.qualname(value.func) not in ("torch.autograd.Variable",):
        return False
    return _engine_host_tensor(m, value)


def _from_parameter(m, a: AttrAssign) -> bool:
    """The assigned value reads a parameter of the method that assigns it (`target.detach()`)."""
    for node in m.walk(a.value):
        if isinstance(node, cst.Name):
            bindings = m.bindings_of(node)
            if bindings and all(b.how == "param" and m.function_of_param(b) is a.method for b in bindings):
                return True
    return False


def _converted_parameter(m, value) -> bool:
    """`nn.Parameter(t)` followed by conversions (`.float()`, `.to(d)`, `.cuda()`): the Parameter
    itself when the conversion changes nothing, else a converted copy that GL117 reports;
    registering it as a buffer would make a trained weight untrained."""
    cur = value
    while isinstance(cur, cst.Call) and isinstance(cur.func, cst.Attribute) and cur.func.attr.value in _CONVERSIONS:
        cur = cur.func.value
    return cur is not value and isinstance(cur, cst.Call) and m.qualname(cur.func) in _PARAMETER


def _device_of_host_tensor(m, e) -> bool:
    """`x.device` where the flow engine knows `x` is a tensor on the host at every call."""
    if not (isinstance(e, cst.Attribute) and e.attr.value == "device"):
        return False
    v = m.value_of(e.value)
    return v.kind == "tensor" and v.dev is not None and v.dev.where == "host"


def _parameter_never_made(m, cls, attr: str) -> bool:
    """`self.<attr>` becomes an `nn.Parameter` only in assignments the flow engine found never run,
    while it reached another assignment of it (`self.logvar = torch.zeros(10)`, then `if
    learn_logvar: self.logvar = nn.Parameter(self.logvar)` in a class every construction of which
    leaves `learn_logvar` False, latent diffusion's DDPM, G38-1). Not when it is registered any other
    way (`register_parameter`) or when the engine reached none of them."""
    assigns = cls.init_assigns.get(attr, [])
    params = [a for a in assigns if a.kind == "parameter"]
    if not params or any(a.value is None or m.reached(a.value) for a in params):
        return False
    if not any(a.value is not None and m.reached(a.value) for a in assigns if a.kind != "parameter"):
        return False
    text = m.module.code_for_node(cls.node)
    return f'register_parameter("{attr}"' not in text and f"register_parameter('{attr}'" not in text


def _plain_assignment_met(m, cls, attr: str, mm) -> bool:
    """The engine's CPU operand is the value of an assignment of `self.<attr>` that is not a
    Parameter: a class whose `__init__` makes it a Parameter on one branch and a plain tensor on the
    other, met with the plain one for the construction that takes that branch (`Layer(requires_grad=
    False)` beside `Layer()`, E42-2)."""
    origin = mm.host_value.origin
    if origin is None:
        return False
    return any(a.kind != "parameter" and a.value is not None and (a.value is origin or m.contains(a.value, origin))
               for a in cls.init_assigns.get(attr, []))


def _live(m, assigns: list[AttrAssign]) -> list[AttrAssign]:
    """The assignments that can run: without those the flow engine found never run, when it
    evaluated some of them (a move under `if device is not None:` where no construction in the
    file passes `device`, auraloss#34); all of them when it reached none."""
    live = [a for a in assigns if a.value is None or m.reached(a.value)]
    return live if live else assigns


def _helper_call(m, init: cst.FunctionDef, name: str):
    """The top-level statement of `init` that calls `self.<name>(...)` (None if it is not one)."""
    for stmt in init.body.body if isinstance(init.body, cst.IndentedBlock) else ():
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
            e = stmt.body[0]
            if isinstance(e, cst.Expr) and isinstance(e.value, cst.Call) and self_attr(e.value.func) == name:
                return stmt
    return None


def _keeps_buffer(m, facts, value: cst.BaseExpression) -> bool:
    """A later `self.<attr> = value` leaves a registered buffer a buffer: a tensor or None. A value
    the module facts cannot type but the flow engine knows is a tensor counts too (forward's
    `res, h = self.rnn(x, self.h)` then `self.h = h.detach()`: the RNN's returned state)."""
    kind = facts.value_kind(value)
    if kind in ("tensor", "none"):
        return True
    return kind == "other" and m.value_of(value).kind == "tensor"


def _assignments(m, fn: cst.FunctionDef, attr: str):
    """Values assigned to `self.<attr>` in `fn` (None for augmented / tuple assignments)."""
    for node in m.walk(fn):
        if isinstance(node, cst.Assign):
            for t in node.targets:
                target = t.target
                if self_attr(target) == attr:
                    yield node.value
                elif isinstance(target, (cst.Tuple, cst.List)) and any(
                    self_attr(el.value) == attr for el in target.elements
                ):
                    yield None
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)) and self_attr(node.target) == attr:
            yield node.value if isinstance(node, cst.AnnAssign) else None


# reductions over every element when given no `dim`: `torch.sum(w)`, `w.mean()`
_FULL_REDUCTIONS = frozenset("sum mean prod max min amax amin norm std var median nansum nanmean count_nonzero".split())
# element-wise functions and conversions: a 0-dim operand gives a 0-dim result
_ELEMENTWISE = frozenset(
    "sqrt rsqrt exp log log2 log10 log1p abs neg reciprocal sigmoid tanh square float double half detach clone".split()
)
_DIM_KEYWORDS = frozenset({"dim", "axis", "keepdim"})


def _sequence_data(m, cls: ModuleClass, data, depth: int = 0) -> bool:
    """Data for `torch.tensor` that is certainly a sequence (the tensor has a dimension): what the
    module's dataflow proves (a list/tuple display, a local name bound only to one), `list(...)` /
    `tuple(...)` of anything, and a parameter of the class's `__init__` whose default and every
    argument the file's constructions pass for it are such data (neural-lam#241:
    `feature_weights=(1.0, 0.5, 2.0, 1.0)` and `ARModel()`). A construction passing a number or
    something unknown, a class built nowhere in the file (or used other than by its constructor
    calls), keeps it a possible 0-dim tensor."""
    if depth > 3:
        return False
    if cls.flow.list_data(data):
        return True
    if (isinstance(data, cst.Call) and isinstance(data.func, cst.Name) and data.func.value in ("list", "tuple")
            and len(data.args) == 1 and data.args[0].keyword is None and not data.args[0].star
            and not m.bindings_of(data.func)):
        return True  # `list(x)` is a sequence whatever x is (a number raises)
    if not isinstance(data, cst.Name):
        return False
    bindings = m.bindings_of(data)
    if len(bindings) != 1 or bindings[0].how != "param":
        return False
    b = bindings[0]
    fn = m.function_of_param(b)
    if fn is None or fn.name.value != "__init__" or m.class_of(fn) is not cls.node:
        return False
    args = m.param_arguments(b, constructors=True)
    return bool(args) and all(_sequence_data(m, cls, a, depth + 1) for a in args)


def _zero_dim(m, e, depth: int = 0) -> bool:
    """`e` is known to be a 0-dim tensor (or a Python number): a full reduction with no `dim`
    (`torch.sum(w)`, `w.mean()`), an element-wise function or a conversion of one, arithmetic on
    such values and numeric literals, or a local name bound once to one of these."""
    if depth > 6:
        return False
    if isinstance(e, (cst.Integer, cst.Float)):
        return True
    if isinstance(e, cst.UnaryOperation):
        return _zero_dim(m, e.expression, depth + 1)
    if isinstance(e, cst.BinaryOperation):
        return _zero_dim(m, e.left, depth + 1) and _zero_dim(m, e.right, depth + 1)
    if isinstance(e, cst.Name):
        bs = m.bindings_of(e)
        return (
            len(bs) == 1 and bs[0].how == "assign" and bs[0].value is not None and bs[0].value is not e
            and _zero_dim(m, bs[0].value, depth + 1)
        )
    if self_attr(e) is not None:
        return _number_attribute(m, e, self_attr(e))
    if not isinstance(e, cst.Call):
        return False
    if any(a.keyword is not None and a.keyword.value in _DIM_KEYWORDS for a in e.args) or any(a.star for a in e.args):
        return False
    positional = [a.value for a in e.args if a.keyword is None]
    q = m.qualname(e.func) or ""
    if q.startswith("torch.") and q.count(".") == 1:
        fn = q[6:]
        if len(positional) != 1:
            return False
        if fn in _FULL_REDUCTIONS:
            return True
        return fn in _ELEMENTWISE and _zero_dim(m, positional[0], depth + 1)
    if isinstance(e.func, cst.Attribute) and not positional and not q.startswith("torch."):
        meth = e.func.attr.value
        if meth in _FULL_REDUCTIONS:
            return True
        return meth in _ELEMENTWISE and _zero_dim(m, e.func.value, depth + 1)
    return False


def _numeric_literal(e) -> bool:
    if isinstance(e, cst.UnaryOperation):
        e = e.expression
    return isinstance(e, (cst.Integer, cst.Float))


def _number_attribute(m, e: cst.Attribute, attr: str) -> bool:
    """`self.<attr>` holds a Python number: every assignment of it in the class is a numeric
    literal, or a parameter of the assigning method whose default is one (TensoRF's
    `self.step_ratio = step_ratio`, `step_ratio=2.0`; PRECISION21 #1). An assignment of anything
    else (an annotation other than int/float, a parameter without a numeric default, a
    computed value) answers False."""
    classdef = m.enclosing(e, cst.ClassDef)
    if classdef is None:
        return False
    seen = 0
    for node in m.walk(classdef):
        if not isinstance(node, cst.FunctionDef):
            continue
        for value in _assignments(m, node, attr):
            if value is None:
                return False
            seen += 1
            if _numeric_literal(value):
                continue
            if not isinstance(value, cst.Name):
                return False
            params = [*node.params.posonly_params, *node.params.params, *node.params.kwonly_params]
            param = next((p for p in params if p.name.value == value.value), None)
            if param is None or param.default is None or not _numeric_literal(param.default):
                return False
            ann = param.annotation
            if ann is not None and not (isinstance(ann.annotation, cst.Name) and ann.annotation.value in ("int", "float")):
                return False
            if len(m.bindings_of(value)) != 1:
                return False  # rebound in the method before the assignment
    return seen > 0


def _read_as_scalars(m, classdef, attr: str, tensors) -> bool:
    """Every read of `self.<attr>` in the class is an integer-literal index (`self.sigmas[0]`) of a
    tensor made from a flat list of numbers (`torch.tensor([lo, hi])`, possibly scaled): each read
    is a 0-dim tensor, which PyTorch lets into operations on device tensors (mdlm's
    GeometricNoise, PRECISION16 A2)."""
    if classdef is None:
        return False
    for a in tensors:
        flat = False
        for node in (a.value, *m.walk(a.value)) if a.value is not None else ():
            if isinstance(node, cst.Call) and m.qualname(node.func) in ("torch.tensor", "torch.as_tensor", "torch.Tensor",
                                                                      "torch.FloatTensor"):
                args = [x for x in node.args if x.keyword is None]
                if args and isinstance(args[0].value, (cst.List, cst.Tuple)) and args[0].value.elements and not any(
                        isinstance(el.value, (cst.List, cst.Tuple)) for el in args[0].value.elements):
                    flat = True
        if not flat:
            return False
    reads = 0
    for node in m.walk(classdef):
        if not (isinstance(node, cst.Attribute) and node.attr.value == attr and isinstance(node.value, cst.Name)
                and node.value.value == "self"):
            continue
        parent = m.parent(node)
        if isinstance(parent, cst.AssignTarget) or (isinstance(parent, cst.Assign) and node in [t.target for t in parent.targets]):
            continue  # the assignment itself
        if not (isinstance(parent, cst.Subscript) and parent.value is node and len(parent.slice) == 1
                and isinstance(parent.slice[0].slice, cst.Index)):
            return False
        idx = parent.slice[0].slice.value
        if isinstance(idx, cst.UnaryOperation):
            idx = idx.expression
        if not isinstance(idx, cst.Integer):
            return False
        reads += 1
    return reads > 0


def _is_cuda_test(test: cst.BaseExpression) -> int:
    """1 for `<tensor>.is_cuda`, -1 for `not <tensor>.is_cuda`, 0 otherwise."""
    sign = 1
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        sign, test = -sign, test.expression
    if isinstance(test, cst.Attribute) and test.attr.value == "is_cuda" and not (
            isinstance(test.value, cst.Name) and test.value.value == "self"):
        return sign
    return 0


def _on_host_branch(m, node, fn) -> bool:
    """`node` runs only where a tensor tested in an enclosing `if` of `fn` is on the host: in the
    `else:` (or an `elif`) of `if x.is_cuda:`, or in the body of `if not x.is_cuda:`."""
    child, parent = node, m.parent(node)
    while parent is not None and parent is not fn:
        if isinstance(parent, cst.If):
            sign = _is_cuda_test(parent.test)
            if (sign == 1 and child is parent.orelse) or (sign == -1 and child is parent.body):
                return True
        child, parent = parent, m.parent(parent)
    return False


def _read_off_device_only(m, classdef, attr: str) -> bool:
    """Every read of `self.<attr>` in the class's methods (its `__init__` aside) either copies it
    (`self.mean.cuda()`, `self.mean.to(...)`) or sits where the input is known to be on the host,
    on the CPU branch of a device test (`if x.is_cuda: <use a cached .cuda() copy> else:
    out = (x - self.mean) / self.sigma`, the Normalization module of
    imrahulr/adversarial_robustness_pytorch, PRECISION34): the plain tensor never meets a device
    tensor. At least one read on such a branch."""
    if classdef is None:
        return False
    host_reads = 0
    for node in m.walk(classdef):
        if not (isinstance(node, cst.Attribute) and node.attr.value == attr and isinstance(node.value, cst.Name)
                and node.value.value == "self"):
            continue
        fn = m.enclosing(node, cst.FunctionDef)
        if fn is None:
            return False
        if fn.name.value == "__init__":
            continue
        parent = m.parent(node)
        if isinstance(parent, cst.AssignTarget) or (isinstance(parent, cst.Assign) and node in [t.target for t in parent.targets]):
            return False  # reassigned outside `__init__`: not followed here
        if (isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value in _PLACING_METHODS
                and isinstance(m.parent(parent), cst.Call) and m.parent(parent).func is parent):
            continue  # `self.mean.cuda()`: a copy on the device, the attribute itself stays put
        if not _on_host_branch(m, node, fn):
            return False
        host_reads += 1
    return host_reads > 0


_CUDA_TEXT = re.compile(r"cuda(?::\d+)?")


def _literal_accelerator(m, value, nodes=None):
    """(the literal placing nodes, their device texts) when every placement in the value
    expression itself is a literal accelerator: `device="cuda"` / `"cuda:0"`, `.cuda()` /
    `.cuda(0)`, `.to("cuda")`; None when there is none, or another placement (a variable device,
    `.to(x.device)`). `nodes`: the nodes to read (the value's own and those of the local names it
    reads, one level); by default the value's own."""
    if value is None:
        return None
    sites, texts = [], set()
    for node in (nodes if nodes is not None else (value, *m.walk(value))):
        if isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value == "device":
            v = node.value
            if not (isinstance(v, cst.SimpleString) and isinstance(v.evaluated_value, str)
                    and _CUDA_TEXT.fullmatch(v.evaluated_value)):
                return None
            sites.append(node)
            texts.add(v.evaluated_value)
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _PLACING_METHODS:
            args = [a for a in node.args if a.keyword is None]
            if node.func.attr.value == "cuda":
                if node.args and not (len(node.args) == 1 and isinstance(node.args[0].value, cst.Integer)):
                    return None
                sites.append(node)
                texts.add("cuda" if not node.args else f"cuda:{node.args[0].value.value}")
            elif (len(node.args) == 1 and args and isinstance(args[0].value, cst.SimpleString)
                  and isinstance(args[0].value.evaluated_value, str) and _CUDA_TEXT.fullmatch(args[0].value.evaluated_value)):
                sites.append(node)
                texts.add(args[0].value.evaluated_value)
            else:
                return None
    return (sites, texts) if sites else None


def _move_text(mv) -> str | None:
    """`cuda` / `cuda:N` for a move to a literal GPU (`.cuda()`, `.cuda(1)`, `.to("cuda:1")`), else None."""
    if mv.method == "cuda":
        d = mv.device
        return "cuda" if d is None else (f"cuda:{d.value}" if isinstance(d, cst.Integer) else None)
    d = mv.device
    if isinstance(d, cst.SimpleString) and isinstance(d.evaluated_value, str):
        return d.evaluated_value
    return None


def _instance_moves(m, cls: ModuleClass) -> list:
    """The moves the file applies to instances of `cls` (`Dec().to(device)`, `model = Dec();
    model.to(device)`), the CPU included."""
    out = []
    for call in m.calls:
        if not (isinstance(call.func, cst.Name) and call.func.value == cls.name):
            continue
        top = call
        parent = m.parents.get(top)
        while isinstance(parent, cst.Attribute) and isinstance(m.parents.get(parent), cst.Call):
            top = m.parents.get(parent)
            parent = m.parents.get(top)
        out.extend(m.moves_in_chain(top))
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(
                parent.targets[0].target, (cst.Name, cst.Attribute)):
            out.extend(m.moves_of(parent.targets[0].target))
    seen, unique = set(), []
    for mv in out:
        if id(mv.call) not in seen:
            seen.add(id(mv.call))
            unique.append(mv)
    return unique


def _random_draw(m, value) -> bool:
    from gpulint.analysis.mismatch import RANDOM_FACTORIES

    return any(isinstance(n, cst.Call) and (m.qualname(n.func) or "").rsplit(".", 1)[-1] in RANDOM_FACTORIES
               for n in (value, *m.walk(value)))


class _DropLiteralDevice(cst.CSTTransformer):
    def leave_Call(self, original, updated):
        f = updated.func
        if isinstance(f, cst.Attribute) and f.attr.value in _PLACING_METHODS:
            return f.value.with_changes(lpar=updated.lpar, rpar=updated.rpar) if updated.lpar else f.value
        args = [a for a in updated.args if not (a.keyword is not None and a.keyword.value == "device")]
        if len(args) != len(updated.args):
            if args:
                args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return updated.with_changes(args=args)
        return updated


def _without_literal_device(ctx: Context, value) -> str | None:
    """The value's code without its literal device: `device="cuda"` arguments dropped, `.cuda()`
    and `.to("cuda")` calls replaced by their receivers; None when a placement sits outside the
    value (in a local name's assignment: not edited here)."""
    m = ctx.model
    every = _literal_accelerator(m, value, list(UnregisteredTensorAttribute._expr_nodes(ctx, value)))
    own = _literal_accelerator(m, value)
    if every is None or own is None or len(own[0]) != len(every[0]):
        return None
    new = value.visit(_DropLiteralDevice())
    return cst.Module(body=[]).code_for_node(new)


def _checkpoint_dummy(m, classdef, attr: str, tensors) -> bool:
    """The gradient-checkpointing dummy (GLIP's VLFuse, PRECISION53): `self.dummy_tensor =
    torch.ones(1, dtype=torch.float32, requires_grad=True)`, handed as a whole argument to
    `torch.utils.checkpoint.checkpoint(self.block, ..., self.dummy_tensor)` so that the reentrant
    checkpoint's output requires grad, and otherwise only handed on to a submodule call
    (`self.block(..., self.dummy_tensor)`) whose forward takes it as an unused `dummy_tensor=None`.
    Nothing combines it with a device tensor: checkpoint accepts arguments on several devices.
    Every `__init__` value is a factory with `requires_grad=True`, every other read is a whole
    argument of such a call, and at least one read is a `checkpoint` argument."""
    if classdef is None or not tensors:
        return False
    for a in tensors:
        v = a.value
        if not (isinstance(v, cst.Call) and (m.qualname(v.func) or "").startswith("torch.") and any(
                x.keyword is not None and x.keyword.value == "requires_grad"
                and isinstance(x.value, cst.Name) and x.value.value == "True" for x in v.args)):
            return False
    checkpointed = 0
    for node in m.walk(classdef):
        if not (isinstance(node, cst.Attribute) and node.attr.value == attr and isinstance(node.value, cst.Name)
                and node.value.value == "self"):
            continue
        fn = m.enclosing(node, cst.FunctionDef)
        if fn is None:
            return False
        parent = m.parent(node)
        if fn.name.value == "__init__" and (
                isinstance(parent, cst.AssignTarget)
                or (isinstance(parent, cst.Assign) and node in [t.target for t in parent.targets])):
            continue  # the assignment itself
        if not (isinstance(parent, cst.Arg) and parent.value is node and not parent.star):
            return False
        call = m.parent(parent)
        if not isinstance(call, cst.Call):
            return False
        q = m.qualname(call.func) or ""
        if q.startswith("torch.utils.checkpoint."):
            checkpointed += 1
        elif not (isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name)
                  and call.func.value.value == "self"):
            return False
    return checkpointed > 0
