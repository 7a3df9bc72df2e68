"""Facts about multi-GPU and distributed training, shared by the GL3xx rules.

`ctx.model.facts(DistFacts)` answers, for one file:
- which calls wrap a model in `DataParallel` / `DistributedDataParallel` (through any import
  alias), what they wrap, and which name holds the wrapper (`wraps`, `wrapper_reaching`);
- the process-group setup (`init_calls`, `set_device_calls`, `destroy_calls`);
- the samplers and DataLoaders, and which loader uses which sampler (`samplers`, `loaders`,
  `sampler_of`);
- the loops over a loader (also through a function of the file the loader is passed to) and the
  epoch loop around them (`loader_loops`, `epoch_loops`);
- local-rank expressions: `int(os.environ["LOCAL_RANK"])` (and `.get`/`os.getenv` forms),
  `args.local_rank`, the first parameter of an `mp.spawn` target, and names bound to those
  (`local_rank_names`, `local_rank_at`).

Like the ScriptModel it is static and flow-insensitive, and says "don't know" (None, empty) when
it cannot tell; rules stay silent then. It never imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from gpulint.model import walk as _model_walk

from gpulint.model import DATALOADER_CLASSES, Kind, ScriptModel
from gpulint.model import literal_bool as _literal_bool
from gpulint.model import string_value as _string_value
from gpulint.analysis.training import argument_for
from gpulint.analysis.training import keyword as _keyword

DP_CLASSES = frozenset(
    {"torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel"}
)
DDP_CLASSES = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
        "torch.nn.DistributedDataParallel",
    }
)
DDP_CPU_CLASSES = frozenset(
    {"torch.nn.parallel.DistributedDataParallelCPU", "torch.nn.parallel.distributed_cpu.DistributedDataParallelCPU"}
)
INIT_FUNCS = frozenset({"torch.distributed.init_process_group", "torch.distributed.distributed_c10d.init_process_group"})
DESTROY_FUNCS = frozenset(
    {"torch.distributed.destroy_process_group", "torch.distributed.distributed_c10d.destroy_process_group"}
)
SET_DEVICE_FUNCS = frozenset(
    {
        "torch.cuda.set_device",
        "torch.cuda.device",  # `with torch.cuda.device(local_rank):`
        "torch.accelerator.set_device_index",
        "torch.accelerator.set_device_idx",
        "torch.xpu.set_device",
    }
)
DIST_SAMPLERS = frozenset(
    {"torch.utils.data.DistributedSampler", "torch.utils.data.distributed.DistributedSampler"}
)
SPAWN_FUNCS = frozenset(
    {
        "torch.multiprocessing.spawn",
        "torch.multiprocessing.start_processes",
        "torch.multiprocessing.spawn.spawn",
    }
)
# Frameworks that set up samplers, wrappers and process groups themselves.
DIST_FRAMEWORKS = frozenset({"lightning", "accelerate", "deepspeed", "hf-trainer", "composer", "ignite"})


@dataclass
class Wrap:
    """One `DataParallel(...)` / `DistributedDataParallel(...)` call."""

    call: cst.Call
    kind: str  # "dp", "ddp" or "ddp-cpu"
    inner: cst.BaseExpression | None  # the wrapped module expression
    # `w = DP(m)` or `w = DP(m).to(d)`: the assigned name and the whole assigned value
    target: cst.Name | None = None
    value: cst.BaseExpression | None = None

    def keyword(self, name: str) -> cst.Arg | None:
        return _keyword(self.call, name)


@dataclass
class SamplerInfo:
    call: cst.Call
    qualname: str | None
    distributed: bool
    shuffle: bool | None  # True (the default or a literal True), False (a literal False), None (unknown)
    target: cst.Name | None = None
    attr_target: cst.Attribute | None = None  # `self.train_sampler = ...` in a method of a class
    # kept as the value of a constant key of a dict name: `samplers["train"] = DistributedSampler(...)`
    # or `samplers = {"train": DistributedSampler(...)}`: (the dict's name as bound or assigned, the key)
    key_target: tuple[cst.Name, str] | None = None


@dataclass
class LoaderInfo:
    call: cst.Call
    target: cst.Name | None
    dataset: cst.BaseExpression | None
    sampler: cst.BaseExpression | None  # the `sampler=` argument
    batch_sampler: cst.BaseExpression | None
    shuffle: cst.Arg | None
    sampler_info: SamplerInfo | None = None
    sampler_shuffle: bool | None = None  # the sampler's shuffle as this loader's helper call sets it
    attr_target: cst.Attribute | None = None  # `self.train_loader = DataLoader(...)` in a method

    def keyword(self, name: str) -> cst.Arg | None:
        return _keyword(self.call, name)


@dataclass
class LoaderLoop:
    """A `for` over a loader; `via` is the call (in the caller) when the loop is in a file function
    the loader is passed to."""

    loop: cst.For
    via: cst.Call | None = None
    repeats: bool = False  # each run of `loop`'s body starts a new pass (`iter(loader)` in it)

    @property
    def anchor(self) -> cst.CSTNode:
        """The node whose enclosing loop is the epoch loop."""
        return self.via if self.via is not None else self.loop


_PASSIVE_USES = frozenset({"state_dict", "load_state_dict", "parameters", "named_parameters"})


@dataclass
class DistFacts:
    model: ScriptModel
    wraps: list[Wrap] = field(default_factory=list)
    init_calls: list[cst.Call] = field(default_factory=list)
    destroy_calls: list[cst.Call] = field(default_factory=list)
    set_device_calls: list[cst.Call] = field(default_factory=list)
    samplers: list[SamplerInfo] = field(default_factory=list)
    loaders: list[LoaderInfo] = field(default_factory=list)
    spawn_targets: list[cst.FunctionDef] = field(default_factory=list)

    def __init__(self, model: ScriptModel) -> None:
        self.model = model
        self.wraps = []
        self.init_calls = []
        self.destroy_calls = []
        self.set_device_calls = []
        self.samplers = []
        self.loaders = []
        self.iter_pass_loops: set = set()  # epoch loops found as loops that call `iter(loader)`
        self.spawn_targets = []
        self._order = {n: i for i, n in enumerate(model.parents)}
        self._order[model.module] = -1
        m = model
        for call in m.calls:
            q = m.qualname(call.func)
            if isinstance(call.func, cst.Name) and call.func.value in m.classes:
                sub = wrapper_subclass_kind(m, call.func.value)  # `DataParallelPassthrough(model)` (E35-5)
                if sub is not None:
                    self.wraps.append(self._wrap(call, sub))
                    continue
            if q is None:
                q = self._chosen_sampler_class(call)
                if q is None:
                    continue
            if q in DP_CLASSES or q in DDP_CLASSES or q in DDP_CPU_CLASSES:
                kind = "dp" if q in DP_CLASSES else "ddp" if q in DDP_CLASSES else "ddp-cpu"
                self.wraps.append(self._wrap(call, kind))
            elif q in INIT_FUNCS:
                self.init_calls.append(call)
            elif q in DESTROY_FUNCS:
                self.destroy_calls.append(call)
            elif q in SET_DEVICE_FUNCS:
                self.set_device_calls.append(call)
            elif q in SPAWN_FUNCS:
                target = _first_arg(call, "fn")
                if isinstance(target, cst.Name):
                    for fn in m.functions.get(target.value, []):
                        self.spawn_targets.append(fn)
            elif _is_sampler_qualname(q):
                self.samplers.append(self._sampler(call, q))
        for call in m.calls:
            if m.qualname(call.func) in DATALOADER_CLASSES:
                self.loaders.append(self._loader(call))

    # ------------------------------------------------------------------------------------------
    # ordering and small helpers
    # ------------------------------------------------------------------------------------------
    def order(self, node: cst.CSTNode) -> int:
        """Position of a node in source order (pre-order)."""
        return self._order.get(node, -1)

    def assigned_name(self, value: cst.BaseExpression) -> cst.Name | None:
        """`name = value` (a single plain target): the target Name."""
        parent = self.model.parent(value)
        if isinstance(parent, cst.Assign) and parent.value is value and len(parent.targets) == 1:
            t = parent.targets[0].target
            if isinstance(t, cst.Name):
                return t
        if isinstance(parent, cst.AnnAssign) and parent.value is value and isinstance(parent.target, cst.Name):
            return parent.target
        return None

    def assigned_attr(self, value: cst.BaseExpression) -> cst.Attribute | None:
        """`self.name = value` (a single target) in a method of a class of the file: the target."""
        parent = self.model.parent(value)
        t = None
        if isinstance(parent, cst.Assign) and parent.value is value and len(parent.targets) == 1:
            t = parent.targets[0].target
        elif isinstance(parent, cst.AnnAssign) and parent.value is value:
            t = parent.target
        if (isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self"
                and self.model.class_of(t) is not None):
            return t
        return None

    def assigned_key(self, value: cst.BaseExpression) -> tuple[cst.Name, str] | None:
        """`d["k"] = value` (a single target) or `d = {"k": value, ...}` (a dict display bound to a
        plain name): the dict's name node there and the constant key."""
        m = self.model
        parent = m.parent(value)
        if isinstance(parent, cst.Assign) and parent.value is value and len(parent.targets) == 1:
            t = parent.targets[0].target
            key = _const_key(t)
            if key is not None and isinstance(t.value, cst.Name):
                return t.value, key
            return None
        if isinstance(parent, cst.DictElement) and parent.value is value:
            key = _string_value(parent.key)
            display = m.parent(parent)
            name = self.assigned_name(display) if isinstance(display, cst.Dict) else None
            if key is not None and name is not None:
                return name, key
        return None

    def refers_to_key(self, use: cst.BaseExpression, target: tuple[cst.Name, str] | None) -> bool:
        """Whether `use` is `d["k"]` reading the dict entry kept at `target`: the same constant key of a
        name with the same bindings (the dict made once, its entries filled by key)."""
        if target is None:
            return False
        key = _const_key(use)
        if key != target[1] or not isinstance(use.value, cst.Name) or use.value.value != target[0].value:
            return False
        m = self.model
        mine = {id(b.node) for b in m.bindings_of(use.value)}
        theirs = {id(b.node) for b in m.bindings_of(target[0])}
        return bool(mine) and mine == theirs

    def refers_to_attr(self, use: cst.BaseExpression, target: cst.Attribute | None) -> bool:
        """Whether `use` reads the attribute set at `target` (`self.train_loader = ...` in class C):
        `self.train_loader` in a method of C or of a subclass, or `x.train_loader` (also
        `self.data.train_loader`) where the engine knows `x` is an instance of C or a subclass."""
        if target is None or not isinstance(use, cst.Attribute) or use.attr.value != target.attr.value:
            return False
        m = self.model
        owner = m.class_of(target)
        if owner is None:
            return False
        if isinstance(use.value, cst.Name) and use.value.value == "self":
            cls = m.class_of(use)
            name = cls.name.value if cls is not None else None
        else:
            name = m.value_of(use.value).cls
        if name is None:
            return False
        return name == owner.name.value or m.class_is(name, frozenset({owner.name.value}))

    def _binding_of_target(self, target: cst.Name):
        for b in self.model.bindings_of(target):
            if b.node is target:
                return b
        return None

    def refers_to(self, use: cst.BaseExpression, target: cst.Name | None) -> bool:
        """Whether the name `use` may refer to the binding made at `target`."""
        if target is None or not isinstance(use, cst.Name) or use.value != target.value:
            return False
        return any(b.node is target for b in self.model.bindings_of(use))

    # ------------------------------------------------------------------------------------------
    # wrappers
    # ------------------------------------------------------------------------------------------
    def _wrap(self, call: cst.Call, kind: str) -> Wrap:
        inner = _first_arg(call, "module")
        # `DP(m)`, `DP(m).to(d)`, `DP(m).cuda()` assigned to a name
        value: cst.BaseExpression = call
        parent = self.model.parent(call)
        if isinstance(parent, cst.Attribute) and parent.value is call and parent.attr.value in ("to", "cuda"):
            grand = self.model.parent(parent)
            if isinstance(grand, cst.Call) and grand.func is parent:
                value = grand
        target = self.assigned_name(value)
        return Wrap(call, kind, inner, target, value if target is not None else None)

    def wraps_of_module(self, *kinds: str) -> list[Wrap]:
        """Wrapper calls whose argument is an nn.Module (see `wraps_a_module`)."""
        out = []
        for w in self.wraps:
            if kinds and w.kind not in kinds:
                continue
            if self.wraps_a_module(w):
                out.append(w)
        return out

    def wraps_a_module(self, w: Wrap) -> bool:
        """The wrapped argument is an nn.Module: the analysis knows it is one, or it knows nothing
        of it (`net = SimpleDLA()` from `from models import *`, a model built by code of another
        module): the argument of `DataParallel` / `DistributedDataParallel` is a module by the
        API's contract. A value known to be something else (an optimizer handed to the wrapper,
        GL103's shape; a tensor) is not."""
        if w.inner is None:
            return False
        m = self.model
        kind = m.kind_of(w.inner)
        value_kind = m.value_of(w.inner).kind
        if kind is Kind.MODULE or value_kind == "module":
            return True
        return kind is Kind.UNKNOWN and value_kind is None

    def wrap_binding(self, binding) -> Wrap | None:
        for w in self.wraps:
            if w.target is not None and binding.node is w.target:
                return w
        return None

    def only_saved(self, w: Wrap) -> bool:
        """The wrapper is never run: every use of the name it is bound to is the receiver of a
        `.state_dict()` or `.load_state_dict(...)` call (at least one), of `.parameters()` /
        `.named_parameters()`, or printed. The wrap is there for its `module.` key prefix
        (pytorch-semseg's weight-conversion demos: `psp = DataParallel(psp)  # append module.`, then
        `torch.save({"model_state": psp.state_dict()}, ...)`; pytorch-pose's convert_checkpoint.py
        loads a wrapped checkpoint, counts the parameters and saves it unprefixed), not to drive
        GPUs."""
        if w.target is None:
            return False
        m = self.model
        uses = 0
        for node in m.nodes:
            if type(node) is not cst.Name or node.value != w.target.value or node is w.target:
                continue
            reach = self.wrapper_reaching(node)
            if reach is None or reach[0] is not w:
                continue
            parent = m.parent(node)
            call = m.parent(parent) if isinstance(parent, cst.Attribute) else None
            if isinstance(parent, cst.Arg) and isinstance(m.parent(parent), cst.Call) and isinstance(
                    m.parent(parent).func, cst.Name) and m.parent(parent).func.value == "print":
                continue  # `print(model)`
            if not (isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value in _PASSIVE_USES
                    and isinstance(call, cst.Call) and call.func is parent):
                return False
            if parent.attr.value in ("state_dict", "load_state_dict"):
                uses += 1
        return uses > 0

    def wrapper_reaching(self, use: cst.BaseExpression, _depth: int = 0) -> tuple[Wrap, bool] | None:
        """The wrapper a name holds where it is used: (wrap, definitely).

        The binding that reaches `use` is the latest binding of the name before it in the same
        scope (or, for a global read in a function, the module's last binding). `definitely` is
        False when that binding sits in a block (an `if`, ...) that does not also contain `use`.
        None when the reaching binding is not a wrapper call of a known module.
        """
        if not isinstance(use, cst.Name):
            return None
        m = self.model
        if self.checks_wrapping(use):
            return None
        bindings = m.bindings_of(use)
        if not bindings:
            return None
        pos = self.order(use)
        use_scope = m.scope_of(use)
        same = [b for b in bindings if m.scope_of(b.node) is use_scope]
        if same:
            before = [b for b in same if self.order(b.node) < pos
                      and not (b.value is not None and m.contains(b.value, use))]  # `x = x.to(d)`
            if not before:
                return None
            reaching = max(before, key=lambda b: self.order(b.node))
        else:
            reaching = max(bindings, key=lambda b: self.order(b.node))
        w = self.wrap_binding(reaching)
        v = reaching.value
        if (w is None and _depth < 4 and reaching.how == "assign" and isinstance(v, cst.Call)
                and isinstance(v.func, cst.Attribute) and v.func.attr.value in _SAME_MODULE_METHODS
                and isinstance(v.func.value, cst.Name) and v.func.value.value == use.value):
            # `model = model.to(device)`: Module.to()/.cuda()/.train() return the module itself, so
            # a wrapper stays the wrapper
            return self.wrapper_reaching(v.func.value, _depth + 1)
        if w is None or not self.wraps_a_module(w):
            return None  # (the engine knows `create_model()` of a factory of the file is a module)
        stmt = m.statement_of(reaching.node)
        block = m.parent(stmt) if stmt is not None else None
        definitely = block is not None and (block is m.module or any(a is block for a in m.ancestors(use)))
        if same:
            # a block of the binding that the use is not in: the wrap is conditional
            for anc in m.ancestors(stmt):
                if anc is use_scope or anc is m.module:
                    break
                if isinstance(anc, (cst.If, cst.Else, cst.Try, cst.For, cst.While, cst.With)) and not any(
                    a is anc for a in m.ancestors(use)
                ):
                    definitely = False
        return w, definitely

    def checks_wrapping(self, use: cst.Name) -> bool:
        """`use` sits under a test like `isinstance(model, nn.DataParallel)` or
        `hasattr(model, "module")`: the code already handles both cases."""
        m = self.model
        for anc in m.ancestors(use):
            test = None
            if isinstance(anc, (cst.If, cst.IfExp, cst.While)):
                test = anc.test
            elif isinstance(anc, cst.BooleanOperation):
                test = anc.left
            if test is None:
                continue
            for n in _walk(test):
                if (
                    isinstance(n, cst.Call)
                    and isinstance(n.func, cst.Name)
                    and n.func.value in ("isinstance", "hasattr", "getattr")
                    and n.args
                    and isinstance(n.args[0].value, cst.Name)
                    and n.args[0].value.value == use.value
                ):
                    return True
        return False

    def wrapped_class(self, w: Wrap) -> str | None:
        """The name of the file's nn.Module subclass that a wrapper wraps, when known (by its
        bindings, else by the flow engine: `model = create_model()` of a factory of the file)."""
        found = self.class_of_module_expr(w.inner)
        if found is None and w.inner is not None:
            v = self.model.value_of(w.inner)
            if v.kind == "module" and v.cls in self.model.classes:
                found = v.cls
        return found

    def class_of_module_expr(self, expr: cst.BaseExpression | None, _depth: int = 0) -> str | None:
        m = self.model
        if expr is None or _depth > 8:
            return None
        if isinstance(expr, cst.Call):
            f = expr.func
            if isinstance(f, cst.Name) and f.value in m.classes and m.kind_of(expr) is Kind.MODULE:
                return f.value
            if isinstance(f, cst.Attribute) and f.attr.value in ("to", "cuda", "cpu", "train", "float", "half"):
                return self.class_of_module_expr(f.value, _depth + 1)
            return None
        if isinstance(expr, cst.Name):
            classes = set()
            for b in m.bindings_of(expr):
                if self.wrap_binding(b) is not None:
                    continue  # `model = DP(model)`: what was wrapped is the other bindings
                if b.how != "assign" or b.value is None:
                    return None
                c = self.class_of_module_expr(b.value, _depth + 1)
                if c is None:
                    return None
                classes.add(c)
            if len(classes) == 1:
                return classes.pop()
        return None

    # ------------------------------------------------------------------------------------------
    # samplers and loaders
    # ------------------------------------------------------------------------------------------
    def _sampler(self, call: cst.Call, q: str) -> SamplerInfo:
        distributed = q in DIST_SAMPLERS
        shuffle: bool | None = True if distributed else None
        arg = _keyword(call, "shuffle")
        positional = [a for a in call.args if a.keyword is None]
        if arg is None and distributed and len(positional) >= 4:
            arg = positional[3]
        if arg is not None:
            shuffle = _literal_bool(arg.value)
        # `sampler = RandomSampler(ds) if local_rank == -1 else DistributedSampler(ds)`: the name holds
        # this sampler on one branch (transformers#3721)
        held = self._branch_value_root(call)
        return SamplerInfo(call, q, distributed, shuffle, self.assigned_name(held), self.assigned_attr(held),
                           self.assigned_key(held))

    def _branch_value_root(self, node: cst.BaseExpression) -> cst.BaseExpression:
        """The outermost conditional expression `node` is a branch value of (`a if t else b`, through
        nested ones), or `node` itself."""
        m = self.model
        while True:
            parent = m.parent(node)
            if isinstance(parent, cst.IfExp) and parent.test is not node:
                node = parent
                continue
            return node

    def _chosen_sampler_class(self, call: cst.Call) -> str | None:
        """`train_sampler(ds)` where `train_sampler = RandomSampler if local_rank == -1 else
        DistributedSampler` (bound once, in the call's scope): the distributed sampler class, which
        the call makes when training is distributed (the case the rules are about)."""
        f = call.func
        if type(f) is not cst.Name:
            return None
        m = self.model
        bindings = m.bindings_of(f)
        if len(bindings) != 1 or bindings[0].how != "assign" or type(bindings[0].value) is not cst.IfExp:
            return None
        e = bindings[0].value
        qs = [m.qualname(x) for x in (e.body, e.orelse)]
        dist = [q for q in qs if q is not None and q in DIST_SAMPLERS]
        if len(dist) != 1 or not all(q is not None and _is_sampler_qualname(q) for q in qs):
            return None
        return dist[0]

    def _loader(self, call: cst.Call) -> LoaderInfo:
        positional = [a for a in call.args if a.keyword is None]
        dataset = _first_arg(call, "dataset")
        shuffle = _keyword(call, "shuffle")
        if shuffle is None and len(positional) >= 3:
            shuffle = positional[2]
        sampler_arg = _keyword(call, "sampler")
        if sampler_arg is None and len(positional) >= 4:
            sampler_arg = positional[3]
        batch_arg = _keyword(call, "batch_sampler")
        if batch_arg is None and len(positional) >= 5:
            batch_arg = positional[4]
        sampler = sampler_arg.value if sampler_arg is not None else None
        info = LoaderInfo(
            call,
            self.assigned_name(call),
            dataset,
            sampler,
            batch_arg.value if batch_arg is not None else None,
            shuffle,
        )
        info.attr_target = self.assigned_attr(call)
        info.sampler_info = self.sampler_of_expr(sampler)
        if info.sampler_info is None and isinstance(sampler, cst.Call):
            info.sampler_info, info.sampler_shuffle = self._sampler_from_helper(sampler)
        return info

    def _sampler_from_helper(self, call: cst.Call) -> tuple[SamplerInfo | None, bool | None]:
        """`sampler=data_sampler(dataset, shuffle=True, distributed=d)`: the one distributed sampler
        a function of the file returns, and its `shuffle` when the helper passes its own parameter
        on and this call gives it a literal."""
        fn = self._file_function(call)
        if fn is None:
            return None, None
        m = self.model
        found = []
        for s in self.samplers:
            ret = m.parent(s.call)
            if s.distributed and isinstance(ret, cst.Return) and m.enclosing(ret, cst.FunctionDef) is fn:
                found.append(s)
        if len(found) != 1:
            return None, None
        s = found[0]
        shuffle = s.shuffle
        if shuffle is None:
            arg = _keyword(s.call, "shuffle")
            if arg is not None and isinstance(arg.value, cst.Name):
                given = argument_for(fn, call, arg.value.value)
                shuffle = _literal_bool(given) if given is not None else None
        return s, shuffle

    def sampler_of_expr(self, expr: cst.BaseExpression | None) -> SamplerInfo | None:
        if expr is None:
            return None
        found = [s for s in self.samplers
                 if s.call is expr or self.refers_to(expr, s.target) or self.refers_to_attr(expr, s.attr_target)
                 or self.refers_to_key(expr, s.key_target)]
        # a name that holds one of two samplers (`RandomSampler(ds) if local_rank == -1 else
        # DistributedSampler(ds)`): the distributed one, which it holds when training is distributed
        return next((s for s in found if s.distributed), found[0] if found else None)

    def loaders_of_sampler(self, s: SamplerInfo) -> list[LoaderInfo]:
        return [lo for lo in self.loaders if lo.sampler_info is s]

    def loader_of_expr(self, expr: cst.BaseExpression | None) -> LoaderInfo | None:
        if expr is None:
            return None
        for lo in self.loaders:
            if lo.call is expr or self.refers_to(expr, lo.target) or self.refers_to_attr(expr, lo.attr_target):
                return lo
        return None

    # ------------------------------------------------------------------------------------------
    # loops
    # ------------------------------------------------------------------------------------------
    def iter_sources(self, it: cst.BaseExpression) -> list[cst.BaseExpression]:
        """What a `for` iterates, seen through enumerate/tqdm/iter/zip."""
        m = self.model
        while isinstance(it, cst.Call):
            f = it.func
            q = m.qualname(f) or (f.value if isinstance(f, cst.Name) else None)
            args = [a.value for a in it.args if a.keyword is None]
            if q in ("enumerate", "iter", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm") and args:
                it = args[0]
                continue
            if q == "zip":
                out = []
                for a in args:
                    out.extend(self.iter_sources(a))
                return out
            break
        return [it]

    def loader_loops(self, lo: LoaderInfo) -> list[LoaderLoop]:
        """Loops over the loader: directly, or in a file function the loader is passed to."""
        out = self._loader_loops(lo)
        for loop in self._keyed_loops(lo):
            if all(ll.loop is not loop for ll in out):
                out.append(LoaderLoop(loop))
        return out

    def _holds_loader(self, src: cst.BaseExpression, lo: LoaderInfo) -> bool:
        """A plain name or an attribute (`self.loader = make_loader()`, E45-2) whose value (per the
        flow engine) is the loader `lo` builds."""
        if not isinstance(src, (cst.Name, cst.Attribute)):
            return False
        v = self.model.value_of(src)
        return v.kind == "loader" and v.origin is lo.call

    def _keyed_loops(self, lo: LoaderInfo) -> list[cst.For]:
        """Loops over a constant key of a dict of loaders (`loaders["train"]`, also kept in a `self`
        attribute or handed to a constructor: `self.data_loader["train"]`) that the flow engine knows
        holds this loader."""
        m = self.model
        out = []
        for loop in m.fors:
            for src in self.iter_sources(loop.iter):
                if _const_key(src) is None:
                    continue
                v = m.value_of(src)
                if v.kind == "loader" and v.origin is lo.call:
                    out.append(loop)
                    break
        return out

    def _loader_loops(self, lo: LoaderInfo) -> list[LoaderLoop]:
        m = self.model
        out: list[LoaderLoop] = []
        if lo.target is None and lo.attr_target is not None:
            # `self.train_loader = DataLoader(...)`: loops over that attribute, in the class or
            # through an instance of it, and functions of the file it is handed to
            def reads(x):
                return self.refers_to_attr(x, lo.attr_target)
            for loop in m.fors:
                if any(reads(src) for src in self.iter_sources(loop.iter)):
                    out.append(LoaderLoop(loop))
            out += self._iter_passes(reads, None, None)
            for call in m.calls:
                fn = self._file_function(call)
                if fn is None:
                    continue
                for param in _matching_params(call, fn, reads):
                    self._loops_over_param(fn, param, call, out, 0)
            return out
        if lo.target is None:
            # `return DataLoader(...)` (or a loader built inline): loops over the call itself, or
            # over a name the flow engine knows holds this loader (`train_dataloader =
            # self.get_train_dataloader()` in the method that runs the epochs)
            for loop in m.fors:
                if any(src is lo.call or self._holds_loader(src, lo) for src in self.iter_sources(loop.iter)):
                    out.append(LoaderLoop(loop))
            return out
        for loop in m.fors:
            if any(self.refers_to(src, lo.target) or self._holds_loader(src, lo) for src in self.iter_sources(loop.iter)):
                # the name it is bound to, or (`train_loader = DataLoader(...); return train_loader`
                # in a helper) a name of another function the flow engine knows holds it
                out.append(LoaderLoop(loop))
        out += self._iter_passes(lambda x: self.refers_to(x, lo.target), None, None)
        # passed to a function of the file that loops over the matching parameter (or hands it on
        # to another such function: `loader = sample_data(loader)`)
        for call in m.calls:
            fn = self._file_function(call)
            if fn is None:
                continue
            for param in _matching_params(call, fn, lambda e: self.refers_to(e, lo.target)):
                self._loops_over_param(fn, param, call, out, 0)
        return out

    def _file_function(self, call: cst.Call) -> cst.FunctionDef | None:
        """The file's function a call runs: `train(...)` (one module-level function of that name) or
        `self._train_epoch(...)` (a method of the caller's class or its bases)."""
        m = self.model
        f = call.func
        if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == "self":
            cls = m.class_of(call)
            found = m.method_of_class(cls.name.value, f.attr.value) if cls is not None else None
            return found[0] if found is not None else None
        return m.module_function(f.value) if isinstance(f, cst.Name) else None

    def _iter_passes(self, pred, fn, via) -> list[LoaderLoop]:
        """`it = iter(loader)` (or `next(iter(loader))`) in the body of a `for`: every run of it starts
        a new pass over the loader (FixMatch re-creates its iterator when it runs out; a step that
        takes `next(iter(loader))` draws the first batch of a fresh pass). The enclosing `for` plays
        the pass's loop."""
        m = self.model
        out = []
        for call in m.calls:
            f = call.func
            if type(f) is not cst.Name or f.value != "iter" or m.bindings_of(f):
                continue
            args = [a.value for a in call.args if a.keyword is None]
            if len(args) != 1 or not pred(args[0]) or (fn is not None and m.scope_of(call) is not fn):
                continue
            loop = self.enclosing_loop(call)
            if loop is not None and m.contains(loop.body, call):
                out.append(LoaderLoop(loop, via, repeats=True))
        return out

    def _loops_over_param(self, fn, param: str, via: cst.Call, out: list, depth: int) -> None:
        m = self.model
        for loop in m.fors:
            if m.scope_of(loop) is not fn:
                continue
            for src in self.iter_sources(loop.iter):
                if isinstance(src, cst.Name) and src.value == param and m.scope_of(src) is fn:
                    out.append(LoaderLoop(loop, via))
        out += self._iter_passes(lambda x: isinstance(x, cst.Name) and x.value == param, fn, via)
        if depth >= 2:
            return
        for call in m.calls_in(fn):
            inner = self._file_function(call)
            if inner is None or inner is fn or m.scope_of(call) is not fn:
                continue
            for p in _matching_params(call, inner, lambda e: isinstance(e, cst.Name) and e.value == param):
                self._loops_over_param(inner, p, via, out, depth + 1)

    def enclosing_loop(self, node: cst.CSTNode) -> cst.For | None:
        """The nearest `for` around node within its function."""
        for anc in self.model.ancestors(node):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return None
            if isinstance(anc, cst.For):
                return anc
        return None

    def _enclosing_while(self, node: cst.CSTNode) -> cst.While | None:
        """The nearest `while` around node within its function."""
        for anc in self.model.ancestors(node):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return None
            if isinstance(anc, cst.While):
                return anc
        return None

    def epoch_loops(self, lo: LoaderInfo, through_calls: bool = False) -> list[cst.For]:
        """The loops around each pass over the loader (the epoch loops), without duplicates.
        `through_calls`: a pass in a function or method of the file with no loop around it in that
        function takes the loop around the calls the engine resolved to that function (two levels:
        `while True: self._train_epoch()`)."""
        out: list = []
        for ll in self.loader_loops(lo):
            if ll.repeats:
                # the loop that re-creates the iterator repeats the passes itself; no epoch number
                # is known for it (rules offer no set_epoch fix there)
                if all(ll.loop is not o for o in out):
                    out.append(ll.loop)
                    self.iter_pass_loops.add(ll.loop)
                continue
            outer = self.enclosing_loop(ll.anchor)
            if outer is None and ll.via is not None:
                # `train(loader)` called once, its own epoch loop around the pass over its parameter
                outer = self.enclosing_loop(ll.loop)
            if outer is None:
                outer = self._endless_generator_loop(ll.loop)
            if outer is None:
                # `epoch = 0; while epoch < epochs: for x in loader: ...; epoch += 1` (WatChMaL's
                # `while floor(epoch) < epochs:`, E51-3a): a `while` repeating the pass is an epoch
                # loop too (no epoch variable: rules offer no fix there)
                outer = self._enclosing_while(ll.anchor)
            if outer is None and through_calls:
                for caller_loop in self._loops_around_calls(ll.anchor, lo):
                    if all(caller_loop is not o for o in out):
                        out.append(caller_loop)
                continue
            if outer is not None and all(outer is not o for o in out):
                out.append(outer)
        return out

    def _loops_around_calls(self, node: cst.CSTNode, lo: LoaderInfo, depth: int = 0) -> list:
        """The loops (`for` or `while`) around the calls of the function holding `node`, when the
        function has no loop around `node` itself; through at most two levels of calls. A function
        that also builds the loader (each call makes a new one) has none."""
        m = self.model
        fn = m.enclosing(node, cst.FunctionDef)
        if fn is None or depth > 1 or m.contains(fn, lo.call):
            return []
        out = []
        for call in m.resolved_sites(fn) or m.call_sites(fn):
            if m.contains(fn, call):
                continue  # recursion
            loop = None
            for anc in m.ancestors(call):
                if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                    break
                if isinstance(anc, (cst.For, cst.While)) and not m.contains(anc.iter if isinstance(anc, cst.For)
                                                                            else anc.test, call):
                    loop = anc
                    break
            if loop is not None:
                out.append(loop)
            else:
                out += self._loops_around_calls(call, lo, depth + 1)
        return out

    def _endless_generator_loop(self, loop: cst.For) -> cst.While | None:
        """`while True: for batch in loader: yield batch`: in a generator that cycles over the
        loader, the `while` starts each pass over it (it plays the epoch loop)."""
        m = self.model
        parent = m.parent(m.parent(loop))  # For -> IndentedBlock -> While
        if not (isinstance(parent, cst.While) and isinstance(parent.test, cst.Name) and parent.test.value == "True"):
            return None
        fn = m.enclosing(parent, cst.FunctionDef)
        if fn is None or not any(type(n) is cst.Yield for n in m.walk(loop)):
            return None
        return parent

    def body_calls_backward(self, loop: cst.For) -> bool:
        for call, _recv, _meth in self.model.method_calls("backward"):
            if any(a is loop for a in self.model.ancestors(call)):
                return True
        return False

    def is_training_loader(self, lo: LoaderInfo) -> bool:
        return any(self.body_calls_backward(ll.loop) for ll in self.loader_loops(lo))

    # ------------------------------------------------------------------------------------------
    # local rank
    # ------------------------------------------------------------------------------------------
    def is_local_rank_expr(self, expr: cst.BaseExpression | None) -> bool:
        """`int(os.environ["LOCAL_RANK"])`, `int(os.environ.get("LOCAL_RANK", 0))`,
        `int(os.getenv("LOCAL_RANK"))`, `args.local_rank`, or a name bound to one of those."""
        m = self.model
        if expr is None:
            return False
        if isinstance(expr, cst.Attribute) and expr.attr.value == "local_rank" and isinstance(expr.value, cst.Name):
            return True
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "int":
            args = [a.value for a in expr.args if a.keyword is None]
            return len(args) == 1 and self._env_local_rank(args[0])
        if isinstance(expr, cst.Name):
            return self.is_local_rank_name(expr)
        return False

    def _env_local_rank(self, expr: cst.BaseExpression) -> bool:
        m = self.model
        if isinstance(expr, cst.Subscript):
            if m.qualname(expr.value) != "os.environ" or len(expr.slice) != 1:
                return False
            idx = expr.slice[0].slice
            return isinstance(idx, cst.Index) and _string_value(idx.value) == "LOCAL_RANK"
        if isinstance(expr, cst.Call):
            q = m.qualname(expr.func)
            if q in ("os.environ.get", "os.getenv"):
                args = [a.value for a in expr.args if a.keyword is None]
                return bool(args) and _string_value(args[0]) == "LOCAL_RANK"
        return False

    def is_local_rank_name(self, name: cst.Name) -> bool:
        bindings = self.model.bindings_of(name)
        return bool(bindings) and all(self._binds_local_rank(b) for b in bindings)

    def local_rank_at(self, node: cst.CSTNode) -> str | None:
        """Source text of a local-rank expression usable at `node`: a name bound to the local rank
        before `node` in its scope (or at module level), or an `X.local_rank` read in that scope."""
        m = self.model
        scope = m.scope_of(node)
        pos = self.order(node)
        best: tuple[int, str] | None = None
        for (bscope, name), bindings in m.bindings.items():
            if bscope is not scope and bscope is not m.module:
                continue
            if not all(self._binds_local_rank(b) for b in bindings):
                continue
            first = min(self.order(b.node) for b in bindings)
            if bscope is scope and first > pos:
                continue
            if not _name_visible(m, name, scope, bscope):
                continue
            rank = 0 if bscope is scope else 1
            if best is None or rank < best[0]:
                best = (rank, name)
        if best is not None:
            return best[1]
        for attr in self._local_rank_attrs():
            if m.scope_of(attr) is scope and isinstance(attr.value, cst.Name):
                if self.order(attr) < pos or m.bindings_of(attr.value):
                    return f"{attr.value.value}.local_rank"
        return None

    def _binds_local_rank(self, b) -> bool:
        m = self.model
        if b.how == "param":
            fn = m.enclosing(b.node, cst.FunctionDef)
            if fn is None or not any(fn is t for t in self.spawn_targets):
                return False
            params = fn.params.posonly_params + fn.params.params
            return bool(params) and params[0].name is b.node
        if b.how != "assign" or b.value is None or isinstance(b.value, cst.Name):
            return False
        return self.is_local_rank_expr(b.value)

    def _local_rank_attrs(self) -> list[cst.Attribute]:
        out = []
        for node in self.model.parents:
            if isinstance(node, cst.Attribute) and node.attr.value == "local_rank" and isinstance(node.value, cst.Name):
                if node.value.value != "self":
                    out.append(node)
        return out

    def local_rank_names(self) -> set[str]:
        m = self.model
        return {name for (_scope, name), bs in m.bindings.items() if bs and all(self._binds_local_rank(b) for b in bs)}


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------


def _walk(node: cst.CSTNode):
    yield node
    yield from _model_walk(node)


def _is_sampler_qualname(q: str) -> bool:
    if q in DIST_SAMPLERS:
        return True
    if q.startswith("torch.utils.data."):
        last = q.rsplit(".", 1)[-1]
        return last.endswith("Sampler") and last[:1].isupper()
    return False


def _first_arg(call: cst.Call, keyword: str) -> cst.BaseExpression | None:
    for a in call.args:
        if a.keyword is None and not a.star:
            return a.value
        break
    kw = _keyword(call, keyword)
    return kw.value if kw is not None else None


def _const_key(node) -> str | None:
    """`x["k"]` (one constant string key): "k"."""
    if not isinstance(node, cst.Subscript) or len(node.slice) != 1:
        return None
    sl = node.slice[0].slice
    if not isinstance(sl, cst.Index):
        return None
    return _string_value(sl.value)


def _matching_params(call: cst.Call, fn: cst.FunctionDef, pred) -> list[str]:
    """Names of fn's parameters that receive an argument of `call` satisfying pred."""
    params = list(fn.params.posonly_params) + list(fn.params.params)
    if isinstance(call.func, cst.Attribute) and params and params[0].name.value == "self":
        params = params[1:]  # `self.method(...)`: the receiver is not among the arguments
    out = []
    i = 0
    for a in call.args:
        if a.star:
            return out
        if a.keyword is None:
            if i < len(params) and pred(a.value):
                out.append(params[i].name.value)
            i += 1
        elif pred(a.value):
            out.append(a.keyword.value)
    return out


def _name_visible(m: ScriptModel, name: str, scope: cst.CSTNode, bscope: cst.CSTNode) -> bool:
    """A module-level name is visible in a function unless the function binds it too."""
    if bscope is scope:
        return True
    return (scope, name) not in m.bindings


_SAME_MODULE_METHODS = frozenset({"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "train", "eval",
                                   "requires_grad_"})


def epoch_variable(m: ScriptModel, loop: cst.For) -> str | None:
    """The epoch counter of an epoch loop, as code to pass to `sampler.set_epoch(...)` (GL301's
    conversion, GL302): `for epoch in range(n)` -> "epoch"; `for epoch, _ in enumerate(...)` -> "epoch";
    `for state["epoch"] in range(...)` -> `state["epoch"]` (a literal key of a name)."""
    t = loop.target
    if isinstance(t, cst.Name):
        return t.value
    if (isinstance(t, cst.Subscript) and isinstance(t.value, cst.Name) and len(t.slice) == 1
            and isinstance(t.slice[0].slice, cst.Index) and isinstance(t.slice[0].slice.value, cst.SimpleString)):
        return m.module.code_for_node(t)
    it = loop.iter
    if (
        isinstance(t, cst.Tuple)
        and t.elements
        and isinstance(t.elements[0].value, cst.Name)
        and isinstance(it, cst.Call)
        and isinstance(it.func, cst.Name)
        and it.func.value == "enumerate"
    ):
        return t.elements[0].value.value
    return None


def wrapper_subclass_kind(m, name: str) -> str | None:
    """"dp" / "ddp" for a class of the file whose bases resolve to torch's DataParallel /
    DistributedDataParallel (tomodrgn's `DataParallelPassthrough(torch.nn.DataParallel)`), else None."""
    if m.class_is(name, DP_CLASSES):
        return "dp"
    if m.class_is(name, DDP_CLASSES):
        return "ddp"
    return None


def forwards_attributes(m, call) -> bool:
    """`call` builds a wrapper subclass of the file that defines `__getattr__` (its own or a file
    base's): it falls back to the wrapped module for attributes, so reading them through it works."""
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in m.classes):
        return False
    return m.method_of_class(call.func.value, "__getattr__") is not None


