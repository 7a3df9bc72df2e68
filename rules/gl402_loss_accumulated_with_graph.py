"""GL402 loss-accumulated-with-graph."""

from __future__ import annotations

import bisect
import re

import libcst as cst

from gpulint.analysis.modules import self_attr
from gpulint.analysis.training import _DEFS, TrainingFacts, argument_for, dotted, method_of, walk
from gpulint.flow import number_or_tensor
from gpulint.model import string_value
from gpulint.rule import Context, Kind, Rule

_DETACHING = frozenset({"item", "detach", "cpu", "tolist", "numpy", "float", "int", "data"})
_TENSOR_USES = frozenset({"item", "cpu", "detach", "numpy", "tolist", "backward", "to", "cuda", "clone", "mean", "sum", "size", "dim"})


class LossAccumulatedWithGraph(Rule):
    code = "GL402"
    name = "loss-accumulated-with-graph"
    summary = "A loss that still holds its autograd graph is summed or stored across iterations."
    message = (
        "`{loss}` still holds its autograd graph: accumulating it chains every iteration's graph onto "
        "the accumulator, which grows each step and is never freed; accumulate `{loss}.{method}()` instead"
    )
    container_message = (
        "`{loss}` holds a loss that still holds its autograd graph: storing it keeps every "
        "iteration's graph alive; detach the loss inside it before storing it "
        "(`{loss}[...] = {loss}[...].detach()`)"
    )
    indexed_message = (
        "`{acc}` stores a loss that is backpropagated later and still holds its autograd graph: the "
        "container keeps every iteration's graph alive; store `.item()` there and keep only the "
        "tensor the next backward needs in a variable"
    )
    number_message = (
        "`{loss}` is a number on some paths and, on the others, a tensor that still holds its autograd "
        "graph: accumulating it chains every iteration's graph onto the accumulator, which grows each "
        "step and is never freed; accumulate `float({loss})` instead"
    )
    fix_safety = "safe"
    fix_partial = True
    default = True
    kind = "silent"
    prefilter = r"backward"
    ast_prefilter = (r"^loop$", r"backward")
    explanation = '''
A loss tensor carries its autograd graph. `total_loss += loss`, `losses.append(loss)` or
`losses[i] = loss` keeps a reference to that graph: the sum's `grad_fn` chains back through every iteration's graph, so the
accumulator holds one more graph per step and memory grows for as long as it lives (until the
process runs out of memory on long runs). `loss.backward()` frees the tensors saved for the
backward pass, but not the graph nodes the accumulator still references; with
`backward(retain_graph=True)` the saved activations stay alive too.

The rule fires inside a loop that calls `.backward()` on the accumulated loss (a `backward` whose
value is used, `z, ld = flow.backward(z)`, is a module's inverse pass, not autograd), and stays silent when
the value is already detached (`loss.item()`, `loss.detach()`, `float(loss)`; the other branch of
`x.item() if hasattr(x, "item") else x` is no tensor), when the accumulation
runs under `torch.no_grad()`, and when the accumulator is differentiated later
(`total.backward()`, `torch.stack(losses).sum().backward()`): then keeping the graph is the point.
Another item of a tuple the loop unpacks the loss from (`average_over += loss[1]` beside
`loss = loss[0]`: flair's `forward_loss` returns the loss and the number of tokens) is not the
loss, unless the analysis knows it holds a graph.
The components a loss function returns next to the loss it backpropagates
(`loss, parts = criterion(...)`, `parts` a dict or list of tensors with gradients) hold the same
graph: so do the values a loop over them binds (`for name, val in parts.items():`).

A store by index counts as an append when the container is a list or dict made outside the loop
(`losses = [None] * n`, `history = {}`, `self.losses = [0.0] * n`) and the index is a counter of
the loop (its `range`/`enumerate` index, or a name it increments: `losses[i] = loss`,
`history[epoch] = loss`, `self.losses[step] = loss`). A constant key (`stats["loss"] = loss`) or
the key of an inner loop over names overwrites one slot. A tensor made for the purpose
(`losses = torch.zeros(n)`, `torch.empty(n)`, `torch.Tensor(n)`) counts too: the store records a
`CopySlices` node that keeps the stored loss's graph, and the tensor chains every iteration's
(it gets a `grad_fn`); the fix stores `.detach()`. NumPy containers are left alone. Where the loop backpropagates one element of the container (`losses[k - 1].backward()`,
then `losses[k] = closure()`: StanfordASL/neural-network-lyapunov#140), that backward is not a
backward of the container: every stored loss still holds its graph, and the store is reported
without a fix (`.item()` there would break the next backward; keep the loss the next backward needs
in a variable and store its `.item()`). A container stacked and backpropagated as a whole
(`torch.stack(losses).sum().backward()`), or whose slots the loop clears (`losses[k - 1] = None`,
`= losses[k - 1].item()`, `del`, `pop`), stays silent.

In the same training loop, any other tensor the analysis knows holds a graph on every path counts
too: the model's output and what differentiable operations make of it (`preds.append(outputs)`,
`log_pred.append(F.sigmoid(outputs))`, `running_dice += dice(torch.sigmoid(out), y)` with a
`dice` of the file). `argmax`, comparisons, integer casts, `.detach()`, `.data`, values detached on
one branch only, and module outputs in a file that freezes parameters somewhere
(`requires_grad = False`) count as holding none. So do the
statements of a loop inside a step loop that neither backpropagates nor steps (`for t in
range(t_max): loss_sum += loss; loss_p_sum += loss_p`, then `loss_sum.backward()` once per update:
qbx2/PAAC.pytorch#1), unless the update loop assigns the accumulator again before that inner loop
and the inner loop runs before the update's backward (`values = []` per update, filled by the
rollout the update's loss is built from). A value that is a Python number on some paths and
a tensor holding a graph on the others counts too (`adv_loss = 0.0`, then `adv_loss =
criterion(d(fake), ones)` once the discriminator starts: rishikksh20/VocGAN#24).

The fix accumulates `loss.item()` into a Python number or list, and `loss.detach()` into a tensor
(or wherever the accumulator is later used as a tensor); an indexed store gets `.item()` when its
container is made of `None`s or numbers and no element is used as a tensor, else `.detach()`. A value that may be a number is
accumulated as `float(adv_loss)` into a number or list (`.item()` would fail on the number); into
a tensor, no fix is offered.

Bad:

```python
running_loss = 0.0
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    running_loss += loss
```

Good:

```python
running_loss = 0.0
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    running_loss += loss.item()
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        facts: TrainingFacts = m.facts(TrainingFacts)
        yield from self._step_function_add(ctx, facts)
        yield from self._step_method_self_sum(ctx, facts)
        for loop in facts.loops:
            if not loop.backward:
                yield from self._accumulated_step_calls(ctx, facts, loop.node)
            stepped = {} if loop.backward else self._returned_losses(ctx, facts, loop.node)
            # the loop trains: it backpropagates, or calls a function of the file that does
            # (`loss_b, metric_b = loss_batch(loss_func, output, yb, opt)`)
            trains = bool(loop.backward) or self._calls_backward_function(ctx, facts, loop.node)
            if not loop.backward and not stepped and not trains:
                continue
            graph_names = (self._graph_names(ctx, facts, loop.node) if loop.backward else set()) | set(stepped)
            value_loops: set = set()
            graph_names |= self._loop_values(ctx, loop.node, set(stepped), value_loops)  # `for k, v in parts.items()`
            if not graph_names and not trains:
                continue
            stores = list(self._indexed_stores(ctx, facts, loop.node)) if loop.backward else []
            for stmt, acc, value in (*self._accumulations(ctx, loop.node), *self._meter_updates(ctx, loop.node),
                                     *stores):
                indexed = isinstance(stmt, cst.Assign) and isinstance(acc, cst.Subscript)
                if indexed:
                    acc_root = self._root(acc)
                    if self._elements_backpropagated(ctx, loop.node, acc_root):
                        # `losses[i - 1].backward(); losses[i] = ...` (neural-network-lyapunov#140):
                        # what the list holds is backpropagated, so it holds graphs, and the list
                        # keeps every iteration's; `.item()` in the store would break the backward
                        if facts.grad_mode_at(stmt) not in ("off", "dynamic") and not self._differentiated(ctx, acc_root, loop.node) \
                                and not _reset_per_iteration(m, loop.node, stmt, acc_root):
                            yield ctx.finding(stmt, self.indexed_message.format(acc=ctx.code(acc)))
                        continue
                    if value is None:
                        continue
                if not loop.backward and facts.enclosing_loop(stmt) is not loop.node \
                        and facts.enclosing_loop(stmt) not in value_loops:
                    continue  # the step is a function's: this loop's own statements only
                # only statements whose innermost loop (with a backward) is this one
                if facts.enclosing_loop(stmt) is not loop.node and self._inner_backward_loop(facts, stmt, loop.node):
                    continue
                names = [n for n in self._bare_names(value) if _root_value(n) in graph_names
                         and not _other_item_of_loss_tuple(m, loop.node, n)
                         and not _other_key_of_loss_dict(m, loop.node, n)]
                held = False
                inner = (not indexed and facts.enclosing_loop(stmt) is not loop.node
                         and _plain_inner_loop(m, facts, loop, stmt))
                if not names and trains and (facts.enclosing_loop(stmt) is loop.node or inner):
                    # not the loss, but a tensor the engine knows holds a graph on every path (the
                    # model's output, a metric computed from it with gradients: `preds.append(out)`,
                    # `running_dice += dice(torch.sigmoid(out), y)`) kept across the training steps
                    names = _graph_holding(m, value)
                    held = bool(names)
                    if held and any(self._returns_backward_loss(ctx, facts, c) for c in _bare_calls(value)):
                        continue  # `tr_loss += self.training_step(...)`: reported as such above
                if not names:
                    continue
                if _single_pass_at(m, loop.node, stmt):
                    continue  # `total += loss; break`: one value, no chain of graphs (openfl, PRECISION43)
                mode = facts.grad_mode_at(stmt)
                if mode == "dynamic" and not held:
                    # the loss itself, where the engine knows it holds a graph when gradients are on
                    held = all(isinstance(n, cst.Name) and m.value_of(n).kind == "tensor" and m.value_of(n).graph
                               for n in names)
                if mode == "off" or (mode == "dynamic" and not held):
                    # (a function called with and without gradients, `loss_epoch(model, dl, opt)`
                    # for training and under no_grad for validation: the engine's value is the one
                    # computed with gradients on, which the training call keeps)
                    continue
                if all(m.value_of(n).kind in ("tensor", None) and m.value_of(n).nograd for n in names):
                    continue  # this value was computed under no_grad: it holds no graph
                if (self._detached_rebinding(ctx, loop.node, _root_value(names[0]))
                        and not all(_number_or_graph(m, n) for n in names)):
                    # (unless the engine follows the bindings: a number on some paths, a graph on the others)
                    continue
                if all(isinstance(n, cst.Name) and _reached_by_number(m, stmt, n.value) for n in names):
                    continue  # `loss = mlogloss(y, pred)` just above: a Python number reaches it, not the loss
                meter = isinstance(stmt, cst.Expr) and method_of(stmt.value) is not None \
                    and method_of(stmt.value)[1] not in ("append", "add_")
                acc_root = dotted(acc) if meter else _acc_root(acc)  # `r.meter.update(loss)`: the meter itself
                if meter and acc_root is None and isinstance(acc, cst.Subscript):
                    acc_root = dotted(acc.value)  # `stats["loss"].update(loss, n)`: a meter read from a dict (E47-3)
                if acc_root is None or self._differentiated(ctx, acc_root, loop.node if indexed else None,
                                                            _local_scope(m, stmt, acc_root)):
                    continue
                if inner and held and _bound_in_body_before(m, loop, stmt, acc_root):
                    continue  # `values = []` per update, filled by the rollout loop before the backward
                if not meter and _reset_at_optimizer_step(ctx, loop.node, acc_root):
                    continue  # reset with every optimizer step: it holds one accumulation window
                if not meter and _reset_per_iteration(m, loop.node, stmt, acc_root):
                    continue  # `losses = []` in each iteration: it holds one iteration's losses
                if not meter and _reset_per_accumulation_window(m, loop.node, stmt, acc_root):
                    continue  # reset before a micro-batch loop whose window one optimizer step closes
                if not meter and _reset_per_batch_repeats(m, loop.node, stmt, acc_root):
                    continue  # reset per batch around `for _ in range(k)` updates on that batch
                loss = ctx.code(names[0])
                if any(isinstance(n, cst.Name) and n.value in self._containers(ctx, loop.node) for n in names):
                    # `output["loss"].backward(); outputs.append(output)`: the accumulated value is the
                    # dict (or list) that holds the loss; `.item()`/`.detach()` do not apply to it
                    yield ctx.finding(stmt, self.container_message.format(loss=loss))
                    continue
                method = self._indexed_method(ctx, acc.value, acc_root) if indexed else self._method(ctx, facts, acc, acc_root)
                if isinstance(stmt, cst.Expr) and method_of(stmt.value)[1] == "add_":
                    method = "detach"  # an in-place add: the accumulator is a tensor
                if any(_number_or_graph(m, n) for n in names) and any(
                        self._accumulated_in_inner_step_loop(ctx, facts, loop.node, n) for n in names):
                    continue  # `running_loss` summed in the batch loop: reported there, its cause
                if any(_number_or_graph(m, n) for n in names):
                    # a number on some paths: `.item()`/`.detach()` would fail there; `float()`
                    # takes both, where the accumulator only ever holds numbers
                    fix = None
                    if method == "item":
                        fix = ctx.fix(*[ctx.replace(n, f"float({ctx.code(n)})") for n in names],
                                      message=f"Accumulate `float({loss})`")
                    yield ctx.finding(stmt, self.number_message.format(loss=loss), fix)
                    continue
                edits = [ctx.replace(n, f"{ctx.code(n)}.{method}()") for n in names]
                yield ctx.finding(
                    stmt,
                    self.message.format(loss=loss, method=method),
                    ctx.fix(*edits, message=f"Accumulate `{loss}.{method}()`"),
                )

    def _step_function_add(self, ctx: Context, facts: TrainingFacts):
        """`stats.device_stat("average_loss").add_(loss)` in a step function outside any loop of
        its own, that backpropagates `loss` (NVIDIA DeepLearningExamples#1102: BERT's
        `take_training_step`), where the receiver belongs to a parameter whose argument, at a call
        of the function from a loop, is a name bound outside that loop: the object outlives the
        iterations, so the in-place add chains every step's graph onto it."""
        if _ADD_NAME.search(ctx.source) is None:
            return  # no name `add_` (`x.add_(...)`) in the source: no function body need be walked
        m = ctx.model
        for fns in m.functions.values():
            for fn in fns:
                yield from self._step_function_add_in(ctx, facts, fn)
        for cls in m.classes.values():
            for fn in cls.methods.values():
                yield from self._step_function_add_in(ctx, facts, fn)

    def _step_method_self_sum(self, ctx: Context, facts: TrainingFacts):
        """`self.total_loss += loss` in a step method that backpropagates `loss` outside any loop of
        its own, called from a loop (fairseq#2255's trainer shape, fixtures68 G68-2): the attribute
        outlives the calls, so every step's graph is chained onto it. Not when the method rebinds
        the attribute before the sum (a per-call total) or the attribute is differentiated."""
        m = ctx.model
        for cls in m.classes.values():
            for fn in cls.methods.values():
                params = fn.params.params
                if not params or params[0].name.value != "self":
                    continue
                cands = [n for n in walk(fn.body, into_defs=False)
                         if isinstance(n, cst.AugAssign) and isinstance(n.operator, cst.AddAssign)
                         and isinstance(n.target, cst.Attribute) and isinstance(n.target.value, cst.Name)
                         and n.target.value.value == "self" and facts.enclosing_loop(n) is None]
                if not cands or not facts.runs_backward(fn, deep=False):
                    continue
                calls = [c for c in m.calls if fn in facts.file_functions(c)]
                if not any(facts.enclosing_loop(c) is not None for c in calls):
                    continue
                graph_names = self._graph_names(ctx, facts, fn)
                if not graph_names:
                    continue
                for stmt in cands:
                    root = dotted(stmt.target)
                    names = [x for x in self._bare_names(stmt.value) if _root_value(x) in graph_names]
                    if root is None or not names or facts.grad_mode_at(stmt) in ("off", "dynamic"):
                        continue
                    if all(m.value_of(x).kind in ("tensor", None) and m.value_of(x).nograd for x in names):
                        continue
                    if self._detached_rebinding(ctx, fn, _root_value(names[0])):
                        continue
                    if all(isinstance(n, cst.Name) and _reached_by_number(m, stmt, n.value) for n in names):
                        continue
                    if any(isinstance(a, cst.Assign) and any(dotted(t.target) == root for t in a.targets)
                           and m.precedes(a, stmt) for a in walk(fn.body, into_defs=False)):
                        continue  # `self.total = 0.0` first in the call: one call's sum
                    if self._differentiated(ctx, root):
                        continue
                    loss = ctx.code(names[0])
                    yield ctx.finding(
                        stmt,
                        self.message.format(loss=loss, method="detach"),
                        ctx.fix(*[ctx.replace(x, f"{ctx.code(x)}.detach()") for x in names],
                                message=f"Accumulate `{loss}.detach()`"),
                    )

    def _step_function_add_in(self, ctx: Context, facts: TrainingFacts, fn: cst.FunctionDef):
        m = ctx.model
        params = {p.name.value for p in fn.params.params} - {"self", "cls"}
        candidates = []
        for n in walk(fn.body, into_defs=False):
            if not (isinstance(n, cst.Expr) and isinstance(n.value, cst.Call)):
                continue
            mo = method_of(n.value)
            if mo is None or mo[1] != "add_" or facts.enclosing_loop(n) is not None:
                continue
            root = _acc_root(mo[0])
            if root is None or root not in params or not _in_place_receiver(m, mo[0]):
                continue
            args = [a for a in n.value.args if a.keyword is None and not a.star]
            if len(args) != 1 or not all(a.keyword is None or a.keyword.value == "alpha"
                                         for a in n.value.args if not a.star):
                continue
            candidates.append((n, root, args[0].value))
        if not candidates:
            return
        graph_names = self._graph_names(ctx, facts, fn)
        if not graph_names:
            return
        calls = [c for c in m.calls if fn in facts.file_functions(c)]
        for stmt, root, value in candidates:
            names = [x for x in self._bare_names(value) if _root_value(x) in graph_names]
            if not names or facts.grad_mode_at(stmt) in ("off", "dynamic"):
                continue
            if all(m.value_of(x).kind in ("tensor", None) and m.value_of(x).nograd for x in names):
                continue
            if self._detached_rebinding(ctx, fn, _root_value(names[0])):
                continue
            if not any(_kept_across(m, facts, fn, c, root) for c in calls):
                continue
            if self._differentiated(ctx, root):
                continue
            loss = ctx.code(names[0])
            yield ctx.finding(
                stmt,
                self.message.format(loss=loss, method="detach"),
                ctx.fix(*[ctx.replace(x, f"{ctx.code(x)}.detach()") for x in names],
                        message=f"Accumulate `{loss}.detach()`"),
            )

    @staticmethod
    def _calls_backward_function(ctx: Context, facts: TrainingFacts, loop: cst.CSTNode) -> bool:
        """A statement of the loop itself calls a function of the file that calls `.backward()`."""
        for call in ctx.model.calls_in(loop):
            if facts.enclosing_loop(call) is not loop:
                continue
            if any("backward" in facts.effects(fn) for fn in facts.file_functions(call)):
                return True
        return False

    @staticmethod
    def _containers(ctx: Context, loop: cst.CSTNode) -> set[str]:
        """Names whose item is backpropagated in the loop (`output["loss"].backward()`): the name
        holds a container of losses, not a tensor."""
        out = set()
        for n in ctx.model.calls_in(loop):
            mo = method_of(n)
            if mo is not None and mo[1] == "backward" and isinstance(mo[0], cst.Subscript) \
                    and isinstance(mo[0].value, cst.Name):
                out.add(mo[0].value.value)
        return out

    def _accumulated_step_calls(self, ctx: Context, facts: TrainingFacts, loop: cst.CSTNode):
        """`tr_loss += self.training_step(model, inputs)` (transformers#6999): the accumulated value
        is the call itself of a function of the file that returns the loss it backpropagated."""
        for stmt, acc, value in self._accumulations(ctx, loop):
            if facts.enclosing_loop(stmt) is not loop:
                continue
            calls = [c for c in _bare_calls(value) if self._returns_backward_loss(ctx, facts, c)]
            if not calls or facts.grad_mode_at(stmt) in ("off", "dynamic"):
                continue
            acc_root = self._root(acc)
            if acc_root is None or self._differentiated(ctx, acc_root):
                continue
            if _reset_at_optimizer_step(ctx, loop, acc_root):
                continue
            method = self._method(ctx, facts, acc, acc_root)
            loss = ctx.code(calls[0])
            yield ctx.finding(
                stmt,
                self.message.format(loss=loss, method=method),
                ctx.fix(*[ctx.replace(c, f"{ctx.code(c)}.{method}()") for c in calls],
                        message=f"Accumulate `{loss}.{method}()`"),
            )

    @staticmethod
    def _returns_backward_loss(ctx: Context, facts: TrainingFacts, call: cst.Call) -> bool:
        """`call` runs a function of the file that calls `.backward()` and returns, on every
        `return`, the very name it backpropagated (`loss.backward(); return loss`)."""
        fns = facts.file_functions(call)
        if not fns:
            return False
        for fn in fns:
            if "backward" not in facts.effects(fn):
                return False
            if not LossAccumulatedWithGraph._returns_backed_name(ctx, facts, fn):
                return False
        return True

    @staticmethod
    def _returns_backed_name(ctx: Context, facts: TrainingFacts, fn: cst.FunctionDef) -> bool:
        """Every `return` of `fn` gives the very name it backpropagated, and `fn` never rebinds
        that name to a detached value (`loss.backward(); ...; loss = loss.item(); return loss`
        returns a Python number: yihong-chen/neural-collaborative-filtering engine.py,
        PRECISION22 #2)."""
        backed = LossAccumulatedWithGraph._graph_names(ctx, facts, fn.body)
        rets = [r for r in walk(fn.body, into_defs=False) if isinstance(r, cst.Return) and r.value is not None]
        if not rets or not all(isinstance(r.value, cst.Name) and r.value.value in backed for r in rets):
            return False
        return not any(LossAccumulatedWithGraph._detached_rebinding(ctx, fn.body, r.value.value) for r in rets)

    @staticmethod
    def _returned_losses(ctx: Context, facts: TrainingFacts, loop: cst.CSTNode) -> dict:
        """`loss = self.train_step(x, y)` in a loop with no backward of its own: names bound to
        what a function of the file returns after calling `.backward()` on it (`loss.backward();
        return loss`). name -> the call."""
        m = ctx.model
        out = {}
        index: _Mentions = m.facts(_Mentions)
        for n in index.below(loop, index.assigns, index.assign_at):
            if not (isinstance(n, cst.Assign) and len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name)
                    and isinstance(n.value, cst.Call)):
                continue
            for fn in facts.file_functions(n.value):
                if "backward" not in facts.effects(fn):
                    continue
                if LossAccumulatedWithGraph._returns_backed_name(ctx, facts, fn):
                    out[n.targets[0].target.value] = n.value
        return out

    @staticmethod
    def _meter_updates(ctx: Context, loop: cst.CSTNode):
        """`meter.update(loss)` in the loop, where `meter` is an instance of a class of the file
        whose method adds that parameter to one of its attributes (`self.sum += val * n`):
        (statement, the receiver, the argument)."""
        m = ctx.model
        index: _Mentions = m.facts(_Mentions)
        for n in index.below(loop, index.statements, index.statement_at):
            if not (isinstance(n, cst.Expr) and isinstance(n.value, cst.Call)):
                continue
            call = n.value
            mo = method_of(call)
            if mo is None or mo[1] == "append" or any(a.star for a in call.args):
                continue
            cls = m.value_of(mo[0]).cls
            found = m.method_of_class(cls, mo[1]) if cls is not None else None
            if found is None:
                continue
            fn = found[0]
            for param in LossAccumulatedWithGraph._accumulated_params(fn, m):
                arg = argument_for(fn, call, param)
                if arg is not None:
                    yield n, mo[0], arg

    @staticmethod
    def _accumulated_params(fn: cst.FunctionDef, m=None) -> list[str]:
        """Parameters a method adds to an attribute of `self`: `self.sum += val * n`,
        `self.total = self.total + val`, also through calls that keep the graph
        (`self.sum += hvd.allreduce(val.cpu())`)."""
        params = {p.name.value for p in fn.params.params[1:]}
        out = []
        for st in walk(fn.body, into_defs=False):
            value = None
            if isinstance(st, cst.AugAssign) and isinstance(st.operator, cst.AddAssign) and self_attr(st.target) is not None:
                value = st.value
            elif (isinstance(st, cst.Assign) and len(st.targets) == 1 and self_attr(st.targets[0].target) is not None
                  and isinstance(st.value, cst.BinaryOperation) and isinstance(st.value.operator, cst.Add)
                  and dotted(st.value.left) == dotted(st.targets[0].target)):
                value = st.value.right
            if value is None:
                continue
            for name in (*LossAccumulatedWithGraph._bare_names(value), *_graph_kept_names(value, m)):
                if isinstance(name, cst.Name) and name.value in params and name.value not in out:
                    out.append(name.value)
        return out

    @classmethod
    def _accumulated_in_inner_step_loop(cls, ctx: Context, facts: TrainingFacts, loop: cst.CSTNode, n) -> bool:
        """`n` is itself an accumulator (`n += ...`) of a loop with a backward inside `loop`."""
        return isinstance(n, cst.Name) and any(
            isinstance(x, cst.AugAssign) and isinstance(x.target, cst.Name) and x.target.value == n.value
            and cls._inner_backward_loop(facts, x, loop)
            for x in ctx.model.walk(loop))

    @staticmethod
    def _inner_backward_loop(facts, stmt, outer) -> bool:
        for info in facts.loops_around(stmt):
            if info.node is outer:
                return False
            if info.backward:
                return True
        return False

    @staticmethod
    def _graph_names(ctx: Context, facts: TrainingFacts, loop: cst.CSTNode) -> set[str]:
        out = set()
        index: _Mentions = ctx.model.facts(_Mentions)
        for n in ctx.model.calls_in(loop):
            mo = method_of(n)
            if mo is None:
                continue
            recv, meth = mo
            positional = [a.value for a in n.args if a.keyword is None]
            if meth in ("backward", "manual_backward") and not isinstance(ctx.model.parent(n), cst.Expr):
                # `z, ld = flow.backward(z)`: a flow's inverse pass (karpathy/pytorch-normalizing-flows);
                # autograd's backward (and accelerator's, Lightning's) returns None, nobody uses its value
                continue
            if meth == "backward" and (not positional or ctx.model.kind_of(recv) is Kind.TENSOR):
                # loss.backward(), loss.backward(retain_graph=True), scaler.scale(loss).backward()
                if isinstance(recv, cst.Name):
                    out.add(recv.value)
                elif isinstance(recv, cst.Attribute) and isinstance(recv.value, cst.Name):
                    out.add(f"{recv.value.value}.{recv.attr.value}")  # `output.loss.backward()`
                elif isinstance(recv, cst.Subscript) and isinstance(recv.value, cst.Name):
                    out.add(recv.value.value)  # `loss["total"].backward()`: a dict of losses
                elif isinstance(recv, cst.Call) and method_of(recv) and method_of(recv)[1] == "scale":
                    args = [a.value for a in recv.args if a.keyword is None]
                    if args and isinstance(args[0], cst.Name):
                        out.add(args[0].value)
            elif meth in ("backward", "manual_backward") and positional:
                if isinstance(positional[0], cst.Name):
                    out.add(positional[0].value)  # accelerator.backward(loss), self.manual_backward(loss)
        out |= LossAccumulatedWithGraph._sibling_parts(ctx, loop, out)
        # the summands of a backward'd loss hold the same graph: `loss = mse + ce` in the loop, where
        # the engine knows `mse` and `ce` are tensors computed with gradients
        m = ctx.model
        for n in index.below(loop, index.assigns, index.assign_at):
            if isinstance(n, cst.Assign) and len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name) \
                    and n.targets[0].target.value in out and isinstance(n.value, cst.BinaryOperation):
                for part in LossAccumulatedWithGraph._bare_names(n.value):
                    v = m.value_of(part)
                    if v.kind == "tensor" and not v.nograd:
                        out.add(_root_value(part))
        return out

    @staticmethod
    def _sibling_parts(ctx: Context, node: cst.CSTNode, backed: set[str]) -> set[str]:
        """`loss, parts = criterion(...)` with `loss` backpropagated: `parts`, when the engine knows
        it is a dict or list of tensors computed with gradients (a loss's components, returned next
        to their sum), and the values a loop over it binds (`for name, val in parts.items()`,
        `for val in parts.values()`, `for val in parts`). Detached or `.item()` components are
        not tensors with gradients: left out."""
        m = ctx.model
        index: _Mentions = m.facts(_Mentions)
        parts: set[str] = set()
        for n in index.below(node, index.assigns, index.assign_at):
            if not (isinstance(n, cst.Assign) and len(n.targets) == 1 and isinstance(n.targets[0].target, (cst.Tuple, cst.List))
                    and isinstance(n.value, cst.Call)):
                continue
            names = [e.value for e in n.targets[0].target.elements]
            if not any(isinstance(x, cst.Name) and x.value in backed for x in names):
                continue
            for x in names:
                if not isinstance(x, cst.Name) or x.value in backed:
                    continue
                v = m.value_of(x)
                if v.kind in ("mapping", "list", "tuple") and v.elem is not None and v.elem.kind == "tensor" \
                        and not v.elem.nograd and not v.nograd:
                    parts.add(x.value)
        return parts | LossAccumulatedWithGraph._loop_values(ctx, node, parts)

    @staticmethod
    def _loop_values(ctx: Context, node: cst.CSTNode, containers: set[str], loops: set | None = None) -> set[str]:
        """Names a `for` under `node` binds to the values of one of `containers` (those loops are
        added to `loops`)."""
        out: set[str] = set()
        if not containers:
            return out
        m = ctx.model
        for loop in m.fors:
            if not m.contains(node, loop):
                continue
            it, target = loop.iter, loop.target
            meth = None
            if isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and not it.args:
                meth, it = it.func.attr.value, it.func.value
            if not (isinstance(it, cst.Name) and it.value in containers):
                continue
            if meth == "items" and isinstance(target, cst.Tuple) and len(target.elements) == 2:
                target = target.elements[1].value
            elif meth not in (None, "values"):
                continue
            if isinstance(target, cst.Name):
                out.add(target.value)
                if loops is not None:
                    loops.add(loop)
        return out

    @staticmethod
    def _accumulations(ctx: Context, loop: cst.CSTNode):
        """(statement, accumulator expression, added value) for `acc += v`, `acc = acc + v`,
        `acc.append(v)` in the loop (not inside nested functions)."""
        index: _Mentions = ctx.model.facts(_Mentions)
        for n in index.below(loop, index.statements, index.statement_at):
            if isinstance(n, cst.AugAssign) and isinstance(n.operator, cst.AddAssign):
                yield n, n.target, n.value
            elif isinstance(n, cst.Assign) and len(n.targets) == 1 and isinstance(n.value, cst.BinaryOperation):
                tgt = n.targets[0].target
                if isinstance(n.value.operator, cst.Add) and dotted(tgt) is not None and dotted(n.value.left) == dotted(tgt):
                    yield n, tgt, n.value.right
            elif isinstance(n, cst.Assign) and len(n.targets) == 1 and isinstance(n.value, cst.IfExp):
                # `total = loss if total is None else total + loss` (RecBole's trainer)
                tgt = n.targets[0].target
                if any(isinstance(b, cst.BinaryOperation) and isinstance(b.operator, cst.Add)
                       and dotted(tgt) is not None and dotted(b.left) == dotted(tgt)
                       for b in (n.value.body, n.value.orelse)):
                    yield n, tgt, n.value  # both branches' loss names are rewritten
            elif isinstance(n, cst.Expr) and isinstance(n.value, cst.Call):
                mo = method_of(n.value)
                args = [a for a in n.value.args if a.keyword is None and not a.star]
                if mo is not None and mo[1] == "append" and len(args) == 1:
                    yield n, mo[0], args[0].value
                elif mo is not None and mo[1] == "add_" and len(args) == 1 and all(
                        a.keyword is None or a.keyword.value == "alpha" for a in n.value.args if not a.star) \
                        and _in_place_receiver(ctx.model, mo[0]):
                    # `running.add_(loss)`: the in-place form of `running += loss` (NVIDIA
                    # DeepLearningExamples#1102: `stats.device_stat("average_loss").add_(loss)`)
                    yield n, mo[0], args[0].value

    @staticmethod
    def _bare_names(value: cst.BaseExpression) -> list[cst.Name]:
        """Names in `value` reached only through arithmetic (`loss`, `loss * bs`), not inside a
        call or an attribute (`loss.item()`, `float(loss)`)."""
        out = []
        stack = [value]
        while stack:
            v = stack.pop()
            if isinstance(v, cst.Name):
                out.append(v)
            elif isinstance(v, cst.Subscript) and isinstance(v.value, cst.Name) and _index_only(v):
                out.append(v)  # `loss[key]` of a dict of losses
            elif isinstance(v, cst.Attribute) and isinstance(v.value, cst.Name):
                out.append(v)  # `output.loss` of a model output (matched by its dotted text)
            elif isinstance(v, cst.BinaryOperation):
                stack.extend([v.left, v.right])
            elif isinstance(v, cst.IfExp):
                sign = _tensor_test(v.test)
                if sign > 0:
                    stack.append(v.body)  # `x.item() if hasattr(x, "item") else x`: the else is no tensor
                elif sign < 0:
                    stack.append(v.orelse)
                else:
                    stack.extend([v.body, v.orelse])
            elif isinstance(v, cst.UnaryOperation):
                stack.append(v.expression)
        return out

    @staticmethod
    def _detached_rebinding(ctx: Context, loop: cst.CSTNode, name: str) -> bool:
        """`loss = loss.item()` (or any detached value) somewhere in the loop: cannot tell which
        binding reaches the accumulation, stay silent."""
        index: _Mentions = ctx.model.facts(_Mentions)
        for n in index.below(loop, index.assigns, index.assign_at):
            if isinstance(n, cst.Assign) and _detached_in_tuple(n, name):
                return True  # `loss, l1 = loss.item(), l1.item()` (tugstugi/pytorch-dc-tts train-text2mel.py)
            if isinstance(n, cst.Assign) and any(
                (isinstance(t.target, cst.Name) and t.target.value == name)
                # `output["loss"] = output["loss"].detach()`: the container's loss item detached
                or (isinstance(t.target, cst.Subscript) and isinstance(t.target.value, cst.Name)
                    and t.target.value.value == name)
                for t in n.targets
            ):
                v = n.value
                if isinstance(v, cst.Call):
                    mo = method_of(v)
                    if (mo is not None and mo[1] in _DETACHING) or (
                        isinstance(v.func, cst.Name) and v.func.value in ("float", "int")
                    ):
                        return True
                if isinstance(v, (cst.Integer, cst.Float)):
                    return True
        return False

    @staticmethod
    def _root(acc: cst.BaseExpression) -> str | None:
        while isinstance(acc, (cst.Attribute, cst.Subscript)):
            if isinstance(acc, cst.Attribute) and isinstance(acc.value, cst.Name) and acc.value.value == "self":
                return dotted(acc)
            acc = acc.value
        return acc.value if isinstance(acc, cst.Name) else None

    @staticmethod
    def _mentions(ctx: Context, node: cst.CSTNode, root: str) -> bool:
        """`node` or a node below it is the Name/Attribute chain `root`."""
        return ctx.model.facts(_Mentions).mentions(node, root)

    def _differentiated(self, ctx: Context, root: str, loop: cst.CSTNode | None = None, scope=None) -> bool:
        """`root` (or a name derived from it) is backpropagated or handed to torch.autograd somewhere.
        With `loop` (the loop that stores into `root[i]`), the backward of one of its elements in
        that loop (`losses[i - 1].backward()`) does not count: it differentiates one iteration's
        loss, not what the container keeps. With `scope` (the function `root` is a local of), only
        there: another function's local of the same name is another value (faster-rcnn's
        `rpn_loc_loss`, a loss backpropagated in the trainer's `forward` and an accumulator of
        `fit_one_epoch`, E49-3)."""
        index: _Mentions = ctx.model.facts(_Mentions)
        for call, mo, autograd in index.differentiating():
            if scope is not None and not ctx.model.contains(scope, call):
                continue
            if loop is not None and mo is not None and _element_of(mo[0], root) and ctx.model.contains(loop, call):
                continue
            if mo is not None:
                if self._mentions(ctx, mo[0], root) or any(self._mentions(ctx, a.value, root) for a in call.args):
                    return True
            if autograd and any(self._mentions(ctx, a.value, root) for a in call.args):
                return True
        if _items_backpropagated(ctx.model, index, root, scope):
            return True
        # a name derived from the accumulator and differentiated: `loss = total / n; loss.backward()`
        for derived in self._derived_names(ctx, root):
            for call, mo, _autograd in index.differentiating():
                if scope is not None and not ctx.model.contains(scope, call):
                    continue
                if mo is not None and (
                    self._mentions(ctx, mo[0], derived) or any(self._mentions(ctx, a.value, derived) for a in call.args)
                ):
                    return True
        return False

    def _indexed_stores(self, ctx: Context, facts: TrainingFacts, loop: cst.CSTNode):
        """(statement, `acc[i]`, stored value or None) for `acc[i] = v` in the loop's own body
        (`losses[i] = loss`, `history[epoch] = loss`, `self.losses[step] = loss`, an element of a
        tuple target `(losses[k], costs[k]) = ...`), where `acc` is a list or dict made outside the
        loop (`[None] * n`, `[]`, `{}`, `dict()`, `defaultdict(list)`) and `i` a counter of this
        loop (its `range`/`enumerate` index, or a name it increments): a new slot each iteration,
        kept across iterations like `acc.append(v)`. A constant key (`stats["loss"] = loss`) or a
        key of an inner loop over names (`for k, v in parts.items(): log[k] = v`) overwrites: not a
        store. The value is None when the tuple target's value is not a tuple of the same length."""
        m = ctx.model
        index: _Mentions = m.facts(_Mentions)
        if _innermost_loop(m, loop) is not None and _steps_its_own_optimizer(m, loop):
            return  # `for i, (head, opt) in enumerate(...)` in a data loop: slot i is overwritten every batch
        counters = None
        for n in index.below(loop, index.assigns, index.assign_at):
            if facts.enclosing_loop(n) is not loop or len(n.targets) != 1:
                continue
            target, value = n.targets[0].target, n.value
            if isinstance(target, (cst.Tuple, cst.List)):
                pairs = [(e.value, None) for e in target.elements]
                if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(target.elements) \
                        and not any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements)):
                    pairs = [(e.value, v.value) for e, v in zip(target.elements, value.elements)]
            else:
                pairs = [(target, value)]
            for t, v in pairs:
                if not (isinstance(t, cst.Subscript) and _index_only(t)):
                    continue
                root = dotted(t.value)
                if root is None or root != self._root(t):
                    continue
                if counters is None:
                    counters = _loop_counters(m, index, loop)
                if not _counter_index(t.slice[0].slice.value, counters):
                    continue
                if not _kept_container(m, t.value, loop) or _cleared_in_loop(m, index, loop, root):
                    continue
                yield n, t, v

    def _elements_backpropagated(self, ctx: Context, loop: cst.CSTNode, root: str) -> bool:
        """`root[k].backward()` in the loop: the container's elements hold graphs."""
        for call, mo, _autograd in ctx.model.facts(_Mentions).differentiating():
            if mo is not None and mo[1] == "backward" and _element_of(mo[0], root) and ctx.model.contains(loop, call):
                return True
        return False

    def _indexed_method(self, ctx: Context, acc: cst.BaseExpression, root: str) -> str:
        """`item` when every binding of the container is a list or dict of no tensors (`[None] * n`,
        `[0.0] * n`, `[]`, `{}`, `dict()`) and nothing uses its elements as tensors; `detach`
        otherwise."""
        m = ctx.model
        index: _Mentions = m.facts(_Mentions)
        for b in m.bindings_of(acc):
            if not _plain_container(b.value):
                return "detach"
        names = {root} | self._derived_names(ctx, root)
        for n in m.calls:
            q = m.qualname(n.func) or ""
            if q.startswith("torch.") and any(index.mentions(a.value, x) for a in n.args for x in names):
                return "detach"
            mo = method_of(n)
            if mo is not None and mo[1] in _TENSOR_USES and any(index.mentions(mo[0], x) for x in names):
                return "detach"
        for n in index.loops:
            if any(index.mentions(n.iter, x) for x in names):
                tgt = n.target
                tnames = {dotted(x) for x in (tgt, *m.walk(tgt)) if isinstance(x, cst.Name)}
                scope = n if isinstance(n, cst.For) else m.parent(n)
                for c in m.calls_in(scope):
                    mo = method_of(c)
                    if mo is not None and mo[1] in _TENSOR_USES and dotted(mo[0]) in tnames:
                        return "detach"
                    if (m.qualname(c.func) or "").startswith("torch.") and any(
                            dotted(a.value) in tnames for a in c.args):
                        return "detach"
        return "item"

    def _derived_names(self, ctx: Context, root: str) -> set[str]:
        """Names and `a.b` targets assigned from an expression that mentions `root`."""
        index: _Mentions = ctx.model.facts(_Mentions)
        found = index.derived.get(root)
        if found is None:
            found = set()
            for n in index.assigns:
                if index.mentions(n.value, root):
                    for t in n.targets:
                        d = dotted(t.target)
                        if d is not None and d != root:
                            found.add(d)
            index.derived[root] = found
        return set(found)

    def _method(self, ctx: Context, facts: TrainingFacts, acc: cst.BaseExpression, root: str) -> str:
        """`item` for a Python number or list accumulator that is never used as a tensor."""
        if not isinstance(acc, cst.Name):
            return "detach"
        inits = [b for b in ctx.model.bindings_of(acc) if b.how == "assign"]
        if not inits or not all(
            isinstance(b.value, (cst.Integer, cst.Float, cst.List))
            or (isinstance(b.value, cst.Call) and isinstance(b.value.func, cst.Name) and b.value.func.value == "list")
            for b in inits
        ):
            return "detach"
        if any(isinstance(b.value, cst.List) and b.value.elements for b in inits):
            return "detach"
        names = {root} | self._derived_names(ctx, root)
        m = ctx.model
        index: _Mentions = m.facts(_Mentions)
        # any of the uses below makes it "detach", so they are checked in no particular order
        for n in m.calls:
            q = m.qualname(n.func) or ""
            if q.startswith("torch.") and any(index.mentions(a.value, x) for a in n.args for x in names):
                return "detach"
            mo = method_of(n)
            if mo is not None and mo[1] in _TENSOR_USES and any(index.mentions(mo[0], x) for x in names):
                return "detach"
        # `for l in losses: l.item()`: elements used as tensors
        for n in index.loops:
            if any(index.mentions(n.iter, x) for x in names):
                tgt = dotted(n.target)
                if tgt is not None:
                    scope = n if isinstance(n, cst.For) else m.parent(n)
                    for c in m.calls_in(scope):
                        mo = method_of(c)
                        if mo is not None and mo[1] in _TENSOR_USES and dotted(mo[0]) == tgt:
                            return "detach"
        return "item"


_ADD_NAME = re.compile(r"\badd_\b")


class _Mentions:
    """Per file: where each Name/Attribute chain (`loss`, `self.total`) occurs, so that "does this
    expression mention `root`" is a lookup in the positions of `root`'s occurrences instead of a
    walk of the expression; and the file's assignments and for loops (plain and comprehension)."""

    def __init__(self, m) -> None:
        self.m = m
        self.at: dict[str, list[int]] = {}  # chain -> positions (ScriptModel.order) of its nodes
        self.assigns: list[cst.Assign] = []
        self.assign_at: list[int] = []
        self.statements: list[cst.CSTNode] = []  # `+=`, assignments and expression statements
        self.statement_at: list[int] = []
        self.loops: list[cst.CSTNode] = []
        self.derived: dict[str, set[str]] = {}
        self._differentiating: list | None = None
        at = self.at
        attrs: set[int] = set()  # the `attr` Names of attributes: `loss` in `self.loss` is not the name `loss`
        for i, n in enumerate(m.nodes):
            t = type(n)
            if t is cst.Name or t is cst.Attribute:
                if t is cst.Attribute:
                    attrs.add(id(n.attr))
                elif id(n) in attrs:
                    continue
                d = dotted(n)
                if d is not None:
                    at.setdefault(d, []).append(i)
            elif t is cst.Assign:
                self.assigns.append(n)
                self.assign_at.append(i)
                self.statements.append(n)
                self.statement_at.append(i)
            elif t is cst.AugAssign or t is cst.Expr:
                self.statements.append(n)
                self.statement_at.append(i)
            elif t is cst.For or t is cst.CompFor:
                self.loops.append(n)

    def below(self, node: cst.CSTNode, nodes: list, at: list[int]) -> list:
        """The nodes of `nodes` (positions `at`) below `node`, in source order, leaving out those
        inside a function, lambda or class below it (what walk(node, into_defs=False) meets)."""
        m = self.m
        start = m.order.get(node)
        if start is None or m.nodes[start] is not node:
            kinds = tuple({type(n) for n in nodes})
            return [n for n in walk(node, into_defs=False) if type(n) in kinds]
        found = nodes[bisect.bisect_right(at, start):bisect.bisect_left(at, m.end[node])]
        return [n for n in found if not m._nested_in(n, node, _DEFS)]

    def differentiating(self) -> list:
        """(call, (receiver, method) for `.backward()`/`.manual_backward()` else None, whether it is
        a torch.autograd./torch.func. function) for the file's calls that are either."""
        found = self._differentiating
        if found is None:
            m = self.m
            found = []
            for call in m.calls:
                mo = method_of(call)
                if mo is not None and mo[1] not in ("backward", "manual_backward"):
                    mo = None
                autograd = (m.qualname(call.func) or "").startswith(("torch.autograd.", "torch.func."))
                if mo is not None or autograd:
                    found.append((call, mo, autograd))
            self._differentiating = found
        return found

    def mentions(self, node: cst.CSTNode, root: str) -> bool:
        m = self.m
        start = m.order.get(node)
        if start is None or m.nodes[start] is not node:
            attrs = {id(n.attr) for n in walk(node) if isinstance(n, cst.Attribute)}
            return any(id(n) not in attrs and dotted(n) == root for n in walk(node)) or dotted(node) == root
        found = self.at.get(root)
        if not found:
            return False
        i = bisect.bisect_left(found, start)
        return i < len(found) and found[i] < m.end[node]


def _int_index(sub: cst.Subscript) -> int | None:
    """The index of `x[i]` with a non-negative integer literal, else None."""
    if len(sub.slice) != 1 or not isinstance(sub.slice[0].slice, cst.Index):
        return None
    v = sub.slice[0].slice.value
    if isinstance(v, cst.Integer) and v.value.isdigit():
        return int(v.value)
    return None


def _other_item_of_loss_tuple(m, loop: cst.CSTNode, n) -> bool:
    """`loss[1]` where the loop unpacks the loss from that tuple by another index
    (`if isinstance(loss, Tuple): average_over += loss[1]; loss = loss[0]`, flair's ModelTrainer:
    `forward_loss` returns the loss and the number of labels it averages): the backpropagated
    loss is `loss[0]`; what the other item holds (an int count) is not known to be a graph. Not
    when the engine knows the item holds one."""
    if not isinstance(n, cst.Subscript) or not isinstance(n.value, cst.Name):
        return False
    i = _int_index(n)
    if i is None:
        return False
    v = m.value_of(n)
    if v.kind == "tensor" and v.graph:
        return False
    root = n.value.value
    for node in m.walk(loop):
        if (isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name)
                and node.targets[0].target.value == root and isinstance(node.value, cst.Subscript)
                and isinstance(node.value.value, cst.Name) and node.value.value.value == root):
            j = _int_index(node.value)
            if j is not None and j != i:
                return True
    return False


def _str_key(sub: cst.Subscript) -> str | None:
    """The key of `d["k"]` with a plain string literal, else None."""
    if len(sub.slice) != 1 or not isinstance(sub.slice[0].slice, cst.Index):
        return None
    return string_value(sub.slice[0].slice.value)


def _other_key_of_loss_dict(m, loop: cst.CSTNode, n) -> bool:
    """`d["monitor_values"]` where the loop backpropagates only other keys of the same dict
    (`results_dict["torch_loss"].backward()`, MIC-DKFZ medicaldetectiontoolkit exec.py, whose
    model returns `'monitor_values': {'loss': loss.item(), ...}`): the dict holds a loss, but what
    another key holds (numbers, boxes, a logging string) is not known to be a graph
    (PRECISION55). Not for a key named like a loss (`d["loss_cls"]`, a component of the
    backpropagated sum), nor when the engine knows the item holds a graph, nor when the dict
    itself is backpropagated or indexed with a non-literal key."""
    if not isinstance(n, cst.Subscript) or not isinstance(n.value, cst.Name):
        return False
    key = _str_key(n)
    if key is None or "loss" in key.lower():
        return False
    v = m.value_of(n)
    if v.kind == "tensor" and v.graph:
        return False
    root = n.value.value
    keys: set[str] = set()
    for call in m.calls_in(loop):
        mo = method_of(call)
        if mo is None or mo[1] != "backward":
            continue
        recv = mo[0]
        if isinstance(recv, cst.Name) and recv.value == root:
            return False
        if isinstance(recv, cst.Subscript) and isinstance(recv.value, cst.Name) and recv.value.value == root:
            k = _str_key(recv)
            if k is None:
                return False
            keys.add(k)
    return bool(keys) and key not in keys


def _index_only(sub: cst.Subscript) -> bool:
    return len(sub.slice) == 1 and isinstance(sub.slice[0].slice, cst.Index)


def _bare_calls(value: cst.BaseExpression) -> list[cst.Call]:
    """Calls in `value` reached only through arithmetic (`f(x)`, `f(x) * n`), not inside another
    call or an attribute (`f(x).item()`, `float(f(x))`)."""
    out = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, cst.Call):
            out.append(v)
        elif isinstance(v, cst.BinaryOperation):
            stack.extend([v.left, v.right])
        elif isinstance(v, cst.UnaryOperation):
            stack.append(v.expression)
    return out


def _graph_holding(m, value: cst.BaseExpression) -> list:
    """The parts of an accumulated value that the flow engine knows hold an autograd graph: its
    bare names (see `_bare_names`), or the whole value when it is one call (`dice(out, y)`)."""
    names = [n for n in LossAccumulatedWithGraph._bare_names(value)
             if isinstance(n, cst.Name) and (_number_or_graph(m, n) or (m.value_of(n).kind == "tensor" and m.value_of(n).graph))
             # `losses["ce"]`: an entry of a dict of losses the engine knows holds a graph (B70-G2)
             or isinstance(n, cst.Subscript) and m.value_of(n).kind == "tensor" and m.value_of(n).graph]
    if not names and isinstance(value, cst.Call) and m.value_of(value).kind == "tensor" and m.value_of(value).graph:
        return [value]
    return names


def _number_or_graph(m, n) -> bool:
    """A Python number on some paths and a tensor holding a graph on the others (`adv_loss = 0.0`,
    then `adv_loss = criterion(...)` once the discriminator starts)."""
    v = m.value_of(n)
    return number_or_tensor(v) and v.graph


def _root_value(n) -> str:
    if isinstance(n, cst.Call):
        return ""
    if isinstance(n, cst.Attribute):
        return f"{n.value.value}.{n.attr.value}"
    return n.value.value if isinstance(n, cst.Subscript) else n.value


def _reset_at_optimizer_step(ctx: Context, loop: cst.CSTNode, acc: str) -> bool:
    """`running_loss += loss` between optimizer steps, and `running_loss = 0` in the block that
    steps the optimizer (`if (idx + 1) % accumulation_steps == 0: optimizer.step();
    optimizer.zero_grad(); log(running_loss.detach().item()); running_loss = 0`, the torchtune
    recipes): the accumulator is dropped at every step, so it keeps the graphs of one gradient
    accumulation window at most, whose saved tensors `backward()` already freed. A reset in a
    block that only logs (`if i % 2000 == 1999: print(...); running_loss = 0`) does not count."""
    m = ctx.model
    for n in walk(loop, into_defs=False):
        if not (isinstance(n, cst.Assign) and len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name)
                and n.targets[0].target.value == acc and isinstance(n.value, (cst.Integer, cst.Float))):
            continue
        block = m.enclosing(n, cst.If)
        if block is None or not m.contains(loop, block):
            continue
        for call in m.calls_in(block):
            mo = method_of(call)
            if mo is None:
                continue
            recv, meth = mo
            if meth == "zero_grad" or (meth == "step" and (m.kind_of(recv) is Kind.OPTIMIZER
                                                           or "optim" in (dotted(recv) or "").lower())):
                return True
    return False


# methods whose result still carries the receiver's autograd graph
_GRAPH_KEEPING_METHODS = frozenset(
    {"cpu", "cuda", "to", "float", "double", "half", "sum", "mean", "clone", "view", "reshape", "squeeze",
     "flatten", "contiguous"}
)
# library reductions that are differentiable (autograd functions): their result keeps the graph
_GRAPH_KEEPING_CALLS = frozenset({"horovod.torch.allreduce", "torch.distributed.nn.functional.all_reduce",
                                  "torch.distributed.nn.all_reduce"})


_TENSOR_ATTRS = frozenset({"item", "detach", "cpu", "backward", "grad_fn"})


def _tensor_test(test: cst.BaseExpression) -> int:
    """1 when `test` holds only for a tensor (`hasattr(x, "item")`, `torch.is_tensor(x)`,
    `isinstance(x, torch.Tensor)`), -1 for its negation, 0 otherwise: the other branch of
    `x.item() if hasattr(x, "item") else x` sees a Python number (world-models trainmdrnn.py)."""
    sign = 1
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        sign, test = -sign, test.expression
    if not isinstance(test, cst.Call):
        return 0
    func = test.func
    args = [a.value for a in test.args]
    if isinstance(func, cst.Name) and func.value == "hasattr" and len(args) == 2 \
            and isinstance(args[1], cst.SimpleString) and args[1].value.strip("\"'") in _TENSOR_ATTRS:
        return sign
    if (isinstance(func, cst.Attribute) and func.attr.value == "is_tensor" and isinstance(func.value, cst.Name)
            and func.value.value == "torch" and len(args) == 1):
        return sign
    if isinstance(func, cst.Name) and func.value == "isinstance" and len(args) == 2 \
            and isinstance(args[1], cst.Attribute) and args[1].attr.value == "Tensor":
        return sign
    return 0


def _graph_kept_names(value: cst.BaseExpression, m=None) -> list[cst.Name]:
    """Names reached from `value` through arithmetic and graph-keeping calls: `val.cpu()`,
    `val.mean()`, `hvd.allreduce(val.cpu(), name=...)` (the first positional argument). A call of
    anything else (`val.item()`, `float(val)`, a function of the file) stops the walk."""
    out = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, cst.Name):
            out.append(v)
        elif isinstance(v, cst.BinaryOperation):
            stack.extend([v.left, v.right])
        elif isinstance(v, cst.UnaryOperation):
            stack.append(v.expression)
        elif isinstance(v, cst.Call):
            mo = method_of(v)
            if mo is not None and mo[1] in _GRAPH_KEEPING_METHODS and isinstance(v.func, cst.Attribute):
                stack.append(v.func.value)
                continue
            q = m.qualname(v.func) if m is not None else None
            if q in _GRAPH_KEEPING_CALLS:
                pos = [a for a in v.args if a.keyword is None and not a.star]
                if pos:
                    stack.append(pos[0].value)
    return out


_NUMBER_FUNCTIONS = frozenset({"len", "float", "int", "round", "abs", "max", "min"})


def _reached_by_number(m, stmt: cst.CSTNode, name: str) -> bool:
    """The binding of `name` that reaches `stmt` is a plain assignment earlier in the same block
    (nothing in between rebinds it) whose value is a Python number: a call of a function of the file
    whose every return is built from numeric literals, `len`, `float`/`int`/`round`, `math.*` and
    local names bound only to such values (app_deep_learning's `loss = mlogloss(y_test, pred)` after
    the training branch's `loss = criterion(...)`, PRECISION7.md)."""
    st = m.statement_of(stmt)
    block = m.parent(st) if st is not None else None
    body = getattr(block, "body", None)
    if not isinstance(body, (list, tuple)) or st not in body:
        return False
    for prev in reversed(body[: body.index(st)]):
        if isinstance(prev, cst.SimpleStatementLine):
            for small in reversed(prev.body):
                if isinstance(small, cst.Assign) and any(
                    isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets
                ):
                    if len(small.targets) != 1:
                        return False
                    v = small.value
                    if _number_expression(m, v, 0):
                        return True  # `loss = float(loss.data) * len(xlen)` (HawkAaron/E2E-ASR, PRECISION22 #1)
                    if not (isinstance(v, cst.Call) and isinstance(v.func, cst.Name)):
                        return False
                    fns = m.functions.get(v.func.value, [])
                    return len(fns) == 1 and _returns_number(m, fns[0])
                if isinstance(small, (cst.AugAssign, cst.AnnAssign)) and isinstance(small.target, cst.Name) \
                        and small.target.value == name:
                    return False
            continue
        if any(isinstance(n, cst.Name) and n.value == name for n in walk(prev)):
            return False  # a compound statement that may rebind it: cannot tell which binding reaches
    return False


def _number_expression(m, e: cst.BaseExpression, depth: int) -> bool:
    """A Python number whatever the names in it hold: a numeric literal, `float(...)`/`int(...)`/
    `round(...)`/`len(...)` of the builtins, `x.item()`, a `math.*` call, a `numpy.*` call of a list
    or tuple display, and arithmetic of those."""
    if depth > 8:
        return False
    if isinstance(e, (cst.Integer, cst.Float)):
        return True
    if isinstance(e, cst.UnaryOperation):
        return _number_expression(m, e.expression, depth + 1)
    if isinstance(e, cst.BinaryOperation):
        return _number_expression(m, e.left, depth + 1) and _number_expression(m, e.right, depth + 1)
    if isinstance(e, cst.Call):
        if isinstance(e.func, cst.Attribute) and e.func.attr.value == "item" and not e.args:
            return True
        q = m.qualname(e.func) or ""
        if q.startswith("math.") and q.count(".") == 1:
            return True
        if (q.startswith("numpy.") and q.count(".") == 1 and e.args and not e.args[0].star
                and e.args[0].keyword is None and isinstance(e.args[0].value, (cst.List, cst.ListComp, cst.Tuple))):
            # `loss = np.mean([losses[i] for i in range(k)])` (pyod's MO_GAAL, PRECISION43): NumPy
            # turns the list into an array, and an element that held a graph would raise there
            # ("Can't call numpy() on Tensor that requires grad"): what it returns holds none
            return True
        return (isinstance(e.func, cst.Name) and e.func.value in ("float", "int", "len")
                and e.func.value not in m.functions and e.func.value not in m.aliases)
    return False


def _returns_number(m, fn: cst.FunctionDef) -> bool:
    returns = [n for n in walk(fn.body, False) if isinstance(n, cst.Return)]
    if not returns or any(r.value is None for r in returns):
        return False
    return all(_numeric(m, fn, r.value, 0) for r in returns)


def _numeric(m, fn: cst.FunctionDef, e: cst.BaseExpression, depth: int) -> bool:
    if depth > 8:
        return False
    if isinstance(e, (cst.Integer, cst.Float)):
        return True
    if isinstance(e, cst.UnaryOperation):
        return _numeric(m, fn, e.expression, depth + 1)
    if isinstance(e, cst.BinaryOperation):
        return _numeric(m, fn, e.left, depth + 1) and _numeric(m, fn, e.right, depth + 1)
    if isinstance(e, cst.Call):
        q = m.qualname(e.func) or ""
        if q.startswith("math.") and q.count(".") == 1:
            return True  # math functions return Python floats, whatever they are given
        if isinstance(e.func, cst.Name) and e.func.value in _NUMBER_FUNCTIONS and e.func.value not in m.functions \
                and e.func.value not in m.aliases:
            if e.func.value in ("len", "float", "int", "round"):
                return True
            return all(not a.star and _numeric(m, fn, a.value, depth + 1) for a in e.args)  # max/min/abs of numbers
        return False
    if isinstance(e, cst.Name):
        # a local bound only by assignments (and augmented assignments) of numbers in this function
        binds = []
        for n in walk(fn.body, False):
            if isinstance(n, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == e.value for t in n.targets):
                if len(n.targets) != 1:
                    return False
                binds.append(n.value)
            elif isinstance(n, (cst.AugAssign, cst.AnnAssign)) and isinstance(n.target, cst.Name) and n.target.value == e.value:
                if n.value is None:
                    return False
                binds.append(n.value)
            elif isinstance(n, (cst.For, cst.CompFor)) and any(
                    isinstance(x, cst.Name) and x.value == e.value for x in walk(n.target)):
                if _int_loop_target(m, n, e.value):
                    binds.append(cst.Integer("0"))  # `for cnt, batch in enumerate(loader)`: an int
                    continue
                return False
        if any(isinstance(p.name, cst.Name) and p.name.value == e.value
               for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)):
            return False
        return bool(binds) and all(b is not e and _numeric(m, fn, b, depth + 1) for b in binds)
    return False



def _int_loop_target(m, loop, name: str) -> bool:
    """`name` is an int a loop binds: `for i in range(n)`, or the counter of
    `for cnt, batch in enumerate(loader)` (builtins, not names the file rebinds)."""
    it = loop.iter
    if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value in ("range", "enumerate")
            and it.func.value not in m.functions and it.func.value not in m.aliases):
        return False
    t = loop.target
    if it.func.value == "range":
        return isinstance(t, cst.Name) and t.value == name
    return (isinstance(t, (cst.Tuple, cst.List)) and t.elements and isinstance(t.elements[0].value, cst.Name)
            and t.elements[0].value.value == name)


def _detached_in_tuple(assign: cst.Assign, name: str) -> bool:
    """`loss, l1_loss = loss.item(), l1_loss.item()`: a tuple target whose element `name` is paired
    with a detaching call (`x.item()`, `x.detach()`, `float(x)`) of an equally long tuple value."""
    value = assign.value
    if not isinstance(value, cst.Tuple):
        return False
    for t in assign.targets:
        target = t.target
        if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != len(value.elements):
            continue
        if any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements)):
            continue
        for te, ve in zip(target.elements, value.elements):
            if not (isinstance(te.value, cst.Name) and te.value.value == name):
                continue
            v = ve.value
            if isinstance(v, cst.Call):
                mo = method_of(v)
                if (mo is not None and mo[1] in _DETACHING) or (
                    isinstance(v.func, cst.Name) and v.func.value in ("float", "int")
                ):
                    return True
            if isinstance(v, (cst.Integer, cst.Float)):
                return True
    return False


def _local_scope(m, stmt: cst.CSTNode, root: str):
    """The function `root` is a local name of, where `stmt` accumulates into it (bound there, not
    declared `global`/`nonlocal`); None for attributes, module-level names and globals."""
    if "." in root:
        return None
    fn = m.enclosing(stmt, cst.FunctionDef)
    if fn is None or not m.bindings.get((fn, root)):
        return None
    for n in m.walk(fn):
        if isinstance(n, (cst.Global, cst.Nonlocal)) and any(x.name.value == root for x in n.names):
            return None
        if isinstance(n, (cst.Return, cst.Yield)) and n.value is not None and any(
                isinstance(x, cst.Name) and x.value == root for x in (n.value, *m.walk(n.value))):
            return None  # handed to the caller, which may differentiate it
    return fn


def _items_backpropagated(m, index, root: str, scope=None) -> bool:
    """`losses.append(loss)` and then `for optimizer, loss in zip(optimizers, losses): loss.backward()`
    (bytedance/ibot analysis/linear_part/eval.py, one linear head per optimizer): a loop over the
    accumulator (`for x in acc`, `zip(..., acc, ...)`, `enumerate(acc)`) backpropagates its items.
    Keeping their graph until then is the point."""
    for f in m.fors:
        if scope is not None and not m.contains(scope, f):
            continue
        it = f.iter
        over = isinstance(it, cst.Name) and it.value == root
        if not over and isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value in ("zip", "enumerate"):
            over = any(isinstance(a.value, cst.Name) and a.value.value == root and a.star == "" for a in it.args)
        if not over:
            continue
        targets = {n.value for n in (f.target, *m.walk(f.target)) if isinstance(n, cst.Name)}
        for call, mo, autograd in index.differentiating():
            if not m.contains(f.body, call):
                continue
            parts = [mo[0]] if mo is not None else []
            parts += [a.value for a in call.args]
            if any(index.mentions(p, t) for p in parts for t in targets):
                return True
    return False


def _plain_inner_loop(m, facts: TrainingFacts, loop, stmt: cst.CSTNode) -> bool:
    """`stmt` sits in loops inside `loop` that neither backpropagate nor step, and `loop` is a step
    loop with a backward of its own (PAAC's `Master.train()`: the update loop runs `loss_sum.backward()`
    after `for t in reversed(range(t_max)):` summed `loss_sum += loss` and the printed
    `loss_p_sum += loss_p`): what those loops accumulate lives across the training steps."""
    if not loop.is_step_loop or not any(_innermost_loop(m, b) is loop.node for b in loop.backward):
        return False
    for info in facts.loops_around(stmt):
        if info.node is loop.node:
            return True
        if info.backward or info.backward_via or info.steps or info.steps_via:
            return False
    return False


def _bound_in_body_before(m, info, stmt: cst.CSTNode, acc: str) -> bool:
    """`acc` is assigned (any value; a name of a tuple target counts) in the loop's own body (not in
    a loop inside it) before `stmt`, and the loop inside it that grows `acc` runs before the loop's
    own backward: each update starts it anew and fills it for that update (spikingjelly's A2C
    rollout: `values = []`, then `for _ in range(num_steps): values.append(value)`, then the loss and
    `loss.backward()`). A sum grown after the backward (a test loop in the epoch loop, `test_loss =
    0.0` per epoch) holds graphs no backward frees: not this case."""
    loop = info.node
    inner = next((a for a in m.ancestors(stmt) if isinstance(a, (cst.For, cst.While))
                  and _innermost_loop(m, a) is loop), None)
    if inner is None or not any(_innermost_loop(m, b) is loop and m.precedes(inner, b) for b in info.backward):
        return False
    for n in walk(loop, into_defs=False):
        if not isinstance(n, (cst.Assign, cst.AnnAssign)) or _innermost_loop(m, n) is not loop:
            continue
        if not m.precedes(n, stmt):
            continue
        targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target]
        for t in targets:
            for x in (t, *walk(t)):
                if dotted(x) == acc and (x is t or isinstance(m.parent(x), (cst.Element, cst.StarredElement))):
                    return True
    return False


def _is_reset(n: cst.CSTNode, acc: str) -> bool:
    """`acc = []`, `acc = {}`, `acc = 0`, `acc = 0.0`, `acc = list()`, `acc = dict()`."""
    if not (isinstance(n, cst.Assign) and len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name)
            and n.targets[0].target.value == acc):
        return False
    v = n.value
    if isinstance(v, (cst.Integer, cst.Float)):
        return True
    if isinstance(v, (cst.List, cst.Dict)) and not v.elements:
        return True
    return isinstance(v, cst.Call) and not v.args and isinstance(v.func, cst.Name) and v.func.value in ("list", "dict")


def _innermost_loop(m, node):
    for anc in m.ancestors(node):
        if isinstance(anc, (cst.For, cst.While)):
            return anc
        if isinstance(anc, (cst.FunctionDef, cst.Lambda)):
            return None
    return None


def _steps_its_own_optimizer(m, loop: cst.CSTNode) -> bool:
    """`for head, optimizer in zip(heads, optimizers): ... optimizer.step()`: each iteration trains
    another head with its own optimizer; the loop runs over models, not over data."""
    if not isinstance(loop, cst.For):
        return False
    targets = {n.value for n in (loop.target, *m.walk(loop.target)) if isinstance(n, cst.Name)}
    for call in m.calls_in(loop.body):
        mo = method_of(call)
        if mo is not None and mo[1] == "step" and isinstance(mo[0], cst.Name) and mo[0].value in targets:
            return True
    return False


def _optimizer_step(m, call: cst.Call) -> bool:
    """`optimizer.step()` or `scaler.step(optimizer)`."""
    mo = method_of(call)
    if mo is None or mo[1] != "step":
        return False
    recv = mo[0]
    if m.kind_of(recv) is Kind.OPTIMIZER or "optim" in (dotted(recv) or "").lower():
        return True
    return bool(call.args) and (m.kind_of(call.args[0].value) is Kind.OPTIMIZER
                                or "optim" in (dotted(call.args[0].value) or "").lower())


def _reset_per_accumulation_window(m, loop: cst.CSTNode, stmt: cst.CSTNode, acc: str) -> bool:
    """Gradient accumulation over a micro-batch loop (DecoupleNet's train_phase1.py: `loss_seg_value
    = 0`, then `for sub_i in range(args.iter_size):` with a backward and `loss_seg_value += loss_seg /
    args.iter_size`, then `loss_seg_value = loss_seg_value.item()` and `scaler.step(optimizer)`): the
    accumulator grows in a loop that steps no optimizer, is reset in the body of the loop around it
    before that loop, and an optimizer step in that body after the loop closes the window. It holds
    one step's micro-batch losses, whose saved tensors `backward()` already freed."""
    if _innermost_loop(m, stmt) is not loop:
        return False
    if any((mo := method_of(c)) is not None and mo[1] == "step" for c in m.calls_in(loop)):
        return False  # the optimizer steps inside: a data loop, not a window of micro-batches
    outer = _innermost_loop(m, loop)
    if outer is None:
        return _function_accumulation_window(m, loop, acc)
    reset = any(_is_reset(n, acc) and _innermost_loop(m, n) is outer and m.precedes(n, loop)
                for n in walk(outer, into_defs=False))
    if not reset:
        return False
    return any(_innermost_loop(m, c) is outer and m.precedes(loop, c) and _optimizer_step(m, c)
               for c in m.calls_in(outer))


def _function_accumulation_window(m, loop: cst.CSTNode, acc: str) -> bool:
    """The same window one call wide (pytorch-lr-finder's `LRFinder._train_batch`: `total_loss =
    None`, `optimizer.zero_grad()`, then `for i in range(accumulation_steps):` with a backward and
    `total_loss += loss`, then `optimizer.step()` and `return total_loss.item()`; `range_test`
    calls it once per iteration): a `for ... in range(...)` loop outside any other loop of its
    function, the accumulator reset in that function's body before the loop (outside any loop), and
    an optimizer step after the loop, outside any loop. Each call starts a new accumulator."""
    if not isinstance(loop, cst.For):
        return False
    it = loop.iter
    if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range"):
        return False
    fn = m.enclosing(loop, cst.FunctionDef)
    if fn is None:
        return False
    reset = any((_is_reset(n, acc) or _is_none_reset(n, acc)) and _innermost_loop(m, n) is None
                and m.precedes(n, loop) for n in walk(fn.body, into_defs=False))
    if not reset:
        return False
    return any(_innermost_loop(m, c) is None and m.precedes(loop, c) and _optimizer_step(m, c)
               for c in m.calls_in(fn.body))


def _is_none_reset(n: cst.CSTNode, acc: str) -> bool:
    """`acc = None` (a late-initialised sum: `total_loss = loss` on the first pass)."""
    return (isinstance(n, cst.Assign) and len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name)
            and n.targets[0].target.value == acc and isinstance(n.value, cst.Name) and n.value.value == "None")


def _reset_per_batch_repeats(m, loop: cst.CSTNode, stmt: cst.CSTNode, acc: str) -> bool:
    """k updates on the same batch (VocGAN's utils/train.py: in the loop over the DataLoader,
    `loss_d_sum = 0.0`, then `for _ in range(hp.train.rep_discriminator):` with a backward, an
    optimizer step and `loss_d_sum += loss_d`, then `loss_d_avg = (loss_d_sum / rep).item()`): the
    accumulator grows in a `for ... in range(...)` loop whose enclosing loop iterates a DataLoader
    and resets it before that loop, so it never holds more than one batch's k losses. A reset in an
    epoch loop around a loop over batches does not count (that loop is not a `range`)."""
    if _innermost_loop(m, stmt) is not loop or not isinstance(loop, cst.For):
        return False
    it = loop.iter
    if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range"):
        return False
    outer = _innermost_loop(m, loop)
    if not isinstance(outer, cst.For) or m.loader_of_loop(outer) is None:
        return False
    return any(_is_reset(n, acc) and _innermost_loop(m, n) is outer and m.precedes(n, loop)
               for n in walk(outer, into_defs=False))


def _reset_per_iteration(m, loop: cst.CSTNode, stmt: cst.CSTNode, acc: str) -> bool:
    """The accumulator is emptied again in every iteration before it grows (ibot
    evaluation/eval_linear_multi.py: `losses = []` at the top of each batch, then one
    `losses.append(loss)` per linear head, each head stepping its own optimizer): it never holds
    more than one iteration's losses. The reset counts when it sits in the loop's own body before
    the accumulation, or, for a loop over heads that each step their own optimizer, in the body of
    the loop around it (the data loop). A reset in an outer loop around a data loop (`running = 0`
    per epoch, `running += loss` per batch) does not count."""
    if _innermost_loop(m, stmt) is not loop:
        return False  # grown in a loop inside it (a test loop in the epoch loop): one reset per outer pass
    outer = _innermost_loop(m, loop)
    scopes = [loop] + ([outer] if outer is not None and _steps_its_own_optimizer(m, loop) else [])
    for scope in scopes:
        for n in walk(scope, into_defs=False):
            if not _is_reset(n, acc) or _innermost_loop(m, n) is not scope:
                continue
            if m.precedes(n, stmt):
                return True
    return False


def _element_of(node: cst.BaseExpression, root: str) -> bool:
    """`root[k]` (one index, `root` a name or `self.attr`)."""
    return isinstance(node, cst.Subscript) and _index_only(node) and dotted(node.value) == root


def _loop_counters(m, index, loop: cst.CSTNode) -> set[str]:
    """Names that take a new value each iteration of `loop` and never come back: the index of a
    `for i in range(...)` / `for i, x in enumerate(...)` (also wrapped, `tqdm(range(n))`), and a
    name or `self.attr` the loop's own body increments (`step += 1`) and never assigns."""
    out: set[str] = set()
    if isinstance(loop, cst.For):
        it = loop.iter
        if isinstance(it, cst.Call) and isinstance(it.func, (cst.Name, cst.Attribute)) \
                and dotted(it.func) not in ("range", "enumerate") and it.args \
                and isinstance(it.args[0].value, cst.Call):
            it = it.args[0].value  # tqdm(range(n)), tqdm(enumerate(loader))
        if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value not in m.functions:
            t = loop.target
            if it.func.value == "range" and isinstance(t, cst.Name):
                out.add(t.value)
            elif it.func.value == "enumerate" and isinstance(t, (cst.Tuple, cst.List)) and t.elements \
                    and isinstance(t.elements[0].value, cst.Name):
                out.add(t.elements[0].value.value)
    assigned: set[str] = set()
    for n in walk(loop.body, into_defs=False):
        if isinstance(n, cst.AugAssign) and isinstance(n.operator, cst.AddAssign) and isinstance(n.value, cst.Integer):
            d = dotted(n.target)
            if d is not None and _innermost_loop(m, n) is loop:
                out.add(d)
        elif isinstance(n, (cst.Assign, cst.AnnAssign)):
            for t in (n.targets if isinstance(n, cst.Assign) else [n]):
                assigned |= _bound_by(t.target)
        elif isinstance(n, (cst.For, cst.CompFor)):
            assigned |= _bound_by(n.target)
    return out - assigned


def _bound_by(target: cst.BaseExpression) -> set[str]:
    """The names and `a.b` chains an assignment target binds (`x`, `self.step`, `a, (b, c)`)."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return {d for e in target.elements for d in _bound_by(e.value)}
    if isinstance(target, cst.StarredElement):
        return _bound_by(target.value)
    d = dotted(target) if isinstance(target, (cst.Name, cst.Attribute)) else None
    return {d} if d is not None else set()


def _counter_index(e: cst.BaseExpression, counters: set[str]) -> bool:
    """`i`, `self.step`, `i - 1`, `epoch + start`: a counter, alone or plus/minus a constant or a name."""
    if isinstance(e, (cst.Name, cst.Attribute)):
        return dotted(e) in counters
    if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, (cst.Add, cst.Subtract)):
        left, right = e.left, e.right
        if isinstance(left, (cst.Name, cst.Attribute)) and dotted(left) in counters:
            return isinstance(right, (cst.Integer, cst.Name))
        if isinstance(e.operator, cst.Add) and isinstance(right, (cst.Name, cst.Attribute)) and dotted(right) in counters:
            return isinstance(left, (cst.Integer, cst.Name))
    return False


def _kept_container(m, expr: cst.BaseExpression, loop: cst.CSTNode) -> bool:
    """`expr` (a name, or `self.attr` in its class) is only ever bound, outside `loop`, to a list or
    dict (a literal, a comprehension, `[None] * n`, `dict()`, `defaultdict(list)`)."""
    binds = m.bindings_of(expr)
    if not binds:
        return False
    for b in binds:
        if b.how != "assign" or m.contains(loop, b.node):
            return False
        v = b.value
        if not (_plain_container(v) or isinstance(v, (cst.List, cst.Dict, cst.ListComp, cst.DictComp))
                or _tensor_container(m, v)):
            return False
    return True


_TENSOR_FACTORIES = frozenset({"torch.zeros", "torch.empty", "torch.ones", "torch.full", "torch.Tensor",
                               "torch.FloatTensor"})


def _tensor_container(m, v: cst.BaseExpression | None) -> bool:
    """`torch.zeros(n)`, `torch.empty(n, device=...)`, `torch.Tensor(n)`, ... without
    `requires_grad`: a tensor that holds no graph when made. Storing a loss that holds one into
    it (`losses[i] = loss`) records a `CopySlices` node that keeps that loss's graph, and the
    tensor then chains every iteration's (PyTorch gives it a `grad_fn` and `requires_grad`)."""
    if not isinstance(v, cst.Call) or (m.qualname(v.func) or "") not in _TENSOR_FACTORIES:
        return False
    return not any(a.star or (a.keyword is not None and a.keyword.value == "requires_grad") for a in v.args)


def _cleared_in_loop(m, index, loop: cst.CSTNode, root: str) -> bool:
    """The loop drops or detaches what the container holds: `del acc[k]`, `acc[k] = None`,
    `acc[k] = acc[k].item()`, `acc.pop(...)`, `acc.clear()`, `acc = ...`. Cannot tell what stays."""
    for n in walk(loop, into_defs=False):
        if isinstance(n, cst.Del) and any(dotted(x) == root for x in walk(n.target)):
            return True
        if isinstance(n, cst.Assign):
            for t in n.targets:
                tgt = t.target
                if dotted(tgt) == root:
                    return True
                if _element_of(tgt, root):
                    v = n.value
                    if isinstance(v, (cst.Integer, cst.Float)) or (isinstance(v, cst.Name) and v.value == "None"):
                        return True
                    if isinstance(v, cst.Call):
                        mo = method_of(v)
                        if (mo is not None and mo[1] in _DETACHING) or (
                                isinstance(v.func, cst.Name) and v.func.value in ("float", "int")):
                            return True
        if isinstance(n, cst.Call):
            mo = method_of(n)
            if mo is not None and mo[1] in ("pop", "clear", "popitem") and dotted(mo[0]) == root:
                return True
    return False


_PLAIN_FACTORIES = frozenset({"list", "dict", "collections.defaultdict", "collections.OrderedDict", "defaultdict",
                              "OrderedDict"})


def _plain_container(v: cst.BaseExpression | None) -> bool:
    """`[]`, `{}`, `[None] * n`, `[0.0] * n`, `[None for _ in range(n)]`, `dict()`, `list()`,
    `defaultdict(list)`, `OrderedDict()`: a list or dict that holds no tensor when made."""
    if isinstance(v, (cst.List, cst.Dict)):
        return all(isinstance(e, (cst.Element, cst.DictElement)) and isinstance(e.value, (cst.Name, cst.Integer, cst.Float, cst.List))
                   and (not isinstance(e.value, cst.Name) or e.value.value == "None") for e in v.elements)
    if isinstance(v, cst.BinaryOperation) and isinstance(v.operator, cst.Multiply):
        lst = v.left if isinstance(v.left, cst.List) else v.right if isinstance(v.right, cst.List) else None
        return lst is not None and _plain_container(lst)
    if isinstance(v, cst.ListComp):
        return isinstance(v.elt, (cst.Integer, cst.Float)) or (isinstance(v.elt, cst.Name) and v.elt.value == "None")
    if isinstance(v, cst.Call):
        d = dotted(v.func)
        return d in _PLAIN_FACTORIES and all(isinstance(a.value, cst.Name) and a.value.value in ("list", "float", "int")
                                             for a in v.args)
    return False


def _in_place_receiver(m, recv: cst.BaseExpression) -> bool:
    """The receiver of an accumulating `recv.add_(v)`: a name or attribute chain (`running`,
    `self.total`, `meters["loss"]`), or what a method of a class of the file returns for an object
    named by such a chain (`stats.device_stat("average_loss")`, a tensor kept in the object). A
    tensor method's result (`x.mul_(d).add_(y)`) is no accumulator kept across iterations."""
    if isinstance(recv, cst.Call):
        if not isinstance(recv.func, cst.Attribute):
            return False
        meth = recv.func.attr.value
        if not any(meth in c.methods for c in m.classes.values()):
            return False
        recv = recv.func.value
    while isinstance(recv, (cst.Attribute, cst.Subscript)):
        recv = recv.value
    return isinstance(recv, cst.Name)


def _kept_across(m, facts, fn: cst.FunctionDef, call: cst.Call, param: str) -> bool:
    """`call` (of `fn`) runs in a loop of its own function and passes for `param` a name that no
    statement of that loop binds: the same object at every iteration."""
    loop = facts.enclosing_loop(call)
    if loop is None:
        return False
    arg = argument_for(fn, call, param)
    if not isinstance(arg, cst.Name):
        return False
    for b in m.bindings_of(arg):
        if b.node is not None and m.contains(loop, b.node):
            return False
    return True


def _acc_root(acc: cst.BaseExpression) -> str | None:
    """The root name of an accumulator; for the receiver of `stats.device_stat("loss").add_(v)`
    (see _in_place_receiver), the object's (`stats`)."""
    if isinstance(acc, cst.Call) and isinstance(acc.func, cst.Attribute):
        acc = acc.func.value
    return LossAccumulatedWithGraph._root(acc)


def _single_pass_at(m, loop: cst.CSTNode, node: cst.CSTNode) -> bool:
    """`node` runs at most once per entry into `loop`: the loop's body ends with an unconditional
    `break`, `node` is the loop's own statement (not a nested loop's), and every `continue` of the
    loop comes before it (`for idx, batch in enumerate(loader): if idx < k: continue; ...; break`,
    openfl's vertical-FL flow steps, PRECISION43)."""
    if not isinstance(loop, (cst.For, cst.While)) or not isinstance(loop.body, cst.IndentedBlock) or not loop.body.body:
        return False
    last = loop.body.body[-1]
    if not (isinstance(last, cst.SimpleStatementLine) and any(isinstance(s, cst.Break) for s in last.body)):
        return False
    if m.enclosing(node, cst.For, cst.While) is not loop:
        return False
    own = (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)
    return all(m.order[c] < m.order[node] for c in m.walk(loop.body, skip=own) if isinstance(c, cst.Continue))
