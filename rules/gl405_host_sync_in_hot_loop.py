"""GL405 host-sync-in-hot-loop."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.training import TrainingFacts, method_of
from gpulint.rule import Context, Kind, Rule
from gpulint.sites import line_ref

_SYNC_METHODS = frozenset({"item", "cpu", "numpy", "tolist"})
_SYNC_FUNCTIONS = frozenset({"torch.cuda.synchronize", "torch.cuda.current_stream().synchronize"})
_SYNC_BUILTINS = frozenset({"float", "int"})


class HostSyncInHotLoop(Rule):
    code = "GL405"
    name = "host-sync-in-hot-loop"
    summary = "The training step waits for the GPU every iteration (`.item()`, `.cpu()`, `print(t)`, synchronize)."
    message = (
        "`{what}` every step makes the CPU wait for the GPU to finish, so the next step cannot be "
        "queued ahead; do it every N steps (`if step % N == 0:`) or keep the value on the device"
    )
    fix_safety = "none"
    default = False
    kind = "slow"
    prefilter = (
        r"\.item\(|\.cpu\(|\.numpy\(|\.tolist\(|print\(|synchronize\(|\b(?:float|int|str|repr)\("
        r"|\.format\(|\b[rRbB]?[fF][rR]?[\"']|[\"']\s*%"
    )
    ast_prefilter = (r"^loop$", r"backward", r"^\.step\($")
    explanation = '''
CUDA kernels run asynchronously: the Python loop normally races ahead and queues the next step
while the GPU works. `.item()`, `float(t)` / `int(t)`, `.cpu()`, `.numpy()`, `.tolist()`, printing a
tensor or formatting one into a string (`f"{loss}"`, `"%s" % loss`, `str(loss)`) and
`torch.cuda.synchronize()` all block until the GPU has caught up, so an unconditional one in the
innermost training loop serialises CPU and GPU every step. For small models this can cost a large
fraction of the throughput.

The rule is off by default (select it with `--select GL405`): logging the loss every step is
common and often acceptable. It reports only unconditional calls in the innermost training loop;
a call under `if step % log_every == 0:` is fine. A test that only asks whether the run is on CUDA
(`if "cuda" in device.type:`, `if torch.cuda.is_available():`) does not count as a condition: on a
GPU the call still runs every step.

Bad:

```python
for step, (x, y) in enumerate(loader):
    ...
    loss.backward()
    optimizer.step()
    print(f"loss {loss.item():.4f}")
```

Good:

```python
for step, (x, y) in enumerate(loader):
    ...
    loss.backward()
    optimizer.step()
    if step % 100 == 0:
        print(f"loss {loss.item():.4f}")
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        facts: TrainingFacts = m.facts(TrainingFacts)
        seen: set = set()
        for loop in facts.loops:
            if not loop.is_step_loop:
                continue
            for call in facts.calls_in(loop.node, into_defs=False):
                if facts.is_conditional_in(call, loop.node) and not _device_guarded_only(m, call, loop.node):
                    continue
                if facts.enclosing_loop(call) is not loop.node:
                    continue  # an inner non-training loop: not every step's critical path
                what = self._sync(ctx, call, loop.node)
                if what is not None:
                    if call not in seen:
                        seen.add(call)
                        yield ctx.finding(call, self.message.format(what=what))
                    continue
                # a file function the step calls unconditionally: its own unconditional syncs run
                # every step too (a `compute_loss` that prints the loss, a pipeline schedule's
                # `_maybe_compute_loss` once per microbatch)
                if not (call in loop.backward_via or call in loop.steps_via or _makes_backward_loss(m, call, loop.node)):
                    continue  # a metric helper (`accuracy()` with its `.item()`): not followed
                for fn in facts.file_functions(call):
                    for sync, what in self._callee_syncs(ctx, facts, fn, 0, set()):
                        if sync not in seen:
                            seen.add(sync)
                            msg = self.message.format(what=what).replace(
                                " every step", f" in `{fn.name.value}()`, which the training step calls on "
                                f"{line_ref(ctx, call)},", 1)
                            yield ctx.finding(sync, msg)

    def _callee_syncs(self, ctx: Context, facts: TrainingFacts, fn: cst.FunctionDef, depth: int, busy: set):
        """(call, what) for the host syncs `fn` runs on every call: not under a condition of `fn`,
        with no conditional `return`/`raise` before them; through the file functions it calls the
        same way that run a backward or an optimizer step themselves (two levels)."""
        if depth > 1 or fn in busy:
            return
        busy.add(fn)
        m = ctx.model
        exits = [n for n in m.walk(fn.body) if isinstance(n, (cst.Return, cst.Raise))
                 and facts.is_conditional_in(n, fn) and m.enclosing(n, cst.FunctionDef, cst.Lambda) is fn]
        for call in facts.calls_in(fn.body, into_defs=False):
            if facts.is_conditional_in(call, fn) or any(m.precedes(e, call) for e in exits):
                continue
            what = self._sync(ctx, call, fn)
            if what is not None:
                yield call, what
                continue
            for g in facts.file_functions(call):
                if facts.effects(g) & {"backward", "step"}:
                    yield from self._callee_syncs(ctx, facts, g, depth + 1, busy)

    @staticmethod
    def _sync(ctx: Context, call: cst.Call, loop: cst.CSTNode) -> str | None:
        m = ctx.model
        q = m.qualname(call.func)
        if q == "torch.cuda.synchronize":
            return "torch.cuda.synchronize()"
        mo = method_of(call)
        if mo is not None and mo[1] in _SYNC_METHODS and not call.args:
            recv, meth = mo
            if m.kind_of(recv) in (Kind.MODULE, Kind.OPTIMIZER, Kind.DATALOADER):
                return None
            if meth in ("cpu", "numpy", "tolist") and m.kind_of(recv) is not Kind.TENSOR:
                return None
            return f".{meth}()"
        if isinstance(call.func, cst.Name) and call.func.value == "print":
            for a in call.args:
                if m.kind_of(a.value) is Kind.TENSOR:
                    return "print(<tensor>)"
        if (
            isinstance(call.func, cst.Name) and call.func.value in ("str", "repr")
            and m.qualname(call.func) is None and not m.bindings_of(call.func)
            and len(call.args) == 1 and not call.args[0].star and m.kind_of(call.args[0].value) is Kind.TENSOR
        ):
            return f"{call.func.value}(<tensor>)"
        if (
            isinstance(call.func, cst.Attribute) and call.func.attr.value == "format"
            and isinstance(call.func.value, (cst.SimpleString, cst.ConcatenatedString))
            and any(not a.star and m.kind_of(a.value) is Kind.TENSOR for a in call.args)
        ):
            return '"...".format(<tensor>)'
        for a in call.args:
            # a message formatted from a tensor, passed to `print`, a logger or a progress bar:
            # `f"loss {loss}"` / `"loss %s" % loss` copies the value to the host like `print(loss)`
            what = _formatted_tensor(m, a.value)
            if what is not None:
                return what
        if (
            isinstance(call.func, cst.Name) and call.func.value in _SYNC_BUILTINS
            and m.qualname(call.func) is None and not m.bindings_of(call.func)
            and len(call.args) == 1 and call.args[0].keyword is None and not call.args[0].star
            and (m.kind_of(call.args[0].value) is Kind.TENSOR or _backward_in(m, call.args[0].value, loop))
        ):
            # `float(loss)` / `int(correct)` read a tensor's value like `.item()` (LANfactory#120:
            # `epoch_loss_sum += float(loss)` after every optimizer step)
            return f"{call.func.value}(<tensor>)"
        return None


def _formatted_tensor(m, expr: cst.BaseExpression) -> str | None:
    """`expr` is a string built by formatting a tensor: an f-string with a tensor-valued
    replacement field, or `"..." % t` / `"..." % (a, t)`."""
    if isinstance(expr, cst.ConcatenatedString):
        return _formatted_tensor(m, expr.left) or _formatted_tensor(m, expr.right)
    if isinstance(expr, cst.FormattedString):
        for part in expr.parts:
            if isinstance(part, cst.FormattedStringExpression):
                if m.kind_of(part.expression) is Kind.TENSOR:
                    return 'f"{<tensor>}"'
                if part.format_spec:
                    for sub in part.format_spec:
                        if (isinstance(sub, cst.FormattedStringExpression)
                                and m.kind_of(sub.expression) is Kind.TENSOR):
                            return 'f"{<tensor>}"'
        return None
    if (
        isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Modulo)
        and isinstance(expr.left, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))
    ):
        right = expr.right
        items = [e.value for e in right.elements] if isinstance(right, cst.Tuple) else [right]
        if any(m.kind_of(v) is Kind.TENSOR for v in items):
            return '"..." % <tensor>'
    return None


def _makes_backward_loss(m, call: cst.Call, loop: cst.CSTNode) -> bool:
    """`loss = compute_loss(...)` in the loop, and the loop calls `loss.backward()`."""
    parent = m.parent(call)
    if not isinstance(parent, cst.Assign) or parent.value is not call or len(parent.targets) != 1:
        return False
    return _backward_in(m, parent.targets[0].target, loop)


def _backward_in(m, expr: cst.BaseExpression, loop: cst.CSTNode) -> bool:
    """`expr` is a name whose `.backward()` the loop calls: the step's loss, a tensor whatever
    function made it (LANfactory's `loss = self.loss_fun(pred, yb)`, a loss function picked from
    the config)."""
    if not isinstance(expr, cst.Name):
        return False
    for c in m.calls_in(loop):
        f = c.func
        if (isinstance(f, cst.Attribute) and f.attr.value == "backward"
                and isinstance(f.value, cst.Name) and f.value.value == expr.value):
            return True
    return False


def _device_guarded_only(m, call: cst.Call, loop: cst.CSTNode) -> bool:
    """Every condition between `call` and `loop` only asks whether the run is on CUDA (`if 'cuda'
    in self.device.type:`, `if device.type == "cuda":`, `if torch.cuda.is_available():`), and the
    call sits in that `if`'s body: on a GPU it still runs every step (KPConv-PyTorch#22's trainer,
    `torch.cuda.synchronize(self.device)` after every optimizer step)."""
    child = call
    for anc in m.ancestors(call):
        if anc is loop:
            return True
        if isinstance(anc, cst.If):
            if not m.contains(anc.body, child) or not _cuda_test(m, anc.test):
                return False
        elif isinstance(anc, (cst.Else, cst.IfExp, cst.BooleanOperation, cst.Try, cst.ExceptHandler,
                              cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
        child = anc
    return False


def _cuda_test(m, test: cst.BaseExpression, _depth: int = 0) -> bool:
    if isinstance(test, (cst.Name, cst.Attribute)) and _depth == 0:
        # a flag that only records a device test: `use_cuda = torch.cuda.is_available()` (apex#316's
        # ImageNet example under a CPU guard), every binding of it such an assignment
        binds = m.bindings_of(test)
        return bool(binds) and all(
            b.how == "assign" and b.value is not None and _cuda_test(m, b.value, _depth + 1) for b in binds
        )
    if isinstance(test, cst.Call):
        return m.qualname(test.func) == "torch.cuda.is_available" and not test.args
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    op = test.comparisons[0].operator
    if not isinstance(op, (cst.In, cst.Equal)):
        return False
    sides = [test.left, test.comparisons[0].comparator]
    strings = [x for x in sides if isinstance(x, cst.SimpleString)]
    others = [x for x in sides if not isinstance(x, cst.SimpleString)]
    if len(strings) != 1 or len(others) != 1 or strings[0].evaluated_value != "cuda":
        return False
    other = others[0]
    return isinstance(other, cst.Attribute) and other.attr.value == "type"

