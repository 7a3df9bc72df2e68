"""GL115 cuda-visible-devices-too-late."""

from __future__ import annotations

import libcst as cst

from gpulint.model import dotted as _dotted

from gpulint.analysis.devices import DeviceFacts
from gpulint.rule import Context, Rule
from gpulint.sites import line_ref

# torch.cuda functions that initialise the CUDA driver (and so read CUDA_VISIBLE_DEVICES).
# `torch.cuda.device_count()` is NOT here: it asks NVML and honours later changes of the variable;
# `torch.cuda.manual_seed*` queue their work until CUDA is initialised; `empty_cache`,
# `memory_allocated` & co. do nothing before initialisation.
INIT_FUNCTIONS = frozenset(
    "is_available init set_device current_device get_device_name get_device_properties "
    "get_device_capability synchronize mem_get_info is_bf16_supported get_arch_list "
    "Stream Event current_stream default_stream".split()
)


class CudaVisibleDevicesTooLate(Rule):
    code = "GL115"
    name = "cuda-visible-devices-too-late"
    summary = "`CUDA_VISIBLE_DEVICES` is set after CUDA was already initialised: it has no effect."
    message = "`CUDA_VISIBLE_DEVICES` is set after CUDA was initialised ({line}: `{trigger}`); it is ignored from then on — set it before any CUDA call, e.g. above `import torch`"
    fix_safety = "unsafe"
    default = True
    kind = "silent"
    prefilter = r"CUDA_VISIBLE_DEVICES"
    ast_prefilter = r"^'CUDA_VISIBLE_DEVICES$"
    explanation = '''
The CUDA driver reads `CUDA_VISIBLE_DEVICES` once, when it is initialised in the process.
Changing the variable afterwards does nothing: the script keeps using the GPUs it saw first
(often all of them, or GPU 0 of the machine instead of the one that was meant), silently.

`import torch` alone does not initialise CUDA, so setting the variable after the imports is fine
as long as no CUDA call came first. What does initialise it: `torch.cuda.is_available()` (it calls
`cudaGetDeviceCount`, unless `PYTORCH_NVML_BASED_CUDA_CHECK=1`), `torch.cuda.set_device`,
`current_device`, `get_device_name`/`get_device_properties`, `synchronize`, creating or moving a
tensor or module to CUDA (`.cuda()`, `.to("cuda")`, `device="cuda"`). `torch.cuda.device_count()`
does not: it asks NVML and honours the variable's current value.

Not reported: a process that pins its own GPU first (`torch.cuda.set_device(i)`) and then writes
back one entry of the list it read from the variable itself
(`os.environ["CUDA_VISIBLE_DEVICES"] = str(visible[i])`, nequip's test conftest for pytest-xdist
workers): the process has already chosen its device in the old numbering, so the new value can only
be meant for the processes it launches, which read it at their own start.

The rule fires when such a call runs unconditionally before the assignment (in the same function,
at module level before the function that sets the variable is called, or inside a function of the
file called before it). A guard that holds on every machine with a visible GPU
(`if torch.cuda.device_count() > 0:`, `if torch.cuda.is_available():`) does not count as a
condition: where no GPU is visible the variable changes nothing. The fix (unsafe: the assignment then runs earlier and unconditionally)
moves the assignment above the first `import torch` when its value is a literal or comes from
the environment or `sys.argv`.

Bad:

```python
import os
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
os.environ["CUDA_VISIBLE_DEVICES"] = "1"
```

Good:

```python
import os
os.environ["CUDA_VISIBLE_DEVICES"] = "1"
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        facts = m.facts(DeviceFacts)
        triggers = self._triggers(ctx, facts)
        if not triggers:
            return
        for assign in self._assignments(ctx):
            trigger = self._first_trigger_before(ctx, facts, triggers, assign)
            if trigger is None:
                continue
            if _for_child_processes(ctx, facts, assign):
                continue
            msg = self.message.format(line=line_ref(ctx, trigger), trigger=_short(ctx.code(trigger)))
            yield ctx.finding(assign, msg, self._fix(ctx, facts, assign))

    # what sets the variable ------------------------------------------------------------------------
    @staticmethod
    def _assignments(ctx: Context) -> list[cst.Assign]:
        m = ctx.model
        out = []
        facts = m.facts(DeviceFacts)
        for s in facts.strings:
            if s.evaluated_value != "CUDA_VISIBLE_DEVICES":
                continue
            idx = m.parent(s)
            elem = m.parent(idx) if isinstance(idx, cst.Index) else None
            sub = m.parent(elem) if isinstance(elem, cst.SubscriptElement) else None
            if not isinstance(sub, cst.Subscript) or m.qualname(sub.value) != "os.environ":
                continue
            target = m.parent(sub)
            assign = m.parent(target) if isinstance(target, cst.AssignTarget) else None
            if isinstance(assign, cst.Assign):
                out.append(assign)
        return out

    # what initialises CUDA ---------------------------------------------------------------------------
    def _triggers(self, ctx: Context, facts: DeviceFacts) -> list[cst.Call]:
        m = ctx.model
        out = []
        for call in m.calls:
            if self._initialises(ctx, facts, call):
                out.append(call)
        return out

    @staticmethod
    def _initialises(ctx: Context, facts: DeviceFacts, call: cst.Call) -> bool:
        m = ctx.model
        q = m.qualname(call.func)
        if q and q.startswith("torch.cuda.") and q[len("torch.cuda."):] in INIT_FUNCTIONS:
            return True
        mv = m.move_of_call(call)
        if mv is None or mv.to_cpu:
            return False
        if mv.method == "cuda":
            return True
        d = mv.device
        if isinstance(d, cst.SimpleString) or (isinstance(d, cst.Call) and m.qualname(d.func) == "torch.device"):
            return mv.literal is not None and mv.literal.split(":", 1)[0] == "cuda"
        return False

    def _first_trigger_before(self, ctx: Context, facts: DeviceFacts, triggers, assign: cst.Assign):
        m = ctx.model
        best = None
        for t in triggers:
            if self._runs_first(ctx, facts, _lift_gpu_guards(m, facts, t), assign, 0):
                if best is None or facts.order(t) < facts.order(best):
                    best = t
        return best

    def _runs_first(self, ctx: Context, facts: DeviceFacts, t: cst.CSTNode, assign: cst.CSTNode, depth: int) -> bool:
        """`t` (a call) runs unconditionally before `assign` runs."""
        m = ctx.model
        if depth > 3:
            return False
        ts, as_ = m.scope_of(t), m.scope_of(assign)
        if ts is as_:
            return facts.runs_before(t, assign)
        if ts is m.module and isinstance(as_, cst.FunctionDef):
            # module-level code before every call of the function that sets the variable
            sites = m.call_sites(as_)
            return bool(sites) and all(self._runs_first(ctx, facts, t, s, depth + 1) for s in sites)
        if isinstance(ts, cst.FunctionDef) and facts.always_reaches(t, ts.body):
            if _init_runs_before_method(m, ts, as_):
                # `__init__` of the class runs before any other method of the instance (probe69
                # classify: the device picked in `__init__`, the variable set in `run()`; Q:G69-7)
                return True
            # inside a helper called before the assignment
            sites = m.call_sites(ts)
            return any(self._runs_first(ctx, facts, s, assign, depth + 1) for s in sites)
        return False

    # the fix -------------------------------------------------------------------------------------------
    def _fix(self, ctx: Context, facts: DeviceFacts, assign: cst.Assign):
        m = ctx.model
        stmt = m.parent(assign)
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            return None
        block, _ = facts.block_and_index(stmt)
        scope = m.scope_of(stmt)
        if block is None:
            return None
        if not (block is m.module or (isinstance(scope, cst.FunctionDef) and block is scope.body)):
            return None  # conditional: moving it would drop the condition
        target = assign.targets[0].target if len(assign.targets) == 1 else None
        if not isinstance(target, cst.Subscript) or ctx.code(target.value) != "os.environ" or m.aliases.get("os") != "os":
            return None
        needs = self._value_needs(ctx, assign.value)
        if needs is None:
            return None
        first_torch = self._first_torch_import(ctx)
        if first_torch is None:
            return None
        imported = self._modules_imported_before(ctx, first_torch)
        lines = [f"import {mod}" for mod in ("os", *sorted(needs)) if mod not in imported]
        start, _ = ctx._line_bounds(first_torch)
        if start > ctx.span(stmt)[0]:
            return None
        lo, hi = ctx._line_bounds(stmt)
        text = ctx.source[lo:hi].strip()  # the statement with its trailing comment
        new = "".join(line + ctx.newline for line in (*lines, text))
        cut = hi
        if self._opens_a_section(ctx.source, lo):
            # the statement opened the file, a notebook cell or a paragraph: the blank line that
            # followed it goes with it (Autoformer predict.ipynb's cell would start blank)
            nxt = ctx.source.find("\n", hi)
            if nxt != -1 and not ctx.source[hi:nxt].strip():
                cut = nxt + 1
        return ctx.fix(
            ctx.insert_text(start, new),
            ctx.edit(lo, cut, "") if not self._lone_in_block(ctx, stmt) else ctx.remove_statement(stmt),
            message="Set CUDA_VISIBLE_DEVICES before `import torch`",
        )

    @staticmethod
    def _opens_a_section(source: str, lo: int) -> bool:
        """The line at `lo` is the file's first, or follows a blank line or a notebook cell boundary."""
        if lo == 0:
            return True
        prev_start = source.rfind("\n", 0, lo - 1) + 1
        prev = source[prev_start:lo].strip()
        if not prev:
            return True
        from gpulint.notebook import BOUNDARY  # here: `check` of a plain file never imports notebook

        return prev == BOUNDARY

    @staticmethod
    def _lone_in_block(ctx: Context, stmt: cst.CSTNode) -> bool:
        parent = ctx.model.parent(stmt)
        return isinstance(parent, cst.IndentedBlock) and len(parent.body) == 1

    @staticmethod
    def _value_needs(ctx: Context, value: cst.BaseExpression) -> set[str] | None:
        """Modules the value reads ({} for a literal, {"sys"} for sys.argv), None when it depends on
        anything else (parsed arguments, variables)."""
        m = ctx.model
        if isinstance(value, (cst.SimpleString, cst.ConcatenatedString)):
            return set()
        if isinstance(value, cst.Call):
            q = m.qualname(value.func)
            if q in ("str",) or (isinstance(value.func, cst.Name) and value.func.value == "str" and "str" not in m.aliases):
                if len(value.args) == 1:
                    return CudaVisibleDevicesTooLate._value_needs(ctx, value.args[0].value)
                return None
            if q in ("os.environ.get", "os.getenv"):
                need: set[str] = set()
                for a in value.args:
                    sub = CudaVisibleDevicesTooLate._value_needs(ctx, a.value)
                    if sub is None:
                        return None
                    need |= sub
                return need
            return None
        if isinstance(value, cst.Integer):
            return set()
        if isinstance(value, cst.Subscript):
            q = m.qualname(value.value)
            if q in ("os.environ", "sys.argv") and all(
                isinstance(e.slice, cst.Index) and isinstance(e.slice.value, (cst.SimpleString, cst.Integer))
                for e in value.slice
            ):
                return {"sys"} if q == "sys.argv" else set()
        return None

    @staticmethod
    def _first_torch_import(ctx: Context) -> cst.CSTNode | None:
        for stmt in ctx.module.body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                if isinstance(small, cst.Import):
                    if any((_dotted(a.name) or "").split(".")[0] == "torch" for a in small.names):
                        return stmt
                elif isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
                    if (_dotted(small.module) or "").split(".")[0] == "torch":
                        return stmt
        return None

    @staticmethod
    def _modules_imported_before(ctx: Context, stop: cst.CSTNode) -> set[str]:
        out = set()
        for stmt in ctx.module.body:
            if stmt is stop:
                break
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Import):
                        for a in small.names:
                            if a.asname is None:
                                out.add(_dotted(a.name) or "")
        return out




def _short(code: str) -> str:
    code = " ".join(code.split())
    return code if len(code) <= 50 else code[:47] + "..."


# a value meant for child processes -----------------------------------------------------------------
def _for_child_processes(ctx: Context, facts: DeviceFacts, assign: cst.Assign) -> bool:
    """The process pinned its own GPU with `torch.cuda.set_device(...)` unconditionally before the
    assignment, in the same scope, and the value written is computed from the variable's own current
    value (nequip's conftest: `torch.cuda.set_device(rank)`, then
    `os.environ["CUDA_VISIBLE_DEVICES"] = str(visible[rank])`, `visible` read from the variable):
    its device is chosen in the numbering it started with, so the new value only reaches the
    processes it launches."""
    m = ctx.model
    scope = m.scope_of(assign)
    pinned = any(
        m.qualname(call.func) == "torch.cuda.set_device"
        and m.scope_of(call) is scope
        and facts.runs_before(call, assign)
        for call in m.calls
    )
    return pinned and _reads_own_value(m, assign.value, set(), 0)


def _reads_own_value(m, expr: cst.CSTNode, seen: set, depth: int) -> bool:
    """`expr` reads CUDA_VISIBLE_DEVICES (`os.environ.get(...)`, `os.getenv(...)`,
    `os.environ[...]`), directly or through names assigned from such a read."""
    if depth > 4:
        return False
    for node in (expr, *m.walk(expr)):
        if isinstance(node, cst.Call) and m.qualname(node.func) in ("os.environ.get", "os.getenv"):
            if node.args and _names_variable(node.args[0].value):
                return True
        elif isinstance(node, cst.Subscript) and m.qualname(node.value) == "os.environ":
            if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index) and _names_variable(
                node.slice[0].slice.value
            ):
                return True
        elif isinstance(node, cst.Name) and node.value not in seen:
            seen.add(node.value)
            for b in m.bindings_of(node):
                if (b.how in ("assign", "augassign") and isinstance(b.value, cst.BaseExpression)
                        and _reads_own_value(m, b.value, seen, depth + 1)):
                    return True
    return False


def _names_variable(e: cst.BaseExpression) -> bool:
    return isinstance(e, cst.SimpleString) and e.evaluated_value == "CUDA_VISIBLE_DEVICES"



# a trigger guarded by a test that holds whenever a GPU is visible --------------------------------------
def _lift_gpu_guards(m, facts: DeviceFacts, node: cst.CSTNode) -> cst.CSTNode:
    """The trigger, or the outermost `if` around it whose test holds on every machine with a GPU
    (`if torch.cuda.device_count() > 0:`, EasyNLP's `_initialize_distributed`) when the trigger runs
    whenever that `if`'s body runs: where no GPU is visible the variable changes nothing, so such a
    guard does not make the initialisation conditional."""
    cur = node
    for anc in m.ancestors(node):
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            break
        if (
            isinstance(anc, cst.If)
            and m.contains(anc.body, cur)
            and _gpu_present_test(m, anc.test)
            and facts.always_reaches(cur, anc.body)
        ):
            cur = anc
    return cur


def _gpu_present_test(m, test: cst.BaseExpression, depth: int = 0) -> bool:
    """`torch.cuda.is_available()`, `torch.cuda.device_count()` (truthy, `> 0`, `>= 1`, `!= 0`), or a
    name bound once to one of these."""
    if depth > 2:
        return False
    if isinstance(test, cst.Call):
        return m.qualname(test.func) in ("torch.cuda.is_available", "torch.cuda.device_count") and not test.args
    if isinstance(test, cst.Name):
        bindings = m.bindings_of(test)
        if len(bindings) == 1 and bindings[0].how == "assign" and isinstance(bindings[0].value, cst.BaseExpression):
            return _gpu_present_test(m, bindings[0].value, depth + 1)
        return False
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comp = test.comparisons[0]
        right = comp.comparator
        if not isinstance(right, cst.Integer) or not _device_count(m, test.left, depth):
            return False
        op, n = comp.operator, int(right.value)
        return (
            (isinstance(op, cst.GreaterThan) and n == 0)
            or (isinstance(op, cst.GreaterThanEqual) and n == 1)
            or (isinstance(op, cst.NotEqual) and n == 0)
        )
    return False


def _device_count(m, expr: cst.BaseExpression, depth: int) -> bool:
    """`torch.cuda.device_count()`, or a name bound once to it."""
    if isinstance(expr, cst.Call):
        return m.qualname(expr.func) == "torch.cuda.device_count" and not expr.args
    if isinstance(expr, cst.Name) and depth <= 2:
        bindings = m.bindings_of(expr)
        return (
            len(bindings) == 1
            and bindings[0].how == "assign"
            and isinstance(bindings[0].value, cst.BaseExpression)
            and _device_count(m, bindings[0].value, depth + 1)
        )
    return False


_LAUNCHERS = ("subprocess.", "multiprocessing.", "torch.multiprocessing.", "os.system", "os.exec", "os.spawn",
              "os.popen", "torch.distributed.run", "ray.")


def _init_runs_before_method(m, init: cst.CSTNode, method: cst.CSTNode) -> bool:
    """`init` is the `__init__` of a class and `method` a plain method of the same class (no
    decorator: not a staticmethod or classmethod) that `__init__` does not run itself (no
    `self.<method>(...)` in `__init__` or in the methods it calls that way, two levels deep): the
    instance's `__init__` has run before `method` can."""
    if not (isinstance(init, cst.FunctionDef) and isinstance(method, cst.FunctionDef)):
        return False
    if init.name.value != "__init__" or method is init or method.decorators:
        return False
    cls = m.class_of(init)
    if cls is None or m.enclosing(init, cst.FunctionDef, cst.ClassDef) is not cls:
        return False
    if m.enclosing(method, cst.FunctionDef, cst.ClassDef) is not cls:
        return False
    for c in m.walk(method):
        # a launcher method: the variable is meant for the processes it starts
        q = (m.qualname(c.func) or "") if isinstance(c, cst.Call) else ""
        if q.startswith(_LAUNCHERS) or (isinstance(c, cst.Call) and isinstance(c.func, cst.Attribute)
                                        and c.func.attr.value == "start"):
            return False
    methods = {st.name.value: st for st in cls.body.body if isinstance(st, cst.FunctionDef)}
    frontier, seen = [init], {init}
    for _ in range(3):
        nxt = []
        for fn in frontier:
            for node in m.walk(fn.body):
                if not (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)
                        and node.value.value == "self"):
                    continue
                name = node.attr.value
                if name == method.name.value:
                    return False  # `__init__` runs it (or hands it on as a value)
                called = methods.get(name)
                if called is not None and called not in seen:
                    seen.add(called)
                    nxt.append(called)
        frontier = nxt
    return True
