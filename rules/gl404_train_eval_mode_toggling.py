"""GL404 train-eval-mode-toggling."""

from __future__ import annotations

import re

import libcst as cst

from gpulint.analysis.modules import self_attr
from gpulint.analysis.phases import (
    mentions_phase,
    phase_loops,
    phases_at,
    trains_only_in_train_phase,
)
from gpulint.analysis.training import (
    torch_loss_value,
    MODE_SENSITIVE,
    TrainingFacts,
    argument_for,
    dotted,
    method_of,
    walk,
)
from gpulint.model import MODULE_BASES
from gpulint.rule import Context, Rule
from gpulint.sites import line_ref

_METRIC_NAME = re.compile(r"(?i)acc|mae|mse|rmse|metric|score|loss|error|perplexity|ppl|bleu|iou|f1|auc|predict")


def _plain_class_method(ctx: Context, facts: TrainingFacts, call: cst.Call) -> bool:
    """`self.eval()` / `trainer.eval()` that runs an `eval` method of a plain class of the file (not an
    `nn.Module`): an evaluation pass (ContextualAI/HALOs train/trainers.py, `BasicTrainer.eval()`
    runs `self.policy.eval()` and the eval batches), not `nn.Module.eval`. The models it switches
    are followed into the method like any helper's."""
    m = ctx.model
    for fn in facts.file_functions(call):
        cls = m.class_of(fn)
        if cls is not None and not m.class_is(cls.name.value, MODULE_BASES):
            return True
    return False


def _line_above_comments(ctx: Context, stmt: cst.CSTNode) -> int:
    """Offset of the first line of `stmt`'s own leading comments (or of `stmt`)."""
    start, _ = ctx.span(stmt)
    line = ctx.location(start)[0] - len(getattr(stmt, "leading_lines", ()))
    return ctx.line_starts()[line - 1]