def engine_wrapper(m, expr) -> tuple[str, str | None, bool] | None:
    """("dp" | "ddp", the wrapped instance's class of this file or None, wrapped on every path) when
    the flow engine knows `expr` holds, on some path, a DataParallel / DistributedDataParallel
    wrapper made in this file: wrappers kept in `self` attributes, passed to functions or returned
    by helpers, which the binding-based `wrapper_reaching` does not follow."""
    v = m.value_of(expr)
    w = v.wrap if v.kind == "module" else None
    every = True
    if not isinstance(w, cst.Call):
        entry = _mapping_entry(m, expr)
        if entry is None:
            return None
        v, w, every = entry, entry.wrap, False  # one entry of the mapping: on some iterations only
    last = (m.qualname(w.func) or "").rsplit(".", 1)[-1]
    if isinstance(w.func, cst.Name) and w.func.value in m.classes:
        sub = wrapper_subclass_kind(m, w.func.value)
        last = {"dp": "DataParallel", "ddp": "DistributedDataParallel"}.get(sub, "")
    if last not in ("DataParallel", "DistributedDataParallel"):
        return None
    inner = m.value_of(w.args[0].value).cls if w.args else None
    # a wrap under a test (`if device.type == "cuda":`, which the engine takes on a GPU run) is not
    # made on a CPU run: "every path" is every GPU path only
    conditional = any(isinstance(a, (cst.If, cst.IfExp)) for a in m.ancestors(w))
    return ("dp" if last == "DataParallel" else "ddp"), (inner if inner in m.classes else None), \
        every and v.scatters and not conditional


