"""GL403 eval-without-no-grad."""

from __future__ import annotations

import re

import libcst as cst

from gpulint.analysis.mismatch import reachable_from_forward
from gpulint.analysis.paths import is_test_path
from gpulint.analysis.phases import (
    PhaseLoop,
    mentions_phase,
    phase_loops,
    phases_at,
    trains_only_in_train_phase,
)
from gpulint.analysis.training import (
    torch_loss_value,
    TrainingFacts,
    argument_for,
    dotted,
    method_of,
    walk,
)
from gpulint.flow import param_name
from gpulint.model import MODULE_BASES
from gpulint.rule import Context, Kind, Rule, split_lines
from gpulint.sites import line_ref


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
    # safe when every model the fix puts under `no_grad` is of a class the file defines or of a
    # known library; a model of another file may differentiate in its forward (A2)
    fix_safety = "mixed"
    default = True
    kind = "slow"
    # `model.train(False)` is `model.eval()` (bilinear-cnn's `self._net.train(False)`)
    # or a loader of held-out data by its name (`for x, y in test_loader:` inside the training loop)
    prefilter = (r"\.eval\(|\.train\(\s*(?:mode\s*=\s*)?False\s*\)|def \w*(?:val|eval|test|predict|inference)"
                 r"|(?i:test|val|valid|validation|eval|evaluation|dev|holdout)_?(?i:loader|dl|dataloader|data_loader|iter"
                 r"|iterator|batches|gen|generator|ds|data|set|dataset)"
                 # a phase loop's evaluation phase (`for phase in ("train", "val"):`)
                 r"""|["'](?:val|valid|validation|eval|evaluation|test|testing|dev)\\?["']"""
                 # a test branch of a training loop (`if i % 100 == 0:`, `if do_eval:`)
                 r"|\bif\b[^\n#]*(?:%|(?i:eval|valid|test))")
    ast_prefilter = (r"^loop$", (r"^\.eval\($|^\.train\($|^def \w*(?:val|eval|test|predict|inference)"
                                 r"|^(?:\w+_)?(?i:test|val|valid|validation|eval|evaluation|dev|holdout)_?(?i:loader|dl"
                                 r"|dataloader|data_loader|iter|iterator|batches|gen|generator|ds|data|set|dataset)s?$"
                                 r"|^'(?:val|valid|validation|eval|evaluation|test|testing|dev)$"
                                 r"|^\.backward\($"))
    batch_message = (
        "`{fn}` runs `{model}` in eval mode once per batch with gradients enabled: autograd records "
        "a graph at every call (memory and time for nothing); decorate it with `@torch.no_grad()`"
    )
    hook_message = (
        "`{fn}` runs `{model}` in eval mode once per batch of `{template}`'s loop with gradients enabled: "
        "autograd records a graph at every call (memory and time for nothing); decorate it with "
        "`@torch.no_grad()`"
    )
    shared_message = (
        "`{fn}(...)` runs `{model}` in eval mode with gradients enabled, and with these arguments it does "
        "no gradient work: autograd records a graph at every batch for nothing; call it under "
        "`with torch.no_grad():`"
    )
    explanation = '''
Outside `torch.no_grad()` / `torch.inference_mode()`, every forward pass records the autograd graph
and keeps the activations it needs for a backward pass that never comes. An evaluation loop that
forgets it runs slower and needs much more memory than it should, often running out of memory on
the validation set of a model that trains fine. `model.eval()` does *not* turn autograd off: it
only switches dropout and batch-norm behaviour.

An evaluation loop is a loop that runs after `model.eval()` (or `model.train(False)`), or in a function named like
`validate`/`evaluate`/`test`/`predict`, or a `for` loop over a loader of held-out data named so
(`test_loader`, `val_dl`, `valid_iter`) nested in a training loop (the test-accuracy check that course
notebooks run every N iterations) or following it in the same function or at module level and
calling the model it trained (the final test pass of a course script), and does no gradient work. The rule stays silent on
gradient-based evaluation (saliency maps, adversarial examples: a `.backward()`,
`torch.autograd.grad`, `requires_grad_`, `x.requires_grad = True` or `.grad` in the loop or its
function; a model of a module class of the file whose own methods call `torch.autograd.grad` or
`torch.autograd.functional.*` or take steps of one of facebookresearch/higher's differentiable
optimizers (`higher.get_diff_optim`, `higher.innerloop_ctx`), such as a force field predicting forces
as `-dE/dpos` in its forward or an energy model minimising over its label, which needs autograd on, also when the model called is one the analysis cannot name (a parameter
`model_best`, a `torch.load` result) and such a class is in the file; a model of another file handed a
few-shot episode, the labels of the support set and the query set (`model((data_shot, label_shot,
data_query))`, `learner(x_spt, y_spt, x_qry)`), which adapts to the support set in its forward, in
the meta-learning family by gradient steps (a MAML inner loop's `torch.autograd.grad`); a loop nested in a training
loop whose outputs reach the loss that loop differentiates, as learnable exemplars run through a
frozen feature extractor in an inner loop; or a method of an object that code the file does not define was given the model, such
as an attack `adversary = PGD(model)` whose `adversary.generate(x, y)` runs in the loop, directly
or through a helper of the file, or an optimizer handed to such code, as Uformer's
`loss_scaler(loss, optimizer, parameters=...)` with timm's `NativeScaler`, which runs the backward
and the step: `no_grad` would break its backward pass), on loops already under `no_grad`/`inference_mode`/`set_grad_enabled(...)` (also through a decorator or the call
site of the function, `stack.enter_context(torch.no_grad())`, or a project's own decorator named
like `inference_mode`/`no_grad`, such as yolov5's `@smart_inference_mode()`), on Lightning / HF
Trainer scripts, whose frameworks do this, on a loop whose body ends with an unconditional `break`
(it runs once: one sample batch taken from a loader to plot, not an evaluation loop), on a model
frozen before the loop (`model.eval().requires_grad_(False)`, or `p.requires_grad = False`,
`p.requires_grad_(False)` or `p.detach_()` for each of its parameters; a global model frozen at
module level counts for a module-level function called only after the freeze: nothing asks for a
gradient, autograd records nothing), on a model called
with a string naming an inference mode (`model(data, mode='inference')`: SPADE-style models run
that branch of their `forward` under `no_grad` themselves), on a module-level helper named like
an inference function that the file never names, whose model is a parameter, put in eval mode
nowhere in it, and whose return is the output of a model call made after the loop
(influenza_transformer's autoregressive `run_encoder_decoder_inference(model, src, ...)`: its
callers are in other files and choose the grad mode, training included), on loops inside the
methods of a model class (an nn.Module of the file, or a class with its own `forward` over a base
imported from another module of the project, as LAVIS's `Blip2T5Instruct(Blip2Base)` whose
`predict_class` its runner calls under `no_grad`), which leave the grad mode to their caller unless
the class trains itself, on a method of the class that the loop calls with arguments that rule out
its branch with gradients (`self.feed_data(data, phase='val')` whose `'val'` branch runs the model
under `no_grad`), and in test
files (`test_*.py`, files under `tests/`), where a few tiny batches make the graph cost nothing
worth reading about.

A loop is reported at its model calls, not at its metric objects (a torchmetrics `Metric`, a metric
module of the file with `update` and `compute`: no parameters, no graph of their own) nor at its
loss modules (`criterion(out, y)`), also when a
loss reaches the function as a parameter that every call site fills with one (LSTNet's
`evaluate(..., evaluateL2, evaluateL1, ...)`), nor at a frozen model's calls (they record nothing)
when it runs beside one that is not. A model kept on `self` counts as frozen when every value
stored in it is frozen right after it is stored, in any method: `self.model_old =
deepcopy(self.model)` then `freeze_model(self.model_old)` (a function of the file that freezes its
argument's parameters, or one of another module named `freeze_model`, `freeze_module`,
`freeze_params`...), a loop over its `.parameters()` or `.requires_grad_(False)`, and nothing
unfreezes it or hands it to other code. So does a model built from a class of the file that freezes
what it builds: its `__init__`, read with the branches the constructor's constant arguments take,
ends with `for param in self.parameters(): param.requires_grad = False` (often under
`if not requires_grad:`) or `self.requires_grad_(False)`, or keeps only plain tensors, constants
and modules of such classes (a perceptual metric's `PNet()` around `vgg16(requires_grad=False)`),
and nothing reads its parameters or hands it to code other than the file's own functions. The fix
wraps the loop in `with torch.no_grad():`.

A shared phase loop is an evaluation in its evaluation phases: `for phase in ("train", "val"):`
(a list, `["train", "valid"] + ...`, the keys of a dict of loaders, `.items()`) whose body
backpropagates and steps only under `if phase == "train":` (also `is_train = phase == "train"`)
and calls the model outside that test. Unless the forward runs under `torch.set_grad_enabled(phase
== "train")` (or any grad context around it that depends on the phase, or a `no_grad` under a phase
test), the 'val' batches record a graph for nothing. It is reported at the shared model call, never
with a `no_grad` wrap, which would stop the 'train' phase learning: the fix puts the statement that
holds the shared forward under `with torch.set_grad_enabled(phase == "train"):`, offered only when
the loop names one training phase and one statement holds the shared forwards. Gradients used in
the evaluation phase (a backward in every phase, a `.grad` read, code the file does not define
handed the model there) keep it silent.

A test step in one branch of an `if`/`else` inside a training loop whose other branch trains is
reported too (pytorch/pytorch#4050: `if i % 100 == 0:` reads a test batch and runs `out =
model(x)`, `else:` computes the loss, backpropagates and steps), when the test picks a periodic
step (a `%` in it) or names an evaluation (`if do_eval:`), the test branch does no gradient work
and calls a model the other branch trains, and nothing it binds outlives it: not stored in a
container, an attribute or an accumulator (except through `.item()`, `.tolist()`, `float(...)`
and the like), not read after the `if`, at the top of the next iteration, after the loop, or by
the training branch before that branch binds it again (a REINFORCE rollout collected in one branch
and backpropagated in the other stays silent). The fix puts the test branch's statements under
`with torch.no_grad():`.

A function shared by training and evaluation is reported at its evaluation call: called after
`model.eval()`, outside `no_grad`, with arguments that switch off every backward pass and
optimizer step in it (`run_epoch(valid_data, model, optimizer=None)` where the function steps only
`if optimizer is not None:`, also inside a loss-compute object it is given, built with `opt=None`).
Its fix runs that call under `with torch.no_grad():`.

A per-batch evaluation function is reported too: a function named like `validation_step` or
`evaluate_batch` that puts a model in eval mode and calls it (itself, or through a method of its
class that calls the same `self.<model>`), with no loop and no gradient work of its own, when every
call of it in the file runs once per item of a loop or comprehension that does no gradient work
either (`[self.validation_step(x, y) for x, y in valid]`). Its fix decorates the function with
`@torch.no_grad()`.

So is the hook of a template method: a base class's method loops over the batches and calls
`self._step(batch)`, which a subclass overrides with a model call, when for that subclass a
statement before the loop puts the model in eval mode (its own `self._setup_model()` hook, or
`self.model.eval()`) and the loop, with that subclass's hooks, does no gradient work. Each subclass
is judged apart: a `Trainer` whose `_step` backpropagates is not an evaluation. Reported at the
hook's model call, with the fix `@torch.no_grad()` on the hook.

Each fix is safe when the rule has read the model's class: a class of the file (whose methods it
checks for `torch.autograd.grad`), a model of torch, torchvision, timm, transformers and the like,
or a parameter that every call of its function in the file fills with such a model. A model of
another file, or of a class named by a string (`get_class(conf["model_class"])(conf=...)`), may
take gradients in its forward (surface normals, forces, saliency): `no_grad` would make it raise, so
the fix is unsafe there (`--unsafe-fixes`).

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
        if is_test_path(ctx.path) and _test_suite(ctx.model):
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
            if (cls is not None and (ctx.model.class_is(cls.name.value, MODULE_BASES)
                                     or _module_of_other_file_base(ctx.model, cls))
                    and not _trainer_module_method(ctx.model, cls, fn)):
                continue  # inside an nn.Module's own methods: its caller chooses the grad mode
            eval_fn = facts.is_eval_function(fn)
            if (not eval_fn and facts.mode_before(node) != "eval" and not _evals_in_body(ctx.model, node)
                    and not _eval_in_init(ctx.model, facts, node, fn)
                    and not _held_out_loop_in_training(ctx.model, facts, loop)
                    and not _held_out_loop_after_training(ctx.model, facts, loop)):
                continue
            if fn is not None and facts.grad_use_besides_training(fn, node):
                continue  # gradient-based evaluation (saliency, adversarial), not the training batches
            if eval_fn and _helper_for_other_files(ctx.model, facts, node, fn):
                continue  # `def run_inference(model, src)` returning the model's output: its caller picks the grad mode
            if _feeds_enclosing_backward(ctx.model, loop):
                continue  # its outputs reach the loss the enclosing loop differentiates (mnemonics training)
            if facts.grad_mode_at(node) is not None:
                continue
            if fn is not None and _dead_at_every_call(ctx.model, facts, node, fn):
                seen.update(_model_calls(facts, node))  # nor reported through the call that skips it
                continue  # `if train:` in a forward that the file's eval path calls with `train=False`
            calls = [c for c in _model_calls(facts, node) if c not in seen and facts.grad_mode_at(c) is None
                     and not _loss_module(ctx.model, c.func)  # a loss module records nothing of its own
                     and not _metric_object(ctx.model, c.func)  # nor a metric (no parameters)
                     and not _signal_transform(ctx.model, c.func)  # nor a parameter-free transform
                     and not _no_grad_fallback(ctx.model, facts, c)]  # the retry of a no_grad call that raised
            if any(_model_takes_gradients(ctx.model, c) for c in calls):
                continue  # its forward differentiates (forces as -dE/dpos): `no_grad` would break it
            through, through_models = {}, {}
            if not calls:
                # the forward in a method of the same class the loop calls (ClusterGCN's
                # `prediction, target = self.do_prediction(cluster)` after `self.model.eval()`)
                through = _helper_forwards(facts, node, seen, through_models)
                calls = list(through)
            if not calls or all(_detached_at_once(ctx.model, c) for c in calls):
                continue  # outputs detached on the spot: no graph is kept (model assembly, not evaluation)
            if all(_inference_mode_argument(ctx.model, c) or _forward_picks_no_grad(ctx.model, c) for c in calls):
                continue  # `model(data, mode="inference")`: a model of another file that picks its grad mode
            # `model.eval().requires_grad_(False)`: no parameter asks for a gradient, no graph; the
            # loop is reported at its other model calls (joansj/hat's lwf.py: the frozen old model
            # beside the current one)
            reported = [c for c in calls if not (_frozen_before(ctx, c, node) or _frozen_attribute(ctx, c)
                                                 or _frozen_by_construction(ctx, through_models.get(c, _callee(c, facts)), node))]
            if not reported:
                continue
            models = {dotted(_callee(c, facts)) for c in calls} if not through else set(through.values())
            if facts.passes_to_unknown(node, models):
                continue
            if _optimizer_to_unknown(ctx.model, facts, node):
                continue  # `loss_scaler(loss, optimizer, parameters=model.parameters())`: a training step
            if _model_held_by_unknown(ctx.model, facts, node, 2, set()):
                continue  # `adversary = PGD(model)`, `adversary.generate(x, y)` in the loop: it may take gradients
            fix = None
            alias = torch_alias(ctx)
            if alias is not None:
                edit = wrap_in_with(ctx, node, f"with {alias}.no_grad():")
                if edit is not None:
                    fix = ctx.fix(edit, safe=all(_built_from_seen_class(ctx.model, through_models[c], 0)
                                                 if c in through else _class_seen(ctx.model, c, facts) for c in calls),
                                  message="Wrap the evaluation loop in `with torch.no_grad():`")
            for c in _model_calls(facts, node):
                seen.add(c)
            seen.update(calls)
            for c in reported:
                if c in through:
                    msg = self.message.format(model=through[c]).replace(
                        "with gradients enabled", f"(in `{ctx.code(c.func)}`) with gradients enabled", 1)
                    yield ctx.finding(c, msg, fix)
                    continue
                yield ctx.finding(c, self.message.format(model=ctx.code(c.func)), fix)
        yield from self._phase_loop_calls(ctx, facts, seen)
        yield from self._test_branch_calls(ctx, facts, seen)
        yield from self._batch_functions(ctx, facts, seen)
        yield from self._shared_function_calls(ctx, facts, seen)
        yield from self._template_hooks(ctx, facts, seen)

    def _phase_loop_calls(self, ctx: Context, facts: TrainingFacts, seen: set):
        """`for phase in ("train", "val"):` whose body backpropagates and steps only `if phase ==
        "train":`, and calls the model outside that test with gradients on (no
        `torch.set_grad_enabled(phase == "train")`, no `no_grad` under a phase test): the 'val'
        batches record a graph for nothing (ZOO_Attack_PyTorch#7). Reported at the shared model
        call. Never with a `no_grad` wrap (it would break the training phase); the fix runs the
        one statement that holds the shared calls under `torch.set_grad_enabled(phase == "train")`
        when the loop names one training phase and that statement is a line of its own."""
        m = ctx.model
        for loop in phase_loops(m):
            info = facts.loop_info.get(loop.node)
            if info is None or not info.is_training or not trains_only_in_train_phase(m, loop, info):
                continue
            if facts.grad_mode_at(loop.node) is not None:
                continue
            eval_calls = [c for c in facts.calls_in(loop.node, into_defs=False)
                          if (at := phases_at(m, loop, c)) is None or at & loop.evals]
            if _grad_use_in_eval_phase(m, facts, loop, eval_calls):
                continue  # gradients used in the evaluation phase too (saliency, adversarial examples)
            calls = []
            for c in _model_calls(facts, loop.node):
                at = phases_at(m, loop, c)
                if (c in seen or not at or not (at & loop.evals) or not (at & loop.train)
                        or facts.grad_mode_at(c) is not None or _loss_module(m, c.func)
                        or _signal_transform(m, c.func) or _grad_context_around(m, loop, c)):
                    continue
                calls.append(c)
            if not calls or any(_model_takes_gradients(m, c) for c in calls):
                continue
            if all(_detached_at_once(m, c) for c in calls):
                continue
            if all(_inference_mode_argument(m, c) or _forward_picks_no_grad(m, c) for c in calls):
                continue
            reported = [c for c in calls if not (_frozen_before(ctx, c, loop.node) or _frozen_attribute(ctx, c)
                                                 or _frozen_by_construction(ctx, _callee(c, facts), loop.node))]
            if not reported:
                continue
            models = {dotted(_callee(c, facts)) for c in calls}
            if _unknown_code_in(m, facts, eval_calls, models):
                continue
            stmts = {m.statement_of(c) for c in reported}
            fix = None
            alias = torch_alias(ctx)
            stmt = next(iter(stmts))
            if (alias is not None and loop.literal is not None and len(stmts) == 1
                    and isinstance(stmt, cst.SimpleStatementLine)):
                test = f"{loop.var} == {loop.literal.value}"
                edit = wrap_in_with(ctx, stmt, f"with {alias}.set_grad_enabled({test}):")
                if edit is not None:
                    fix = ctx.fix(edit, safe=all(_class_seen(m, c, facts) for c in reported),
                                  message=f"Run the shared forward under `{alias}.set_grad_enabled({test})`")
            seen.update(calls)
            evals = "/".join(repr(p) for p in sorted(loop.evals))
            grad = (f"`with torch.set_grad_enabled({loop.var} == {loop.literal.value}):`" if loop.literal is not None
                    else "`torch.set_grad_enabled(...)` true only in the training phase")
            for c in reported:
                yield ctx.finding(
                    c,
                    f"the {evals} phase of the phase loop ({line_ref(ctx, loop.node)}) calls "
                    f"`{ctx.code(_callee(c, facts))}` with gradients enabled: autograd records a graph at every "
                    f"evaluation batch (memory and time for nothing); run the forward under {grad} (a `no_grad` "
                    f"around it would break the training phase)",
                    fix,
                )

    def _test_branch_calls(self, ctx: Context, facts: TrainingFacts, seen: set):
        """A test step in one branch of an `if`/`else` inside a training loop whose other branch
        trains (pytorch/pytorch#4050's P3D loop: `if i % 100 == 0:` reads a test batch and runs
        `out = model(x)`, `else:` computes the loss, backpropagates and steps), with no
        `model.eval()` and no evaluation function around it: the test forward records a graph that
        nothing differentiates. Only when the test picks a periodic step (a `%` in it) or names an
        evaluation (`if do_eval:`, `if step % eval_every == 0:`), the test branch does no gradient
        work and calls the model the training branch trains, and nothing the test branch binds
        outlives it (read after the `if` or by the next iteration, stored in a container or an
        attribute, read by the training branch before it binds it again). Fix: the test branch's
        statements under `with torch.no_grad():`."""
        m = ctx.model
        groups: dict = {}
        for info in facts.loops:
            if not info.is_training or facts.grad_mode_at(info.node) is not None:
                continue
            for c in _model_calls(facts, info.node):
                if c in seen or facts.grad_mode_at(c) is not None:
                    continue
                found = _test_branch_of(m, facts, info, c)
                if found is not None:
                    groups.setdefault(found[0], (found, info, []))[2].append(c)
        for if_node, ((_, test, train), info, found_calls) in groups.items():
            calls = [c for c in found_calls
                     if not (_loss_module(m, c.func) or _metric_object(m, c.func) or _signal_transform(m, c.func))]
            trained = {dotted(_callee(c, facts)) for c in _model_calls(facts, train)} - {None}
            calls = [c for c in calls if dotted(_callee(c, facts)) in trained]
            if not calls or any(_model_takes_gradients(m, c) for c in calls):
                continue
            if all(_detached_at_once(m, c) for c in calls):
                continue
            if all(_inference_mode_argument(m, c) or _forward_picks_no_grad(m, c) for c in calls):
                continue
            reported = [c for c in calls if not (_frozen_before(ctx, c, info.node) or _frozen_attribute(ctx, c)
                                                 or _frozen_by_construction(ctx, _callee(c, facts), info.node))]
            if not reported:
                continue
            models = {dotted(_callee(c, facts)) for c in calls}
            if (facts.passes_to_unknown(test, models) or _optimizer_to_unknown(m, facts, test)
                    or _model_held_by_unknown(m, facts, test, 2, set())):
                continue
            if _branch_outlived(m, facts, if_node, test, train, info):
                continue
            fix = None
            alias = torch_alias(ctx)
            if alias is not None:
                edit = _wrap_block_in_with(ctx, test, f"with {alias}.no_grad():")
                if edit is not None:
                    fix = ctx.fix(edit, safe=all(_class_seen(m, c, facts) for c in calls),
                                  message="Run the test branch under `with torch.no_grad():`")
            seen.update(calls)
            for c in reported:
                yield ctx.finding(
                    c,
                    f"the test branch of the `if` at {line_ref(ctx, if_node)} calls `{ctx.code(c.func)}` with "
                    f"gradients enabled while its other branch trains: autograd records a graph at every test "
                    f"step that nothing differentiates (memory and time for nothing); run the test branch under "
                    f"`with torch.no_grad():`",
                    fix,
                )

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
                        safe=all(_built_from_seen_class(m, evals[model].func.value, 0) for _, model in calls),
                        message=f"Decorate `{fn.name.value}` with `@torch.no_grad()`",
                    )
                for c, model in calls:
                    seen.add(c)
                    yield ctx.finding(c, self.batch_message.format(fn=fn.name.value, model=model), fix)

    def _shared_function_calls(self, ctx: Context, facts: TrainingFacts, seen: set):
        """A function of the file shared by training and evaluation (`run_epoch(data, model,
        loss_compute)`), called after `M.eval()` with arguments that switch its gradient work off:
        every backward, optimizer step or gradient read in it (and in the callables it gets as
        arguments: `SimpleLossCompute(criterion, opt=None)` whose `__call__` steps only
        `if self.opt is not None`) sits under an `if` on a parameter that this call makes false.
        Reported at the call (henryhungle/MTN#7), with the fix `with torch.no_grad():` around it."""
        m = ctx.model
        for call in m.calls:
            fns = facts.file_functions(call)
            if len(fns) != 1:
                continue
            fn = fns[0]
            owner = m.class_of(fn)
            if m.contains(fn, call) or (owner is not None and m.class_is(owner.name.value, MODULE_BASES)):
                continue
            stmt = m.statement_of(call)
            if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
                continue
            if getattr(stmt.body[0], "value", None) is not call or isinstance(stmt.body[0], cst.Return):
                continue  # `x = f(...)`, `f(...)`, `x += f(...)`: the call is the statement's whole value
            if facts.grad_mode_at(call) is not None:
                continue
            loops = [n for n in walk(fn.body, into_defs=False) if isinstance(n, (cst.For, cst.While))]
            around = facts.step_loop_of(call)
            if around is not None and not _only_through(around, call):
                continue
            if call in seen:
                continue  # reported as the evaluation loop's helper call already
            if around is not None or not loops:
                # a per-batch helper (`pass_batch(model, x, optimizer=None)`) called once per item
                # of the caller's loop after `model.eval()`, its step dead at this call (E39-3)
                per_item = next((a for a in m.ancestors(stmt) if isinstance(a, (cst.For, cst.While))), None)
                if per_item is None or m.scope_of(per_item) is not m.scope_of(stmt):
                    continue
                if facts.mode_before(stmt) != "eval" and facts.mode_before(per_item) != "eval":
                    continue
                if not _hands_back_graph(m, fn):
                    continue  # hands back numbers or detached values (an RL agent's `choose_action`): no graph kept
                loops = [fn.body]
            elif facts.mode_before(stmt) != "eval" and not _evals_under(m, facts, fn, _call_env(fn, call), loops):
                continue
            inner = [c for lp in loops for c in facts.model_calls(lp)
                     if c not in seen and not _metric_object(m, c.func) and not torch_loss_value(m, c.func)]
            if not inner or any(facts.grad_mode_at(c) is not None for c in inner):
                continue
            if any(_model_takes_gradients(m, c) for c in inner):
                continue  # its forward differentiates: `no_grad` would break it
            if all(_detached_at_once(m, c) for c in inner):
                continue
            if all(any(m.contains(lp, c) and (_frozen_before(ctx, c, lp) or _frozen_by_construction(ctx, c.func, lp))
                       for lp in loops) for c in inner):
                continue  # its model's parameters were frozen: autograd records nothing
            models = {dotted(c.func) for c in inner}
            if any(facts.passes_to_unknown(lp, models) for lp in loops):
                continue
            if any(_model_held_by_unknown(m, facts, lp, 2, set()) for lp in loops):
                continue  # an attack object given the model runs in the loop: it may take gradients
            if _caller_uses_gradients(m, facts, call) or _result_differentiated(m, facts, stmt):
                continue
            if _grad_work(m, facts, fn, _call_env(fn, call), 0) is not False:
                continue
            fix = None
            alias = torch_alias(ctx)
            if alias is not None:
                edit = wrap_in_with(ctx, stmt, f"with {alias}.no_grad():")
                if edit is not None:
                    fix = ctx.fix(edit, safe=all(_class_seen(m, c, facts) for c in inner),
                                  message=f"Run `{ctx.code(call.func)}(...)` under `with torch.no_grad():`")
            seen.update(inner)
            model = ", ".join(sorted(d for d in models if d))
            yield ctx.finding(call, self.shared_message.format(fn=ctx.code(call.func), model=model), fix)

    def _template_hooks(self, ctx: Context, facts: TrainingFacts, seen: set):
        """A hook of a template method (tests/fixtures_pending/README.md G45-1,
        amjltc295/pytorch-golden-template#66): a base class's method loops over batches and calls
        `self.<hook>(batch)`, which a subclass overrides with a method that runs `self.<model>(x)`;
        for that subclass, a setup hook called before the loop puts models in eval mode and the
        template method, with the subclass's hooks, does no gradient work. Resolved per subclass
        (the Trainer's hook of the same name backpropagates). Reported at the hook's model call,
        with the fix `@torch.no_grad()` on the hook."""
        m = ctx.model
        for info in facts.loops:
            loop = info.node
            fn = facts.function_of(loop)
            base = m.class_of(loop)
            if fn is None or base is None or m.classes.get(base.name.value) is None:
                continue
            bname = base.name.value
            if m.classes[bname].methods.get(fn.name.value) is not fn or m.class_is(bname, MODULE_BASES):
                continue
            hooks = [c for c in facts.calls_in(loop, into_defs=False)
                     if _self_method_name(c) is not None and facts.enclosing_loop(c) is loop]
            if not hooks:
                continue
            for sub in _subclasses(m, bname):
                found = m.method_of_class(sub, fn.name.value)
                if found is None or found[0] is not fn:
                    continue  # the subclass has its own template method
                for hook in hooks:
                    name = _self_method_name(hook)
                    own = m.method_of_class(sub, name)
                    inherited = m.method_of_class(bname, name)
                    if own is None or (inherited is not None and own[0] is inherited[0]):
                        continue  # not overridden below the base
                    hs = own[0]
                    yield from self._hook_calls(ctx, facts, seen, loop, fn, sub, hook, hs)

    def _hook_calls(self, ctx, facts, seen, loop, fn, sub, hook, hs):
        m = ctx.model
        if m.class_is(sub, MODULE_BASES) or hs.decorators:
            return
        if any(isinstance(n, (cst.For, cst.While)) for n in walk(hs.body, into_defs=False)):
            return  # a loop of its own: judged as a loop
        if _template_grad_work(m, facts, fn, sub) or facts.grad_use(hs.body):
            return
        if not _returns_graph(m, hs):
            return  # hands back numbers or detached values: as for a helper of the loop's own class
        if _template_mode_before(m, facts, loop, fn, sub) != "eval":
            return
        if facts.grad_mode_at(loop) is not None or facts.grad_mode_at(hook) is not None:
            return
        name = hs.name.value
        # the hook runs only from this template method (not also from a training step of the subclass)
        if not all(m.contains(fn, c) for c in m.calls
                   if isinstance(c.func, cst.Attribute) and c.func.attr.value == name):
            return
        calls = [c for c in _model_calls(facts, hs.body)
                 if c not in seen and isinstance(_callee(c), cst.Attribute) and isinstance(_callee(c).value, cst.Name)
                 and _callee(c).value.value == "self" and facts.local_grad_mode(c) is None
                 and not _loss_module(m, c.func) and not _signal_transform(m, c.func)]
        if not calls or all(_detached_at_once(m, c) for c in calls):
            return
        if any(_model_takes_gradients(m, c) for c in calls):
            return
        if all(_inference_mode_argument(m, c) or _forward_picks_no_grad(m, c) for c in calls):
            return
        if all(_frozen_attribute(ctx, c) for c in calls):
            return
        models = {dotted(_callee(c, facts)) for c in calls}
        if facts.passes_to_unknown(hs.body, models) or facts.passes_to_unknown(loop, models):
            return
        if _optimizer_to_unknown(m, facts, hs.body) or _model_held_by_unknown(m, facts, hs.body, 2, set()):
            return
        fix = None
        alias = torch_alias(ctx)
        if alias is not None:
            fix = ctx.fix(ctx.insert_before(hs, f"@{alias}.no_grad()"),
                          safe=all(_class_seen(m, c, facts) or _inherited_attr_seen(m, sub, _callee(c, facts))
                                   for c in calls),
                          message=f"Decorate `{sub}.{name}` with `@torch.no_grad()`")
        for c in calls:
            seen.add(c)
            yield ctx.finding(c, self.hook_message.format(fn=f"{sub}.{name}", model=dotted(_callee(c, facts)),
                                                           template=fn.name.value), fix)

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


def _inherited_attr_seen(m, sub: str, expr: cst.BaseExpression) -> bool:
    """`self.model` in a method of `sub` that a base class of the file binds (`self.model = model`
    in the base's `__init__`): every binding, in the first class of `sub`'s chain of first bases
    that has one, is a model built from a class of the file or of a known library
    (`_built_from_seen_class`)."""
    if not (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"):
        return False
    cur, seen = sub, set()
    while cur in m.classes and cur not in seen:
        seen.add(cur)
        info = m.classes[cur]
        found = m.bindings.get((info.node, "self." + expr.attr.value))
        if found:
            return all(b.how == "assign" and b.value is not None and _built_from_seen_class(m, b.value, 1)
                       for b in found)
        bases = [b for b in info.bases if b in m.classes]
        cur = bases[0] if bases else None
    return False

_TEMPLATE_GRAD = frozenset({"grad", "backward", "step", "zero_grad"})


def _self_method_name(c: cst.Call) -> str | None:
    """`name` of a `self.name(...)` call."""
    f = c.func
    if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == "self":
        return f.attr.value
    return None


def _subclasses(m, base: str) -> list[str]:
    """The file's classes whose chain of first bases of the file (the one `method_of_class`
    follows) reaches `base`."""
    out = []
    for name in m.classes:
        cur, seen = name, set()
        while cur is not None and cur not in seen:
            seen.add(cur)
            bases = [b for b in m.classes[cur].bases if b in m.classes]
            cur = bases[0] if bases else None
            if cur == base:
                out.append(name)
                break
    return out


def _resolved_for(m, facts: TrainingFacts, c: cst.Call, sub: str) -> list[cst.FunctionDef]:
    """The file functions a call in a base class's method runs for an instance of `sub`:
    `self.name(...)` through `sub`'s methods, anything else as `file_functions` resolves it."""
    name = _self_method_name(c)
    if name is not None:
        found = m.method_of_class(sub, name)
        return [found[0]] if found is not None else []
    return facts.file_functions(c)


def _template_grad_work(m, facts: TrainingFacts, fn: cst.FunctionDef, sub: str) -> bool:
    """The base class's method `fn`, run by an instance of `sub` (its `self.<hook>` calls
    resolved through `sub`), may do gradient work: a backward, an optimizer step or clear, a
    gradient read."""
    if facts._direct_effects(fn.body) & _TEMPLATE_GRAD:
        return True
    for c in facts.calls_in(fn.body, into_defs=False):
        if any(facts.effects(g) & _TEMPLATE_GRAD for g in _resolved_for(m, facts, c, sub)):
            return True
    return False


def _mode_for(m, facts: TrainingFacts, node: cst.CSTNode, sub: str) -> str | None:
    """The train/eval mode a statement of a base class's method leaves models in for an instance
    of `sub` ("eval", "train", "mixed" or None), its `self.<hook>()` calls resolved through `sub`."""
    modes: set[str] = set()
    for c in facts.calls_in(node, into_defs=False):
        mo = method_of(c)
        if mo is not None and mo[1] == "eval" and not c.args and m.qualname(mo[0]) is None:
            modes.add("eval")
        elif mo is not None and mo[1] == "train" and m.qualname(mo[0]) is None:
            modes.add(facts._train_call_mode(c) or "unknown")
        for g in _resolved_for(m, facts, c, sub):
            eff = facts.effects(g)
            modes |= eff & {"eval", "train"}
            if "unknown-mode" in eff:
                modes.add("unknown")
    if not modes:
        return None
    return next(iter(modes)) if len(modes) == 1 and "unknown" not in modes else "mixed"


def _template_mode_before(m, facts: TrainingFacts, loop: cst.CSTNode, fn: cst.FunctionDef, sub: str) -> str | None:
    """The mode models are in when `loop` (in the base class's method `fn`) starts, for an
    instance of `sub`: the nearest statement before it in `fn` that sets one (`self._setup_model()`
    resolving to `sub`'s `self.model.eval()`). None when nothing in `fn` says, or when the loop
    itself or a loop around it switches modes."""
    if _mode_for(m, facts, loop, sub) not in (None, "eval"):
        return None
    cur = loop
    while cur is not fn:
        parent = m.parent(cur)
        if parent is None:
            return None
        if isinstance(parent, (cst.IndentedBlock, cst.Module)):
            body = list(parent.body)
            at = next((i for i, s in enumerate(body) if s is cur), None)
            for st in reversed(body[:at] if at is not None else []):
                mode = _mode_for(m, facts, st, sub)
                if mode is not None:
                    return mode
        elif isinstance(parent, (cst.For, cst.While)) and _mode_for(m, facts, parent, sub) is not None:
            return None  # the loop around sets modes: what runs before the next iteration decides
        cur = parent
    return None


_TEST_MODULES = ("pytest", "unittest", "absl.testing", "torch.testing", "hypothesis")


def _test_suite(m) -> bool:
    """A file named like a test (`*_test.py`, `test_*.py`, under `tests/`) that is a test suite:
    it imports a test framework, defines a `TestCase` class, asserts, or has a module-level
    `test_*` function the file never calls itself (pytest collects it). U-2-Net's `u2net_test.py` is the
    inference script of the model (a `main()` that loops over the test images) and stays checked."""
    called = set()
    for n in m.walk(m.module):
        if isinstance(n, cst.Import):
            for a in n.names:
                name = dotted(a.name) or ""
                if name.startswith(_TEST_MODULES):
                    return True
        elif isinstance(n, cst.ImportFrom) and n.module is not None:
            name = dotted(n.module) or ""
            if name.startswith(_TEST_MODULES):
                return True
        elif isinstance(n, cst.ClassDef):
            for b in n.bases:
                d = dotted(b.value) or ""
                if d.endswith("TestCase"):
                    return True
        elif isinstance(n, cst.Assert):
            return True  # checks results the way tests do (the file stays a test: silence)
        elif isinstance(n, cst.Call) and isinstance(n.func, cst.Name):
            called.add(n.func.value)
    for st in m.module.body:
        if isinstance(st, cst.FunctionDef) and st.name.value.startswith("test") and st.name.value not in called:
            if st.name.value == "test" and st.params.params:
                continue  # `def test(model, loader)`: an evaluation function of a script
            return True
    return False


def _model_calls(facts: TrainingFacts, node: cst.CSTNode) -> list[cst.Call]:
    """The model calls in `node`, with the explicit `model.forward(x)` form
    (AlwaysBeDreaming-DFCIL#9's `output = model.forward(input)[:, :self.valid_out_dim]`) and
    `model.__call__(x)` (`self.__call__(x)` in a module's own evaluation loop)."""
    out = [c for c in facts.model_calls(node)
           if not _metric_object(facts.m, c.func) and not torch_loss_value(facts.m, c.func)]
    for c in facts.calls_in(node, False):
        f = c.func
        if (c not in out and isinstance(f, cst.Attribute) and f.attr.value in ("forward", "__call__")
                and isinstance(f.value, (cst.Name, cst.Attribute)) and facts.is_model(f.value)):
            out.append(c)
        elif c not in out and _inference_method_call(facts, c):
            out.append(c)
    return out


_TRAINING_CALLS = frozenset({"backward", "step", "zero_grad", "detach", "detach_", "item", "numpy", "tolist"})


def _inference_method_call(facts: TrainingFacts, call: cst.Call) -> bool:
    """`self.model.infer(inp)`: a method other than `forward` of a module class of the file, called on
    a known model, whose body runs the model's own submodules and returns what they computed
    (SAM-Adapter-PyTorch#89: `SAM.infer` runs the image encoder and the mask decoder). Only an
    undecorated method without any `with` block, without a backward, step or detach of its own and
    with a `return` of a value: it records a graph exactly as `model(x)` does."""
    f = call.func
    if not (isinstance(f, cst.Attribute) and isinstance(f.value, (cst.Name, cst.Attribute))):
        return False
    name = f.attr.value
    if name.startswith("_") or name in ("forward", "__call__") or not facts.is_model(f.value):
        return False
    m = facts.m
    ctor = m.constructor_of(f.value)
    cls = ctor.func.value if ctor is not None and isinstance(ctor.func, cst.Name) else m.value_of(f.value).cls
    if cls is None or not m.class_is(cls, MODULE_BASES):
        return False
    found = m.method_of_class(cls, name)
    if found is None:
        return False
    fn = found[0]
    if fn.decorators:
        return False
    runs_submodule = returns = False
    for node in m.walk(fn.body, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if isinstance(node, (cst.With, cst.Yield)):
            return False
        if isinstance(node, cst.Return) and node.value is not None:
            returns = True
        if isinstance(node, cst.Call):
            g = node.func
            if isinstance(g, cst.Attribute) and g.attr.value in _TRAINING_CALLS:
                return False
            if (isinstance(g, cst.Attribute) and isinstance(g.value, cst.Name) and g.value.value == "self"
                    and facts.is_model(g)):
                runs_submodule = True
    return runs_submodule and returns


def _callee(c: cst.Call, facts: TrainingFacts | None = None) -> cst.BaseExpression:
    """The model a call runs: `model` for `model(x)`, for `model.forward(x)` and (given the facts)
    for `model.infer(x)` of a module class of the file (`_inference_method_call`)."""
    f = c.func
    if isinstance(f, cst.Attribute) and f.attr.value in ("forward", "__call__"):
        return f.value
    if isinstance(f, cst.Attribute) and facts is not None and _inference_method_call(facts, c):
        return f.value
    return f


def _module_of_other_file_base(m, cls: cst.ClassDef) -> bool:
    """A class that defines its own `forward` over a base of another module of the project (LAVIS's
    `Blip2T5Instruct(Blip2Base)`, Blip2Base an nn.Module of lavis/models/blip2_models/blip2.py):
    a model whose methods (`predict_class`, `predict_answers`) its caller runs under its own grad
    mode, like an nn.Module's. Not a torch base (known already: `torch.autograd.Function` has a
    static `forward`), not a builtin, not a static `forward`."""
    info = m.classes.get(cls.name.value)
    if info is None or info.node is not cls:
        return False
    forward = info.methods.get("forward")
    if forward is None or any(dotted(d.decorator) in ("staticmethod", "classmethod") for d in forward.decorators):
        return False
    params = [*forward.params.posonly_params, *forward.params.params]
    if not params or params[0].name.value != "self" or len(params) < 2 and forward.params.star_arg is None:
        return False
    for b in info.bases:
        if b in m.classes or "." not in b:
            continue  # the file's own class (followed by class_is), or a builtin (`object`, `Exception`)
        if b.split(".", 1)[0] in ("torch", "typing", "abc", "collections", "enum", "dataclasses"):
            continue
        return True
    return False


def _trainer_module_method(m, cls: cst.ClassDef, fn) -> bool:
    """A method of an nn.Module class that trains itself (a continual-learning "learner" such as
    AlwaysBeDreaming-DFCIL's `NormalNN(nn.Module)`: it builds a `torch.optim` optimizer and calls
    `.backward()` in its methods), other than `forward` and what forward reaches: its loops are the
    caller's evaluation loops, not a forward's."""
    if fn is None or fn.name.value == "forward" or reachable_from_forward(m, fn):
        return False
    optimizer = backward = False
    stepped, zeroed = set(), set()
    for node in m.walk(cls):
        if not isinstance(node, cst.Call):
            continue
        if (m.qualname(node.func) or "").startswith("torch.optim."):
            optimizer = True
        if isinstance(node.func, cst.Attribute):
            meth = node.func.attr.value
            if meth == "backward":
                backward = True
            elif meth in ("step", "zero_grad") and not node.args:
                d = dotted(node.func.value)
                if d is not None and d != "self":
                    (stepped if meth == "step" else zeroed).add(d)
    # an optimizer handed in (`run_epoch(self, train_batches, val_batches, optimizer)`: zeroed and
    # stepped by the module's own methods, AnubhavGupta3377's text classifiers, PRECISION23 M2)
    return (optimizer or bool(stepped & zeroed)) and backward


def _helper_forwards(facts: TrainingFacts, loop: cst.CSTNode, seen: set, models: dict | None = None) -> dict:
    """Calls in the loop of a method of the same class (`self.do_prediction(cluster)`) whose body
    calls the model kept on `self` (`self.model(x)`, or its explicit `self._model.forward(task,
    batch)` as jiant's `SamplingMultiTaskTrainer._forward`) and uses no gradients itself: call ->
    the model's text. `models`, when given, gets call -> the model expression (the argument, or the
    method's own model call)."""
    out = {}
    if models is None:
        models = {}
    for call in facts.calls_in(loop):
        f = call.func
        if call in seen or facts.grad_mode_at(call) is not None:
            continue
        if isinstance(f, cst.Name):
            found = _model_argument_forward(facts, call)
            if found is not None:
                out[call] = dotted(found)
                models[call] = found
            continue
        if not (isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == "self"):
            continue
        for fn in facts.file_functions(call):
            if facts.grad_use(fn.body):
                break
            env = _call_env(fn, call)
            # not the calls on a branch the call's arguments rule out (DifFace's
            # `self.feed_data(data, phase='val')`, whose `if phase == 'train':` branch runs the model
            # with gradients and whose `elif phase == 'val':` branch runs it under `no_grad`)
            inner = [c for c in _model_calls(facts, fn.body) if isinstance(_callee(c), cst.Attribute)
                     and isinstance(_callee(c).value, cst.Name) and _callee(c).value.value == "self"
                     and facts.grad_mode_at(c) is None and _reachable(facts.m, c, fn, env)]
            if any(_model_takes_gradients(facts.m, c) for c in inner):
                break  # the model's forward differentiates: it needs autograd on
            if inner and _returns_graph(facts.m, fn):
                out[call] = dotted(_callee(inner[0]))
                models[call] = _callee(inner[0])
                break
    return out


def _model_argument_forward(facts: TrainingFacts, call: cst.Call) -> cst.BaseExpression | None:
    """`targets, scores = forward(model, i, test_data)`: a module-level function of the file given
    the model as an argument, whose body calls that parameter (`hidden = model(items, A)`), uses no
    gradients itself and hands the output back undetached (CRIPAC-DIG/SR-GNN's test loop): the
    model's text, else None."""
    m = facts.m
    if not isinstance(call.func, cst.Name):
        return None
    # the module-level function of that name (a method `forward` of a class beside it is no candidate)
    defs = [d for d in m.functions.get(call.func.value, ())
            if m.class_of(d) is None and m.enclosing(d, cst.FunctionDef) is None]
    if len(defs) != 1:
        return None
    fn = defs[0]
    if facts.grad_use(fn.body) or not _returns_graph(m, fn):
        return None
    params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)]
    for name in params:
        arg = argument_for(fn, call, name)
        if not isinstance(arg, (cst.Name, cst.Attribute)) or not facts.is_model(arg):
            continue
        # the mode inside the function itself: this call runs with gradients on (the caller checked),
        # whatever its other calls do (one made under `no_grad` in the training loop, E37-2)
        inner = [c for c in m.calls_in(fn.body, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda))
                 if isinstance(c.func, cst.Name) and c.func.value == name and facts.local_grad_mode(c) is None]
        if inner and not any(_model_takes_gradients(m, c) for c in inner):
            return arg
    return None


# facebookresearch/higher's differentiable optimizers: their `step(loss, params=...)` takes
# `torch.autograd.grad` of the loss (higher/optim.py), so a forward that unrolls one (its
# examples/deep-energy-mnist.py: `inner_opt = higher.get_diff_optim(...)`, `y, = inner_opt.step(E.sum(),
# params=[y])`) needs autograd on at inference too
_AUTOGRAD_CALLS = ("torch.autograd.grad", "torch.autograd.backward", "torch.autograd.functional.",
                   "higher.get_diff_optim", "higher.create_diff_optim", "higher.optim.", "higher.innerloop_ctx")


def _no_grad_fallback(m, facts: TrainingFacts, call: cst.Call) -> bool:
    """`call` runs in an `except` clause of a `try` whose body makes a model call with gradients off
    (pythae's trainers, PRECISION43: `try: with torch.no_grad(): out = self.model(x)` then
    `except RuntimeError: out = self.model(x)`): the retry is for models whose forward needs
    autograd (RHVAE's leapfrog steps take `torch.autograd.grad`), and runs only when `no_grad`
    raised; the loop's evaluation itself is under `no_grad`."""
    handler = m.enclosing(call, cst.ExceptHandler)
    if handler is None:
        return False
    tried = m.parents.get(handler)
    if not isinstance(tried, cst.Try) or handler not in tried.handlers:
        return False
    return any(isinstance(n, cst.Call) and facts.grad_mode_at(n) == "off"
               and dotted(_callee(n, facts)) == dotted(_callee(call, facts))
               for n in walk(tried.body))


def _model_takes_gradients(m, call: cst.Call) -> bool:
    """The model called was built from a module class of the file one of whose methods (its own or
    a base's of the file) takes gradients itself: `torch.autograd.grad(energy, pos)` for the forces
    of OCP-style interatomic potentials, `torch.autograd.functional.jacobian`. Its forward needs
    autograd on: under `no_grad` the grad call raises "element 0 of tensors does not require grad"."""
    callee = _callee(call)
    ctor = m.constructor_of(callee)
    cls = ctor.func.value if ctor is not None and isinstance(ctor.func, cst.Name) else m.value_of(callee).cls
    if cls not in m.classes and isinstance(_chain_root(callee), cst.Name) and any(
            m.class_is(name, MODULE_BASES) and _class_takes_gradients(m, name) for name in m.classes):
        # a model whose class the analysis cannot tell (`model_best` a parameter, or loaded with
        # `torch.load`), in a file whose own module class differentiates in its methods (intro_dgm's
        # EBM: forward -> Langevin sampling -> `torch.autograd.grad`): it may be that class
        return True
    if cls not in m.classes and _adapts_to_support_set(call) and not _class_seen(m, call):
        return True
    return _class_takes_gradients(m, cls)


_SUPPORT_WORDS = frozenset({"shot", "shots", "support", "supp", "spt"})
_LABEL_WORDS = frozenset({"label", "labels", "lbl", "lbls", "y", "ys", "target", "targets", "tgt"})
_QUERY_WORDS = frozenset({"query", "queries", "qry"})


def _words(name: str) -> set[str]:
    """`label_shot` -> {label, shot}; `ySpt` -> {y, spt}."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return {w.lower() for w in re.split(r"[_\d]+", spaced) if w}


def _adapts_to_support_set(call: cst.Call) -> bool:
    """The model is handed a few-shot episode: the labels of the support set and the query set
    (`model((data_shot, label_shot, data_query))`, `learner(x_spt, y_spt, x_qry)`), as an argument
    each or as items of one tuple. Such a learner adapts to the labelled support set inside its
    forward, in the meta-learning family by gradient steps (MAML's inner loop: meta-transfer-
    learning's `MtlLearner.meta_forward` takes `torch.autograd.grad` of the support loss, P51-1),
    which raise under `no_grad`. Read by the names only: a model of another file, whose forward
    the analysis cannot see."""
    names = []
    for a in call.args:
        items = [e.value for e in a.value.elements] if isinstance(a.value, (cst.Tuple, cst.List)) else [a.value]
        for v in items:
            if isinstance(v, cst.Name):
                names.append(v.value)
            elif isinstance(v, cst.Attribute):
                names.append(v.attr.value)
        if a.keyword is not None:
            names.append(a.keyword.value)
    words = [_words(n) for n in names]
    support_labels = [i for i, w in enumerate(words) if w & _SUPPORT_WORDS and w & _LABEL_WORDS]
    query = [i for i, w in enumerate(words) if w & _QUERY_WORDS]
    return bool(support_labels) and any(q not in support_labels for q in query)


def _class_takes_gradients(m, cls) -> bool:
    """A method of the class (or of a base of the file) calls `torch.autograd.grad` & co."""
    seen = set()
    while cls in m.classes and cls not in seen:
        seen.add(cls)
        info = m.classes[cls]
        for fn in info.methods.values():
            for c in m.calls_in(fn.body, (cst.ClassDef,)):
                q = m.qualname(c.func) or ""
                if q.startswith(_AUTOGRAD_CALLS):
                    return True
        bases = [b for b in info.bases if b in m.classes]
        cls = bases[0] if bases else None
    return False


# libraries whose models' forwards never call autograd themselves
_LIBRARY_MODELS = ("torch.", "torchvision.", "torchaudio.", "timm.", "transformers.", "torch_geometric.nn.",
                   "segmentation_models_pytorch.", "sentence_transformers.")


def _class_seen(m, call: cst.Call, facts: TrainingFacts | None = None) -> bool:
    """The model `call` runs is of a class the analysis sees: a class of this file (which
    `_model_takes_gradients` has read) or a model of a known library. A model of another file, or
    of a class named by a string (IDR's `get_class(conf.get_string("train.model_class"))(conf=...)`,
    whose forward takes normals with `torch.autograd.grad`), may need autograd in its forward:
    wrapping its loop in `no_grad` is then a guess, and the fix is unsafe (PRECISION26 A2)."""
    return _built_from_seen_class(m, _callee(call, facts), 0)


def _built_from_seen_class(m, expr: cst.BaseExpression | None, depth: int) -> bool:
    """`expr` is a model built from a class of the file or of a known library: through moves
    (`Net().to(d)`, `model = model.cuda()`), every binding of a name or `self.attr`, and a
    parameter's argument at every call of its function the engine resolved."""
    if expr is None or depth > 4:
        return False
    v = m.value_of(expr)
    if v.cls is not None and v.cls in m.classes:
        return True
    expr = m.unmoved(expr)
    if isinstance(expr, cst.Call):
        if isinstance(expr.func, cst.Name) and expr.func.value in m.classes:
            return True
        return (m.qualname(expr.func) or "").startswith(_LIBRARY_MODELS)
    if not isinstance(expr, (cst.Name, cst.Attribute)):
        return False
    bindings = m.bindings_of(expr)
    if not bindings:
        return False
    text = dotted(expr)
    for b in bindings:
        if b.how == "param":
            fn = m.function_of_param(b)
            sites = m.resolved_sites(fn) if fn is not None else []
            if not sites or not all(_built_from_seen_class(m, argument_for(fn, s, b.name), depth + 1)
                                    for s in sites):
                return False
            continue
        if b.how != "assign" or b.value is None:
            return False
        root = m.unmoved(b.value)
        if isinstance(root, (cst.Name, cst.Attribute)) and dotted(root) == text:
            continue  # `model = model.cuda()`: the same model moved
        if not _built_from_seen_class(m, b.value, depth + 1):
            return False
    return True


def _helper_for_other_files(m, facts: TrainingFacts, loop: cst.CSTNode, fn: cst.FunctionDef) -> bool:
    """`fn` is a module-level helper that evaluation reaches by its name only (influenza_transformer's
    `run_encoder_decoder_inference(model, src, ...)`, whose docstring leaves `no_grad` to the caller
    because training calls it too): no model is put in eval mode before the loop or in `fn`, the
    model the loop calls is a parameter of `fn`, `fn` hands back as it is the output of a call of
    that model made after the loop (the loop only builds the decoder input), and nothing in the file
    names `fn` (its callers are in other files, out of reach: their grad mode
    cannot be read). A helper the file calls is judged at its calls (`grad_mode_at`)."""
    if fn not in m.module.body:
        return False  # a method, or a function nested in another: judged as before
    if facts.mode_before(loop) == "eval" or _evals_in_body(m, loop):
        return False
    for c in facts.calls_in(fn.body, False):
        mo = method_of(c)
        if mo is not None and mo[1] in ("eval", "train") and facts.is_model(mo[0]):
            return False  # `model.eval()` in the helper: an evaluation function whatever its callers
    params = {p.name.value for p in fn.params.params}
    params |= {p.name.value for p in fn.params.kwonly_params}
    called = facts.model_calls(loop)
    if not called or not all(isinstance(c.func, cst.Name) and c.func.value in params for c in called):
        return False
    if not _returns_model_output(m, fn, {c.func.value for c in called}, loop):
        return False
    name = fn.name.value
    for node in m.walk(m.module, ()):
        if isinstance(node, cst.Name) and node.value == name and node is not fn.name:
            return False
        if isinstance(node, cst.Attribute) and node.attr.value == name:
            return False
    return True


def _returns_model_output(m, fn: cst.FunctionDef, models: set, loop: cst.CSTNode) -> bool:
    """A `return` of `fn` gives back, as it is, the output of a call of one of `models` (parameters of
    `fn`) made outside `loop`: `return model(src, tgt)`, or `out = model(src, tgt)` ... `return out`
    where every binding of `out` in `fn` is such a call. (A loop that collects or keeps its own
    outputs for the return, `for x in loader: out = model(x)` ... `return out`, does not count.)"""
    def model_call(e) -> bool:
        return (isinstance(e, cst.Call) and isinstance(e.func, cst.Name) and e.func.value in models
                and not m.contains(loop, e))

    bound: dict[str, bool] = {}
    for node in m.walk(fn.body, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        targets = ()
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign)):
            targets = [node.target]
        elif isinstance(node, (cst.For, cst.WithItem)):
            targets = [getattr(node, "target", None) or getattr(getattr(node, "asname", None), "name", None)]
        for t in targets:
            for n in ([t, *m.walk(t, ())] if t is not None else ()):
                if isinstance(n, cst.Name):
                    ok = isinstance(node, cst.Assign) and t is n and model_call(node.value)
                    bound[n.value] = bound.get(n.value, True) and ok
    for node in m.walk(fn.body, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if isinstance(node, cst.Return) and node.value is not None:
            v = node.value
            if model_call(v) or (isinstance(v, cst.Name) and bound.get(v.value, False)):
                return True
    return False


def _hands_back_graph(m, fn: cst.FunctionDef) -> bool:
    """A `return` of `fn` hands back a value the flow engine knows holds an autograd graph (a model
    output, or a tuple with one: affinity-vae's `return x, x_hat, lat_mu, ...`), not only numbers
    or detached values."""
    for node in m.walk(fn.body, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if isinstance(node, cst.Return) and node.value is not None:
            v = m.value_of(node.value)
            if v.graph or any(it.graph for it in (v.items or ())):
                return True
    return False


def _returns_graph(m, fn: cst.FunctionDef) -> bool:
    """`fn` hands its model output back as it is: it returns something and detaches nothing itself
    (an RL agent's `select_action`, which returns `out.argmax().detach().cpu().numpy()`, keeps no
    graph for its caller's loop)."""
    returns = False
    for node in m.walk(fn.body, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if isinstance(node, cst.Return) and node.value is not None:
            returns = True
        elif (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
              and node.func.attr.value in ("detach", "detach_", "numpy", "item", "tolist")):
            return False
    return returns


_INFERENCE_MODES = frozenset({"inference", "infer", "test", "eval", "evaluate", "predict", "sample"})


_NO_GRAD_CONTEXTS = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad"})


def _forward_picks_no_grad(m, call: cst.Call) -> bool:
    """The model's class (of this file) has a `forward` that returns, on some path, what a method
    decorated with `@torch.no_grad()` / `@torch.inference_mode()` gives (YOLO-Family's
    `if not self.trainable: return self.inference_single_image(x)`, PRECISION31 A6): the model
    picks its grad mode itself."""
    cls = m.value_of(call.func).cls
    found = m.method_of_class(cls, "forward") if cls in m.classes else None
    if found is None:
        return False
    fn, owner = found
    for ret in m.walk(fn.body):
        if not isinstance(ret, cst.Return):
            continue
        node = ret.value
        if (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and isinstance(node.func.value, cst.Name) and node.func.value.value == "self"):
            meth = m.method_of_class(cls, node.func.attr.value)
            if meth is not None and any(
                    m.qualname(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator) in _NO_GRAD_CONTEXTS
                    for d in meth[0].decorators):
                return True
    return False


def _inference_mode_argument(m, call: cst.Call) -> bool:
    """`model(data_i, mode="inference")` (NVlabs/SPADE `test.py`; pix2pixHD-style models): a model
    whose `forward` dispatches on a mode string and runs its inference branch under `torch.no_grad()`
    itself: a string literal naming an inference mode, given as `mode=`/`phase=` or positionally
    (not to a class of the file called by name, `Net(...)`)."""
    if isinstance(call.func, cst.Name) and call.func.value in m.classes:
        return False
    for a in call.args:
        if a.keyword is not None and a.keyword.value not in ("mode", "phase"):
            continue
        v = a.value
        if isinstance(v, cst.SimpleString) and v.evaluated_value.lower() in _INFERENCE_MODES:
            return True
    return False


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
    loop over its `.parameters()` sets `p.requires_grad = False` (or calls `p.requires_grad_(False)`
    or `p.detach_()`). With no parameter asking for a gradient (and inputs from a loader), autograd
    records nothing: `no_grad` would change nothing. A global model frozen at module level counts
    for a module-level function whose every call comes after the freeze (a mean teacher frozen in
    the `__main__` block, evaluated by `def test(loader)`)."""
    m = ctx.model
    name = ctx.code(call.func)
    if not isinstance(call.func, (cst.Name, cst.Attribute)):
        return False
    scope = m.scope_of(loop)
    last = _last_freeze(ctx, name, scope, loop)
    if last is not None:
        return last[1]
    return _frozen_globally(ctx, call, name, scope)


def _last_freeze(ctx: Context, name: str, scope: cst.CSTNode, before: cst.CSTNode | None):
    """(position, frozen?) of the last `requires_grad_(...)` on `name` or loop over its
    `.parameters()` that sets `requires_grad`, in `scope` (not nested deeper) and before `before`
    (anywhere in `scope` when None); None when there is none."""
    m = ctx.model
    last = None  # (position, frozen?)
    for c in m.calls_in(scope) if scope is not m.module else m.calls:
        f = c.func
        if not (isinstance(f, cst.Attribute) and f.attr.value == "requires_grad_"):
            continue
        if before is not None and (not m.precedes(c, before) or m.contains(before, c)):
            continue
        if m.scope_of(c) is not scope:
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
        if not isinstance(n, cst.For) or m.scope_of(n) is not scope:
            continue
        if before is not None and not m.precedes(n, before):
            continue
        it = n.iter
        item = _param_item(n)
        if item is None or ctx.code(it.func.value) != name:
            continue
        for s in m.walk(n.body):
            frozen = None
            if (isinstance(s, cst.Assign) and len(s.targets) == 1 and isinstance(s.targets[0].target, cst.Attribute)
                    and s.targets[0].target.attr.value == "requires_grad"
                    and ctx.code(s.targets[0].target.value) == item):
                frozen = isinstance(s.value, cst.Name) and s.value.value == "False"
            elif (isinstance(s, cst.Call) and isinstance(s.func, cst.Attribute)
                  and ctx.code(s.func.value) == item and isinstance(m.parent(s), cst.Expr)):
                if s.func.attr.value == "detach_" and not s.args:
                    frozen = True  # `p.detach_()` on a leaf parameter turns its `requires_grad` off
                elif s.func.attr.value == "requires_grad_":
                    arg = s.args[0].value if s.args else None
                    frozen = isinstance(arg, cst.Name) and arg.value == "False"
            if frozen is not None and (last is None or m.order[n] > last[0]):
                last = (m.order[n], frozen)
    return last


def _frozen_globally(ctx: Context, call: cst.Call, name: str, scope: cst.CSTNode) -> bool:
    """`teacher_model(data)` in `def test(loader)`, a module-level function that does not bind
    `teacher_model`; the module freezes the model after its last module-level assignment, and
    every call of `test` is a module-level statement after that freeze (InfoGraph's mean teacher:
    `for param in teacher_model.parameters(): param.detach_()` in the `__main__` block)."""
    m = ctx.model
    if not isinstance(call.func, cst.Name) or not isinstance(scope, cst.FunctionDef):
        return False
    if m.scope_of(scope) is not m.module or m.class_of(scope) is not None:
        return False
    if m.bindings.get((scope, name)):
        return False  # a local (or a parameter) of the function
    bound = m.bindings.get((m.module, name), [])
    last = _last_freeze(ctx, name, m.module, None)
    if not bound or last is None or not last[1]:
        return False
    if any(m.order.get(b.node, -1) > last[0] for b in bound):
        return False  # the model was built again after the freeze
    callers = [c for c in m.calls if isinstance(c.func, cst.Name) and c.func.value == scope.name.value]
    refs = [n for n in m.nodes if isinstance(n, cst.Name) and n.value == scope.name.value and n is not scope.name]
    if not callers or len(refs) != len(callers):
        return False  # never called, or handed on as a value (a callback): cannot tell when it runs
    return all(m.scope_of(c) is m.module and m.order[c] > last[0] for c in callers)


_FREEZE_KEEPS = frozenset({"eval", "to", "cuda", "cpu", "float", "half", "double", "bfloat16", "train"})


def _frozen_attribute(ctx: Context, call: cst.Call) -> bool:
    """`self.model_old(x)` where every value the file stores in `.model_old` is None or frozen at
    once, in the statements right after it in its block: `self.model_old = deepcopy(self.model)`,
    `self.model_old.eval()`, then `freeze_model(self.model_old)` (a module-level function of the
    file whose body sets `requires_grad = False` on each parameter of its argument), a loop over
    `self.model_old.parameters()` doing so, or `self.model_old.requires_grad_(False)`; and nothing
    in the file unfreezes it or hands it elsewhere (joansj/hat's LwF `Appr`, PRECISION34 P34-A2).
    The freeze may sit in another method than the loop (`train()` builds the old model, `eval()`
    runs it): no value of the attribute ever asks for a gradient, so autograd records nothing."""
    m = ctx.model
    callee = _callee(call)
    if not (isinstance(callee, cst.Attribute) and isinstance(callee.value, cst.Name) and callee.value.value == "self"):
        return False
    attr = callee.attr.value
    text = "self." + attr
    stores = 0
    for n in m.nodes:
        if isinstance(n, (cst.AugAssign, cst.AnnAssign)) and isinstance(n.target, cst.Attribute) \
                and n.target.attr.value == attr:
            return False
        if not isinstance(n, cst.Assign):
            continue
        for t in n.targets:
            for target, value in _attr_stores(t.target, n.value, attr):
                if dotted(target) != text or m.class_of(n) is None or value is None:
                    return False  # stored from outside a class, or unpacked from a value not shown
                stores += 1
                if not (_is_none(value) or _freezes_expr(value) or _frozen_after(ctx, n, text)):
                    return False
    if not stores:
        return False
    # nothing unfreezes it, and it is handed to no call (an optimizer, an unknown helper) other
    # than a freeze helper
    for c in m.calls:
        f = c.func
        if (isinstance(f, cst.Attribute) and f.attr.value == "requires_grad_"
                and dotted(_chain_root(f.value)) == text and not _false_arg(c)):
            return False
        for a in c.args:
            v = a.value
            root = _chain_root(v)
            if (dotted(root) == text or dotted(v) == text) and not _freeze_call(m, c):
                return False
    for n in m.nodes:
        if (isinstance(n, cst.For) and isinstance(n.iter, cst.Call) and dotted(_chain_root(n.iter)) == text
                and _params_loop_freezes(n) is not True and _params_loop_sets(n)):
            return False  # `for p in self.model_old.parameters(): p.requires_grad = True`
    return True


def _attr_stores(target, value, attr: str):
    """(target, value) pairs of an assignment's `X.<attr>` targets: `self.a = v`, and
    `self.a, self.b = v1, v2` matched by position (value None when it cannot be matched)."""
    if isinstance(target, cst.Attribute):
        if target.attr.value == attr:
            yield target, value
        return
    if isinstance(target, (cst.Tuple, cst.List)):
        elems = [e.value for e in target.elements]
        values = [e.value for e in value.elements] if isinstance(value, (cst.Tuple, cst.List)) else None
        if values is not None and (len(values) != len(elems)
                                   or any(isinstance(e, cst.StarredElement) for e in value.elements)):
            values = None
        for i, e in enumerate(elems):
            yield from _attr_stores(e, values[i] if values is not None else None, attr)


def _false_arg(c: cst.Call) -> bool:
    arg = c.args[0].value if c.args else None
    return isinstance(arg, cst.Name) and arg.value == "False"


def _freezes_expr(expr, text: str | None = None) -> bool:
    """`X.requires_grad_(False)` (also as a link of a chain: `X.eval().requires_grad_(False).to(d)`),
    with X's code `text` when given."""
    cur = expr
    while isinstance(cur, cst.Call) and isinstance(cur.func, cst.Attribute):
        if cur.func.attr.value == "requires_grad_":  # the outermost one decides
            return _false_arg(cur) and (text is None or dotted(_chain_root(cur.func.value)) == text)
        cur = cur.func.value
    return False


def _param_item(loop: cst.For) -> str | None:
    """The name a loop over a module's parameters binds each parameter to: `p` in `for p in
    X.parameters()` and in `for name, p in X.named_parameters()` (P68-1); None for any other loop."""
    it = loop.iter
    if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and not it.args):
        return None
    if it.func.attr.value == "parameters" and isinstance(loop.target, cst.Name):
        return loop.target.value
    if (it.func.attr.value == "named_parameters" and isinstance(loop.target, cst.Tuple)
            and len(loop.target.elements) == 2 and isinstance(loop.target.elements[1].value, cst.Name)):
        return loop.target.elements[1].value.value
    return None


def _params_loop_sets(loop: cst.For) -> bool:
    """The loop over `X.parameters()` sets `requires_grad` of its item somewhere in its body."""
    for s in walk(loop.body):
        if (isinstance(s, cst.Assign) and any(isinstance(t.target, cst.Attribute) and t.target.attr.value == "requires_grad"
                                               for t in s.targets)):
            return True
        if isinstance(s, cst.Call) and isinstance(s.func, cst.Attribute) and s.func.attr.value == "requires_grad_":
            return True
    return False


def _params_loop_freezes(loop: cst.CSTNode, text: str | None = None) -> bool | None:
    """`for p in X.parameters(): p.requires_grad = False` (or `p.requires_grad_(False)`, `p.detach_()`)
    as a statement of the loop's own body (not under an `if`), and nothing in it that sets the flag
    otherwise: True; None when `loop` is no such loop over X's (code `text`) parameters."""
    if not (isinstance(loop, cst.For) and _param_item(loop) is not None
            and isinstance(loop.body, cst.IndentedBlock) and loop.orelse is None):
        return None
    if text is not None and dotted(loop.iter.func.value) != text:
        return None
    p = _param_item(loop)
    frozen = False
    for st in loop.body.body:
        if not isinstance(st, cst.SimpleStatementLine):
            continue
        for small in st.body:
            if (isinstance(small, cst.Assign) and len(small.targets) == 1
                    and isinstance(small.targets[0].target, cst.Attribute)
                    and small.targets[0].target.attr.value == "requires_grad"
                    and dotted(small.targets[0].target.value) == p):
                frozen = isinstance(small.value, cst.Name) and small.value.value == "False"
            elif (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
                  and isinstance(small.value.func, cst.Attribute) and dotted(small.value.func.value) == p):
                meth = small.value.func.attr.value
                if meth == "detach_" and not small.value.args:
                    frozen = True
                elif meth == "requires_grad_":
                    frozen = _false_arg(small.value)
    return frozen and not any(isinstance(s, (cst.If, cst.Try, cst.While, cst.For)) for s in walk(loop.body))


# helpers of another file that freeze every parameter of their one argument, by name (joansj/hat's
# `utils.freeze_model(model)`: `for param in model.parameters(): param.requires_grad = False`);
# not `freeze_bn` (normalisation statistics), `freeze_stages`/`freeze_layers` (a part)
_FREEZE_HELPERS = frozenset({"freeze_model", "freeze_module", "freeze_net", "freeze_network", "freeze_params",
                             "freeze_parameters", "freeze_all"})


def _freeze_call(m, c: cst.Call) -> bool:
    """`freeze_model(X)` with X its only argument: a module-level function of the file that
    freezes its parameter (`_freeze_helper_param`), or a function of another file (imported, not
    defined here) named as one that freezes all parameters (`utils.freeze_model(X)`)."""
    if len(c.args) != 1 or c.args[0].keyword is not None or c.args[0].star:
        return False
    if _freeze_helper_param(m, c) is not None:
        return True
    f = c.func
    name = f.value if isinstance(f, cst.Name) else f.attr.value if isinstance(f, cst.Attribute) else None
    if name not in _FREEZE_HELPERS or name in m.functions:
        return False  # a function of the file is read, not guessed by its name
    if isinstance(f, cst.Attribute) and not (isinstance(f.value, cst.Name) and f.value.value in m.aliases):
        return False  # `utils.freeze_model`: a module the file imports (not a method of an object)
    return isinstance(f, cst.Attribute) or m.qualname(f) is not None


def _freeze_helper_param(m, c: cst.Call) -> str | None:
    """`freeze_model(X)`: a module-level function of the file with one parameter that its body
    freezes unconditionally (a top-level loop over `param.parameters()` setting `requires_grad =
    False`, or `param.requires_grad_(False)` as a statement) and uses for nothing else: the
    parameter's name, else None."""
    if not isinstance(c.func, cst.Name) or len(c.args) != 1 or c.args[0].keyword is not None or c.args[0].star:
        return None
    fn = m.module_function(c.func.value)
    if fn is None or fn.decorators or not isinstance(fn.body, cst.IndentedBlock):
        return None
    params = fn.params
    if params.posonly_params or params.kwonly_params or params.star_arg not in (None, cst.MaybeSentinel.DEFAULT) \
            or params.star_kwarg is not None or len(params.params) != 1:
        return None
    name = params.params[0].name.value
    frozen = False
    for st in fn.body.body:
        if isinstance(st, cst.For):
            if _params_loop_freezes(st, name):
                frozen = True
                continue
            return None
        if not isinstance(st, cst.SimpleStatementLine):
            return None
        for small in st.body:
            if isinstance(small, cst.Return) and small.value is None:
                continue
            if isinstance(small, cst.Expr) and _freezes_expr(small.value, name):
                frozen = True
                continue
            return None
    return name if frozen else None


def _frozen_after(ctx: Context, assign: cst.Assign, text: str) -> bool:
    """The statements right after `assign` in its block freeze `text` before anything but
    calls on `text` itself (`.eval()`, `.to(d)`) runs: `self.model_old.eval()` then
    `freeze_model(self.model_old)`, or a loop over its `.parameters()`."""
    m = ctx.model
    stmt = m.statement_of(assign)
    block = m.parent(stmt)
    body = getattr(block, "body", None)
    at = next((i for i, s in enumerate(body) if s is stmt), None) if isinstance(body, (list, tuple)) else None
    if at is None:
        return False
    for st in body[at + 1:]:
        if isinstance(st, cst.For):
            return bool(_params_loop_freezes(st, text))
        if not isinstance(st, cst.SimpleStatementLine) or len(st.body) != 1 or not isinstance(st.body[0], cst.Expr):
            return False
        v = st.body[0].value
        if _freezes_expr(v, text):
            return True
        if isinstance(v, cst.Call) and _freeze_call(m, v) and dotted(v.args[0].value) == text:
            return True
        # `self.model_old.eval()`, `self.model_old.to(device)`: calls on the attribute only
        cur = v
        while isinstance(cur, cst.Call) and isinstance(cur.func, cst.Attribute):
            if cur.func.attr.value not in _FREEZE_KEEPS or any(
                    isinstance(x, cst.Call) for a in cur.args for x in (a.value, *walk(a.value))):
                return False
            cur = cur.func.value
        if cur is v or dotted(cur) != text:
            return False
    return False


def _detached_at_once(m, call: cst.Call) -> bool:
    """`model(x).detach()` (or `.detach().cpu()...`): the result keeps no graph. Also `target =
    model(x)` handed only to classes or functions of the file that detach it at once
    (`ContentLoss(target)` with `self.target = target.detach()`, the style-transfer tutorial's
    model assembly loop)."""
    parent = m.parent(call)
    if isinstance(parent, cst.Attribute) and parent.attr.value in ("detach", "detach_"):
        return isinstance(m.parent(parent), cst.Call)
    return _detached_by_consumers(m, call)


def _detached_by_consumers(m, call: cst.Call) -> bool:
    stmt = m.parent(call)
    if not (isinstance(stmt, cst.Assign) and stmt.value is call and len(stmt.targets) == 1
            and isinstance(stmt.targets[0].target, cst.Name)):
        return False
    name = stmt.targets[0].target.value
    scope = m.enclosing(call, cst.FunctionDef) or m.module
    reads = []
    for n in m.walk(scope):
        if (isinstance(n, cst.Name) and n.value == name and n is not stmt.targets[0].target
                and not (isinstance(m.parent(n), cst.Attribute) and m.parent(n).attr is n)):
            if any(b.value is call for b in m.bindings_of(n)):
                reads.append(n)
    if not reads:
        return False
    for n in reads:
        arg = m.parent(n)
        use = m.parent(arg) if isinstance(arg, cst.Arg) and arg.value is n and not arg.star else None
        if not isinstance(use, cst.Call) or not isinstance(use.func, cst.Name):
            return False
        if use.func.value in m.classes:
            found = m.method_of_class(use.func.value, "__init__")
            callee, skip = (found[0], 1) if found is not None else (None, 0)
        else:
            callee, skip = m.module_function(use.func.value), 0
        if callee is None:
            return False
        i = [a for a in use.args if a.keyword is None].index(arg) if arg.keyword is None else 0
        param = param_name(callee, i + skip, arg)
        if param is None:
            return False
        uses = [x for x in m.walk(callee.body) if isinstance(x, cst.Name) and x.value == param
                and not (isinstance(m.parent(x), cst.Attribute) and m.parent(x).attr is x)]
        if not uses or not all(
                isinstance(m.parent(x), cst.Attribute) and m.parent(x).value is x
                and m.parent(x).attr.value in ("detach", "detach_") and isinstance(m.parent(m.parent(x)), cst.Call)
                for x in uses):
            return False
    return True


_GRAD_EFFECTS = frozenset({"grad", "backward", "step"})


def _only_through(loop, call: cst.Call) -> bool:
    """The loop's backward passes and optimizer steps all come through `call` (a helper that
    does them), none written in the loop itself."""
    return (not loop.backward and not loop.steps and set(loop.backward_via) <= {call}
            and set(loop.steps_via) <= {call})


def _call_env(fn: cst.FunctionDef, call: cst.Call) -> dict:
    """What each parameter of `fn` holds at `call`: the argument expression, or the parameter's
    default when the call passes none (absent when neither is known)."""
    env = {}
    if any(arg.star for arg in call.args):
        return env
    for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params):
        name = p.name.value
        a = argument_for(fn, call, name)
        if a is None:
            a = p.default
        if a is not None:
            env[name] = a
    return env


def _instance_env(m, cls: str, ctor: cst.Call) -> dict:
    """`self.<attr>` -> the expression that `__init__` stores in it from its parameter, as the
    constructor call `ctor` passes it (attributes assigned once in the class, in `__init__`)."""
    found = m.method_of_class(cls, "__init__")
    info = m.classes.get(cls)
    if found is None or info is None:
        return {}
    init = found[0]
    penv = _call_env(init, ctor)
    counts: dict = {}
    stored: dict = {}
    for meth in info.methods.values():
        for n in walk(meth.body, into_defs=False):
            targets = []
            if isinstance(n, cst.Assign):
                targets = [t.target for t in n.targets]
            elif isinstance(n, (cst.AugAssign, cst.AnnAssign)):
                targets = [n.target]
            for tt in targets:
                if isinstance(tt, cst.Attribute) and isinstance(tt.value, cst.Name) and tt.value.value == "self":
                    key = "self." + tt.attr.value
                    counts[key] = counts.get(key, 0) + 1
                    if (meth is init and isinstance(n, cst.Assign) and isinstance(n.value, cst.Name)
                            and n.value.value in penv):
                        stored[key] = penv[n.value.value]
    return {k: v for k, v in stored.items() if counts.get(k) == 1}


def _is_none(e) -> bool:
    return isinstance(e, cst.Name) and e.value == "None"


def _key_of(e) -> str | None:
    if isinstance(e, cst.Name):
        return e.value
    if isinstance(e, cst.Attribute) and isinstance(e.value, cst.Name) and e.value.value == "self":
        return "self." + e.attr.value
    return None


def _known(e, env: dict):
    """The value a test operand holds under env: None, True/False, an int, ("str", text) for a
    string literal, "object" (a constructor call: not None, truthy), or ... when unknown."""
    key = _key_of(e)
    if key is None or key not in env:
        return ...
    v = env[key]
    if isinstance(v, cst.Name) and v.value in ("None", "True", "False"):
        return {"None": None, "True": True, "False": False}[v.value]
    if isinstance(v, cst.Integer) and v.value.isdigit():
        return int(v.value)
    if isinstance(v, cst.SimpleString) and "\\" not in v.value:
        try:
            return ("str", v.evaluated_value)
        except Exception:  # noqa: BLE001 - an odd literal: unknown
            return ...
    if isinstance(v, cst.Call) and isinstance(v.func, (cst.Name, cst.Attribute)):
        return "object"
    return ...


def _truth(test, env: dict):
    """True/False when the test's value is known under env, else None."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        t = _truth(test.expression, env)
        return None if t is None else not t
    if isinstance(test, cst.BooleanOperation):
        a, b = _truth(test.left, env), _truth(test.right, env)
        if isinstance(test.operator, cst.And):
            if a is False or b is False:
                return False
            return True if a is True and b is True else None
        if a is True or b is True:
            return True
        return False if a is False and b is False else None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        c = test.comparisons[0]
        if isinstance(c.operator, (cst.Is, cst.IsNot)) and _is_none(c.comparator):
            v = _known(test.left, env)
            if v is ...:
                return None
            same = v is None
            return same if isinstance(c.operator, cst.Is) else not same
        if isinstance(c.operator, (cst.Equal, cst.NotEqual)) and isinstance(c.comparator, cst.SimpleString):
            # `phase == 'train'` with `phase` known to hold a string literal
            v = _known(test.left, env)
            if not (isinstance(v, tuple) and v[0] == "str") or "\\" in c.comparator.value:
                return None
            try:
                same = v[1] == c.comparator.evaluated_value
            except Exception:  # noqa: BLE001
                return None
            return same if isinstance(c.operator, cst.Equal) else not same
        return None
    v = _known(test, env)
    if v is ...:
        return None
    if isinstance(v, tuple):
        return bool(v[1])  # a string literal: truthy unless empty
    return True if v == "object" else bool(v)


def _reachable(m, node, fn, env: dict) -> bool:
    """Whether `node` in `fn` may run under env: no `if` around it (in `fn`) whose test env
    decides against its branch."""
    child = node
    for anc in m.ancestors(node):
        if anc is fn:
            return True
        if isinstance(anc, cst.If) and not m.contains(anc.test, child):
            t = _truth(anc.test, env)
            in_body = m.contains(anc.body, child)
            if (t is False and in_body) or (t is True and not in_body):
                return False
        child = anc
    return True


def _dead_at_every_call(m, facts: TrainingFacts, node: cst.CSTNode, fn: cst.FunctionDef) -> bool:
    """Every call of `fn` in the file passes arguments under which an `if` around `node` (in `fn`)
    takes the other branch: OpenNRE's `infer` runs `self.eval()` then `self.forward(..., train=False)`,
    and the per-bag loop under `if train:` in `forward` never runs on that path. False when the
    file has no call of `fn` or a call whose arguments are not all known to the test."""
    sites = facts.call_sites(fn)
    return bool(sites) and all(not _reachable(m, node, fn, _call_env(fn, s)) for s in sites)


def _evals_under(m, facts: TrainingFacts, fn: cst.FunctionDef, env: dict, loops: list) -> bool:
    """`fn` itself puts a model in eval mode on the path that env takes, before its loops, and
    no `train()` may run on that path: jpata/particleflow#290's `train_and_valid(..., is_train)`
    starts with `if is_train: model.train() else: model.eval()`, and its `False` call validates."""
    evals = False
    for c in m.calls_in(fn.body, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        mo = method_of(c)
        if mo is None or mo[1] not in ("eval", "train") or not facts.is_model(mo[0]):
            continue
        if not _reachable(m, c, fn, env):
            continue
        if mo[1] == "train":
            return False  # `train()` may run on this path (or `train(False)`: left to the loop check)
        if c.args or any(m.contains(lp, c) for lp in loops):
            return False
        evals = True
    return evals


def _grad_work(m, facts: TrainingFacts, fn: cst.FunctionDef, env: dict, depth: int) -> bool | None:
    """Whether `fn`, run with its parameters as in env, may do gradient work (backward, an
    optimizer step, a gradient read): itself, through the file functions it calls, and through the
    callables it gets as arguments (instances of the file's classes with `__call__`, functions of
    the file); None when a callable argument is not known."""
    if depth > 2:
        return None
    for c in m.calls_in(fn.body, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if not _reachable(m, c, fn, env):
            continue
        out: set = set()
        facts._call_effects(c, out)
        if out & _GRAD_EFFECTS:
            return True
        for g in facts.file_functions(c):
            if facts.effects(g) & _GRAD_EFFECTS:
                return True
        key = _key_of(c.func)
        if key is None or key not in env:
            continue
        v = env[key]
        if isinstance(v, cst.Name) and v.value not in ("None", "True", "False"):
            ctor = m.constructor_of(v)  # `loss = AVAELoss(beta)` handed on by name (affinity-vae#113)
            if ctor is not None and isinstance(ctor.func, cst.Name) and ctor.func.value in m.classes:
                v = ctor
        if isinstance(v, cst.Call) and isinstance(v.func, cst.Name) and v.func.value in m.classes:
            cls = v.func.value
            found = m.method_of_class(cls, "__call__")
            if found is None:
                if m.class_is(cls, MODULE_BASES):
                    continue  # a module of the file: a forward, judged as a model call
                return None
            inner = _grad_work(m, facts, found[0], _instance_env(m, cls, v), depth + 1)
            if inner is not False:
                return inner
        elif isinstance(v, cst.Name) and m.module_function(v.value) is not None:
            g = m.module_function(v.value)
            inner = _grad_work(m, facts, g, _call_env(g, c), depth + 1)
            if inner is not False:
                return inner
        elif _is_none(v):
            continue
        elif m.value_of(v).kind == "module" or (m.qualname(getattr(v, "func", v)) or "").startswith("torch."):
            continue  # a module or a loss: a forward, no gradient work of its own
        else:
            return None
    for a in facts.grad_attributes_in(fn.body):
        if _reachable(m, a, fn, env):
            return True
    return False


def _caller_uses_gradients(m, facts: TrainingFacts, call: cst.Call) -> bool:
    """The scope of the call (outside nested definitions) runs a backward or reads gradients
    itself: what the call returns might be differentiated."""
    scope = m.scope_of(call)
    body = scope.body if isinstance(scope, cst.FunctionDef) else scope
    out: set = set()
    for c in m.calls_in(body, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        facts._call_effects(c, out)
    return bool(out & {"grad", "backward"})


def _result_differentiated(m, facts: TrainingFacts, stmt: cst.SimpleStatementLine) -> bool:
    """A name the statement assigns is handed, later in its scope, to a function of the file that
    runs a backward or reads gradients (`feats = extract(loader, model); fit_head(feats)`): the
    graph the call builds may be used."""
    small = stmt.body[0]
    targets = []
    if isinstance(small, cst.Assign):
        for t in small.targets:
            targets += [n.value for n in [t.target, *m.walk(t.target)] if isinstance(n, cst.Name)]
    elif isinstance(small, (cst.AugAssign, cst.AnnAssign)):
        targets += [n.value for n in [small.target, *m.walk(small.target)] if isinstance(n, cst.Name)]
    if not targets:
        return False
    scope = m.scope_of(stmt)
    body = scope.body if isinstance(scope, cst.FunctionDef) else scope
    for c in m.calls_in(body, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if not m.precedes(stmt, c) or m.contains(stmt, c):
            continue  # (the statement's own call: its gradient work is judged by the caller)
        uses = any(isinstance(n, cst.Name) and n.value in targets for a in c.args for n in [a.value, *m.walk(a.value)])
        if uses and any(facts.effects(g) & {"grad", "backward"} and _grad_work(m, facts, g, _call_env(g, c), 0) is not False
                        for g in facts.file_functions(c)):
            return True
    return False


_BUILTIN_READERS = frozenset(("print", "len", "isinstance", "getattr", "hasattr", "type", "id", "str", "repr"))


def _optimizer_to_unknown(m, facts: TrainingFacts, node: cst.CSTNode) -> bool:
    """`node` hands an optimizer to a call of code the file does not define (Uformer's
    `loss_scaler(loss, optimizer, parameters=model.parameters())` with timm's `NativeScaler`, which
    runs `backward()` and `optimizer.step()`): the loop may train through it, and `no_grad` around
    it would break that backward pass. Calls of torch itself and of the file's own functions (which
    the analysis reads) do not count."""
    for call in facts.calls_in(node, into_defs=False):
        if facts.file_functions(call):
            continue
        if isinstance(call.func, cst.Name) and call.func.value in _BUILTIN_READERS:
            continue  # `print(optimizer)`
        q = m.qualname(call.func) or ""
        if q.startswith("torch."):
            continue
        for a in call.args:
            if m.value_of(a.value).kind == "optimizer":
                return True
    return False


def _model_held_by_unknown(m, facts: TrainingFacts, node: cst.CSTNode, depth: int, seen: set) -> bool:
    """`node` calls a method of an object that code the file does not define was given a model
    (DeepRobust: `adversary = PGD(model)` before the loop and `adversary.generate(x, y)` in it; an
    attack object passed in as a parameter, `attack_method = PGD(model, args.device)` at the call
    site; or a helper of the file that does this, `self.adv_data(data, target)` building
    `PGD(self.model)`). Such an object may take gradients through the model (adversarial examples,
    Grad-CAM, attributions): `no_grad` around the loop would break its `backward()`."""
    for call in facts.calls_in(node, into_defs=False):
        f = call.func
        if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and _built_with_model(m, facts, f.value):
            return True
        if depth > 0:
            for fn in facts.file_functions(call):
                if fn not in seen:
                    seen.add(fn)
                    if _model_held_by_unknown(m, facts, fn.body, depth - 1, seen):
                        return True
    return False


def _built_with_model(m, facts: TrainingFacts, name: cst.Name) -> bool:
    """`name` holds what a call of code the file does not define returned, given a model: bound
    so, or a parameter whose arguments at the call sites are (directly or through a name bound so)."""
    values = []
    for b in m.bindings_of(name):
        if b.how == "assign" and b.value is not None:
            values.append(b.value)
        elif b.how == "param":
            for a in m.param_arguments(b):
                if isinstance(a, cst.Name):
                    values.extend(x.value for x in m.bindings_of(a) if x.how == "assign" and x.value is not None)
                else:
                    values.append(a)
    for v in values:
        if not isinstance(v, cst.Call) or facts.file_functions(v):
            continue
        if isinstance(v.func, cst.Name) and v.func.value in m.classes:
            continue  # a class of the file: the rule reads its methods
        if (m.qualname(v.func) or "").startswith("torch."):
            continue
        if any(facts.is_model(a.value) or (m.value_of(a.value).kind == "module" and not facts.is_loss_module(a.value))
               for a in v.args):
            return True
    return False


# a loader of held-out data by its name: `test_loader`, `val_dl`, `validloader`, `mnist_test_loader`,
# `self.valid_iter` (the name's last part)
_HELD_OUT = re.compile(
    r"(?:\w+_)?(?:test|val|valid|validation|eval|evaluation|dev|holdout)_?"
    r"(?:loader|dl|dataloader|data_loader|iter|iterator|batches|gen|generator|ds|data|set|dataset)s?",
    re.IGNORECASE,
)


def _assigned_names(node: cst.CSTNode) -> set[str]:
    """Names an assignment statement binds (`a = ...`, `a, b = ...`, `a += ...`, `a: T = ...`)."""
    targets = []
    if isinstance(node, cst.Assign):
        targets = [t.target for t in node.targets]
    elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
        targets = [node.target]
    out = set()
    for t in targets:
        for n in (t, *walk(t)):
            if isinstance(n, cst.Name):
                out.add(n.value)
    return out


def _feeds_enclosing_backward(m, info) -> bool:
    """A loop nested in a loop that runs a backward pass, whose outputs reach the tensor that
    backward differentiates, later in the same enclosing loop (mnemonics training: the features
    of each learnable exemplar are computed in an inner `for` under a frozen `model.eval()`, stacked
    into class means, and the outer loop's `loss.backward()` trains the exemplars through them):
    `no_grad` around the inner loop would cut that backward. Followed through plain assignments
    in the enclosing loop, from the inner loop to the receiver of `.backward()`."""
    inner = info.node
    tainted = set()
    for n in walk(inner):
        tainted |= _assigned_names(n)
        if (isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value in ("append", "extend")
                and isinstance(n.func.value, cst.Name)):
            tainted.add(n.func.value.value)
    if not tainted or inner not in m.order:
        return False
    p = info.parent
    while p is not None:
        for b in p.backward:
            if m.contains(inner, b) or not m.precedes(inner, b) or not isinstance(b.func, cst.Attribute):
                continue
            names = set(tainted)
            assigns = sorted((a for a in walk(p.node) if isinstance(a, (cst.Assign, cst.AugAssign, cst.AnnAssign))
                              and a in m.order and not m.contains(inner, a)
                              and m.precedes(inner, a) and m.precedes(a, b)), key=m.order.get)
            for a in assigns:
                value = a.value
                if value is not None and any(isinstance(x, cst.Name) and x.value in names for x in (value, *walk(value))):
                    names |= _assigned_names(a)
            recv = b.func.value
            if any(isinstance(x, cst.Name) and x.value in names for x in (recv, *walk(recv))):
                return True
        p = p.parent
    return False


def _held_out_loop_in_training(m, facts: TrainingFacts, info) -> bool:
    """A `for` loop over a loader (or dataset) of held-out data, named so (`for images, labels in
    test_loader:`), nested in a training loop (one with a backward pass and an optimizer step): the
    test-accuracy check course notebooks run every N iterations (emadRad/lstm-gru-pytorch, the
    "Deep Learning Wizard" shape), with no `model.eval()` and no evaluation function around it.
    Its own gradient work (test-time training) is judged by the caller, as for any loop."""
    if not _held_out_loader_loop(m, info.node):
        return False
    p = info.parent
    while p is not None:
        if p.is_training:
            return True
        p = p.parent
    return False


def _held_out_loop_after_training(m, facts: TrainingFacts, info) -> bool:
    """The same held-out loop after the training loop, in the same function or at module level
    (the final test-accuracy check of a course script: `for x, y in test_loader: out = net(x)` once
    training is done), calling a model that training loop called."""
    node = info.node
    if info.parent is not None or not _held_out_loader_loop(m, node):
        return False
    scope = m.scope_of(node)
    at = m.order.get(node)
    called = {dotted(_callee(c)) for c in _model_calls(facts, node)} - {None}
    if at is None or not called:
        return False
    for other in facts.loops:
        if (not other.is_training or other.parent is not None or m.scope_of(other.node) is not scope
                or m.order.get(other.node, at) >= at):
            continue
        if called & {dotted(_callee(c)) for c in _model_calls(facts, other.node)}:
            return True
    return False


def _held_out_loader_loop(m, node) -> bool:
    """A `for` over a loader or dataset named as held-out data (`test_loader`, `val_dl`)."""
    if not isinstance(node, cst.For):
        return False
    it = node.iter
    while isinstance(it, cst.Call) and it.args and it.args[0].keyword is None:
        f = it.func
        name = f.value if isinstance(f, cst.Name) else f.attr.value if isinstance(f, cst.Attribute) else ""
        if name not in ("enumerate", "iter", "tqdm"):
            break
        it = it.args[0].value
    name = it.value if isinstance(it, cst.Name) else it.attr.value if isinstance(it, cst.Attribute) else None
    if name is None or not _HELD_OUT.fullmatch(name):
        return False
    return m.kind_of(it) in (Kind.DATALOADER, Kind.DATASET) or m.value_of(it).kind in ("loader", "dataset")


def _evals_in_body(m, loop) -> bool:
    """The loop itself switches a model to evaluation mode at the top of its body
    (`classifier = classifier.eval()` / `model.eval()` as one of its statements, pointnet.pytorch's
    test loop), and nothing in it switches back to training."""
    body = getattr(loop.body, "body", ())
    found = False
    for stmt in body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            value = small.value if isinstance(small, (cst.Expr, cst.Assign)) else None
            if (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "eval"
                    and not value.args):
                found = True
    if not found:
        return False
    return not any(isinstance(c.func, cst.Attribute) and c.func.attr.value == "train" for c in m.calls_in(loop))


def _metric_object(m, func) -> bool:
    """A metric object (a torchmetrics `Metric`: `spearman = SpearmanCorrCoef()` then
    `spearman(uncs_j, errs_j)` in chemprop's `SpearmanEvaluator.evaluate`): an `nn.Module` without
    parameters that accumulates statistics; calling it records no graph of its own (its inputs'
    graphs are the model call's business, reported there)."""
    if m.value_of(func).kind == "metric":
        return True
    if not isinstance(func, cst.Name):
        return False
    bindings = m.bindings_of(func)
    return bool(bindings) and all(
        b.how == "assign" and isinstance(b.value, cst.Call) and (m.qualname(b.value.func) or "").startswith("torchmetrics.")
        for b in bindings)


def _loss_module(m, func) -> bool:
    """A loss (or activation) module, also when it reaches the loop as a parameter of its function
    and every call site passes one (laiguokun/LSTNet main.py: `evaluate(data, X, Y, model,
    evaluateL2, evaluateL1, batch_size)` with `evaluateL2 = nn.MSELoss(size_average=False)`, then
    `evaluateL2 = evaluateL2.cuda()`): the loop's forward is the model's call, reported once."""
    if m.is_stateless_module(func):
        return True
    if not isinstance(func, cst.Name):
        return False
    bindings = m.bindings_of(func)
    if len(bindings) != 1 or bindings[0].how != "param":
        return False
    args = m.param_arguments(bindings[0])
    if not args:
        return False
    for a in args:
        if m.is_stateless_module(a):
            continue
        value = m.value_of(a)
        origin = getattr(value, "origin", None) if value is not None else None
        if not (isinstance(origin, cst.Call) and m.is_stateless_module(origin)):
            return False
    return True


_TRANSFORM_PREFIXES = ("torchaudio.transforms.", "torchvision.transforms.")


def _signal_transform(m, func) -> bool:
    """A name bound only to a torchaudio / torchvision transform module (`resampler =
    torchaudio.transforms.Resample(sr, 16000)`, also moved with `resampler = resampler.cuda(device)`):
    fixed signal processing with no parameters, so calling it on data records no graph
    (SWivid/F5-TTS src/f5_tts/eval/utils_eval.py resamples the reference audio in its evaluation loop)."""
    if not isinstance(func, cst.Name):
        return False
    bindings = m.bindings_of(func)
    if not bindings:
        return False
    for b in bindings:
        cur = m.unmoved(b.value) if b.how == "assign" and b.value is not None else None
        if isinstance(cur, cst.Name) and cur.value == func.value:
            continue  # `resampler = resampler.cuda(device)`: the same transform, moved
        if not (isinstance(cur, cst.Call) and (m.qualname(cur.func) or "").startswith(_TRANSFORM_PREFIXES)):
            return False
    return True


def _grad_use_in_eval_phase(m, facts: TrainingFacts, loop: PhaseLoop, eval_calls: list) -> bool:
    """Code that may run in an evaluation phase uses gradients: a backward, `torch.autograd.grad`,
    `requires_grad_`, `enable_grad`, `.grad`, `x.requires_grad = True`, or a function of the file
    that does."""
    out: set = set()
    for c in eval_calls:
        facts._call_effects(c, out)
        for fn in facts.file_functions(c):
            out |= facts.effects(fn)
    if "grad" in out:
        return True
    for node in (*facts.grad_attributes_in(loop.node), *facts.requires_grad_sets_in(loop.node)):
        at = phases_at(m, loop, node)
        if at is None or at & loop.evals:
            return True
    return False


def _grad_context_around(m, loop: PhaseLoop, call: cst.Call) -> bool:
    """A `with` inside the phase loop around the call whose item depends on the phase (`with
    torch.no_grad() if phase != "train" else nullcontext():`, `with ctx:` for a context picked per
    phase) or is a name or call the analysis cannot read as harmless: it may turn gradients off."""
    for anc in m.ancestors(call):
        if anc is loop.node:
            return False
        if isinstance(anc, cst.With):
            for item in anc.items:
                e = item.item
                if mentions_phase(m, loop, e):
                    return True
                q = m.qualname(e.func) if isinstance(e, cst.Call) else None
                if q is None or not q.startswith(("torch.", "contextlib.")):
                    return True
    return False


def _unknown_code_in(m, facts: TrainingFacts, calls: list, models: set) -> bool:
    """One of these calls (those that may run in an evaluation phase) hands a model or an optimizer
    to code the file does not define, or calls a method of an object such code was given a model
    (an attack, a scaler that backpropagates): it may take gradients."""
    for call in calls:
        f = call.func
        if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and _built_with_model(m, facts, f.value):
            return True
        fns = facts.file_functions(call)
        if fns:
            if any(_model_held_by_unknown(m, facts, fn.body, 1, set()) for fn in fns):
                return True
            continue
        if isinstance(f, cst.Name) and f.value in _BUILTIN_READERS:
            continue
        q = m.qualname(f) or ""
        if q.startswith("torch.") and not q.startswith("torch.func"):
            continue
        for a in call.args:
            if dotted(a.value) in models or m.value_of(a.value).kind == "optimizer":
                return True
    return False


# a model frozen by its own constructor (P47-1) ------------------------------------------------

_UNKNOWN = object()
_PLAIN_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
_TENSOR_FACTORIES = frozenset({"torch." + f for f in (
    "Tensor", "FloatTensor", "LongTensor", "tensor", "as_tensor", "zeros", "ones", "full", "empty",
    "arange", "linspace", "eye")})
_TENSOR_KEEPS = frozenset({"view", "reshape", "to", "cuda", "cpu", "float", "half", "double", "long",
                           "unsqueeze", "squeeze", "expand", "clone", "contiguous", "type", "permute"})


def _const(expr: cst.BaseExpression | None, env: dict):
    """The value of a small constant expression given `env` (parameter name or `self.attr` ->
    value): literals, names in env, `not`, one comparison (`==`, `!=`, `in`, `not in`), a slice
    or index of a known string, list/tuple literals, `and`/`or`; `_UNKNOWN` otherwise."""
    if expr is None:
        return _UNKNOWN
    if isinstance(expr, cst.Name):
        if expr.value in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[expr.value]
        return env.get(expr.value, _UNKNOWN)
    if isinstance(expr, cst.Attribute):
        d = dotted(expr)
        return env.get(d, _UNKNOWN) if d is not None and d.startswith("self.") else _UNKNOWN
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString)):
        try:
            return expr.evaluated_value
        except Exception:  # noqa: BLE001 - a string the literal evaluator refuses
            return _UNKNOWN
    if isinstance(expr, (cst.List, cst.Tuple)):
        out = []
        for e in expr.elements:
            if not isinstance(e, cst.Element):
                return _UNKNOWN
            v = _const(e.value, env)
            if v is _UNKNOWN:
                return _UNKNOWN
            out.append(v)
        return tuple(out)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        v = _const(expr.expression, env)
        return _UNKNOWN if v is _UNKNOWN else not v
    if isinstance(expr, cst.BooleanOperation):
        left, right = _const(expr.left, env), _const(expr.right, env)
        if left is _UNKNOWN or right is _UNKNOWN:
            return _UNKNOWN
        return (left and right) if isinstance(expr.operator, cst.And) else (left or right)
    if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1:
        left, right = _const(expr.left, env), _const(expr.comparisons[0].comparator, env)
        if left is _UNKNOWN or right is _UNKNOWN:
            return _UNKNOWN
        op = expr.comparisons[0].operator
        try:
            if isinstance(op, cst.Equal):
                return left == right
            if isinstance(op, cst.NotEqual):
                return left != right
            if isinstance(op, cst.In):
                return left in right
            if isinstance(op, cst.NotIn):
                return left not in right
        except TypeError:
            return _UNKNOWN
        return _UNKNOWN
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1:
        base = _const(expr.value, env)
        if not isinstance(base, str):
            return _UNKNOWN
        sl = expr.slice[0].slice
        try:
            if isinstance(sl, cst.Index):
                i = _const(sl.value, env)
                return base[i] if isinstance(i, int) else _UNKNOWN
            if isinstance(sl, cst.Slice) and sl.step is None:
                lo = None if sl.lower is None else _const(sl.lower, env)
                hi = None if sl.upper is None else _const(sl.upper, env)
                if all(b is None or isinstance(b, int) for b in (lo, hi)):
                    return base[lo:hi]
        except IndexError:
            return _UNKNOWN
        return _UNKNOWN
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        v = _const(expr.expression, env)
        return -v if isinstance(v, (int, float)) else _UNKNOWN
    return _UNKNOWN


def _init_env(init: cst.FunctionDef, call: cst.Call) -> dict | None:
    """`__init__`'s parameters with a constant value at this construction call (a constant
    argument, or the constant default of a parameter not passed); None when the call unpacks
    `*args`/`**kwargs` (what it passes is unknown)."""
    if any(a.star for a in call.args):
        return None
    env = {}
    params = [*init.params.posonly_params, *init.params.params, *init.params.kwonly_params]
    for p in params[1:] if params and params[0].name.value == "self" else params:
        arg = argument_for(init, call, p.name.value)
        v = _const(arg if arg is not None else p.default, {})
        if v is not _UNKNOWN:
            env[p.name.value] = v
    return env


def _inert_attr_value(m, value: cst.BaseExpression, env: dict, params: set) -> bool:
    """A value stored on `self` in `__init__` that adds no parameter: a constant, a parameter of
    `__init__` whose value at the construction call is a constant, a tensor factory
    (`torch.Tensor([...]).view(1, 3, 1, 1)`, no `requires_grad=`) or an existing attribute of
    `self` (`self.shift.cuda()`, `self.net.N_slices`) under a chain of plain tensor methods."""
    if _const(value, env) is not _UNKNOWN:
        return True
    if isinstance(value, cst.Name) and value.value in params:
        return value.value in env
    expr = value
    while (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)
           and m.qualname(expr.func) not in _TENSOR_FACTORIES):
        if expr.func.attr.value not in _TENSOR_KEEPS or any(
                a.keyword is not None and a.keyword.value == "requires_grad" for a in expr.args):
            return False
        expr = expr.func.value
    if isinstance(expr, cst.Call):
        return (m.qualname(expr.func) in _TENSOR_FACTORIES
                and not any(a.keyword is not None and a.keyword.value == "requires_grad" for a in expr.args))
    d = dotted(expr)
    return d is not None and d.startswith("self.") and not isinstance(value, cst.Name)


def _frozen_class(m, call: cst.Call, depth: int = 0) -> bool:
    """`Cls(...)` builds a module none of whose parameters asks for a gradient: `Cls` is a class
    of the file deriving directly from `nn.Module`, no other method stores on `self` or touches
    `requires_grad`, and its `__init__`, read statement by statement with the branches its `if`
    tests take for this call's constant arguments, either freezes `self.parameters()` after the
    last statement that may add one (`if not requires_grad: for param in self.parameters():
    param.requires_grad = False`), or adds none but plain values and modules frozen the same way
    (stable-dreamfusion's perceptual `PNet`, PRECISION47 P47-1)."""
    if depth > 3 or not isinstance(call.func, cst.Name):
        return False
    info = m.classes.get(call.func.value)
    if info is None or not info.bases or any(b not in _PLAIN_BASES for b in info.bases):
        return False
    init = info.methods.get("__init__")
    if init is None or init.decorators or any(d.decorators for d in info.node.body.body
                                              if isinstance(d, cst.FunctionDef)):
        return False
    env = _init_env(init, call)
    if env is None:
        return False
    params = {p.name.value for p in (*init.params.posonly_params, *init.params.params, *init.params.kwonly_params)}
    # no other method adds, unfreezes or re-stores anything on `self`
    for fn in info.methods.values():
        if fn is init:
            continue
        for n in walk(fn.body):
            if isinstance(n, cst.Name) and n.value in ("setattr", "requires_grad_", "requires_grad", "register_parameter",
                                                       "register_module", "add_module", "apply"):
                return False
            if isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign)) and "self." in "".join(_target_texts(n)):
                return False
    state = {"frozen": True, "ok": True}

    def stmt(st) -> None:
        if not state["ok"]:
            return
        if isinstance(st, cst.If):
            cur = st
            while isinstance(cur, cst.If):
                v = _const(cur.test, env)
                if v is _UNKNOWN:
                    state["ok"] = False  # a branch this call may or may not take
                    return
                if v:
                    block(cur.body)
                    return
                cur = cur.orelse
            if isinstance(cur, cst.Else):
                block(cur.body)
            return
        if isinstance(st, cst.For) and _params_loop_freezes(st, "self"):
            state["frozen"] = True
            return
        if isinstance(st, cst.SimpleStatementLine):
            for small in st.body:
                small_stmt(small)
            return
        if _mentions_self(st):
            state["frozen"] = False  # a loop or block that may add a parameter (`add_module`)

    def small_stmt(small) -> None:
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            c = small.value
            f = c.func
            if (isinstance(f, cst.Attribute) and f.attr.value == "__init__" and isinstance(f.value, cst.Call)
                    and isinstance(f.value.func, cst.Name) and f.value.func.value == "super"):
                return  # `super().__init__()` of a plain nn.Module
            if (isinstance(f, cst.Attribute) and f.attr.value == "requires_grad_"
                    and dotted(f.value) == "self"):
                state["frozen"] = _false_arg(c)
                return
            if (isinstance(f, cst.Attribute) and f.attr.value in _FREEZE_KEEPS
                    and (dotted(f.value) or "").startswith("self")):
                return  # `self.net.cuda()`
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            t = dotted(small.targets[0].target)
            if t is not None and t.startswith("self.") and t.count(".") == 1:
                value = small.value
                root = _chain_root(value)
                if _inert_attr_value(m, value, env, params):
                    v = _const(value, env)
                    if v is _UNKNOWN and isinstance(value, cst.Name):
                        v = env.get(value.value, _UNKNOWN)
                    if v is not _UNKNOWN:
                        env[t] = v
                    else:
                        env.pop(t, None)
                    return
                if (isinstance(root, cst.Call) and root is not value and not all(
                        isinstance(c, cst.Call) and isinstance(c.func, cst.Attribute)
                        and c.func.attr.value in _FREEZE_KEEPS for c in _chain_calls(value, root))):
                    state["frozen"] = False
                    return
                if isinstance(root, cst.Call) and _frozen_class(m, root, depth + 1):
                    env.pop(t, None)
                    return
                state["frozen"] = False
                return
        if _mentions_self(small):
            state["frozen"] = False

    def block(body) -> None:
        for st in body.body if isinstance(body, cst.IndentedBlock) else [body]:
            stmt(st)

    block(init.body)
    return state["ok"] and state["frozen"]


def _target_texts(n) -> list[str]:
    """The dotted texts of an assignment's targets."""
    if isinstance(n, cst.Assign):
        return [dotted(t.target) or "" for t in n.targets]
    return [dotted(n.target) or ""]


def _chain_calls(expr: cst.BaseExpression, root: cst.BaseExpression) -> list[cst.Call]:
    """The method calls of `root.a(...).b(...)` above `root`."""
    out = []
    while expr is not root and isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        out.append(expr)
        expr = expr.func.value
    return out


def _mentions_self(node: cst.CSTNode) -> bool:
    return any(isinstance(n, cst.Name) and n.value == "self" for n in walk(node))


def _returned_frozen(ctx: Context, b) -> bool:
    """`model = select_model(args, device)` (or `model, name = select_model(...)`, the model first):
    a module-level function of the file every `return` of which gives the same local, whose
    parameters that function froze last (`for k, v in model.named_parameters(): v.requires_grad =
    False`, NTIRE ESR's harness, P68-1)."""
    m = ctx.model
    val = b.value
    if not (isinstance(val, cst.Call) and isinstance(val.func, cst.Name)):
        return False
    if b.how == "assign":
        idx = None
    elif b.how == "unpack" and len(b.index) == 1:
        idx = b.index[0]
    else:
        return False
    fn = m.module_function(val.func.value)
    if fn is None:
        return False
    names = set()
    for node in m.walk(fn.body, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if not isinstance(node, cst.Return):
            continue
        v = node.value
        if idx is not None:
            if not isinstance(v, cst.Tuple) or idx >= len(v.elements) or any(
                    isinstance(e, cst.StarredElement) for e in v.elements):
                return False
            v = v.elements[idx].value
        if not isinstance(v, cst.Name):
            return False
        names.add(v.value)
    if len(names) != 1:
        return False
    last = _last_freeze(ctx, names.pop(), fn, None)
    return last is not None and last[1]


def _frozen_at_every_call(ctx: Context, name: str, scope: cst.CSTNode, depth: int) -> bool:
    """`name` is a parameter of `scope`, a module-level function of the file, and every call of
    that function (there is one at least) passes a model frozen by construction there
    (`run(model, ...)` after `model, ... = select_model(args, device)`, P68-1)."""
    m = ctx.model
    if depth > 2 or not isinstance(scope, cst.FunctionDef) or m.module_function(scope.name.value) is not scope:
        return False
    params = scope.params
    names = [x.name.value for x in (*params.posonly_params, *params.params)]
    if name not in names:
        return False
    i = names.index(name)
    calls = [c for c in m.calls if isinstance(c.func, cst.Name) and c.func.value == scope.name.value]
    if not calls:
        return False
    for c in calls:
        if any(a.star for a in c.args):
            return False
        kw = next((a.value for a in c.args if a.keyword is not None and a.keyword.value == name), None)
        pos = [a.value for a in c.args if a.keyword is None]
        arg = kw if kw is not None else (pos[i] if i < len(pos) else None)
        if not isinstance(arg, cst.Name) or not _frozen_by_construction(ctx, arg, c, depth + 1):
            return False
    return True


def _frozen_by_construction(ctx: Context, model: cst.BaseExpression | None, loop: cst.CSTNode,
                            depth: int = 0) -> bool:
    """The model a loop calls is a local (or module-level) name bound only to `Cls(...)` of a
    class of the file that freezes every parameter it builds (`_frozen_class`), possibly moved or
    put in eval mode (`PNet().to("cuda")`), and nothing in its scope unfreezes it, reads its
    parameters or hands it to code other than the file's own functions that leave gradients
    alone: `vgg16 = PNet().to("cuda"); vgg16.eval()` then `perceptual_sim(p, t, vgg16)` per image
    records no graph (stable-dreamfusion, PRECISION47 P47-1)."""
    m = ctx.model
    if not isinstance(model, cst.Name):
        return False
    name = model.value
    scope = m.scope_of(loop)
    bindings = m.bindings.get((scope, name), [])
    if not bindings:
        return False
    if all(b.how == "param" for b in bindings):
        if not _frozen_at_every_call(ctx, name, scope, depth):
            return False
        bindings = []
    for b in bindings:
        if b.value is not None and _returned_frozen(ctx, b):
            continue
        if b.how != "assign" or b.value is None:
            return False
        root = _chain_root(b.value)
        if not isinstance(root, cst.Call) or not all(
                c.func.attr.value in _FREEZE_KEEPS for c in _chain_calls(b.value, root)):
            return False
        if not _frozen_class(m, root):
            return False
    last = _last_freeze(ctx, name, scope, None)
    if last is not None and not last[1]:
        return False
    for n in walk(scope):
        if isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) and n.value.value == name \
                and n.attr.value in ("parameters", "named_parameters", "requires_grad_", "train_", "apply"):
            return False
        if not isinstance(n, cst.Call):
            continue
        if not any(isinstance(a.value, cst.Name) and a.value.value == name for a in n.args):
            continue
        if not isinstance(n.func, cst.Name):
            return False
        fn = m.module_function(n.func.value)
        if fn is None:
            return False
        if any(isinstance(x, (cst.Name, cst.Attribute)) and (x.value if isinstance(x, cst.Name) else x.attr.value)
               in ("parameters", "named_parameters", "requires_grad", "requires_grad_", "backward", "grad")
               for x in walk(fn)):
            return False
    return True


# --------------------------------------------------------------------------- test branches (G68-5)

_EVAL_WORDS = re.compile(r"(?:^|_)(?:test|testing|val|valid|validate|validation|eval|evaluate|evaluation)(?:_|$)",
                         re.IGNORECASE)


def _periodic_or_eval_test(test: cst.BaseExpression) -> bool:
    """`i % 100 == 0`, `step % args.eval_every == 0`, `do_eval`, `args.validate`: a test that picks
    every N-th step or names an evaluation."""
    for n in (test, *walk(test)):
        if isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Modulo):
            return True
        if isinstance(n, cst.Name) and _EVAL_WORDS.search(n.value):
            return True
    return False


def _test_branch_of(m, facts: TrainingFacts, info, call: cst.Call):
    """(the `if`, the block holding `call`, the other block) for the innermost `if`/`else` inside the
    training loop `info` with `call` in one branch and a backward pass and an optimizer step of the
    loop in the other, none in `call`'s branch; None when there is none."""
    loop = info.node
    grad = [*info.backward, *info.backward_via]
    steps = [*(s.call for s in info.steps), *info.steps_via, *info.step_helpers]
    for anc in m.ancestors(call):
        if anc is loop or isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return None
        if not isinstance(anc, cst.If) or not isinstance(anc.orelse, cst.Else):
            continue
        parent = m.parent(anc)
        if isinstance(parent, cst.If) and parent.orelse is anc:
            continue  # an `elif`: a three-way choice
        if not _periodic_or_eval_test(anc.test):
            continue
        if m.contains(anc.body, call):
            test, train = anc.body, anc.orelse.body
        else:
            test, train = anc.orelse.body, anc.body
        if any(m.contains(test, n) for n in (*grad, *steps, *info.clears)) or facts.grad_use(test):
            return None
        if any(m.contains(train, n) for n in grad) and any(m.contains(train, n) for n in steps):
            return anc, test, train
        return None
    return None


_GRAPH_FREE_METHODS = frozenset({"item", "tolist", "numpy", "detach", "argmax", "argmin", "eq", "ne"})
_GRAPH_FREE_BUILTINS = frozenset({"float", "int", "bool", "round", "len", "str", "print"})


def _graph_free(expr: cst.CSTNode, bound: set) -> bool:
    """`expr` reads none of the names `bound` (those of the test branch) and calls no model except
    through `.item()`, `.tolist()`, `float(...)` and the like, or in a comparison: what it holds
    keeps no graph."""
    if isinstance(expr, cst.Name):
        return expr.value not in bound
    if isinstance(expr, cst.Comparison):
        return True
    if isinstance(expr, cst.Call):
        f = expr.func
        if isinstance(f, cst.Attribute) and f.attr.value in _GRAPH_FREE_METHODS:
            return True
        if isinstance(f, cst.Name) and f.value in _GRAPH_FREE_BUILTINS:
            return True
    if isinstance(expr, cst.Attribute):
        return _graph_free(expr.value, bound)
    return all(_graph_free(ch, bound) for ch in expr.children)


def _stored_names(m, node: cst.CSTNode) -> tuple[set[str], set[cst.Name]]:
    """The names bound in `node` (assignments, `for` and `with ... as` targets, augmented
    assignments) and the Name nodes that only store (not `a += ...`, which reads `a` too)."""
    names, stores = set(), set()

    def targets(t):
        if isinstance(t, cst.Name):
            names.add(t.value)
            stores.add(t)
        elif isinstance(t, (cst.Tuple, cst.List)):
            for e in t.elements:
                targets(e.value)
        elif isinstance(t, cst.StarredElement):
            targets(t.value)

    for n in (node, *walk(node)):
        if isinstance(n, cst.Assign):
            for t in n.targets:
                targets(t.target)
        elif isinstance(n, (cst.AnnAssign, cst.For, cst.CompFor)):
            targets(n.target)
        elif isinstance(n, cst.AsName):
            targets(n.name)
        elif isinstance(n, cst.AugAssign) and isinstance(n.target, cst.Name):
            names.add(n.target.value)
        elif isinstance(n, cst.NamedExpr) and isinstance(n.target, cst.Name):
            names.add(n.target.value)
            stores.add(n.target)
    return names, stores


def _name_uses(m, node: cst.CSTNode, names: set, skip: cst.CSTNode | None = None) -> list[cst.Name]:
    """The Name nodes in `node` (not in `skip`, not in definitions) that stand for one of `names`
    (not attribute names, keyword names or parameters), in source order."""
    out = []
    for n in m.walk(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if not isinstance(n, cst.Name) or n.value not in names or (skip is not None and m.contains(skip, n)):
            continue
        p = m.parent(n)
        if (isinstance(p, cst.Attribute) and p.attr is n) or (isinstance(p, cst.Arg) and p.keyword is n):
            continue
        if isinstance(p, (cst.Param, cst.ImportAlias, cst.FunctionDef, cst.ClassDef)):
            continue
        out.append(n)
    return sorted(out, key=lambda n: m.order.get(n, 0))


def _branch_outlived(m, facts: TrainingFacts, if_node: cst.If, test, train, info) -> bool:
    """Something the test branch makes may outlive it: it stores into a container, an attribute
    or an accumulator a value that may hold the model's graph (not through `.item()` and the
    like); or one of the names it binds is read outside it before being bound again: in the
    other branch before that branch binds it, anywhere else in the outermost loop around (after
    the `if`, or at the top of the next iteration), or after that loop in its function before a
    new binding. A REINFORCE rollout collected in one branch and backpropagated in the other is
    this shape: `no_grad` there would break training."""
    bound, _ = _stored_names(m, test)
    for n in walk(test):
        value = None
        if isinstance(n, cst.AugAssign):
            value = n.value
        elif isinstance(n, (cst.Assign, cst.AnnAssign)):
            tgts = [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target]
            if any(isinstance(x, (cst.Subscript, cst.Attribute)) for x in _target_parts(tgts)):
                value = n.value
        elif (isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
              and n.func.attr.value in ("append", "extend", "insert", "add", "update", "put", "appendleft")
              and any(not _graph_free_value(m, facts, a.value, bound) for a in n.args)):
            return True
        if value is not None and not _graph_free_value(m, facts, value, bound):
            return True
    if not bound:
        return False
    _, train_stores = _stored_names(m, train)
    for name in bound:
        uses = _name_uses(m, train, {name})
        if uses and uses[0] not in train_stores:
            return True
    outer = info
    while outer.parent is not None:
        outer = outer.parent
    _, loop_stores = _stored_names(m, outer.node)
    for n in _name_uses(m, outer.node, bound, skip=if_node):
        if n not in loop_stores:
            return True
    if_test_uses = _name_uses(m, if_node.test, bound)
    if if_test_uses:
        return True
    scope = m.scope_of(outer.node)
    end = m.end.get(outer.node)
    if end is None:
        return True
    _, scope_stores = _stored_names(m, scope)
    after = [n for n in _name_uses(m, scope, bound) if m.order.get(n, 0) >= end]
    first: dict[str, cst.Name] = {}
    for n in after:
        first.setdefault(n.value, n)
    return any(n not in scope_stores for n in first.values())


def _target_parts(tgts: list) -> list:
    """The targets of an assignment, with the elements of tuple and list targets."""
    out = []
    for t in tgts:
        if isinstance(t, (cst.Tuple, cst.List)):
            out.extend(_target_parts([e.value for e in t.elements]))
        elif isinstance(t, cst.StarredElement):
            out.extend(_target_parts([t.value]))
        else:
            out.append(t)
    return out


def _graph_free_value(m, facts: TrainingFacts, value: cst.BaseExpression, bound: set) -> bool:
    """`value` keeps no graph of the test branch: it reads no name the branch binds and calls no
    model, except through `.item()`, `float(...)`, a comparison and the like."""
    if not _graph_free(value, bound):
        return False
    return all(_under_graph_free(m, c, value) for c in (value, *walk(value))
               if isinstance(c, cst.Call) and facts.is_model(c.func))


def _under_graph_free(m, node: cst.CSTNode, top: cst.CSTNode) -> bool:
    cur = node
    while cur is not top and cur is not None:
        p = m.parent(cur)
        if isinstance(p, cst.Comparison):
            return True
        if isinstance(p, cst.Attribute) and p.value is cur and p.attr.value in _GRAPH_FREE_METHODS:
            return isinstance(m.parent(p), cst.Call)
        if (isinstance(p, cst.Arg) and isinstance(m.parent(p), cst.Call) and isinstance(m.parent(p).func, cst.Name)
                and m.parent(p).func.value in _GRAPH_FREE_BUILTINS):
            return True
        cur = p
    return False


def _wrap_block_in_with(ctx: Context, block: cst.BaseSuite, header: str):
    """An edit that puts every statement of an indented block under `header:`, one level deeper;
    None for a one-line suite or when re-indenting could change a multi-line string."""
    if not isinstance(block, cst.IndentedBlock) or not block.body:
        return None
    for n in walk(block):
        if isinstance(n, (cst.SimpleString, cst.FormattedString)) and "\n" in ctx.code(n):
            return None
    first_stmt, last_stmt = block.body[0], block.body[-1]
    first, _ = ctx._line_bounds(first_stmt)
    _, last = ctx._line_bounds(last_stmt)
    start, _ = ctx.span(first_stmt)
    indent = ctx.indent_of(first_stmt)
    if ctx.source[first:start] != indent or indent.strip():
        return None
    unit = ctx.module.default_indent
    lines = split_lines(ctx.source[first:last], keepends=True)
    out = [indent + header + ctx.newline]
    for line in lines:
        out.append(unit + line if line.strip() else line)
    new = "".join(out)
    if not new.endswith(("\n", "\r")):
        new += ctx.newline
    return ctx.edit(first, last, new)


def _eval_in_init(m, facts: TrainingFacts, node: cst.CSTNode, fn) -> bool:
    """The loop is in a plain method of a class whose `__init__` leaves the models in eval mode
    (`self.net.eval()` last, after any training it runs) and no method of the class sets a mode
    again (no `.train()` / `.eval()`, no training loop, outside `__init__`): `__init__` has run
    before the method, so the loop runs in eval mode (probe69 classify: the script's statements
    before its first loop in `__init__`, the loop in `run()`; CIE_XYZ_NET's demo)."""
    if not isinstance(fn, cst.FunctionDef) or fn.decorators or fn.name.value == "__init__":
        return False
    cls = m.class_of(fn)
    if cls is None or m.enclosing(fn, cst.FunctionDef, cst.ClassDef) is not cls:
        return False
    if facts.mode_before(node) is not None:
        return False
    methods = [st for st in cls.body.body if isinstance(st, cst.FunctionDef)]
    init = next((g for g in methods if g.name.value == "__init__"), None)
    if init is None or not isinstance(init.body, cst.IndentedBlock):
        return False
    last = next((md for st in reversed(init.body.body) if (md := facts.statement_mode(st)) is not None), None)
    if last != "eval":
        return False
    # the loop runs the very models `__init__` put in eval mode: `self.net.eval()` there, `self.net(x)`
    # here (not a parameter of each method, nor an item of `self.models`: which object that is, the
    # file does not say; schnetpack's ensemble calculator, KPConv's visualizer)
    evaluated = {dotted(mo[0]) for c in m.walk(init.body) if isinstance(c, cst.Call)
                 and (mo := method_of(c)) is not None and mo[1] == "eval" and not c.args}
    called = {dotted(_callee(c, facts)) for c in _model_calls(facts, node)}
    if not called or not all(d is not None and d.startswith("self.") and d in evaluated for d in called):
        return False
    for g in methods:
        if g is init or not isinstance(g.body, cst.IndentedBlock):
            continue
        if any(facts.statement_mode(st) is not None for st in g.body.body):
            return False
    # a caller that picks the grad mode (`with torch.no_grad(): tester.run()`), or hands the method on
    name = fn.name.value
    for c, _recv, _meth in m.method_calls(name):
        if facts.grad_mode_at(c) is not None:
            return False
    for n in m.nodes:
        if isinstance(n, cst.Attribute) and n.attr.value == name and not isinstance(m.parent(n), cst.Call):
            return False
    return True