class TrainEvalModeToggling(Rule):
    code = "GL404"
    name = "train-eval-mode-toggling"
    summary = "`model.eval()` is never undone in the epoch loop, or evaluation runs in training mode."
    message = "`{model}.eval()` in the training loop is never undone: later training steps run with dropout off and frozen batch-norm statistics; call `{model}.train()` before training again"
    fix_safety = "safe"
    fix_partial = True  # a no_grad loop that measures nothing is reported without the fix
    default = True
    kind = "silent"
    # (`backward`: an evaluation loop right after a training loop needs no mode call to be found)
    prefilter = r"\.eval\(|\.train\(|no_grad|inference_mode|def \w*(?:val|eval|test)|backward"
    ast_prefilter = (
        r"^loop$",
        r"^\.(?:eval|train)\($|no_grad|inference_mode|^def \w*(?:val|eval|test)|^\.(?:manual_)?backward\($",
    )
    helper_message = (
        "`{call}(...)` puts `{model}` in eval mode inside the training loop and nothing puts it back: "
        "later training steps run with dropout off and frozen batch-norm statistics; call "
        "`{model}.train()` before training again"
    )
    explanation = '''
`model.eval()` and `model.train()` switch dropout and batch normalisation between their training
and inference behaviour. Two mistakes are common and silent:

- an epoch loop that calls `model.eval()` to validate and never calls `model.train()` again: from
  the second epoch on, the model trains with dropout disabled and batch-norm running statistics
  frozen;
- evaluation that runs right after training without `model.eval()`: dropout stays active and
  batch-norm uses (and updates) batch statistics, so the metrics are noisy and wrong.

An evaluation loop is a loop in a function named like `validate`/`evaluate`/`test`, one under
`no_grad`, or a `for ... in valid_loader:` (a loader named for validation or testing) right after
the training batches that computes a loss or an accuracy. A loop-free `with torch.no_grad():` block
written right after the training batches (the whole validation set in one forward) that computes
a loss or an accuracy counts as well.

The `eval()` may be in a function of the file the loop calls, or one level deeper
(`check_accuracy(pg, ee)` calling `set_mode("eval", [pg, ee])`, a helper that loops over a list
of models); a helper's branches on a string argument (`if mode == "train":`) count only where the
call's literal takes them. A helper's list is reported without a fix, at its call. So is a plain
class that holds the models and switches them in its own methods (VSE++'s `model.val_start()`
running `self.img_enc.eval()`, called from `validate(model)` in a loop that trains them through
`model.train_emb(...)`): reported at the method's `eval()`, without a fix. Further calls are
followed as the flow engine resolves them (up to four functions deep): a callback object's
`c.on_epoch_end()` running `self.model.predict(...)`, whose method leaves `self.net` in eval
mode (torchtuples), or a hook handed a dict of models (`models["main"].eval()`,
pytorch-pfn-extras), when the engine shows that the module put in eval mode is the very one the
loop trains (one constructor call that runs once: an EMA copy or a second model built by the same
factory is another model). The fix puts `model.train()` in the loop where the loop names the model;
otherwise there is none.

A call that puts the model in eval mode and leaves it there, made between `model.train()` (or
above a backward) and the training forward of the same block, is reported at the call: a method of
the model's class that starts with `self.eval()` (`model.predict(batch)` under `@torch.no_grad()`),
or a function of the file handed the model that runs such a method or `model.eval()` (LCFCN's
`lc_loss` calling `get_blob_dict(model, batch)`). The fix inserts `model.train()` right after the
call. This is per model: a distillation teacher put in eval mode by a helper does not count.

A shared phase loop counts too: `for phase in ("train", "val"):` (a list, `["train", "valid"] +
...`, the keys of a dict of loaders, `.items()`) whose body backpropagates and steps only under
`if phase == "train":` while the model is called in every phase. When no mode switch depends on
the phase (`if phase == "train": model.train() else: model.eval()`, `model.train(phase ==
"train")`), the 'val' phase runs in training mode; it is reported at the loop over the phase's
batches, without a fix (the message suggests `model.train(phase == "train")` at the top of the phase
loop: a model whose forward returns something else in eval mode, as torchvision's detection models
do, needs a look first). A phase loop put in eval mode before it, one that backpropagates in every
phase, or one with phase names other than train/val/valid/validation/eval/test/dev is left alone.

A method of the model's own class that runs the model (`model.generate(x)` calling
`self.forward(x)`) counts as a call of the model in an evaluation loop, unless it sets a mode itself.

The rule only looks at models whose behaviour depends on the mode (dropout, batch norm, or a model
the file cannot see into), stays silent where a helper the file does not define gets the model
(it may switch modes itself), on training mode chosen on purpose (`model.train()` or a helper of the
file such as `enable_dropout(model)` right before the evaluation loop or the `with` block that holds
it, also out through a loop that only repeats the pass and gathers its outputs (`for i in
range(n_drop):` around `probs[idxs] += p`; no backward, step or mode switch in it): updating batch-norm statistics, Monte Carlo dropout; Monte-Carlo dropout
sampling a batch several times; forward passes whose output is discarded (a statement of its own, or `_ = model(x)`) to
refresh batch-norm statistics; a model put in eval mode before training, also inside the epoch
loop when `model.eval()` is followed at once, with nothing that uses the model in between, by the
loop that trains it: SSKD trains a head on its frozen teacher so), on a loop inside `with
evaluating(model):` where `evaluating` is a `@contextmanager` of the file that calls `model.eval()`
before it yields, and on Lightning / HF Trainer scripts.

The fix inserts `model.train()` before the training loop, or `model.eval()` before the
evaluation loop and `model.train()` after it. A loop known as an evaluation only because it runs
under `no_grad`, that computes no loss or accuracy in a function not named for one, is reported
without the fix: it may run in training mode on purpose (a memory bank filled with the embeddings
training mode gives, as SwAV's `init_memory`).

Bad:

```python
for epoch in range(epochs):
    for x, y in train_loader:
        ...
    model.eval()
    with torch.no_grad():
        evaluate(model, val_loader)
```

Good:

```python
for epoch in range(epochs):
    model.train()
    for x, y in train_loader:
        ...
    model.eval()
    with torch.no_grad():
        evaluate(model, val_loader)
```
'''

    def check(self, ctx: Context):
        facts: TrainingFacts = ctx.model.facts(TrainingFacts)
        if facts.frameworks_drive_loop():
            return
        reported: set = set()
        yield from self._never_undone(ctx, facts, reported)
        yield from self._resolved_never_undone(ctx, facts, reported)
        yield from self._eval_in_train_mode(ctx, facts)
        yield from self._eval_block_in_train_mode(ctx, facts)
        yield from self._helper_evals_before_training(ctx, facts)
        yield from self._phase_loop_in_train_mode(ctx, facts)

    # a shared phase loop whose evaluation phase runs in training mode --------------------------
    def _phase_loop_in_train_mode(self, ctx, facts):
        """`for phase in ("train", "val"):` whose body trains only `if phase == "train":` and calls
        the model in every phase, with no mode switch that depends on the phase (`if phase ==
        "train": model.train() else: model.eval()`, `model.train(phase == "train")`): the 'val'
        batches run in training mode (ZOO_Attack_PyTorch#7). Reported at the loop over the phase's
        batches (or the phase loop), without a fix: a model whose forward returns something else in
        eval mode (torchvision's detection models return their losses only in training mode) would
        break under an inserted `eval()`."""
        m = ctx.model
        for loop in phase_loops(m):
            info = facts.loop_info.get(loop.node)
            if info is None or not info.is_training:
                continue
            if not trains_only_in_train_phase(m, loop, info):
                continue
            if not self._no_phase_mode_switch(facts, loop):
                continue
            shared, names = [], []
            for c in facts.model_calls(loop.node):
                at = phases_at(m, loop, c)
                if not at or not (at & loop.evals):
                    continue
                name = dotted(c.func)
                if name is None or not facts.mode_sensitive(c.func):
                    continue
                if _losses_in_training_mode(m, c):
                    continue  # a detection model's losses exist only in training mode: kept so on purpose
                shared.append(c)
                if name not in names:
                    names.append(name)
            if not shared:
                continue
            if facts.mode_before(loop.node) not in ("train", None):
                continue  # put in eval mode before the phases (a frozen model evaluated and trained so)
            if facts.passes_to_unknown(loop.node, names):
                continue  # code the file does not define gets the model: it may switch the mode
            anchor = loop.node
            for anc in m.ancestors(shared[0]):
                if anc is loop.node:
                    break
                if isinstance(anc, (cst.For, cst.While)):
                    anchor = anc  # the outermost loop over the phase's batches
            evals = "/".join(repr(p) for p in sorted(loop.evals))
            switch = (f"`{names[0]}.train({loop.var} == {loop.literal.value})`" if loop.literal is not None
                      else f"`{names[0]}.train()` in the training phase and `{names[0]}.eval()` in the others")
            models = ", ".join(f"`{n}`" for n in names)
            yield ctx.finding(
                anchor,
                f"the {evals} phase of the phase loop ({line_ref(ctx, loop.node)}) runs {models} in training "
                f"mode (dropout on, batch-norm statistics updated by the evaluation batches): no mode switch "
                f"depends on `{loop.var}`; call {switch} at the top of the phase loop",
            )

    @staticmethod
    def _no_phase_mode_switch(facts, loop) -> bool:
        """No `.train()`/`.eval()` in the phase loop other than an unconditional `X.train()` (which
        leaves the evaluation phase in training mode too), and no function of the file called there
        that switches modes."""
        m = facts.m
        for c in facts.calls_in(loop.node, into_defs=False):
            mo = method_of(c)
            if mo is not None and mo[1] in ("train", "eval"):
                if mo[1] == "eval" or phases_at(m, loop, c) != loop.phases:
                    return False  # a switch per phase (or an eval in every phase: not this rule's case)
                if facts._train_call_mode(c) != "train" or any(mentions_phase(m, loop, a.value) for a in c.args):
                    return False  # `model.train(phase == "train")`, `model.train(mode=is_train)`
            for fn in facts.file_functions(c):
                if facts.effects(fn) & {"train", "eval", "unknown-mode"}:
                    return False
            for a in c.args:
                # `model.apply(set_bn_eval)`: a function of the file that switches modes, handed on
                if isinstance(a.value, cst.Name) and any(
                        facts.effects(fn) & {"train", "eval", "unknown-mode"} for fn in m.functions.get(a.value.value, ())):
                    return False
        return True

    # a loop-free `with torch.no_grad():` evaluation right after the training batches ------------
    def _eval_block_in_train_mode(self, ctx, facts):
        """`with torch.no_grad(): out = M(X_valid); loss = loss_fn(out, y_valid)` written in the
        epoch loop right after the training batch loop, with no loop of its own (the whole
        validation set in one forward, as hosseinshn/GradNorm's notebook does), and no `M.eval()`:
        the same evaluation in training mode as the loop form, under the same conditions (a
        mode-sensitive model trained by that batch loop, a loss or accuracy computed, nothing in
        between that may set the mode, no deliberate `M.train()` before it)."""
        m = ctx.model
        for node in m.withs:
            if not node.items or not all(
                isinstance(it.item, cst.Call) and m.qualname(it.item.func) in ("torch.no_grad", "torch.inference_mode")
                for it in node.items
            ):
                continue
            if any(isinstance(n, (cst.For, cst.While, cst.FunctionDef, cst.ClassDef)) for n in walk(node.body)):
                continue
            train_loop = _training_loop_before(ctx, facts, node)
            if train_loop is None:
                continue
            calls = [c for c in facts.model_calls_through_self(node) if not torch_loss_value(m, c.func)]
            models = []
            for c in calls:
                name = dotted(c.func)
                if name is not None and name not in models:
                    models.append(name)
            if len(models) != 1:
                continue
            name = models[0]
            model_expr = next(c.func for c in calls if dotted(c.func) == name)
            if not facts.mode_sensitive(model_expr):
                continue
            if all(_output_discarded(m, c) for c in calls if dotted(c.func) == name):
                continue
            if any(method_of(c) and method_of(c)[1] in ("eval", "train") for c in facts.calls_in(node, into_defs=False)):
                continue
            if not _evaluates_after(ctx, facts, node, train_loop, name, calls):
                continue
            if any(facts.effects(fn) & {"eval", "train", "unknown-mode"} for fn in facts.self_methods_called(node)):
                continue
            if facts.mode_before(node) != "train":
                continue
            if facts.passes_to_unknown(node, {name}) or self._deliberate_train(ctx, facts, node, name):
                continue
            fix = ctx.fix(
                ctx.insert_text(_line_above_comments(ctx, node), f"{ctx.indent_of(node)}{name}.eval(){ctx.newline}"),
                ctx.insert_after(node, f"{name}.train()"),
                message=f"Insert `{name}.eval()` before the evaluation block and `{name}.train()` after it",
            )
            yield ctx.finding(
                node,
                f"evaluation runs `{name}` in training mode (dropout on, batch-norm statistics updated); "
                f"call `{name}.eval()` before it and `{name}.train()` after it",
                fix,
            )

    # a helper that leaves the model in eval mode, then a training forward ----------------------
    def _helper_evals_before_training(self, ctx, facts):
        """`model.train()` (or a backward below), then a call that puts `model` in eval mode and
        leaves it there (`model.predict(x)` whose method starts with `self.eval()`, or a function
        of the file handed the model that does so), then `model(x)` in the same block before any
        `model.train()`: that forward (and the backward on it) runs with dropout off and frozen
        batch-norm statistics (ServiceNow/LCFCN#20, `lc_loss` after `get_blob_dict`). Per model:
        another model's `eval()` (a distillation teacher) does not count."""
        m = ctx.model
        cache: dict = {}
        for block in m.nodes:
            if type(block) is not cst.IndentedBlock:
                continue
            body = block.body
            for i, stmt in enumerate(body):
                if not isinstance(stmt, cst.SimpleStatementLine):
                    continue
                for call in facts.calls_in(stmt, into_defs=False):
                    evaluated = _evaluated_names(facts, call, cache, 0)
                    if not evaluated:
                        continue
                    name = evaluated[0]
                    if not (self._mode_call_before(body[:i], name, "train") or _backward_after(facts, body[i + 1:])):
                        continue
                    fwd = self._forward_after(facts, body[i + 1:], name)
                    if fwd is None or facts.grad_mode_at(fwd) == "off":
                        continue
                    offset = _line_above_comments(ctx, body[i + 1]) if i + 1 < len(body) else None
                    fix = None if offset is None else ctx.fix(
                        ctx.insert_text(offset, f"{ctx.indent_of(body[i + 1])}{name}.train(){ctx.newline}"),
                        message=f"Insert `{name}.train()` after the call")
                    yield ctx.finding(
                        call,
                        f"`{ctx.code(call.func)}(...)` leaves `{name}` in eval mode, and the training forward "
                        f"`{ctx.code(fwd.func)}(...)` ({line_ref(ctx, fwd)}) runs in it: dropout off and "
                        f"frozen batch-norm statistics while training; call `{name}.train()` after it",
                        fix,
                    )
                    break

    @staticmethod
    def _mode_call_before(stmts, name: str, mode: str) -> bool:
        for st in stmts:
            if isinstance(st, cst.SimpleStatementLine):
                for small in st.body:
                    if (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
                            and isinstance(small.value.func, cst.Attribute) and small.value.func.attr.value == mode
                            and isinstance(small.value.func.value, cst.Name) and small.value.func.value.value == name):
                        return True
        return False

    def _forward_after(self, facts, stmts, name: str):
        """The first call `name(...)` in the statements after, unless `name.train()` comes first."""
        for st in stmts:
            if self._mode_call_before([st], name, "train"):
                return None
            for c in facts.calls_in(st, into_defs=False):
                if isinstance(c.func, cst.Name) and c.func.value == name:
                    return c
        return None

    # an epoch (or training) loop that calls eval() and never train() ------------------------
    def _mode_effects(self, ctx, facts, loop):
        effects = set()
        for call in facts.calls_in(loop.node, into_defs=False):
            mo = method_of(call)
            if mo is not None and mo[1] == "train":
                effects.add(facts._train_call_mode(call) or "unknown")
            for fn in facts.file_functions(call):
                eff = _call_effects(facts, fn, call, 0)
                if "train" in eff or "unknown-mode" in eff:
                    effects.add("train")
        return effects

    def _evals_in(self, ctx, facts, loop):
        """(eval call, model expression in the loop's scope, file-function call or None)."""
        for call in facts.calls_in(loop.node, into_defs=False):
            mo = method_of(call)
            if (mo is not None and mo[1] == "eval" and not call.args and facts.is_model(mo[0])
                    and not _plain_class_method(ctx, facts, call)):
                yield call, mo[0], None
            for fn in facts.file_functions(call):
                for inner in facts.calls_in(fn.body, into_defs=False):
                    imo = method_of(inner)
                    if imo is not None and imo[1] == "eval" and not inner.args and isinstance(imo[0], cst.Name):
                        arg = facts.argument_for(fn, call, imo[0].value)
                        if arg is not None and facts.is_model(arg):
                            yield inner, arg, call
                        elif arg is None and _closure_variable(ctx.model, fn, imo[0], call) and facts.is_model(imo[0]):
                            # a closure of the function the loop runs in (texar-pytorch#310's
                            # `_eval_epoch()` in main(), which runs `model.eval()` on main's model)
                            yield inner, imo[0], call
                    elif (imo is not None and imo[1] == "eval" and not inner.args and self_attr(imo[0]) is not None
                          and _self_call(call) and ctx.model.class_of(fn) is ctx.model.class_of(call)
                          and facts.is_model(imo[0])):
                        # `self.validate()` from the training loop of another method of the class,
                        # which runs `self.model.eval()`: the same `self.model`
                        yield inner, imo[0], call
                    elif _self_call(call) and _self_call(inner) and ctx.model.class_of(fn) is ctx.model.class_of(call):
                        # one more method of the class: `self._perform_model_selection()` calls
                        # `self.validate()`, which runs `self.model.eval()` (small-text#40)
                        for fn2 in facts.file_functions(inner):
                            if fn2 is fn or ctx.model.class_of(fn2) is not ctx.model.class_of(fn):
                                continue
                            for inner2 in facts.calls_in(fn2.body, into_defs=False):
                                imo2 = method_of(inner2)
                                if (imo2 is not None and imo2[1] == "eval" and not inner2.args
                                        and self_attr(imo2[0]) is not None and facts.is_model(imo2[0])):
                                    yield inner2, imo2[0], call
                # `set_mode("eval", [pg, ee])` (a helper looping over a list of models), called
                # from the loop or from a function the loop calls (`check_accuracy(pg, ee, ...)`)
                for node, expr in _list_evals(facts, fn, call):
                    yield node, expr, call
                for inner in facts.calls_in(fn.body, into_defs=False):
                    for g in facts.file_functions(inner):
                        if g is fn:
                            continue
                        for _node, expr in (*_list_evals(facts, g, inner), *_param_evals(facts, g, inner)):
                            if isinstance(expr, cst.Name) and ctx.model.scope_of(expr) is fn:
                                arg = facts.argument_for(fn, call, expr.value)
                                if arg is not None and facts.is_model(arg):
                                    yield inner, arg, call

    def _never_undone(self, ctx, facts, seen=None):
        reported = set()
        for loop in facts.loops:
            # an epoch loop whose training runs in a function of the file (the Quickstart's
            # `for t in range(epochs): train(loader, model, ...); test(loader, model, ...)`)
            through = not (loop.is_training or loop.is_epoch_loop) and self._steps_through_calls(facts, loop)
            if not (loop.is_training or loop.is_epoch_loop or through):
                continue
            if self._mode_effects(ctx, facts, loop) & {"train", "unknown"}:
                continue
            for call, model, via in self._evals_in(ctx, facts, loop):
                name = dotted(model)
                if (call, name) in reported or (call, None) in reported:
                    continue
                if name is None or not facts.mode_sensitive(model):
                    continue
                if not self._trained_in(facts, loop, name) and not (
                        through and self._trained_through_calls(ctx, facts, loop, name)):
                    continue
                if _steps_only_other_models(ctx, loop, model):
                    continue  # scored inside another model's training loop (AutoGAN's controller, P40-A1)
                if facts.passes_to_unknown(loop.node, {name}):
                    continue
                if _eval_right_before_training(ctx, facts, loop, name):
                    continue  # `t_model.eval()` then at once the loop that trains it: eval-mode training by choice
                mo = method_of(call)
                if seen is not None:
                    seen.add(call)
                if mo is not None and mo[1] == "eval":
                    reported.add((call, None))
                    fix = self._train_fix(ctx, facts, loop, name, call, via)
                else:
                    # the models of a helper's list (`set_mode("eval", [pg, ee])`): one finding per
                    # model at the call, no fix (a `.train()` per model inserted one at a time would
                    # stop at the first: the loop then trains again and the others stay in eval)
                    reported.add((call, name))
                    yield ctx.finding(call, self.helper_message.format(call=ctx.code(call.func), model=name))
                    continue
                yield ctx.finding(call, self.message.format(model=name), fix)
        yield from self._wrapper_never_undone(ctx, facts, seen)

    # an eval() reached through calls the flow engine resolves --------------------------------
    def _resolved_never_undone(self, ctx, facts, seen):
        """`X.eval()` in a function or method of the file that the training loop reaches through
        calls the flow engine resolves (a callback object's `c.on_epoch_end()` running
        `self.model.predict(...)`, torchtuples#9; `self.logic.train_validation_begin(self.models)`
        putting `models["main"]` in eval mode, pytorch-pfn-extras#688), where `X` is, by the engine's
        values, the very module object the loop trains (one constructor call that runs once), and
        nothing the loop runs puts a model back in training mode. The paths `_never_undone` follows
        by name (`self.` calls, a parameter bound to the loop's name) are left to it."""
        m = ctx.model
        done: set = set()
        for loop in facts.loops:
            through = not (loop.is_training or loop.is_epoch_loop) and self._steps_through_calls(facts, loop)
            if not (loop.is_training or loop.is_epoch_loop or through):
                continue
            if self._mode_effects(ctx, facts, loop) & {"train", "unknown"}:
                continue
            for call, recv, top in _reached_evals(facts, loop):
                if call in seen or call in done:
                    continue
                origin = _module_origin(m, recv)
                if origin is None or not _single_instance(m, facts, origin):
                    continue
                if _later_eval_of(m, call, origin):
                    continue  # the last `eval()` of the function is the one that stays
                if not _origin_sensitive(facts, origin):
                    continue
                if not _trains_origin(facts, loop, origin):
                    continue
                name = _name_in(m, loop.node, origin)
                if name is not None:
                    if _steps_only_other_models(ctx, loop, name[1]) or facts.passes_to_unknown(loop.node, {name[0]}):
                        continue
                    if _eval_right_before_training(ctx, facts, loop, name[0]):
                        continue  # the loop itself trains the model in eval mode on purpose (P42-1)
                elif _steps_only_other_models(ctx, loop, recv):
                    continue
                if _origin_to_unknown(facts, loop.node, origin):
                    continue
                if _call_right_before_training(ctx, facts, loop, top, origin):
                    continue  # a helper that freezes the model, then at once the loop that trains it
                done.add(call)
                fix = self._train_fix(ctx, facts, loop, name[0], call, top) if name is not None else None
                again = f"call `{name[0]}.train()`" if name is not None else f"put `{ctx.code(recv)}` back in training mode"
                yield ctx.finding(
                    call,
                    f"`{ctx.code(recv)}.eval()`, run from the training loop ({line_ref(ctx, loop.node)}) through "
                    f"`{ctx.code(top.func)}(...)`, is never undone: later training steps run with dropout off and "
                    f"frozen batch-norm statistics; {again} before training again",
                    fix,
                )

    def _wrapper_never_undone(self, ctx, facts, seen=None):
        """`validate(model)` in a training loop whose model object's method puts its encoders in
        eval mode (`model.val_start()`), while the loop trains them through another method
        (`model.train_emb(...)` runs backward and the optimizer step), and nothing in the loop puts
        them back in train mode."""
        reported = set()
        for loop in facts.loops:
            if not (loop.is_training or loop.is_epoch_loop or self._steps_through_calls(facts, loop)):
                continue
            if self._mode_effects(ctx, facts, loop) & {"train", "unknown"}:
                continue
            for call, expr, name in self._wrapper_evals(ctx, facts, loop):
                if call in reported or not facts.mode_sensitive(expr):
                    continue
                if not self._trained_through_methods(facts, loop, name, dotted(expr)):
                    continue
                if facts.passes_to_unknown(loop.node, {name, name.rsplit(".", 1)[0]}):
                    continue
                reported.add(call)
                if seen is not None:
                    seen.add(call)
                # no fix: the wrapper's own method (`train_start()`) is what restores the mode
                yield ctx.finding(call, self.message.format(model=name))

    @staticmethod
    def _steps_through_calls(facts, loop) -> bool:
        """The loop calls a function or method of the file that runs backward and steps."""
        for c in facts.calls_in(loop.node, into_defs=False):
            for fn in facts.file_functions(c):
                if {"backward", "step"} <= facts.effects(fn):
                    return True
        return False

    @staticmethod
    def _wrapper_evals(ctx, facts, loop):
        """`self.<enc>.eval()` in a method of a plain class of the file that holds the models
        (VSE++'s `val_start()`), run on an object of the loop's scope: `obj.val_start()` in the loop,
        or `P.val_start()` in a function the loop calls with `obj` for P. Yields (the eval call,
        its `self.<enc>`, `obj.<enc>`)."""
        m = ctx.model
        for call in facts.calls_in(loop.node, into_defs=False):
            targets = []
            mo = method_of(call)
            if mo is not None and isinstance(mo[0], (cst.Name, cst.Attribute)) and dotted(mo[0]) not in (None, "self"):
                targets.append((call, dotted(mo[0])))
            else:
                for fn in facts.file_functions(call):
                    for inner in facts.calls_in(fn.body, into_defs=False):
                        imo = method_of(inner)
                        if imo is None or not isinstance(imo[0], cst.Name) or imo[0].value == "self":
                            continue
                        arg = facts.argument_for(fn, call, imo[0].value)
                        if isinstance(arg, (cst.Name, cst.Attribute)) and dotted(arg) not in (None, "self"):
                            targets.append((inner, dotted(arg)))
            for mcall, recv in targets:
                for g in facts.file_functions(mcall):
                    cls = m.class_of(g)
                    if cls is None or m.class_is(cls.name.value, MODULE_BASES):
                        continue
                    for e in facts.calls_in(g.body, into_defs=False):
                        emo = method_of(e)
                        if (emo is not None and emo[1] == "eval" and not e.args and self_attr(emo[0]) is not None
                                and dotted(emo[0]) is not None and facts.is_model(emo[0])):
                            yield e, emo[0], recv + dotted(emo[0])[len("self"):]

    @staticmethod
    def _trained_through_methods(facts, loop, name: str, attr: str) -> bool:
        """`obj.<method>(...)` called with gradients in a training loop inside `loop`, whose method
        (or the methods it calls on `self`) calls `self.<enc>`: `name` is `obj.<enc>`."""
        recv = name[: len(name) - len(attr) + len("self")]
        for c in facts.calls_in(loop.node, into_defs=False):
            mo = method_of(c)
            if mo is None or dotted(mo[0]) != recv or facts.grad_mode_at(c) is not None:
                continue
            for g in facts.file_functions(c):
                if "backward" not in facts.effects(g):
                    continue
                if any(dotted(mc.func) == attr and facts.grad_mode_at(mc) != "off"
                       for mc in facts.model_calls_through_self(g.body)):
                    return True
        return False

    @staticmethod
    def _trained_through_calls(ctx, facts, loop, name) -> bool:
        """A call in `loop` (gradients on) of a function of the file that runs backward and an
        optimizer step, and calls the model `name`: through the parameter the call binds to it, as
        the same module-level or enclosing variable, or as the same `self.<attr>` of its class."""
        m = ctx.model
        for c in facts.calls_in(loop.node, into_defs=False):
            if facts.grad_mode_at(c) is not None:
                continue
            for fn in facts.file_functions(c):
                if not {"backward", "step"} <= facts.effects(fn):
                    continue
                if _call_effects(facts, fn, c, 0) & {"train", "eval", "unknown-mode"}:
                    continue  # it sets the mode it trains in itself (a linear probe's `model.eval()`)
                for inner in facts.calls_in(fn.body, into_defs=False):
                    if facts.grad_mode_at(inner) == "off":
                        continue
                    if isinstance(inner.func, cst.Name):
                        arg = facts.argument_for(fn, c, inner.func.value)
                        if arg is not None:
                            if dotted(arg) == name:
                                return True
                        elif inner.func.value == name and _closure_variable(m, fn, inner.func, c):
                            return True
                    elif (name.startswith("self.") and dotted(inner.func) == name and _self_call(c)
                          and m.class_of(fn) is m.class_of(c)):
                        return True
        return False

    @staticmethod
    def _trained_in(facts, loop, name) -> bool:
        """`name(...)` is called with gradients on in a training loop inside `loop`."""
        for info in [loop, *loop.nested]:
            if not info.is_training:
                continue
            for c in facts.model_calls(info.node):
                if dotted(c.func) == name and facts.grad_mode_at(c) is None:
                    return True
            # `loss = dsm_loss(score, X, labels)`: a function of the file that calls the model it is
            # given (one level); `out, loss = model.process(x)`: a method of the model's own class
            # that runs it (`self(...)` / `self.forward(...)`)
            for c in facts.calls_in(info.node, into_defs=False):
                if facts.grad_mode_at(c) is not None:
                    continue
                mo = method_of(c)
                if mo is not None and mo[1] not in ("train", "eval") and dotted(mo[0]) == name:
                    for fn in facts.file_functions(c):
                        if _runs_self(fn):
                            return True
                for fn in facts.file_functions(c):
                    for inner in facts.calls_in(fn.body, into_defs=False):
                        if isinstance(inner.func, cst.Name):
                            arg = facts.argument_for(fn, c, inner.func.value)
                            if arg is not None and dotted(arg) == name and facts.grad_mode_at(inner) != "off":
                                return True
        return False

    @staticmethod
    def _train_fix(ctx, facts, loop, name, call=None, via=None):
        inner = next((n for n in loop.nested if n.is_training), None) if loop.is_epoch_loop else None
        site = via if via is not None else call
        if inner is not None and site is not None and any(a is inner.node for a in ctx.model.ancestors(site)):
            loop, inner = inner, None  # the eval runs inside the batch loop: train again at its top
        if loop.is_epoch_loop and inner is None:
            return None
        if inner is not None:
            offset = _line_above_comments(ctx, inner.node)
            text = f"{ctx.indent_of(inner.node)}{name}.train(){ctx.newline}"
        else:
            body = loop.node.body
            if not isinstance(body, cst.IndentedBlock) or not body.body:
                return None
            first = _train_anchor(ctx, facts, body, name, site) or body.body[0]
            offset = _line_above_comments(ctx, first)
            text = f"{ctx.indent_of(first)}{name}.train(){ctx.newline}"
        return ctx.fix(ctx.insert_text(offset, text), message=f"Insert `{name}.train()` before training")

    @staticmethod
    def _train_undoes_eval(ctx, facts, loop, name: str, model_calls):
        """`M.eval()` before an evaluation loop whose body calls `M.train()` before calling `M`, and
        never `M.eval()` again: the evaluation runs in training mode. The `train()` call, or None."""
        if facts.mode_before(loop) != "eval":
            return None
        trains = []
        for c in facts.calls_in(loop, into_defs=False):
            mo = method_of(c)
            if mo is None or mo[1] not in ("eval", "train") or dotted(mo[0]) != name:
                continue
            if mo[1] == "eval" or facts._train_call_mode(c) != "train":
                return None  # sets eval (or an unknown mode) again itself
            trains.append(c)
        if not trains:
            return None
        m = ctx.model
        first = trains[0]
        if not any(dotted(c.func) == name and m.precedes(first, c) for c in model_calls):
            return None
        return first

    # evaluation right after training without eval() -----------------------------------------
    @staticmethod
    def _deliberate_train(ctx, facts, loop, name: str) -> bool:
        """`model.train()` just before the loop, with no training loop in between, is a choice (e.g.
        updating batch-norm statistics, as torch.optim.swa_utils.update_bn does, or Monte Carlo
        dropout), not a slip. The scan goes out through the `with` blocks that hold the loop
        (`net.train()` then `with torch.no_grad(): for ...`)."""
        m = ctx.model
        stmt = loop
        while True:
            block = m.parent(stmt)
            body = getattr(block, "body", None)
            if not isinstance(body, (list, tuple)):
                return False
            idx = next((i for i, st in enumerate(body) if st is stmt), None)
            if idx is None:
                return False
            for prev in reversed(body[:idx]):
                calls = [prev] if isinstance(prev, cst.Call) else m.calls_in(prev)
                for c in calls:
                    mo = method_of(c)
                    if mo and mo[1] in ("backward", "step"):
                        return False
                if (
                    isinstance(prev, cst.SimpleStatementLine)
                    and len(prev.body) == 1
                    and isinstance(prev.body[0], cst.Expr)
                    and isinstance(prev.body[0].value, cst.Call)
                ):
                    call = prev.body[0].value
                    mo = method_of(call)
                    if mo and mo[1] == "train" and dotted(call.func.value) == name:
                        return True
                    # a helper of the file that switches (part of) the model to training mode:
                    # `enable_dropout(model)` before Monte-Carlo dropout inference
                    if any(dotted(a.value) == name for a in call.args) and any(
                        "train" in facts.effects(fn) for fn in facts.file_functions(call)
                    ):
                        return True
            owner = m.parent(block)
            if not isinstance(block, cst.IndentedBlock):
                return False
            if isinstance(owner, (cst.For, cst.While)) and owner.body is block:
                # Monte-Carlo dropout repeats the pass: `clf.train()`, then `for i in range(n_drop):
                # with torch.no_grad(): for x, y in loader: ...` (ej0cl6/deep-active-learning,
                # JordanAsh/badge). Out through such a loop only when it trains nothing (no
                # backward or step), switches no mode and hands the model to no function.
                if not _sampling_loop(m, owner, name):
                    return False
            elif not isinstance(owner, cst.With):
                return False
            stmt = owner

    def _eval_in_train_mode(self, ctx, facts):
        done: set[cst.CSTNode] = set()
        for loop in facts.loops:
            node = loop.node
            if any(a in done for a in ctx.model.ancestors(node)):
                continue
            if loop.backward or loop.steps or facts.grad_use(node):
                continue
            fn = facts.function_of(node)
            after_training = None
            if not (facts.is_eval_function(fn) or facts.grad_mode_at(node) == "off"):
                after_training = _training_loop_before(ctx, facts, node)
                if after_training is None:
                    continue
            models = []
            calls = facts.model_calls_through_self(node)  # (outside a class: its own model calls)
            # a torch loss module is no model, whatever its name (`crit = criterion`, Q:G69-6)
            calls = [c for c in calls if not torch_loss_value(ctx.model, c.func)]
            # `model.generate(x)`: a method of the model's own class that runs `self.forward(...)` /
            # `self(...)` is a call of the model (trocr#9); one that sets a mode itself is not read
            recv = {c: c.func for c in calls}
            runs, sets_mode = _self_running_calls(facts, node)
            if sets_mode:
                continue
            for c, expr in runs:
                calls.append(c)
                recv[c] = expr
            for c in calls:
                name = dotted(recv[c])
                if name is not None and name not in models:
                    models.append(name)
            if len(models) != 1:
                continue
            name = models[0]
            model_expr = next(recv[c] for c in calls if dotted(recv[c]) == name)
            if not facts.mode_sensitive(model_expr):
                continue
            if all(_output_discarded(ctx.model, c) for c in calls if dotted(recv[c]) == name):
                continue  # `model(x)` for its side effects: batch-norm statistics (update_bn), not evaluation
            if after_training is not None and not _evaluates_after(ctx, facts, node, after_training, name, calls, recv):
                continue
            if any(
                method_of(c) and method_of(c)[1] in ("eval", "train") for c in facts.calls_in(node, into_defs=False)
            ):
                undone = self._train_undoes_eval(ctx, facts, node, name, calls)
                if undone is not None:
                    done.add(node)
                    yield ctx.finding(
                        node,
                        f"evaluation loop runs `{name}` in training mode (dropout on, batch-norm statistics "
                        f"updated): `{name}.train()` on {line_ref(ctx, undone)} undoes the `{name}.eval()` "
                        f"before the loop; remove it, or call `{name}.eval()` after it",
                    )
                continue
            if any(facts.effects(fn) & {"eval", "train", "unknown-mode"} for fn in facts.self_methods_called(node)):
                continue  # a method it calls sets the mode itself
            if facts.mode_before(node) != "train":
                continue
            if _left_in_eval_by_init(ctx.model, node, name):
                continue  # `self.model.eval()` in `__init__`, no method trains it again (A70-P2)
            if _eval_context_around(ctx, node, name):
                continue  # `with evaluating(model):`, a `@contextmanager` of the file that calls `model.eval()`
            if facts.passes_to_unknown(node, {name}):
                continue
            if self._deliberate_train(ctx, facts, node, name):
                continue
            done.add(node)
            fix = None
            if (
                facts.is_eval_function(fn)
                or after_training is not None
                or _measures(ctx.model, facts, node)
                or (fn is not None and _METRIC_NAME.search(fn.name.value))
            ):
                # A loop known as an evaluation only by running under `no_grad`, that measures
                # nothing, may be a pass in training mode on purpose (SwAV's `init_memory` fills the
                # memory bank with the embeddings training mode gives): reported, not rewritten.
                fix = ctx.fix(
                    ctx.insert_text(_line_above_comments(ctx, node), f"{ctx.indent_of(node)}{name}.eval(){ctx.newline}"),
                    ctx.insert_after(node, f"{name}.train()"),
                    message=f"Insert `{name}.eval()` before the evaluation loop and `{name}.train()` after it",
                )
            yield ctx.finding(
                node,
                f"evaluation loop runs `{name}` in training mode (dropout on, batch-norm statistics updated); "
                f"call `{name}.eval()` before it and `{name}.train()` after it",
                fix,
            )


