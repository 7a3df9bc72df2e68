"""GL301 dataparallel-over-ddp, and its codemod: a single-process DataParallel script becomes a
DistributedDataParallel script launched by torchrun.

The conversion is one Fix made of text edits (imports, process-group setup, per-rank device,
DistributedSampler + set_epoch, the DDP wrap, rank-0 guards around prints and saves, a barrier
before re-loading a checkpoint, destroy_process_group). Every precondition it cannot establish
from the file turns into "no fix" with the reason in the message.
"""

from __future__ import annotations

import libcst as cst


from gpulint.analysis.distributed import DIST_FRAMEWORKS, DistFacts, LoaderInfo, Wrap, epoch_variable
from gpulint.flow import runs_on_gpu
from gpulint.rule import Context, Kind, Rule, split_lines
from gpulint.sites import line_ref

SAVE_FUNCS = frozenset({"torch.save", "torch.serialization.save"})
LOAD_FUNCS = frozenset({"torch.load", "torch.serialization.load"})
# `model.module.<method>(...)` calls that do not run a forward pass outside DDP
SAFE_MODULE_METHODS = frozenset(
    "state_dict load_state_dict parameters named_parameters buffers named_buffers modules named_modules "
    "children named_children eval train".split()
)
DP_ONLY_ATTRS = frozenset({"device_ids", "output_device", "src_device_obj", "dim"})
ITERABLE_DATASETS = frozenset({"torch.utils.data.IterableDataset", "torch.utils.data.dataset.IterableDataset"})

BASE_MESSAGE = (
    "`nn.DataParallel` drives every GPU from one process (it replicates the model and scatters each batch from "
    "GPU 0 every step); use DistributedDataParallel, one process per GPU launched with `torchrun`"
)


class Refuse(Exception):
    """The codemod cannot convert this script safely; the message says why."""