_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def _mapping_entry(m, expr):
    """The wrapper value among the entries a loop variable takes: `obj` of `{name: obj.state_dict()
    for name, obj in self.to_save.items()}` (or `for obj in to_save.values()`) where the engine knows
    the mapping's entries and one of them is a DataParallel/DDP wrapper (ignite#750's checkpoint
    handler, E45-3). None otherwise."""
    if not isinstance(expr, cst.Name):
        return None
    for anc in m.ancestors(expr):
        if isinstance(anc, _COMPREHENSIONS):
            fors, comp = [], anc.for_in
            while comp is not None:
                fors.append((comp.target, comp.iter))
                comp = comp.inner_for_in
        elif isinstance(anc, cst.For):
            if not all(b.how == "for" and b.node is not None and m.contains(anc.target, b.node)
                       for b in m.bindings_of(expr)):
                continue  # the name is bound elsewhere too: not only the loop's entries
            fors = [(anc.target, anc.iter)]
        else:
            continue
        for target, it in fors:
            if not (isinstance(it, cst.Call) and not it.args and isinstance(it.func, cst.Attribute)):
                continue
            meth = it.func.attr.value
            if meth == "items":
                hit = (isinstance(target, cst.Tuple) and len(target.elements) == 2
                       and isinstance(target.elements[1].value, cst.Name)
                       and target.elements[1].value.value == expr.value)
            elif meth == "values":
                hit = isinstance(target, cst.Name) and target.value == expr.value
            else:
                hit = False
            if not hit:
                continue
            mv = m.value_of(it.func.value)
            if mv.kind != "mapping" or not mv.keys:
                return None
            for _k, ev in mv.keys:
                if ev.kind == "module" and isinstance(ev.wrap, cst.Call):
                    return ev
            return None
    return None