def _train_anchor(ctx: Context, facts, body: cst.IndentedBlock, name: str, site) -> cst.CSTNode | None:
    """When the statement of the loop body that reaches the `eval()` (itself, or the call of the
    function that runs it: `if it % k == 0: self.validate()`) comes before the statement holding the
    body's first gradient-on call of the model, that statement: `train()` must go right before the
    training forward, or the iteration that evaluated would train in eval mode. None otherwise (the
    top of the body is right)."""
    if site is None:
        return None
    m = ctx.model
    stmts = list(body.body)

    def index_of(node):
        for i, st in enumerate(stmts):
            if st is node or m.contains(st, node):
                return i
        return None

    at_eval = index_of(site)
    if at_eval is None:
        return None
    train_calls = [c for c in facts.model_calls(body) if dotted(c.func) == name and facts.grad_mode_at(c) is None]
    at_train = [i for i in (index_of(c) for c in train_calls) if i is not None]
    if not at_train or min(at_train) <= at_eval:
        return None
    return stmts[min(at_train)]


def _steps_only_other_models(ctx: Context, loop, model) -> bool:
    """Every optimizer step in `loop` (`opt.step()`, `scaler.step(opt)`) is of an optimizer the
    engine knows to be built over another module's parameters than `model`'s: the loop trains
    those modules, and `model` (a generator scored for the controller's reward in AutoGAN's
    `train_controller`) only runs in it. False when a step's optimizer or the model's origin is
    not known, or the loop steps nothing."""
    m = ctx.model
    mv = m.value_of(model)
    if mv.kind != "module" or not isinstance(mv.origin, cst.Call) or m.enclosing(mv.origin, cst.ClassDef) is not None:
        return False  # (a part built inside a module class may be trained through its owner's optimizer)
    steps = 0
    for c in m.calls_in(loop.node):
        f = c.func
        if not (isinstance(f, cst.Attribute) and f.attr.value == "step"):
            continue
        recv = f.value
        rv = m.value_of(recv)
        if rv.kind == "scaler" and c.args and not c.args[0].star:
            rv = m.value_of(c.args[0].value)  # `scaler.step(optimizer)`
        elif rv.kind in ("scheduler",):
            continue  # an LR schedule's step trains nothing
        if rv.kind != "optimizer" or rv.source is None:
            return False
        if rv.source is mv.origin:
            return False
        if isinstance(rv.source, cst.Call) and any(
                not a.star and m.value_of(a.value).origin is mv.origin for a in rv.source.args):
            return False  # `SGD(Wrapper(gen_net, controller).parameters())`: the model is a part of it
        steps += 1
    return steps > 0