class DataParallelOverDdp(Rule):
    code = "GL301"
    name = "dataparallel-over-ddp"
    summary = "`nn.DataParallel` is slower than DistributedDataParallel; the unsafe fix converts the script to DDP + torchrun."
    message = BASE_MESSAGE
    fix_safety = "unsafe"
    default = True
    kind = "slow"
    prefilter = r"DataParallel"
    ast_prefilter = r"DataParallel"
    explanation = '''
`nn.DataParallel` runs one Python process for all GPUs: every step it replicates the model from
GPU 0, scatters the batch, gathers the outputs back on GPU 0 and reduces the gradients there. It is
GIL-bound, leaves GPU 0 with more memory and work than the others, and scales poorly; the PyTorch
documentation recommends `DistributedDataParallel` (DDP) even on a single machine. DDP runs one
process per GPU, each with its own shard of the data, and overlaps the gradient all-reduce with
the backward pass.

The rule fires on each `nn.DataParallel(model)` (any import alias) in a script, whether or not
the file shows what the model is (what DataParallel wraps is a module by the API's contract: a
`net = SimpleDLA()` from `from models import *` counts), unless the file already uses
`torch.distributed` (DataParallel is then a deliberate fallback), is driven by
Lightning/Accelerate/DeepSpeed/the HF Trainer, wraps the model in a library function or method
that the file never calls (a method of a top-level class counts as called when the file builds the
class, and, for another method than `__init__`, also calls it by name from outside the class:
pase#30's `nn.ModuleList([nn.DataParallel(m) for m in self.minions])` in the constructor of the
model it trains), or never trains (an evaluation or demo script: no optimizer, no `backward()`,
no training call). A wrap that runs only without a GPU (the `else:` of
`if torch.cuda.is_available():`) is not reported.

**The (unsafe) fix converts the script** to DDP launched by
`torchrun --standalone --nproc_per_node=<GPUs> script.py`:

- imports `os`, `torch.distributed as dist`, `DistributedDataParallel as DDP` and `DistributedSampler`;
- at the start of the script (or of the function that wraps the model): `dist.init_process_group`
  (`nccl` when CUDA is available, else `gloo`), `rank`, `local_rank` from `LOCAL_RANK`, and
  `torch.cuda.set_device(local_rank)` on CUDA;
- the device variable becomes the local-rank device with its CPU fallback
  (`"cuda"` → `f"cuda:{local_rank}"`);
- the training DataLoader gets a `DistributedSampler` (its `shuffle=` moves to the sampler), and
  `sampler.set_epoch(epoch)` is called first in the epoch loop;
- `nn.DataParallel(model)` becomes `DDP(model, device_ids=[local_rank] if torch.cuda.is_available()
  else None)` (an `if torch.cuda.device_count() > 1:` around it is dropped);
- `print(...)`, logging (`logging.info`, `logger.info`, ... below `error`) and `torch.save(...)`
  statements (and calls of the file's functions that save) run on rank 0 only (`if rank == 0:`);
  prints and logging in the file's functions that the script calls get
  `if not dist.is_initialized() or dist.get_rank() == 0:` (unless their arguments compute something
  other than plain reads); prints to `sys.stderr` and errors stay on every rank; a
  `dist.barrier()` goes before a `torch.load` that reads what rank 0 saved;
- `dist.destroy_process_group()` at the end.

Behaviour that changes: `batch_size` becomes per process (the global batch is `batch_size` × the
number of processes: scale the learning rate or divide the batch size if you need the old one);
validation still runs on every rank over the whole validation set. The codemod leaves the script alone, and says why, when it cannot convert it
safely: a custom sampler, several DataParallel models, a model used through `.module` in ways
that would bypass DDP's gradient synchronisation, a device that does not come from a variable it
can make per-rank, structure it does not follow (the wrap inside a loop, early returns, ...).

Bad:

```python
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(dataset, batch_size=64, shuffle=True)
model = nn.DataParallel(Net().to(device))
for epoch in range(10):
    for x, y in loader:
        ...
torch.save(model.module.state_dict(), "model.pt")
```

Good (run with `torchrun --standalone --nproc_per_node=4 train.py`):

```python
dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
rank = dist.get_rank()
local_rank = int(os.environ["LOCAL_RANK"])
if torch.cuda.is_available():
    torch.cuda.set_device(local_rank)
device = torch.device(f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu")
train_sampler = DistributedSampler(dataset, shuffle=True)
loader = DataLoader(dataset, batch_size=64, sampler=train_sampler)
model = DDP(Net().to(device), device_ids=[local_rank] if torch.cuda.is_available() else None)
for epoch in range(10):
    train_sampler.set_epoch(epoch)
    for x, y in loader:
        ...
if rank == 0:
    torch.save(model.module.state_dict(), "model.pt")
dist.destroy_process_group()
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        if m.frameworks & DIST_FRAMEWORKS:
            return
        facts: DistFacts = m.facts(DistFacts)
        if facts.init_calls and not any(w.kind != "dp" for w in facts.wraps):
            yield from _dp_in_distributed_branch(ctx, m, facts)
        if facts.init_calls or any(w.kind != "dp" for w in facts.wraps):
            return  # a DDP script whose DataParallel branch is a deliberate single-process fallback
        dps = [w for w in facts.wraps_of_module("dp") if not _in_library_function(m, w.call)]
        # a wrapper only saved (`state_dict()`), never run: it drives no GPU (pytorch-semseg)
        dps = [w for w in dps if not facts.only_saved(w)]
        # a wrapper only loaded into and unwrapped (`model = nn.DataParallel(model)`,
        # `model.load_state_dict(...)`, `self.f = model.module.f`: chingyaoc/DCL's linear.py; in a
        # function, `next(enc.children()).features`: erfnet's pretrained encoder, PRECISION31 A1)
        dps = [w for w in dps if not _only_loaded(m, facts, w)]
        if dps and not _trains(m):
            return  # an evaluation or demo script: no gradients to synchronise, DDP is not the advice
        if any(_in_method(m, w.call) for w in dps) and not _backpropagates(m):
            # a wrap made by a class of the file: the class's name (`Trainer(args)`) says nothing of
            # what the script does (ZJULearning/RMI's eval.py builds a `Trainer` to validate)
            dps = [w for w in dps if not _in_method(m, w.call)]
        for w in dps:
            if not runs_on_gpu(m, w.call):
                continue  # `else: model = nn.DataParallel(model)` of `if torch.cuda.is_available():`: no GPU to drive
            try:
                fix = _Converter(ctx, facts, w, dps).run()
            except Refuse as exc:
                yield ctx.finding(w.call, f"{BASE_MESSAGE}; no automatic fix: {exc}")
                continue
            yield ctx.finding(w.call, f"{BASE_MESSAGE} (the unsafe fix converts this script to DDP under torchrun)", fix)


DISTRIBUTED_DP_MESSAGE = (
    "`nn.DataParallel` in a process that joined a process group (`init_process_group` on {where}, "
    "under the same test) drives only this rank's devices and never all-reduces gradients: every rank "
    "trains its own copy of the model; wrap it in `DistributedDataParallel` instead"
)


def _guarding_tests(m, node, scope) -> frozenset[str]:
    """The source text of the test of every `if` whose body holds `node`, up to `scope`."""
    code = m.module.code_for_node
    tests, child = set(), node
    for anc in m.ancestors(node):
        if anc is scope:
            break
        if isinstance(anc, cst.If) and child is anc.body:
            tests.add(code(anc.test).strip())
        if isinstance(anc, (cst.Else, cst.For, cst.While, cst.Try, cst.With)) or (
                isinstance(anc, cst.If) and child is not anc.body):
            return frozenset({"<other>"})  # an `else:`, a loop or a handler: not the plain guard
        child = anc
    return frozenset(tests)


def _dp_in_distributed_branch(ctx: Context, m, facts: DistFacts):
    """A DataParallel wrap made in the same function as `init_process_group`, after it and under the
    same tests (CDial-GPT#20: `if args.distributed: ... dist.init_process_group(...)`, then `if
    args.distributed: model = DataParallel(model, device_ids=[args.local_rank], ...)`), in a file
    with no DistributedDataParallel wrap: the process is one rank of a distributed run whose model
    is never synchronised. The shared test must be there (a distributed branch); unguarded, the
    rule keeps its silence on scripts that join a group. Reported without a fix (the maintainers' fix is the DDP class; its
    `device_ids` depend on the devices the file picks)."""
    for w in facts.wraps_of_module("dp"):
        scope = m.scope_of(w.call)
        inits = [c for c in facts.init_calls if m.scope_of(c) is scope and m.precedes(c, w.call)]
        if not inits or _in_library_function(m, w.call):
            continue
        tests = _guarding_tests(m, w.call, scope)
        if not tests or "<other>" in tests:
            continue  # unguarded: a script may join a group for its collectives alone (test_dist_analysis)
        init = next((c for c in inits if _guarding_tests(m, c, scope) == tests), None)
        if init is None:
            continue
        yield ctx.finding(w.call, DISTRIBUTED_DP_MESSAGE.format(where=line_ref(ctx, init)))


def _trains(m) -> bool:
    """The file runs training, or calls what does: a `.backward()` / `.zero_grad()`, an optimizer
    built, or a call named for training (`train(epoch)`, `train_one_epoch(...)`, `model.train()`,
    `trainer.fit(...)`)."""
    for call in m.calls:
        f = call.func
        name = f.value if isinstance(f, cst.Name) else f.attr.value if isinstance(f, cst.Attribute) else ""
        low = name.lower()
        if "train" in low and isinstance(f, cst.Name) and _instance_of_class(m, f):
            continue  # `cityscapes_trainIds2labelIds(label)`: a transform object, not a training call (PRECISION31 A2)
        if low in ("backward", "zero_grad", "fit") or "train" in low:
            return True
        if m.kind_of(call) is Kind.OPTIMIZER:
            return True
    return False


def _instance_of_class(m, name: cst.Name) -> bool:
    """Every binding of `name` assigns an object built by a class (`Compose([...])`: the callee's
    last name is capitalised): calling it runs that object (a transform), not a training function,
    whatever its name says (erfnet's `cityscapes_trainIds2labelIds = Compose([...])`)."""
    bindings = m.bindings_of(name)
    if not bindings:
        return False
    for b in bindings:
        if b.how != "assign" or not isinstance(b.value, cst.Call):
            return False
        fn = b.value.func
        last = fn.value if isinstance(fn, cst.Name) else fn.attr.value if isinstance(fn, cst.Attribute) else ""
        if not last[:1].isupper():
            return False
    return True


def _in_method(m, call: cst.Call) -> bool:
    return any(isinstance(anc, cst.ClassDef) for anc in m.ancestors(call))


def _only_loaded(m, facts: DistFacts, w: Wrap) -> bool:
    """The wrapper is never run: every use of the name it is bound to (where this wrap reaches it)
    is `W.state_dict()`, `W.load_state_dict(...)`, a read of `W.module` or `next(W.children())` (the
    wrapped module). The wrap is there for the checkpoint's `module.` key prefix, not to drive GPUs."""
    if w.target is None:
        return False
    uses = 0
    for node in m.nodes:
        if type(node) is not cst.Name or node.value != w.target.value or node is w.target:
            continue
        reach = facts.wrapper_reaching(node)
        if reach is None or reach[0] is not w:
            continue
        parent = m.parent(node)
        if isinstance(parent, cst.AssignTarget) and parent.target is node:
            continue  # `enc = next(enc.children())`: the name is rebound, the wrapper not read
        if not (isinstance(parent, cst.Attribute) and parent.value is node):
            return False
        attr = parent.attr.value
        if attr in ("state_dict", "load_state_dict", "children"):
            call = m.parent(parent)
            if not (isinstance(call, cst.Call) and call.func is parent):
                return False
            if attr == "children" and not _first_child(m, call):
                return False
        elif attr != "module":
            return False
        uses += 1
    return uses > 0


def _first_child(m, call: cst.Call) -> bool:
    """`call` (`W.children()`) is the only argument of `next(...)`: the module the wrapper holds."""
    arg = m.parent(call)
    outer = m.parent(arg) if isinstance(arg, cst.Arg) else None
    return (isinstance(outer, cst.Call) and isinstance(outer.func, cst.Name) and outer.func.value == "next"
            and len(outer.args) == 1)


def _backpropagates(m) -> bool:
    """The file calls `.backward()` or `.zero_grad()`, or builds an optimizer."""
    for call in m.calls:
        f = call.func
        if isinstance(f, cst.Attribute) and f.attr.value in ("backward", "zero_grad"):
            return True
        if m.kind_of(call) is Kind.OPTIMIZER:
            return True
    return False


def _in_library_function(m, call: cst.Call) -> bool:
    """Inside a function that nothing in the file calls (a helper for other modules), or inside a
    method, unless the method is one of a top-level class of the file that the file runs: its
    `__init__` where the file constructs the class (`Waveminionet(cfg)` of pase#30, whose
    `__init__` wraps every minion), another method where the file calls it by name."""
    outer = None
    depth = 0
    for anc in m.ancestors(call):
        if isinstance(anc, cst.ClassDef):
            return depth != 1 or not _method_run_by_file(m, anc, outer)
        if isinstance(anc, cst.FunctionDef):
            outer = anc
            depth += 1
    if outer is None:
        return False
    name = outer.name.value
    return not any(isinstance(c.func, cst.Name) and c.func.value == name for c in m.calls)


def _method_run_by_file(m, cls: cst.ClassDef, fn: cst.FunctionDef | None) -> bool:
    """`fn` is a method of `cls`, a top-level class of the file (no function around the wrap
    inside the method), and the file runs it: a call `Cls(...)` outside the class builds an
    instance, and `fn` is `__init__` or a call `X.fn(...)` outside the class names it."""
    if fn is None or m.parent(m.parent(fn)) is not cls or not isinstance(m.parent(cls), cst.Module):
        return False  # (the method's parent is the class body, whose parent is the class)
    name = fn.name.value
    outside = [c for c in m.calls if not m.contains(cls, c)]
    if not any(isinstance(c.func, cst.Name) and c.func.value == cls.name.value for c in outside):
        return False  # never built here: a class for other modules (a `trainer/` package's Trainer)
    return name == "__init__" or any(
        isinstance(c.func, cst.Attribute) and c.func.attr.value == name for c in outside)


# ---------------------------------------------------------------------------------------------
# The codemod
# ---------------------------------------------------------------------------------------------


class _Converter:
    def __init__(self, ctx: Context, facts: DistFacts, wrap: Wrap, dps: list[Wrap]) -> None:
        self.ctx = ctx
        self.m = ctx.model
        self.facts = facts
        self.w = wrap
        self.dps = dps
        self.edits: list = []
        self.nl = ctx.newline
        self.unit = ctx.module.default_indent
        self.names = {n.value for n in self.m.parents if isinstance(n, cst.Name)}

    # helpers ----------------------------------------------------------------------------------
    def order(self, node) -> int:
        return self.facts.order(node)

    def inside(self, node, container) -> bool:
        return node is container or any(a is container for a in self.m.ancestors(node))

    def free_name(self, name: str, what: str) -> str:
        if name in self.names:
            raise Refuse(f"the script already uses the name `{name}` (needed for {what})")
        return name

    def alias_for(self, qualnames: set[str]) -> str | None:
        for local, q in self.m.aliases.items():
            if q in qualnames:
                return local
        return None

    def line_start(self, offset: int) -> int:
        return max(o for o in self.ctx.line_starts() if o <= offset)

    def line_end(self, offset: int) -> int:
        """Offset just after the newline of the line holding `offset`."""
        src = self.ctx.source
        nl = src.find("\n", offset)
        return len(src) if nl < 0 else nl + 1

    # the steps --------------------------------------------------------------------------------
    def run(self):
        ctx, m, w = self.ctx, self.m, self.w
        if len(self.dps) > 1:
            raise Refuse("the script wraps more than one model in DataParallel")
        self.check_wrap_call()
        anchor, block = self.anchor_and_block()
        self.block = block
        self.scope_fn = m.enclosing(anchor, cst.FunctionDef)
        self.anchor = anchor
        self.target = w.target
        device = self.device_variable(anchor)
        self.check_moves_after(anchor)
        self.check_module_uses()
        loader = self.training_loader()
        epoch_loop = self.epoch_loop(loader)
        self.check_returns()

        torch = self.alias_for({"torch"})
        need_torch = torch is None
        if need_torch:
            torch = self.free_name("torch", "`import torch`")
        self.torch = torch
        os_name = self.alias_for({"os"})
        need_os = os_name is None
        if need_os:
            os_name = self.free_name("os", "`import os`")
        dist = self.alias_for({"torch.distributed"})
        need_dist = dist is None
        if need_dist:
            dist = self.free_name("dist", "`import torch.distributed as dist`")
        ddp = self.alias_for({"torch.nn.parallel.DistributedDataParallel",
                              "torch.nn.parallel.distributed.DistributedDataParallel"})
        need_ddp = ddp is None
        if need_ddp:
            ddp = self.free_name("DDP", "the DDP import")
        sampler_cls = self.alias_for({"torch.utils.data.DistributedSampler",
                                      "torch.utils.data.distributed.DistributedSampler"})
        need_sampler = sampler_cls is None
        if need_sampler:
            sampler_cls = self.free_name("DistributedSampler", "the DistributedSampler import")
        rank = self.free_name("rank", "the process rank")
        local_rank = self.free_name("local_rank", "the local rank")
        sampler = self.free_name("train_sampler", "the DistributedSampler")
        self.rank, self.dist = rank, dist

        first = self.first_statement()
        guards = self.rank0_statements(first)

        # imports
        lines = []
        if need_torch:
            lines.append("import torch")
        if need_dist:
            lines.append("import torch.distributed as dist")
        if need_ddp:
            lines.append("from torch.nn.parallel import DistributedDataParallel as DDP")
        if need_sampler:
            lines.append("from torch.utils.data.distributed import DistributedSampler")
        self.edits.extend(self.import_edits(need_os, lines))

        # process group, rank, local rank, device
        init = [
            "# one process per device: run with `torchrun --nproc_per_node=<number of devices> <this script>`",
            f'{dist}.init_process_group("nccl" if {torch}.cuda.is_available() else "gloo")',
            f"{rank} = {dist}.get_rank()",
            f'{local_rank} = int({os_name}.environ["LOCAL_RANK"])',
            f"if {torch}.cuda.is_available():",
            f"{self.unit}{torch}.cuda.set_device({local_rank})",
        ]
        self.edits.append(ctx.insert_before(first, self.nl.join(init)))
        self.edits.append(self.device_edit(device, local_rank))

        # sampler + loader + set_epoch
        self.edits.extend(self.loader_edits(loader, sampler, sampler_cls))
        if epoch_loop is not None:
            loop, epoch = epoch_loop
            self.edits.append(self.loop_top_insert(loop, f"{sampler}.set_epoch({epoch})"))

        # the wrap
        self.edits.append(self.wrap_edit(ddp, local_rank))

        # rank-0 guards, barrier before re-loading a checkpoint
        self.edits.extend(self.guard_edits(guards))
        self.edits.extend(self.helper_print_edits(first))
        self.edits.extend(self.barrier_edits(guards))

        # teardown
        self.edits.append(self.destroy_edit())
        return ctx.fix(*_merge(self.edits), message="Convert the script to DistributedDataParallel launched by torchrun "
                                                   "(batch_size becomes per process)")

    # -- the wrap --------------------------------------------------------------------------------
    def check_wrap_call(self) -> None:
        w = self.w
        if w.target is None or w.value is None:
            raise Refuse("the DataParallel call is not a plain `model = nn.DataParallel(model)` assignment")
        stmt = self.m.statement_of(w.call)
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            raise Refuse("the DataParallel call shares its line with other statements")
        self.wrap_stmt = stmt
        for a in w.call.args:
            if a.star:
                raise Refuse("the DataParallel call unpacks arguments")
            if a.keyword is None and a.value is not w.inner:
                raise Refuse("the DataParallel call has positional options")
            if a.keyword is not None and a.keyword.value not in ("module", "device_ids", "output_device"):
                raise Refuse(f"the DataParallel call sets `{a.keyword.value}=`")
        if not isinstance(w.inner, (cst.Name, cst.Attribute, cst.Call)):
            raise Refuse("the wrapped model is not a simple expression")

    def anchor_and_block(self):
        m = self.m
        stmt = self.wrap_stmt
        anchor = stmt
        block = m.parent(stmt)
        owner = m.parent(block) if isinstance(block, cst.IndentedBlock) else None
        if isinstance(owner, cst.If) and not _is_main_guard(m, owner):
            # `if torch.cuda.device_count() > 1: [print(...)] model = nn.DataParallel(model)`
            test = self.ctx.code(owner.test)
            others = [s for s in owner.body.body if s is not stmt]
            if owner.orelse is not None or "device_count" not in test or not all(_is_print_stmt(m, s) for s in others):
                raise Refuse("the DataParallel wrap sits in a condition the codemod does not follow")
            anchor = owner
            block = m.parent(owner)
            owner = m.parent(block) if isinstance(block, cst.IndentedBlock) else None
        if isinstance(block, cst.Module):
            return anchor, block
        if isinstance(owner, cst.If) and _is_main_guard(m, owner) and isinstance(m.parent(owner), cst.Module):
            return anchor, block
        if isinstance(owner, cst.FunctionDef) and isinstance(m.parent(owner), cst.Module):
            return anchor, block
        raise Refuse("the DataParallel wrap is inside a loop, `with`, `try` or nested function")

    def wrap_edit(self, ddp: str, local_rank: str):
        ctx, w = self.ctx, self.w
        inner = ctx.code(w.inner)
        if w.value is not w.call:  # `DP(model).to(device)`: move first, then wrap
            inner += ctx.source[ctx.span(w.call)[1]:ctx.span(w.value)[1]]
        text = f"{ddp}({inner}, device_ids=[{local_rank}] if {self.torch}.cuda.is_available() else None)"
        if self.anchor is self.wrap_stmt:
            return ctx.replace(w.value, text)
        start, end = ctx.span(self.anchor)
        return ctx.edit(start, end, f"{w.target.value} = {text}")

    # -- device ----------------------------------------------------------------------------------
    def device_variable(self, anchor) -> cst.Name:
        """The variable the model is moved with; it must be a module/function-level `device = ...`
        holding one "cuda" literal, before the wrap, in the same block."""
        m, w = self.m, self.w
        device_expr = None
        if w.value is not w.call:
            args = [a.value for a in w.value.args if a.keyword is None]
            device_expr = args[0] if args else None
        else:
            device_expr = self.move_of(w.inner, anchor)
        if device_expr is None:
            later = self.move_after_wrap(anchor)
            if later is not None:
                call, recv = later
                dev = ", ".join(self.ctx.code(a.value) for a in call.args) or "cuda"
                raise Refuse(
                    f"`{recv.value}` is moved to `{dev}` after it is wrapped ({line_ref(self.ctx, call)}); "
                    f"DDP needs the model on its device before the wrap: move it first, then the codemod can convert the script"
                )
        if not isinstance(device_expr, cst.Name):
            raise Refuse("the model is not moved with a device variable (`model.to(device)`) that can be made per-rank")
        bindings = m.bindings_of(device_expr)
        if len(bindings) != 1 or bindings[0].how != "assign":
            raise Refuse(f"`{device_expr.value}` is assigned more than once")
        stmt = m.statement_of(bindings[0].node)
        if m.parent(stmt) is not self.block or self.order(stmt) > self.order(anchor):
            raise Refuse(f"`{device_expr.value}` is not defined before the wrap in the same block")
        value = bindings[0].value
        cuda = [n for n in (value, *m.walk(value)) if isinstance(n, cst.SimpleString) and _str(n) is not None and _str(n).startswith("cuda")]
        if len(cuda) != 1 or _str(cuda[0]) != "cuda":
            raise Refuse(f"`{device_expr.value}` is not a `\"cuda\"` device expression the codemod can make per-rank")
        self.device_literal = cuda[0]
        self.device_has_cpu = any(isinstance(n, cst.SimpleString) and _str(n) == "cpu" for n in (value, *m.walk(value)))
        return device_expr

    def move_after_wrap(self, anchor):
        """The first `W.to(...)`/`W.cuda(...)` of the wrapped name after the wrap, in its scope
        (the DataParallel tutorial's order: wrap, then `model.to(device)`)."""
        m = self.m
        names = {self.w.target.value}
        if isinstance(self.w.inner, cst.Name):
            names.add(self.w.inner.value)
        scope = m.scope_of(anchor)
        found = None
        for call, recv, _meth in m.method_calls("to", "cuda"):
            if isinstance(recv, cst.Name) and recv.value in names and m.scope_of(recv) is scope:
                if self.order(call) > self.order(anchor) and not self.inside(call, anchor):
                    if found is None or self.order(call) < self.order(found[0]):
                        found = (call, recv)
        return found

    def move_of(self, inner, anchor):
        """The device expression `inner` (the wrapped model) was moved with before the wrap."""
        m = self.m
        if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) and inner.func.attr.value == "to":
            args = [a.value for a in inner.args if a.keyword is None or a.keyword.value == "device"]
            return args[0] if args else None
        if not isinstance(inner, cst.Name):
            return None
        found = None
        scope = m.scope_of(inner)
        for b in m.bindings_of(inner):
            if b.how == "assign" and self.order(b.node) < self.order(anchor) and isinstance(b.value, cst.Call):
                d = self.move_of(b.value, anchor) if not self.facts.wrap_binding(b) else None
                if d is not None:
                    found = (self.order(b.node), d)
        for call, recv, meth in m.method_calls("to"):
            if isinstance(recv, cst.Name) and recv.value == inner.value and m.scope_of(recv) is scope:
                if self.order(call) < self.order(anchor):
                    d = self.move_of(call, anchor)
                    if d is not None and (found is None or found[0] < self.order(call)):
                        found = (self.order(call), d)
        return found[1] if found else None

    def device_edit(self, device: cst.Name, local_rank: str):
        lit = self.device_literal
        q = next((c for c in lit.value if c in "\"'"), '"')
        new = f"f{q}cuda:{{{local_rank}}}{q}"
        if not self.device_has_cpu:
            new = f'({new} if {self.torch}.cuda.is_available() else {q}cpu{q})'
        return self.ctx.replace(lit, new)

    def check_moves_after(self, anchor) -> None:
        m = self.m
        names = {self.w.target.value}
        if isinstance(self.w.inner, cst.Name):
            names.add(self.w.inner.value)
        scope = m.scope_of(anchor)
        for call, recv, meth in m.method_calls("to", "cuda", "cpu", "half", "float", "double", "bfloat16"):
            if isinstance(recv, cst.Name) and recv.value in names and m.scope_of(recv) is scope:
                if self.order(call) > self.order(self.anchor) and not self.inside(call, self.anchor):
                    raise Refuse(f"`{recv.value}` is moved or cast after it is wrapped (DDP needs it in place first)")

    # -- .module and DataParallel attributes -------------------------------------------------------
    def check_module_uses(self) -> None:
        m, name = self.m, self.w.target.value
        for node in m.parents:
            if not (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == name):
                continue
            attr = node.attr.value
            if attr in DP_ONLY_ATTRS:
                raise Refuse(f"the script reads the DataParallel attribute `{name}.{attr}`")
            if attr != "module":
                continue
            parent = m.parent(node)
            if isinstance(parent, cst.Attribute) and parent.value is node:
                grand = m.parent(parent)
                if isinstance(grand, cst.Call) and grand.func is parent and parent.attr.value not in SAFE_MODULE_METHODS:
                    raise Refuse(
                        f"the script calls `{name}.module.{parent.attr.value}(...)`, which would run outside DDP "
                        "and bypass its gradient synchronisation"
                    )
                continue
            if isinstance(parent, cst.Arg):
                call = m.parent(parent)
                if isinstance(call, cst.Call) and m.qualname(call.func) in SAVE_FUNCS:
                    continue
            raise Refuse(f"the script uses `{name}.module` directly (a forward pass through it would bypass DDP)")

    # -- data --------------------------------------------------------------------------------------
    def training_loader(self) -> LoaderInfo:
        facts, m = self.facts, self.m
        train = [lo for lo in facts.loaders if facts.is_training_loader(lo)]
        if not train:
            raise Refuse("no DataLoader is iterated in a training loop (one that calls `.backward()`)")
        if len(train) > 1:
            raise Refuse("several DataLoaders feed training loops; the codemod cannot tell which to shard")
        lo = train[0]
        if lo.sampler is not None or lo.batch_sampler is not None:
            raise Refuse("the training DataLoader uses its own sampler, which a DistributedSampler would replace")
        if lo.target is None:
            raise Refuse("the training DataLoader is not assigned to a name")
        stmt = m.statement_of(lo.call)
        if not isinstance(stmt, cst.SimpleStatementLine) or m.parent(stmt) is not self.block or len(stmt.body) != 1:
            raise Refuse("the training DataLoader is not created in the same block as the model")
        if len([a for a in lo.call.args if a.keyword is None]) > 2 or any(a.star for a in lo.call.args):
            raise Refuse("the training DataLoader takes positional options")
        if lo.dataset is None:
            raise Refuse("the training DataLoader has no dataset argument")
        ds = lo.dataset
        cls = None
        if isinstance(ds, cst.Call) and isinstance(ds.func, cst.Name):
            cls = ds.func.value
        elif isinstance(ds, cst.Name):
            vals = [b.value for b in m.bindings_of(ds)]
            if len(vals) == 1 and isinstance(vals[0], cst.Call) and isinstance(vals[0].func, cst.Name):
                cls = vals[0].func.value
        if cls is not None and m.class_is(cls, ITERABLE_DATASETS):
            raise Refuse("the training data set is an IterableDataset, which DistributedSampler cannot shard")
        self.loader_stmt = stmt
        return lo

    def loader_edits(self, lo: LoaderInfo, sampler: str, sampler_cls: str):
        ctx = self.ctx
        edits = []
        ds = lo.dataset
        if isinstance(ds, (cst.Name, cst.Attribute)):
            ds_text = ctx.code(ds)
        else:
            ds_text = self.free_name("train_dataset", "the hoisted training data set")
            edits.append(ctx.insert_before(self.loader_stmt, f"{ds_text} = {ctx.code(ds)}"))
            edits.append(ctx.replace(ds, ds_text))
        shuffle = lo.keyword("shuffle")
        shuffle_text = ctx.code(shuffle.value) if shuffle is not None else "False"
        edits.append(ctx.insert_before(self.loader_stmt, f"{sampler} = {sampler_cls}({ds_text}, shuffle={shuffle_text})"))
        if shuffle is not None:
            start = ctx.span(shuffle.keyword)[0]
            end = ctx.span(shuffle.value)[1]
            edits.append(ctx.edit(start, end, f"sampler={sampler}"))
        else:
            last = lo.call.args[-1]
            edits.append(ctx.insert_text(ctx.span(last)[1], f", sampler={sampler}"))  # after `(x)` too
        return edits

    def epoch_loop(self, lo: LoaderInfo):
        loops = self.facts.epoch_loops(lo)
        if not loops:
            return None
        if len(loops) > 1:
            raise Refuse("the training DataLoader is iterated in several epoch loops")
        loop = loops[0]
        if loop in self.facts.iter_pass_loops:
            raise Refuse("the loader's iterator is re-created inside a loop (`iter(loader)`), with no epoch loop")
        if not isinstance(loop, cst.For):
            raise Refuse("the loader's passes are repeated by a `while` loop (a generator's `while True:` or a "
                         "`while epoch < n:`), with no epoch variable for `set_epoch`")
        if self.m.enclosing(loop, cst.FunctionDef) is not self.scope_fn or not self.inside(loop, self.block_owner()):
            raise Refuse("the epoch loop is not in the block that wraps the model")
        epoch = epoch_variable(self.m, loop)
        if epoch is None or not isinstance(loop.body, cst.IndentedBlock):
            raise Refuse("the epoch loop has no plain epoch variable (`for epoch in range(...)`)")
        return loop, epoch

    def block_owner(self):
        return self.block if isinstance(self.block, cst.Module) else self.m.parent(self.block)

    def loop_top_insert(self, loop: cst.For, code: str):
        ctx = self.ctx
        first = loop.body.body[0]
        edit = ctx.insert_before(first, code)
        if first.leading_lines:
            start = self.line_start(ctx.span(first.leading_lines[0])[0])
            edit = ctx.insert_text(start, edit.content)
        return edit

    # -- structure ---------------------------------------------------------------------------------
    def statements_in_scope(self):
        """Simple statement lines executed by the converted block (not in nested defs/classes)."""
        out = []
        stack = list(_block_statements(self.block))
        while stack:
            s = stack.pop(0)
            if isinstance(s, (cst.FunctionDef, cst.ClassDef)):
                continue
            if isinstance(s, cst.SimpleStatementLine):
                out.append(s)
                continue
            for child in _child_blocks(s):
                stack.extend(_block_statements(child))
            if isinstance(s, cst.BaseCompoundStatement) and isinstance(s.body, cst.SimpleStatementSuite):
                out.append(s)  # one-line compound statement, e.g. `if x: print(y)`
        return sorted(out, key=self.order)

    def check_returns(self) -> None:
        if self.scope_fn is None:
            return
        body = _block_statements(self.block)
        for node in self.m.parents:
            if isinstance(node, cst.Return) and self.m.enclosing(node, cst.FunctionDef) is self.scope_fn:
                stmt = self.m.statement_of(node)
                if stmt is not body[-1]:
                    raise Refuse("the function returns early, so the process group teardown cannot be placed")

    def first_statement(self):
        """Where the process-group setup goes: the first statement of the block that is not an
        import, a definition or a docstring."""
        for i, s in enumerate(_block_statements(self.block)):
            if isinstance(s, (cst.FunctionDef, cst.ClassDef)):
                continue
            if isinstance(s, cst.SimpleStatementLine):
                if all(isinstance(x, (cst.Import, cst.ImportFrom)) for x in s.body):
                    continue
                if i == 0 and len(s.body) == 1 and isinstance(s.body[0], cst.Expr) and isinstance(
                    s.body[0].value, (cst.SimpleString, cst.ConcatenatedString)
                ):
                    continue
            if self.order(s) > min(self.order(self.anchor), self.order(self.loader_stmt)):
                break
            return s
        raise Refuse("no place for the process-group setup before the model and the data")

    def import_edits(self, need_os: bool, torch_lines: list[str]) -> list:
        """`import os` goes after the standard-library imports that come before the first torch
        import (when there are some), the torch imports after the last import of the header."""
        ctx = self.ctx
        header = []
        for s in ctx.module.body:
            if isinstance(s, cst.SimpleStatementLine) and all(isinstance(x, (cst.Import, cst.ImportFrom)) for x in s.body):
                header.append(s)
            elif isinstance(s, cst.SimpleStatementLine) and not header and isinstance(s.body[0], cst.Expr):
                continue  # module docstring
            else:
                break
        edits = []
        if not header:
            lines = (["import os"] if need_os else []) + torch_lines
            return [ctx.insert_before(ctx.module.body[0], self.nl.join(lines))] if lines else []
        if need_os:
            before_torch = []
            for s in header:
                if "torch" in ctx.code(s):
                    break
                before_torch.append(s)
            if before_torch and before_torch[-1] is not header[-1]:
                edits.append(ctx.insert_after(before_torch[-1], "import os"))
            else:
                torch_lines = ["import os"] + torch_lines
        if torch_lines:
            edits.append(ctx.insert_after(header[-1], self.nl.join(torch_lines)))
        return edits

    # -- rank-0 guards --------------------------------------------------------------------------------
    def rank0_statements(self, first) -> list:
        m = self.m
        out = []
        saving_functions = self.saving_functions()
        for s in self.statements_in_scope():
            if self.order(s) < self.order(first) or self.inside(s, self.anchor):
                continue
            calls = [n for n in m.walk(s) if isinstance(n, cst.Call)]
            hit = None
            for c in calls:
                if self.is_stdout_print(c) or self.is_log_call(c):
                    hit = "print"
                elif m.qualname(c.func) in SAVE_FUNCS:
                    hit = "save"
                elif isinstance(c.func, cst.Name) and c.func.value in saving_functions:
                    hit = "save"
                if hit:
                    break
            if hit is None:
                continue
            if not isinstance(s, cst.SimpleStatementLine):
                raise Refuse("a `print`/`torch.save` sits on a one-line compound statement (`if ...: print(...)`)")
            if len(s.body) != 1 or not isinstance(s.body[0], cst.Expr) or not isinstance(s.body[0].value, cst.Call):
                raise Refuse("a `print`/`torch.save` is not a statement of its own")
            if any(isinstance(n, (cst.SimpleString, cst.FormattedString)) and "\n" in self.ctx.code(n) for n in m.walk(s)):
                raise Refuse("a `print`/`torch.save` contains a multi-line string")
            if hit == "print":
                self.check_print_is_passive(s)
            out.append((s, hit))
        return out

    def check_print_is_passive(self, stmt) -> None:
        """A print that runs the model (or a function of the file) cannot move under `if rank == 0:`:
        a forward pass of a DDP model may synchronise buffers with the other ranks."""
        m, name = self.m, self.w.target.value
        for n in m.walk(stmt):
            if not isinstance(n, cst.Call) or n is stmt.body[0].value:
                continue
            f = n.func
            root = f
            while isinstance(root, cst.Attribute):
                root = root.value
            if isinstance(f, cst.Name) and f.value in m.functions:
                raise Refuse(f"a `print` calls `{f.value}(...)`, which must keep running on every rank")
            if isinstance(root, cst.Name) and root.value == name:
                raise Refuse(f"a `print` runs `{name}`, which must keep running on every rank")

    def is_log_call(self, call: cst.Call) -> bool:
        """`logging.info(...)`, `logger.info(...)` with `logger = logging.getLogger(...)` (errors stay
        on every rank: a failure of any rank must be seen)."""
        f = call.func
        if not isinstance(f, cst.Attribute) or f.attr.value not in _LOG_LEVELS:
            return False
        q = self.m.qualname(f) or ""
        if q.startswith("logging."):
            return True
        if isinstance(f.value, cst.Name):
            for b in self.m.bindings_of(f.value):
                if isinstance(b.value, cst.Call) and (self.m.qualname(b.value.func) or "") == "logging.getLogger":
                    return True
        return False

    def helper_functions(self, first) -> list:
        """Module-level functions of the file the converted block calls (after the setup), and the
        ones they call: they run on every rank."""
        m = self.m
        top = {name: fns[0] for name, fns in m.functions.items() if len(fns) == 1 and isinstance(m.parent(fns[0]), cst.Module)}
        todo, seen = [], set()
        for s in self.statements_in_scope():
            if self.order(s) < self.order(first):
                continue
            for n in m.walk(s):
                if isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value in top:
                    todo.append(n.func.value)
        out = []
        while todo:
            name = todo.pop(0)
            fn = top[name]
            if name in seen or fn is self.scope_fn:
                continue
            seen.add(name)
            out.append(fn)
            for n in m.walk(fn.body):
                if isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value in top:
                    todo.append(n.func.value)
        return out

    def helper_print_edits(self, first) -> list:
        """Prints (to stdout) and logging calls in the helpers go under a rank-0 test of their own
        (the helpers cannot see `rank`; a helper called before the process group exists prints)."""
        ctx, m = self.ctx, self.m
        test = f"not {self.dist}.is_initialized() or {self.dist}.get_rank() == 0"
        edits = []
        for fn in self.helper_functions(first):
            for n in m.walk(fn.body):
                if not isinstance(n, cst.Call) or not (self.is_stdout_print(n) or self.is_log_call(n)):
                    continue
                stmt = m.statement_of(n)
                if (
                    not isinstance(stmt, cst.SimpleStatementLine)
                    or len(stmt.body) != 1
                    or not isinstance(stmt.body[0], cst.Expr)
                    or stmt.body[0].value is not n
                    or m.enclosing(n, cst.FunctionDef) is not fn
                    or not _passive_call_args(m, n)
                    or any(isinstance(x, (cst.SimpleString, cst.FormattedString)) and "\n" in ctx.code(x) for x in m.walk(n))
                ):
                    continue  # not a plain statement, or it computes something: it stays on every rank
                start = self.line_start(ctx.span(stmt)[0])
                end = self.line_end(ctx.span(stmt)[1] - 1)
                indent = ctx.indent_of(stmt)
                text = ctx.source[start:end]
                body = "".join((self.unit + line if line.strip() else line) for line in text.splitlines(keepends=True))
                if not body.endswith(("\n", "\r")):
                    body += self.nl
                edits.append(ctx.edit(start, end, f"{indent}if {test}:{self.nl}{body}"))
        return edits

    def saving_functions(self) -> set[str]:
        m = self.m
        names = set()
        for name, fns in m.functions.items():
            if len(fns) != 1 or not isinstance(m.parent(fns[0]), cst.Module):
                continue
            if any(isinstance(n, cst.Call) and m.qualname(n.func) in SAVE_FUNCS for n in m.walk(fns[0])):
                names.add(name)
        return names

    def is_stdout_print(self, call: cst.Call) -> bool:
        if not (isinstance(call.func, cst.Name) and call.func.value == "print" and not self.m.bindings_of(call.func)):
            return False
        for a in call.args:
            if a.keyword is not None and a.keyword.value == "file":
                return self.m.qualname(a.value) == "sys.stdout"
        return True

    def guard_edits(self, guards) -> list:
        """Wrap runs of consecutive guarded statements of one block in `if rank == 0:`."""
        ctx, m = self.ctx, self.m
        groups: list[list] = []
        for s, _ in guards:
            parent = m.parent(s)
            if groups:
                prev = groups[-1][-1]
                siblings = list(_block_statements(parent))
                if m.parent(prev) is parent and s in siblings and prev in siblings and siblings.index(s) == siblings.index(prev) + 1:
                    groups[-1].append(s)
                    continue
            groups.append([s])
        edits = []
        for group in groups:
            first, last = group[0], group[-1]
            start = self.line_start(ctx.span(first)[0])  # comments above the group stay outside it
            end = self.line_end(ctx.span(last)[1] - 1)
            indent = ctx.indent_of(first)
            text = ctx.source[start:end]
            body = "".join((self.unit + line if line.strip() else line) for line in split_lines(text, keepends=True))
            if not body.endswith(("\n", "\r")):
                body += self.nl
            edits.append(ctx.edit(start, end, f"{indent}if {self.rank} == 0:{self.nl}{body}"))
        return edits

    def barrier_edits(self, guards) -> list:
        saves = [s for s, hit in guards if hit == "save"]
        if not saves:
            return []
        first_save = min(self.order(s) for s in saves)
        edits = []
        done = set()
        for call in self.m.iter_calls(*LOAD_FUNCS):
            if self.order(call) < first_save or self.m.enclosing(call, cst.FunctionDef) is not self.scope_fn:
                continue
            if not self.inside(call, self.block_owner()):
                continue
            stmt = self.m.statement_of(call)
            if stmt in done:
                continue
            done.add(stmt)
            edits.append(self.ctx.insert_before(stmt, f"{self.dist}.barrier()  # wait for rank 0's checkpoint"))
        return edits

    def destroy_edit(self):
        ctx = self.ctx
        body = _block_statements(self.block)
        last = body[-1]
        code = f"{self.dist}.destroy_process_group()"
        if isinstance(last, cst.SimpleStatementLine) and any(isinstance(x, cst.Return) for x in last.body):
            return ctx.insert_before(last, code)
        if isinstance(self.block, cst.Module):
            # after the last statement that runs (trailing definitions do not)
            runs = [s for s in body if not isinstance(s, (cst.FunctionDef, cst.ClassDef))]
            last = runs[-1]
        return ctx.insert_after(last, code)


# ---------------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------------


_LOG_LEVELS = frozenset({"debug", "info", "warning", "warn", "log"})
# calls a print's arguments may make and still be moved under a rank test: they only read values
_PASSIVE_METHODS = frozenset({"item", "format", "size", "numel", "tolist", "mean", "sum", "join", "get", "keys",
                              "values", "items", "get_last_lr", "dumps", "upper", "lower", "strip"})
_PASSIVE_BUILTINS = frozenset({"len", "str", "round", "float", "int", "min", "max", "sum", "abs", "repr", "type"})


def _passive_call_args(m, call: cst.Call) -> bool:
    for n in m.walk(call):
        if n is call or not isinstance(n, cst.Call):
            continue
        f = n.func
        if isinstance(f, cst.Name) and f.value in _PASSIVE_BUILTINS and not m.bindings_of(f):
            continue
        if isinstance(f, cst.Attribute) and f.attr.value in _PASSIVE_METHODS:
            continue
        return False
    return True


def _merge(edits):
    """Insertions at the same offset become one edit, in the order they were made."""
    by_offset: dict[int, list] = {}
    out = []
    for e in edits:
        if e.start == e.end:
            by_offset.setdefault(e.start, []).append(e)
        else:
            out.append(e)
    for offset, group in by_offset.items():
        first = group[0]
        out.append(type(first)(offset, offset, "".join(g.content for g in group), first.location, first.end_location))
    out.sort(key=lambda e: (e.start, e.end))
    for a, b in zip(out, out[1:]):
        if b.start < a.end:
            raise Refuse("two parts of the conversion would edit the same text")
    return out


def _str(node: cst.SimpleString):
    try:
        v = node.evaluated_value
    except Exception:
        return None
    return v if isinstance(v, str) else None


def _block_statements(block) -> list:
    if isinstance(block, cst.Module):
        return list(block.body)
    if isinstance(block, cst.IndentedBlock):
        return list(block.body)
    return []


def _child_blocks(stmt) -> list:
    out = []
    body = getattr(stmt, "body", None)
    if isinstance(body, cst.IndentedBlock):
        out.append(body)
    for attr in ("orelse", "finalbody"):
        sub = getattr(stmt, attr, None)
        while sub is not None:
            if isinstance(getattr(sub, "body", None), cst.IndentedBlock):
                out.append(sub.body)
            sub = getattr(sub, "orelse", None) if isinstance(sub, cst.If) else None
    for h in getattr(stmt, "handlers", ()) or ():
        if isinstance(h.body, cst.IndentedBlock):
            out.append(h.body)
    return out


def _is_main_guard(m, node: cst.If) -> bool:
    t = node.test
    return (
        isinstance(t, cst.Comparison)
        and isinstance(t.left, cst.Name)
        and t.left.value == "__name__"
        and len(t.comparisons) == 1
        and isinstance(t.comparisons[0].comparator, cst.SimpleString)
        and _str(t.comparisons[0].comparator) == "__main__"
    )


def _is_print_stmt(m, s) -> bool:
    return (
        isinstance(s, cst.SimpleStatementLine)
        and len(s.body) == 1
        and isinstance(s.body[0], cst.Expr)
        and isinstance(s.body[0].value, cst.Call)
        and isinstance(s.body[0].value.func, cst.Name)
        and s.body[0].value.func.value == "print"
    )
