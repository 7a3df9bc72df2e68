"""GL403 eval-without-no-grad."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.paths import is_test_path
from gpulint.analysis.training import TrainingFacts, dotted, method_of, walk
from gpulint.model import MODULE_BASES
from gpulint.rule import Context, Rule, split_lines


def torch_alias(ctx: Context) -> str | None:
    for local, full in ctx.model.aliases.items():
        if full == "torch":
            return local
    return None


def wrap_in_with(ctx: Context, stmt: cst.CSTNode, header: str):
    """An edit that puts `stmt` (a compound statement) inside `header:` re-indented one level;
    None when re-indenting could change a multi-line string."""
    for n in walk(stmt):
        if isinstance(n, (cst.SimpleString, cst.FormattedString)) and "\n" in ctx.code(n):
            return None
    first, last = ctx._line_bounds(stmt)
    start, _ = ctx.span(stmt)
    indent = ctx.indent_of(stmt)
    if ctx.source[first:start] != indent or indent.strip():
        return None
    unit = ctx.module.default_indent
    text = ctx.source[first:last]
    lines = split_lines(text, keepends=True)  # not str.splitlines(): U+2028 etc. inside strings
    out = [indent + header + ctx.newline]
    for line in lines:
        out.append(unit + line if line.strip() else line)
    new = "".join(out)
    if not new.endswith(("\n", "\r")):
        new += ctx.newline
    return ctx.edit(first, last, new)


class EvalWithoutNoGrad(Rule):
    code = "GL403"
    name = "eval-without-no-grad"
    summary = "An evaluation loop calls the model with autograd still recording."
    message = (
        "evaluation loop calls `{model}` with gradients enabled: autograd records a graph at every "
        "call (memory and time for nothing); run it under `with torch.no_grad():`"
    )
    fix_safety = "safe"
    default = True
    kind = "slow"
    prefilter = r"\.eval\(|def \w*(?:val|eval|test|predict|inference)"
    ast_prefilter = (r"^loop$", r"^\.eval\($|^def \w*(?:val|eval|test|predict|inference)")
    batch_message = (
        "`{fn}` runs `{model}` in eval mode once per batch with gradients enabled: autograd records "
        "a graph at every call (memory and time for nothing); decorate it with `@torch.no_grad()`"
    )
    explanation = '''
Outside `torch.no_grad()` / `torch.inference_mode()`, every forward pass records the autograd graph
and keeps the activations it needs for a backward pass that never comes. An evaluation loop that
forgets it runs slower and needs much more memory than it should, often running out of memory on
the validation set of a model that trains fine. `model.eval()` does *not* turn autograd off: it
only switches dropout and batch-norm behaviour.

An evaluation loop is a loop that runs after `model.eval()`, or in a function named like
`validate`/`evaluate`/`test`/`predict`, and does no gradient work. The rule stays silent on
gradient-based evaluation (saliency maps, adversarial examples: a `.backward()`,
`torch.autograd.grad`, `requires_grad_` or `.grad` in the loop or its function), on loops already
under `no_grad`/`inference_mode`/`set_grad_enabled(...)` (also through a decorator or the call
site of the function, `stack.enter_context(torch.no_grad())`, or a project's own decorator named
like `inference_mode`/`no_grad`, such as yolov5's `@smart_inference_mode()`), on Lightning / HF
Trainer scripts, whose frameworks do this, on a loop whose body ends with an unconditional `break`
(it runs once: one sample batch taken from a loader to plot, not an evaluation loop), on a model
frozen before the loop (`model.eval().requires_grad_(False)`, or `p.requires_grad = False` for
each of its parameters: nothing asks for a gradient, autograd records nothing), and in test
files (`test_*.py`, files under `tests/`), where a few tiny batches make the graph cost nothing
worth reading about.

The fix wraps the loop in `with torch.no_grad():`.

A per-batch evaluation function is reported too: a function named like `validation_step` or
`evaluate_batch` that puts a model in eval mode and calls it (itself, or through a method of its
class that calls the same `self.<model>`), with no loop and no gradient work of its own, when every
call of it in the file runs once per item of a loop or comprehension that does no gradient work
either (`[self.validation_step(x, y) for x, y in valid]`). Its fix decorates the function with
`@torch.no_grad()`.

Bad:

```python
model.eval()
for x, y in val_loader:
    correct += (model(x).argmax(1) == y).sum().item()
```

Good:

```python
model.eval()
with torch.no_grad():
    for x, y in val_loader:
        correct += (model(x).argmax(1) == y).sum().item()
```
'''

    def check(self, ctx: Context):
        if is_test_path(ctx.path):
            return  # a test suite's evaluation runs a few tiny batches: the graph costs nothing worth reading about
        facts: TrainingFacts = ctx.model.facts(TrainingFacts)
        if facts.frameworks_drive_loop():
            return
        seen: set[cst.CSTNode] = set()
        for loop in facts.loops:
            node = loop.node
            if loop.backward or loop.steps or facts.grad_use(node):
                continue
            if _runs_once(ctx.model, node):
                continue  # `for b in loader: out = model(b); break`: one sample batch, not an evaluation loop
            fn = facts.function_of(node)
            cls = ctx.model.class_of(node)
            if cls is not None and ctx.model.class_is(cls.name.value, MODULE_BASES):
                continue  # inside an nn.Module's own methods: its caller chooses the grad mode
            eval_fn = facts.is_eval_function(fn)
            if not eval_fn and facts.mode_before(node) != "eval":
                continue
            if fn is not None and facts.grad_use_besides_training(fn, node):
                continue  # gradient-based evaluation (saliency, adversarial), not the training batches
            if facts.grad_mode_at(node) is not None:
                continue
            calls = [c for c in facts.model_calls(node) if c not in seen and facts.grad_mode_at(c) is None]
            if not calls or all(_detached_at_once(ctx.model, c) for c in calls):
                continue  # outputs detached on the spot: no graph is kept (model assembly, not evaluation)
            if all(_frozen_before(ctx, c, node) for c in calls):
                continue  # `model.eval().requires_grad_(False)`: no parameter asks for a gradient, no graph
            models = {dotted(c.func) for c in calls}
            if facts.passes_to_unknown(node, models):
                continue
            fix = None
            alias = torch_alias(ctx)
            if alias is not None:
                edit = wrap_in_with(ctx, node, f"with {alias}.no_grad():")
                if edit is not None:
                    fix = ctx.fix(edit, message="Wrap the evaluation loop in `with torch.no_grad():`")
            for c in facts.model_calls(node):
                seen.add(c)
            for c in calls:
                yield ctx.finding(c, self.message.format(model=ctx.code(c.func)), fix)
        yield from self._batch_functions(ctx, facts, seen)

    def _batch_functions(self, ctx: Context, facts: TrainingFacts, seen: set):
        """A per-batch evaluation function: named like `validation_step`/`evaluate_batch`, it puts
        a model in eval mode and calls it (itself, or through a method of its class that calls
        `self.<model>`), does no gradient work, has no loop of its own, and every call of it in the
        file runs once per item of a loop or comprehension that does no gradient work either
        (`[self.validation_step(x, y) for x, y in valid]`). Reported at its call of the model (or
        of the method), with the fix `@torch.no_grad()` on the function."""
        m = ctx.model
        for fns in m.functions.values():
            for fn in fns:
                if not facts.is_eval_function(fn):
                    continue
                cls = m.class_of(fn)
                if cls is not None and m.class_is(cls.name.value, MODULE_BASES):
                    continue
                if any(isinstance(n, (cst.For, cst.While)) for n in walk(fn.body, into_defs=False)):
                    continue  # a loop of its own: judged as a loop
                if facts.effects(fn) & {"grad", "backward", "step", "zero_grad", "train"}:
                    continue
                evals = {}
                for c in facts.calls_in(fn.body, False):
                    mo = method_of(c)
                    if mo is not None and mo[1] == "eval" and not c.args and facts.is_model(mo[0]):
                        evals.setdefault(dotted(mo[0]), c)
                if not evals:
                    continue
                calls = [(c, model) for c, model in self._model_calls(facts, fn, evals) if c not in seen]
                calls = [(c, model) for c, model in calls if facts.grad_mode_at(c) is None and not _detached_at_once(m, c)]
                if not calls or not self._per_item_sites(m, facts, fn):
                    continue
                fix = None
                alias = torch_alias(ctx)
                if alias is not None:
                    first = fn.decorators[0] if fn.decorators else fn
                    fix = ctx.fix(
                        ctx.insert_before(first, f"@{alias}.no_grad()"),
                        message=f"Decorate `{fn.name.value}` with `@torch.no_grad()`",
                    )
                for c, model in calls:
                    seen.add(c)
                    yield ctx.finding(c, self.batch_message.format(fn=fn.name.value, model=model), fix)

    @staticmethod
    def _model_calls(facts: TrainingFacts, fn: cst.FunctionDef, evals: dict) -> list[tuple[cst.Call, str]]:
        """Calls in `fn` of a model it put in eval mode before, with the model's text: `model(x)`
        itself, or `self.infer(x)` whose method calls `self.<model>` (the same attribute)."""
        out = []
        for c in facts.calls_in(fn.body, False):
            f = c.func
            d = dotted(f)
            if d in evals and facts.is_model(f) and facts.before(evals[d], c):
                out.append((c, d))
                continue
            if not (isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == "self"):
                continue
            for g in facts.file_functions(c):
                inner = [dotted(i.func) for i in facts.model_calls_through_self(g.body)]
                found = next((d for d in inner if d in evals and facts.before(evals[d], c)), None)
                if found is not None:
                    out.append((c, found))
                    break
        return out

    @staticmethod
    def _per_item_sites(m, facts: TrainingFacts, fn: cst.FunctionDef) -> bool:
        """Every call of `fn` runs once per item of a loop or comprehension of its caller, and
        that loop or comprehension does no gradient work."""
        sites = facts.call_sites(fn)
        if not sites:
            return False
        for site in sites:
            around = None
            for anc in m.ancestors(site):
                if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.Module)):
                    break
                if isinstance(anc, (cst.For, cst.While, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
                    around = anc
                    break
            if around is None:
                return False
            if isinstance(around, (cst.For, cst.While)):
                info = facts.loop_info.get(around)
                if info is None or info.backward or info.backward_via or info.steps or info.is_training:
                    return False
            if facts.grad_use(around):
                return False
        return True


def _runs_once(m, loop: cst.CSTNode) -> bool:
    """A loop whose body ends with an unconditional `break` and has no `continue` of its own
    (outside nested loops): the body runs at most once (a sample batch taken from a loader)."""
    if not isinstance(loop, (cst.For, cst.While)) or not isinstance(loop.body, cst.IndentedBlock) or not loop.body.body:
        return False
    last = loop.body.body[-1]
    if not (isinstance(last, cst.SimpleStatementLine) and any(isinstance(s, cst.Break) for s in last.body)):
        return False
    # a `continue` inside a nested loop, function or class belongs to that one
    own = (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)
    return not any(isinstance(n, cst.Continue) for n in m.walk(loop.body, skip=own))


def _chain_root(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`X` of `X.eval().requires_grad_(False).to(d)`: the receiver under a chain of method calls."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        expr = expr.func.value
    return expr


def _frozen_before(ctx: Context, call: cst.Call, loop: cst.CSTNode) -> bool:
    """The model `call` calls had its parameters frozen before the loop, in the loop's function
    (or at module level): its last `requires_grad_(...)` there says False
    (`sampler.eval().requires_grad_(False).to(device)`, `net = Net().requires_grad_(False)`), or a
    loop over its `.parameters()` sets `p.requires_grad = False`. With no parameter asking for a
    gradient (and inputs from a loader), autograd records nothing: `no_grad` would change nothing."""
    m = ctx.model
    name = ctx.code(call.func)
    if not isinstance(call.func, (cst.Name, cst.Attribute)):
        return False
    scope = m.scope_of(loop)
    last = None  # (position, frozen?)
    for c in m.calls_in(scope) if scope is not m.module else m.calls:
        f = c.func
        if not (isinstance(f, cst.Attribute) and f.attr.value == "requires_grad_") or not m.precedes(c, loop):
            continue
        if m.contains(loop, c) or m.scope_of(c) is not scope:
            continue
        root = _chain_root(f.value)
        target = None
        parent = m.parent(c)
        while isinstance(parent, (cst.Attribute, cst.Call)) and not isinstance(parent, cst.Assign):
            parent = m.parent(parent)  # `X.requires_grad_(False).to(d)` assigned whole
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
            target = ctx.code(parent.targets[0].target)
        if ctx.code(root) != name and target != name:
            continue
        arg = c.args[0].value if c.args else None
        frozen = isinstance(arg, cst.Name) and arg.value == "False"
        last = (m.order[c], frozen)
    for n in m.nodes:
        if not isinstance(n, cst.For) or not m.precedes(n, loop) or m.scope_of(n) is not scope:
            continue
        it = n.iter
        if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and it.func.attr.value == "parameters"
                and ctx.code(it.func.value) == name and isinstance(n.target, cst.Name)):
            continue
        for s in m.walk(n.body):
            if (isinstance(s, cst.Assign) and len(s.targets) == 1 and isinstance(s.targets[0].target, cst.Attribute)
                    and s.targets[0].target.attr.value == "requires_grad"
                    and ctx.code(s.targets[0].target.value) == n.target.value):
                frozen = isinstance(s.value, cst.Name) and s.value.value == "False"
                if last is None or m.order[n] > last[0]:
                    last = (m.order[n], frozen)
    return last is not None and last[1]


def _detached_at_once(m, call: cst.Call) -> bool:
    """`model(x).detach()` (or `.detach().cpu()...`): the result keeps no graph."""
    parent = m.parent(call)
    if isinstance(parent, cst.Attribute) and parent.attr.value in ("detach", "detach_"):
        return isinstance(m.parent(parent), cst.Call)
    return False