def _eval_right_before_training(ctx: Context, facts, loop, name: str) -> bool:
    """In the body of `loop` (or a block inside it), a statement `name.eval()` followed in the same
    block, with nothing in between that mentions `name` or runs a loop, by a training loop that calls
    `name`: the model is put in eval mode on purpose to be trained so (frozen batch-norm statistics,
    no dropout). xuguodong03/SSKD's teacher: `for epoch in ...: t_model.eval(); ...; for x, _ in
    train_loader: ... t_model(x, bb_grad=False) ... loss.backward(); t_optimizer.step()`, a linear
    head trained on a frozen backbone. An `eval()` before an evaluation that is followed by training
    (the slip this rule is about) has the evaluation in between."""
    m = ctx.model
    training = {info.node for info in [loop, *loop.nested] if info.is_training}
    if not training:
        return False
    for node in (loop.node.body, *m.walk(loop.node.body, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda))):
        body = getattr(node, "body", None)
        if not isinstance(node, cst.IndentedBlock) or not isinstance(body, (list, tuple)):
            continue
        for i, st in enumerate(body):
            if not (isinstance(st, cst.SimpleStatementLine) and len(st.body) == 1 and isinstance(st.body[0], cst.Expr)):
                continue
            call = st.body[0].value
            mo = method_of(call) if isinstance(call, cst.Call) else None
            if mo is None or mo[1] != "eval" or call.args or dotted(mo[0]) != name:
                continue
            for nxt in body[i + 1:]:
                if isinstance(nxt, (cst.For, cst.While)):
                    if nxt in training and any(dotted(c.func) == name for c in facts.model_calls(nxt)):
                        return True
                    break
                if _mentions(m, nxt, name):
                    break
                if not isinstance(nxt, cst.SimpleStatementLine) and not _plain_choice(m, nxt):
                    break
    return False


def _plain_choice(m, node) -> bool:
    """An `if`/`else` that only binds plain values: no loop, no nested function, and no call that
    could switch a model's mode (a function or method of the file, a `.train()` / `.eval()`, a call
    on `self`). MoCo-Pytorch's `finetune` picks its loader (`tqdm(loader)` or `loader`) between the
    frozen encoder's `eval()` and the head's training loop (P42-1)."""
    if not isinstance(node, cst.If):
        return False
    for n in m.walk(node):
        if isinstance(n, (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.With, cst.Try)):
            return False
        if isinstance(n, cst.Call):
            f = n.func
            if isinstance(f, cst.Name) and (m.module_function(f.value) is not None or f.value in m.classes):
                return False
            if isinstance(f, cst.Attribute):
                if f.attr.value in ("train", "eval", "requires_grad_"):
                    return False
                root = f.value
                while isinstance(root, (cst.Attribute, cst.Subscript, cst.Call)):
                    root = root.func if isinstance(root, cst.Call) else root.value
                if isinstance(root, cst.Name) and root.value == "self":
                    return False
    return True


def _sampling_loop(m, loop, name: str) -> bool:
    """A loop around an evaluation pass that only repeats it to sample: no backward or optimizer
    step, no `.train()`/`.eval()` call, the model handed to no call as an argument, and the
    outputs gathered across the repeats (`probs[idxs] += p`, or stored by the repeat's index,
    `probs[i][idxs] = p`), as Monte-Carlo dropout does. An epoch loop that prints or keeps each
    pass's output on its own is not such a loop."""
    for c in m.calls_in(loop):
        mo = method_of(c)
        if mo and mo[1] in ("backward", "step", "train", "eval"):
            return False
        if any(dotted(a.value) == name for a in c.args):
            return False
    index = loop.target.value if isinstance(loop, cst.For) and isinstance(loop.target, cst.Name) else None
    found = []

    class _Gather(cst.CSTVisitor):
        def visit_AugAssign(self, node):
            if isinstance(node.target, cst.Subscript) and isinstance(node.operator, cst.AddAssign):
                found.append(node)

        def visit_Assign(self, node):
            if index is None:
                return
            for t in node.targets:
                if isinstance(t.target, cst.Subscript) and any(
                    isinstance(n, cst.Name) and n.value == index for n in _names_in(t.target)
                ):
                    found.append(node)

    loop.body.visit(_Gather())
    return bool(found)


def _names_in(node) -> list:
    out = []

    class _N(cst.CSTVisitor):
        def visit_Name(self, n):
            out.append(n)

    node.visit(_N())
    return out


def _mentions(m, node, name: str) -> bool:
    head = name.split(".")[0]
    return any(isinstance(n, cst.Name) and n.value == head for n in m.walk(node))


def _backward_after(facts, stmts) -> bool:
    return any(isinstance(c.func, cst.Attribute) and c.func.attr.value == "backward"
               for st in stmts for c in facts.calls_in(st, into_defs=False))


def _module_methods(m, cache: dict) -> dict:
    """Method name -> the methods of that name of the file's module classes (once per check)."""
    found = cache.get("methods")
    if found is None:
        found = {}
        for cname, info in m.classes.items():
            if m.class_is(cname, MODULE_BASES):
                for name, fn in info.methods.items():
                    found.setdefault(name, []).append(fn)
        cache["methods"] = found
    return found


def _evaluated_names(facts, call: cst.Call, cache: dict, depth: int, caller=None) -> list[str]:
    """The names this call leaves in eval mode: its receiver for `name.meth(...)` whose method (of
    the file's one module class defining it) does so to `self`; its name arguments for
    `helper(..., name, ...)`, a function of the file that does so to that parameter. `caller`
    (the function the call is in) is not looked into again."""
    m = facts.m
    f = call.func
    if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.attr.value not in ("eval", "train"):
        meths = _module_methods(m, cache).get(f.attr.value, ())
        if len(meths) == 1 and meths[0] is not caller and _leaves_eval(facts, meths[0], "self", cache, depth):
            return [f.value.value]
        return []
    out = []
    if isinstance(f, cst.Name) and f.value not in m.classes and len(m.functions.get(f.value, [])) == 1:
        g = m.functions[f.value][0]
        if g is caller:
            return []
        params = [p.name.value for p in (*g.params.posonly_params, *g.params.params)]
        for j, a in enumerate(call.args):
            if a.star or not isinstance(a.value, cst.Name):
                continue
            pname = a.keyword.value if a.keyword is not None else (params[j] if j < len(params) else None)
            if pname is not None and _leaves_eval(facts, g, pname, cache, depth):
                out.append(a.value.value)
    return out


def _leaves_eval(facts, fn: cst.FunctionDef, name: str, cache: dict, depth: int) -> bool:
    """Does running `fn` leave its parameter `name` (or `self`) in eval mode: a statement of its
    own body (not under `if`/loop/`try`) is `name.eval()`, or hands `name` to a method or function of
    the file that does so, and no `train` call on `name` (nor `train(...)` of anything) follows."""
    key = (fn, name)
    if key in cache:
        return cache[key]
    cache[key] = False
    found = False
    if depth <= 2 and isinstance(fn.body, cst.IndentedBlock):
        for st in fn.body.body:
            if not isinstance(st, cst.SimpleStatementLine):
                continue
            for small in st.body:
                call = small.value if isinstance(small, (cst.Expr, cst.Assign, cst.Return)) else None
                if not isinstance(call, cst.Call):
                    continue
                f = call.func
                if isinstance(f, cst.Attribute) and f.attr.value == "train":
                    found = False
                elif (isinstance(f, cst.Attribute) and f.attr.value == "eval" and not call.args
                      and isinstance(f.value, cst.Name) and f.value.value == name):
                    found = True
            if any(name in _evaluated_names(facts, c, cache, depth + 1, fn)
                   for c in facts.calls_in(st, into_defs=False)):
                found = True
    cache[key] = found
    return found


def _closure_variable(m, fn: cst.FunctionDef, name: cst.Name, call: cst.Call) -> bool:
    """`name` in the nested function `fn` is a variable of an enclosing function (no binding in
    `fn` itself), and `call` (the call of `fn`) is inside that enclosing function too: both refer
    to the same object."""
    bindings = m.bindings_of(name)
    if not bindings:
        return False
    if all(isinstance(m.scope_of(b.node), cst.Module) for b in bindings):
        return _same_global_at(m, name.value, bindings, call)
    for b in bindings:
        scope = m.scope_of(b.node)
        if scope is fn or not isinstance(scope, cst.FunctionDef):
            return False
        if not (m.contains(scope, fn) and m.contains(scope, call)):
            return False
    return True


def _same_global_at(m, name: str, bindings, call: cst.Call) -> bool:
    """`name`, a module-level variable in the called function, names the same object where the
    call is: every use of `name` in the function that makes the call resolves to those module
    bindings (no parameter or local of its own shadows it; tk-rusch/coRNN#1's module-level
    `model`, evaluated by test() and trained by train())."""
    caller = m.scope_of(call)
    if isinstance(caller, cst.Module):
        return True
    if not isinstance(caller, cst.FunctionDef):
        return False
    ids = {id(b.node) for b in bindings}
    for n in m.walk(caller):
        if isinstance(n, cst.Name) and n.value == name:
            parent = m.parent(n)
            if (isinstance(parent, cst.Attribute) and parent.attr is n) or (
                    isinstance(parent, cst.Arg) and parent.keyword is n):
                continue  # `x.model`, `f(model=...)`: not the variable
            seen = m.bindings_of(n)
            if not seen or {id(b.node) for b in seen} != ids:
                return False
    return True


def _self_running_calls(facts, node):
    """([(call, model)], sets_mode) for the calls `X.meth(...)` in `node` (nested definitions
    left out) where X is a model and `meth` a method of X's class in the file whose body runs the
    model itself (`self.forward(...)`, `self(...)`): `model.generate(x)`. `sets_mode` when such a
    method, or one it calls, sets a train/eval mode (it may put the model in eval mode itself)."""
    out, sets_mode = [], False
    for c in facts.calls_in(node, into_defs=False):
        mo = method_of(c)
        if mo is None or mo[1] in ("train", "eval", "forward") or not isinstance(mo[0], (cst.Name, cst.Attribute)):
            continue
        if not facts.is_model(mo[0]):
            continue
        for fn in facts.file_functions(c):
            if not _runs_self(fn):
                continue
            if facts.effects(fn) & {"train", "eval", "unknown-mode"}:
                sets_mode = True
            out.append((c, mo[0]))
            break
    return out, sets_mode


def _runs_self(fn: cst.FunctionDef) -> bool:
    """A method whose body calls its own module: `self(...)` or `self.forward(...)`, with gradients
    not switched off around the call."""
    for n in walk(fn.body, into_defs=False):
        if not isinstance(n, cst.Call):
            continue
        f = n.func
        if (isinstance(f, cst.Name) and f.value == "self") or (
                isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == "self"
                and f.attr.value == "forward"):
            return True
    return False


def _output_discarded(m, call: cst.Call) -> bool:
    """`model(x)` is a statement of its own, or is assigned to the throwaway name `_` (`_ = model(x)`,
    DFQ's `estimate_stats` refreshing statistics in training mode): its output is not used."""
    parent = m.parent(call)
    if isinstance(parent, cst.Expr):
        return True
    return (
        isinstance(parent, cst.Assign)
        and len(parent.targets) == 1
        and isinstance(parent.targets[0].target, cst.Name)
        and parent.targets[0].target.value == "_"
    )


# a loader named for evaluation: `valid_loader`, `val_dl`, `testloader`, `test_data`
EVAL_LOADER = re.compile(r"(?:^|_)(?:val|valid|validation|test|testing|eval|evaluation)(?:_|loader|set|data|dl|$)", re.IGNORECASE)
_ITER_WRAPPERS = ("enumerate", "iter", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm")


def _training_loop_before(ctx: Context, facts, node):
    """`for ... in valid_loader:` whose nearest preceding statement in its block that sets a
    train/eval mode is a training loop, with nothing in between that sets a mode (`M.train()`,
    `enable_dropout(M)`, a helper of the file that does): an evaluation loop written right after
    the training batches (udacity/deep-learning-v2-pytorch#3). The training loop's LoopInfo, or None."""
    m = ctx.model
    if isinstance(node, cst.With):
        pass  # a loop-free `with torch.no_grad():` block (the caller checked it)
    elif not isinstance(node, cst.For):
        return None
    else:
        it = node.iter
        while isinstance(it, cst.Call) and it.args and it.args[0].keyword is None:
            q = m.qualname(it.func) or (it.func.value if isinstance(it.func, cst.Name) else None)
            if q not in _ITER_WRAPPERS:
                break
            it = it.args[0].value
        if not isinstance(it, (cst.Name, cst.Attribute)) or not EVAL_LOADER.search(it.attr.value if isinstance(it, cst.Attribute) else it.value):
            return None
    block = m.parent(node)
    body = getattr(block, "body", None)
    if not isinstance(block, (cst.IndentedBlock, cst.Module)) or not isinstance(body, (list, tuple)):
        return None
    idx = next((i for i, st in enumerate(body) if st is node), None)
    if idx is None:
        return None
    for stmt in reversed(body[:idx]):
        if isinstance(stmt, (cst.For, cst.While)) and facts.loop_info[stmt].is_training:
            return facts.loop_info[stmt]
        if facts.statement_mode(stmt, training_loops=False) is not None:
            return None
    return None


def _evaluates_after(ctx: Context, facts, node, train_loop, name: str, calls, recv=None) -> bool:
    """The loop after `train_loop` evaluates the model `train_loop` trains, in training mode by
    mistake: the model is trained there, nothing in the scope set `name.eval()` before the loop
    (a model kept in eval mode on purpose trains and validates in it), the loop computes a loss or
    an accuracy, and calls the model once per batch (not repeatedly, as Monte-Carlo dropout does:
    `[model(x) for _ in range(T)]`), and no function the file does not define gets the model
    between the two loops (it may set the mode)."""
    m = ctx.model
    if not TrainEvalModeToggling._trained_in(facts, train_loop, name):
        return False
    scope = facts.function_of(node) or m.module
    for c in facts.calls_in(scope, into_defs=False):
        if not m.precedes(c, node):
            break
        mo = method_of(c)
        if mo is not None and mo[1] == "eval" and dotted(mo[0]) == name:
            return False
    for c in calls:
        if dotted(recv[c] if recv else c.func) != name:
            continue
        for anc in m.ancestors(c):
            if anc is node:
                break
            if isinstance(anc, (cst.For, cst.While, cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp)):
                return False  # called repeatedly per batch: sampling (MC dropout), not one evaluation
    measures = _measures(m, facts, node)
    if not measures:
        # the metric computed by a function or method of the file the loop calls
        # (`decoder.wer(decoded, target)`, `accuracy(output, y)`: deepspeech.pytorch#22)
        measures = any(_measures(m, facts, fn, helper=True)
                       for c in facts.calls_in(node, into_defs=False) for fn in facts.file_functions(c))
    if not measures:
        return False
    parent = m.parent(node)
    body = list(getattr(parent, "body", ()))
    between = body[body.index(train_loop.node) + 1 : body.index(node)]
    return not any(facts.passes_to_unknown(stmt, {name}) for stmt in between)


def _measures(m, facts, node, helper: bool = False) -> bool:
    """`node` computes a loss or an accuracy: a loss call, `.eq(...)`, an `==` comparison (in a
    helper of the file also `.ne(...)` / `!=`, an error count)."""
    for c in facts.calls_in(node, into_defs=False):
        q = m.qualname(c.func) or ""
        short = q.rsplit(".", 1)[-1].lower()
        if (facts.is_loss_module(c.func) or torch_loss_value(m, c.func)
                or (q.startswith("torch.nn.functional.") and ("loss" in short or "entropy" in short))):
            return True
        mo = method_of(c)
        if mo is not None and (mo[1] == "eq" or (helper and mo[1] == "ne")):
            return True
    ops = (cst.Equal, cst.NotEqual) if helper else (cst.Equal,)
    return any(isinstance(n, cst.ComparisonTarget) and isinstance(n.operator, ops) for n in walk(node))


def _self_call(call: cst.Call) -> bool:
    """`self.<method>(...)`."""
    return self_attr(call.func) is not None


def _literal_at(facts, fn: cst.FunctionDef, call: cst.Call, param: str) -> str | None:
    arg = facts.argument_for(fn, call, param)
    if arg is None:
        p = next((x for x in (*fn.params.params, *fn.params.kwonly_params) if x.name.value == param), None)
        arg = p.default if p is not None else None
    if isinstance(arg, cst.SimpleString) and isinstance(arg.evaluated_value, str):
        return arg.evaluated_value
    return None


def _taken(facts, fn: cst.FunctionDef, call: cst.Call, node: cst.CSTNode) -> bool:
    """False when an `if P == "lit":` (or `"lit" == P`, `P != "lit"`) around `node` in `fn` is
    decided against it by the string literal the call passes for parameter P
    (`set_mode("eval", models)` never runs the `if mode == "train":` branch)."""
    m = facts.m
    params = {p.name.value for p in (*fn.params.params, *fn.params.kwonly_params)}
    child = node
    for anc in m.ancestors(node):
        if anc is fn:
            return True
        if isinstance(anc, cst.If) and isinstance(anc.test, cst.Comparison) and len(anc.test.comparisons) == 1:
            comp = anc.test.comparisons[0]
            left, right = anc.test.left, comp.comparator
            if isinstance(left, cst.SimpleString):
                left, right = right, left
            if (isinstance(left, cst.Name) and left.value in params and isinstance(right, cst.SimpleString)
                    and isinstance(comp.operator, (cst.Equal, cst.NotEqual))):
                given = _literal_at(facts, fn, call, left.value)
                if given is not None:
                    holds = (given == right.evaluated_value) == isinstance(comp.operator, cst.Equal)
                    if holds != (child is anc.body):
                        return False
        child = anc
    return True


def _call_effects(facts, fn: cst.FunctionDef, call: cst.Call, depth: int) -> set:
    """`facts.effects(fn)` for this call: mode calls in branches its string arguments rule out
    (`set_mode("eval", ...)`'s `if mode == "train":`) do not count, here and in the functions of
    the file it calls (one level further)."""
    eff = facts.effects(fn)
    if depth > 1 or not ({"train", "eval", "unknown-mode"} & eff):
        return eff
    out = set(eff) - {"train", "eval", "unknown-mode"}
    for c in facts.calls_in(fn.body):  # as `effects` reads them (nested definitions included)
        if not _taken(facts, fn, call, c):
            continue
        mo = method_of(c)
        if mo is not None and mo[1] == "eval" and not c.args:
            out.add("eval")
        elif mo is not None and mo[1] == "train":
            out.add(facts._train_call_mode(c) or "unknown-mode")
        for g in facts.file_functions(c):
            if g is not fn:
                out |= _call_effects(facts, g, c, depth + 1) & {"train", "eval", "unknown-mode"}
    return out


def _param_evals(facts, fn: cst.FunctionDef, call: cst.Call):
    """(eval call, argument) for `P.eval()` in `fn` on a parameter P, on a branch the call takes."""
    for inner in facts.calls_in(fn.body, into_defs=False):
        mo = method_of(inner)
        if mo is None or mo[1] != "eval" or inner.args or not isinstance(mo[0], cst.Name):
            continue
        if not _taken(facts, fn, call, inner):
            continue
        arg = facts.argument_for(fn, call, mo[0].value)
        if arg is not None:
            yield inner, arg


def _list_evals(facts, fn: cst.FunctionDef, call: cst.Call):
    """(call, model) for each model of a list or tuple literal the call passes for a parameter P
    that `fn` loops over calling `.eval()` on the loop variable (`for m in models: m.eval()`), on a
    branch the call takes. Reported at the call: the helper serves every caller."""
    m = facts.m
    for inner in facts.calls_in(fn.body, into_defs=False):
        mo = method_of(inner)
        if mo is None or mo[1] != "eval" or inner.args or not isinstance(mo[0], cst.Name):
            continue
        loop = next((a for a in m.ancestors(inner) if isinstance(a, cst.For)), None)
        if loop is None or m.scope_of(loop) is not fn or not isinstance(loop.target, cst.Name):
            continue
        if loop.target.value != mo[0].value or not isinstance(loop.iter, cst.Name):
            continue
        if not _taken(facts, fn, call, inner):
            continue
        given = facts.argument_for(fn, call, loop.iter.value)
        if isinstance(given, (cst.List, cst.Tuple)):
            for el in given.elements:
                if isinstance(el, cst.Element) and isinstance(el.value, (cst.Name, cst.Attribute)):
                    yield call, el.value


_DETECTION = re.compile(r"^torchvision\.models\.detection\.|(?:rcnn|retinanet|fcos|ssd\d*|ssdlite\w*|yolo\w*)$", re.IGNORECASE)


def _losses_in_training_mode(m, call: cst.Call) -> bool:
    """`loss_dict = model(images, targets)` of a model that returns its losses only in training
    mode (torchvision's detection models, whose eval mode returns detections): a phase loop that
    runs its 'val' phase in training mode gets the validation losses so, on purpose. Known by the
    model's constructor, or by the output being read as a mapping (`.values()`, `.items()`)."""
    ctor = m.constructor_of(call.func)
    q = (m.qualname(ctor.func) or dotted(ctor.func) or "") if ctor is not None else ""
    if q and _DETECTION.search(q):
        return True
    parent = m.parent(call)
    if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name)):
        return False
    out = parent.targets[0].target.value
    scope = m.scope_of(call)
    for n in m.walk(scope):
        if (isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) and n.value.value == out
                and n.attr.value in ("values", "items", "keys")):
            return True
    return False


# the engine's module objects ---------------------------------------------------------------------
_MAX_HOPS = 4


def _module_origin(m, expr) -> cst.Call | None:
    """The constructor call that made the module `expr` holds, by the flow engine's value."""
    v = m.value_of(expr)
    if v.kind != "module" or not isinstance(v.origin, cst.Call):
        return None
    return v.origin


def _reached_evals(facts, loop):
    """(`X.eval()` call, X, the loop's call that reaches it) for each argument-less `eval()` in a
    function of the file that a call in the loop runs, followed through the calls the engine
    resolves (`facts.file_functions`), up to `_MAX_HOPS` functions deep, on branches the string
    arguments of each call take. The receiver is not a loop variable (`for mod in
    self.modules(): mod.eval()` freezes layers, it is not the model's mode)."""
    m = facts.m
    for top in facts.calls_in(loop.node, into_defs=False):
        frontier = [(top, fn) for fn in facts.file_functions(top)]
        visited: set = set()
        for _ in range(_MAX_HOPS):
            nxt = []
            for site, fn in frontier:
                if fn in visited:
                    continue
                visited.add(fn)
                for inner in facts.calls_in(fn.body, into_defs=False):
                    if not _taken(facts, fn, site, inner):
                        continue
                    mo = method_of(inner)
                    if mo is not None and mo[1] == "eval" and not inner.args:
                        if not _loop_target(m, mo[0]):
                            yield inner, mo[0], top
                        continue
                    for g in facts.file_functions(inner):
                        nxt.append((inner, g))
            frontier = nxt
            if not frontier:
                break


def _loop_target(m, expr) -> bool:
    if not isinstance(expr, cst.Name):
        return False
    return any(b.how == "for" for b in m.bindings_of(expr))


def _single_instance(m, facts, origin: cst.Call, _depth: int = 0) -> bool:
    """The constructor call `origin` runs once: not in a loop or comprehension, and every function
    around it (a factory, `__init__` of a class of the file) is called from one place that runs
    once (a function with no caller in the file is an entry point). `ema = build(); model =
    build()` gives both models one origin: not one instance."""
    node = origin
    for anc in m.ancestors(node):
        if isinstance(anc, (cst.For, cst.While, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.Lambda)):
            return False
        if isinstance(anc, cst.FunctionDef):
            if _depth >= 4:
                return False
            cls = m.class_of(anc)
            if cls is not None and anc.name.value == "__init__":
                sites = [c for c in m.calls if isinstance(c.func, cst.Name) and c.func.value == cls.name.value]
                subclassed = any(cls.name.value in info.bases for n, info in m.classes.items() if n != cls.name.value)
                if subclassed or len(sites) != 1:
                    return False
            else:
                sites = list(facts.call_sites(anc))
                resolved = m.resolved_sites(anc)
                for c in resolved:
                    if c not in sites:
                        sites.append(c)
                if len(sites) > 1 or (not sites and cls is not None):
                    return False
                if not sites:
                    return True
            return _single_instance(m, facts, sites[0], _depth + 1)
    return True


def _later_eval_of(m, call: cst.Call, origin) -> bool:
    """Another `eval()` of the same module after `call` in the same function."""
    fn = m.enclosing(call, cst.FunctionDef)
    if fn is None:
        return False
    for c in m.calls_in(fn):
        if c is call or not m.precedes(call, c):
            continue
        mo = method_of(c)
        if mo is not None and mo[1] == "eval" and not c.args and _module_origin(m, mo[0]) is origin:
            return True
    return False


def _origin_sensitive(facts, origin: cst.Call) -> bool:
    """`mode_sensitive` for the constructor call itself (the receiver may be `models["main"]`)."""
    m = facts.m
    v = origin
    while isinstance(v, cst.Call) and isinstance(v.func, cst.Attribute) and v.func.attr.value in (
            "to", "cuda", "cpu", "float", "double", "half", "train", "eval"):
        v = v.func.value
    if not isinstance(v, cst.Call):
        return True
    if isinstance(v.func, cst.Name) and v.func.value in m.classes:
        return facts._class_sensitive(v.func.value, set())
    q = m.qualname(v.func) or ""
    if q.startswith("torch.nn.") and q.rsplit(".", 1)[-1][:1].isupper():
        text = m.module.code_for_node(v)
        if MODE_SENSITIVE.search(text):
            return True
        for n in walk(v):
            if isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value in m.classes:
                if facts._class_sensitive(n.func.value, set()):
                    return True
            elif isinstance(n, cst.Call) and m.qualname(n.func) is None and not isinstance(n.func, cst.Attribute):
                return True
        return False
    return True


def _calls_origin(facts, node, origin) -> bool:
    """A call of the module `origin` made, with gradients on, in `node`."""
    m = facts.m
    for c in facts.calls_in(node, into_defs=False):
        if facts.grad_mode_at(c) == "off":
            continue
        if _module_origin(m, c.func) is origin:
            return True
    return False


def _trains_origin(facts, loop, origin) -> bool:
    """The loop trains the module `origin`: it calls it with gradients on in a training loop of its
    own, or through a function of the file that backpropagates and steps (followed through the
    calls the engine resolves) and sets no mode itself."""
    for info in [loop, *loop.nested]:
        if info.is_training and any(facts.grad_mode_at(c) is None and _module_origin(facts.m, c.func) is origin
                                    for c in facts.calls_in(info.node, into_defs=False)):
            return True
    for c in facts.calls_in(loop.node, into_defs=False):
        if facts.grad_mode_at(c) is not None:
            continue
        for fn in facts.file_functions(c):
            eff = facts.effects(fn)
            if not {"backward", "step"} <= eff or _call_effects(facts, fn, c, 0) & {"train", "eval", "unknown-mode"}:
                continue
            frontier, visited = [fn], set()
            for _ in range(_MAX_HOPS):
                nxt = []
                for g in frontier:
                    if g in visited:
                        continue
                    visited.add(g)
                    if _calls_origin(facts, g.body, origin):
                        return True
                    for inner in facts.calls_in(g.body, into_defs=False):
                        if facts.grad_mode_at(inner) != "off":
                            nxt.extend(facts.file_functions(inner))
                frontier = nxt
    return False


def _name_in(m, node, origin):
    """(code, expression) of a name or attribute in `node` that holds the module `origin` (to put
    the `train()` call in the loop), or None."""
    for n in m.walk(node, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if isinstance(n, (cst.Name, cst.Attribute)) and _module_origin(m, n) is origin:
            d = dotted(n)
            if d is not None:
                return d, n
    return None


def _origin_to_unknown(facts, node, origin) -> bool:
    """A call in `node` of code the file does not define gets the module `origin`, or a dict
    holding it (`hooks.run(models)`): it may switch the mode itself."""
    m = facts.m
    for call in facts.calls_in(node, into_defs=False):
        if facts.file_functions(call):
            continue
        q = m.qualname(call.func) or ""
        if isinstance(call.func, cst.Name) and call.func.value in ("print", "len", "isinstance", "getattr", "type", "id", "str", "repr"):
            continue
        if q.startswith("torch.") and not q.startswith("torch.func"):
            continue
        for a in call.args:
            v = m.value_of(a.value)
            if v.kind == "module" and v.origin is origin:
                return True
            if v.keys and any(getattr(kv[1], "origin", None) is origin for kv in v.keys):
                return True
    return False


def _call_right_before_training(ctx, facts, loop, top: cst.Call, origin) -> bool:
    """The statement holding `top` is followed in its block, with only simple statements between,
    by a training loop that calls the module: the helper freezes it on purpose to train it so (the
    shape `_eval_right_before_training` reads for a plain `model.eval()`)."""
    m = ctx.model
    stmt = next((a for a in m.ancestors(top) if isinstance(m.parent(a), cst.IndentedBlock)), None)
    if stmt is None:
        return False
    body = list(m.parent(stmt).body)
    idx = next((i for i, st in enumerate(body) if st is stmt), None)
    if idx is None:
        return False
    training = {info.node for info in [loop, *loop.nested] if info.is_training}
    for nxt in body[idx + 1:]:
        if isinstance(nxt, (cst.For, cst.While)):
            return nxt in training and _calls_origin(facts, nxt, origin)
        if not isinstance(nxt, cst.SimpleStatementLine):
            return False
    return False


def _eval_context_around(ctx: Context, node: cst.CSTNode, name: str) -> bool:
    """The loop runs in the body of `with evaluating(model):` (other items beside it allowed), where
    `evaluating` is a generator function of the file decorated with `contextlib.contextmanager`
    that calls `<param>.eval()` unconditionally before its first `yield` (as a statement of its
    body or of a `try:` body), `model` being what the call passes for `<param>`: the model is in
    evaluation mode inside the block (NVIDIA DeepLearningExamples' Tacotron2 `train.py`:
    `with evaluating(model), torch.no_grad():` in `validate`, PRECISION47 P47-3)."""
    m = ctx.model
    for anc in m.ancestors(node):
        if not isinstance(anc, cst.With) or not m.contains(anc.body, node):
            continue
        for item in anc.items:
            call = item.item
            if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name)):
                continue
            fn = m.module_function(call.func.value)
            if fn is None or not any(m.qualname(d.decorator) == "contextlib.contextmanager" for d in fn.decorators):
                continue
            params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)]
            for p in params:
                arg = argument_for(fn, call, p)
                if arg is not None and dotted(arg) == name and _evals_before_yield(fn, p):
                    return True
    return False


def _evals_before_yield(fn: cst.FunctionDef, param: str) -> bool:
    """`param.eval()` as a statement of `fn`'s body (or of a `try:` body in it), before the first
    `yield` of `fn` and with no `param.train(...)` statement between them."""
    evaled = False

    def block(body) -> bool | None:
        nonlocal evaled
        for st in body.body:
            if isinstance(st, cst.Try):
                found = block(st.body)
                if found is not None:
                    return found
                continue
            for n in walk(st):
                if isinstance(n, cst.Yield):
                    return evaled
            if isinstance(st, cst.SimpleStatementLine):
                for small in st.body:
                    if (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
                            and isinstance(small.value.func, cst.Attribute)
                            and isinstance(small.value.func.value, cst.Name)
                            and small.value.func.value.value == param):
                        meth = small.value.func.attr.value
                        if meth == "eval" and not small.value.args:
                            evaled = True
                        elif meth == "train":
                            evaled = False
        return None

    return bool(block(fn.body))


def _left_in_eval_by_init(m, node, name: str) -> bool:
    """`name` is `self.<attr>` read in a method of a class whose `__init__` calls `self.<attr>.eval()`
    as one of its own statements (after every rebinding of the attribute there), and no method of
    the class (nor `__init__` after that) calls `.train()` on it or on `self`: every instance's
    model is in eval mode when any method runs (rgb-footprint-extract's inference `Tester`, A70-P2)."""
    if not name.startswith("self.") or name.count(".") != 1:
        return False
    fn = m.enclosing(node, cst.FunctionDef)
    cls = m.class_of(fn) if fn is not None else None
    if cls is None:
        return False
    init = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
    if init is None or not isinstance(init.body, cst.IndentedBlock):
        return False
    evaluated = False
    for stmt in init.body.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            for n in m.walk(stmt):
                if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value in ("eval", "train") \
                        and dotted(n.func.value) in (name, "self"):
                    return False  # a mode set under a condition or in a loop: not read here
            continue
        for small in stmt.body:
            v = small.value if isinstance(small, (cst.Expr, cst.Assign)) else None
            if isinstance(small, cst.Assign) and any(dotted(t.target) == name for t in small.targets):
                evaluated = False  # rebound: a later `eval()` must follow
                if isinstance(v, cst.Call) and isinstance(v.func, cst.Attribute) and v.func.attr.value == "eval":
                    evaluated = True  # `self.model = build().eval()`
                continue
            if (isinstance(small, cst.Expr) and isinstance(v, cst.Call) and isinstance(v.func, cst.Attribute)
                    and v.func.attr.value in ("eval", "train") and dotted(v.func.value) == name):
                evaluated = v.func.attr.value == "eval" and not v.args
    if not evaluated:
        return False
    for method in cls.body.body:
        if not isinstance(method, cst.FunctionDef) or method is init:
            continue
        for n in m.walk(method):
            if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "train" \
                    and dotted(n.func.value) in (name, "self"):
                return False
            if isinstance(n, cst.Assign) and any(dotted(t.target) == name for t in n.targets):
                return False  # rebound elsewhere: a new module in training mode
    return True
