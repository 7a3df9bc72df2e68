"""GL201 autocast-without-gradscaler."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.amp import AmpFacts, AutocastRegion
from gpulint.rule import Context, Rule
from gpulint.sites import line_refs


class AutocastWithoutGradScaler(Rule):
    code = "GL201"
    name = "autocast-without-gradscaler"
    summary = "float16 autocast on CUDA in a training script with no GradScaler."
    message = "float16 autocast while training without a GradScaler: small gradients underflow to zero in fp16; scale the loss with `torch.amp.GradScaler` (or use `dtype=torch.bfloat16`)"
    fix_safety = "unsafe"
    default = True
    kind = "silent"
    prefilter = r"autocast"
    ast_prefilter = r"autocast"
    explanation = '''
On CUDA, `torch.autocast("cuda")` runs matmuls and convolutions in float16 unless told otherwise
(`torch.cuda.amp.autocast()` too). Gradients computed in float16 underflow: values below about
6e-8 become zero, and training silently stalls or diverges. A `GradScaler` multiplies the loss
before `backward()` so that gradients stay representable, unscales them before the optimizer
step, and skips steps whose gradients overflowed.

bfloat16 autocast (`dtype=torch.bfloat16`) has float32's range and needs no scaler, and neither
does autocast used only for inference; frameworks that manage precision (Lightning `precision=`,
Accelerate `mixed_precision=`, DeepSpeed, the HF Trainer `fp16=`) scale the loss themselves, and
so do objects from another module that are handed the loss: a scaler called as
`loss_scaler(loss, optimizer)` (timm's NativeScaler) or an optimizer wrapper that runs the backward,
`optimizer.backward(loss)` (fairseq's AMPOptimizer, apex's FP16_Optimizer).
The rule stays silent in all these cases, and whenever the device type or dtype cannot be
resolved from the file. A GradScaler built with `enabled=False` (a literal) scales nothing: when
every scaler the file uses is such a one, the float16 autocast is reported anyway, naming the
scaler's line, with no fix (enable it, under the condition autocast runs in float16 under).

The fix (unsafe: it changes the training loop) creates `scaler = torch.amp.GradScaler(...)` before
the training loop, with autocast's device type and, when AMP is switched by a condition
(`enabled=use_amp`, `if use_amp:`), `enabled=` that same condition; it then rewrites
`loss.backward()` to `scaler.scale(loss).backward()`, `optimizer.step()` to
`scaler.step(optimizer)`, inserts `scaler.unscale_(optimizer)` before gradient clipping and
`scaler.update()` after the step. On a machine without CUDA, `GradScaler("cuda")` disables
itself with a warning and the script still runs.

Bad:

```python
for x, y in loader:
    optimizer.zero_grad()
    with torch.autocast(device_type="cuda"):
        loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
```

Good:

```python
scaler = torch.amp.GradScaler("cuda")
for x, y in loader:
    optimizer.zero_grad()
    with torch.autocast(device_type="cuda"):
        loss = criterion(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
```
'''

    def check(self, ctx: Context):
        facts = ctx.model.facts(AmpFacts)
        if facts.framework_precision or _delegated_loss_scaling(ctx.model):
            return
        disabled = _disabled_scalers(ctx, facts)
        if facts.uses_loss_scaling and not disabled:
            return
        training = [(r, it) for r in facts.regions if r.may_be_cuda_fp16 for it in [self._training(facts, r)] if it]
        iterations = []
        for _, it in training:
            if it is not True and all(it is not seen for seen in iterations):
                iterations.append(it)
        if disabled:
            lines = line_refs(ctx, disabled)
            for region, _ in training:
                yield ctx.finding(
                    region.anchor,
                    f"float16 autocast while training with a GradScaler built with `enabled=False` ({lines}): "
                    f"it scales nothing, so small gradients underflow to zero in fp16; enable it (`enabled=True`, "
                    f"or the condition autocast runs in float16 under) or use `dtype=torch.bfloat16`",
                )
            return
        fix = None
        if len(iterations) == 1 and all(it is iterations[0] and not r.indirect for r, it in training):
            fix = self._fix(ctx, facts, iterations[0], [r for r, _ in training])
        for region, _ in training:
            yield ctx.finding(region.anchor, fix=fix)

    # which regions train ---------------------------------------------------------------------
    @staticmethod
    def _training(facts: AmpFacts, region: AutocastRegion):
        """The training iteration the region runs in; True when it trains through code elsewhere
        (a decorated or module-level forward); None when it is not known to train."""
        m = facts.m
        if _no_grad_items(facts, region) or facts.under_no_grad(region.body):
            return None
        if not facts.trained_backwards():
            return None
        if region.via_decorator:
            fn = region.body
            if any(facts.contains(fn, b.call) for b in facts.trained_backwards()):
                return True
            if m.class_of(fn) is not None and _in_module_class(facts, fn):
                return True
            name = fn.name.value
            for call in m.calls:
                if isinstance(call.func, cst.Name) and call.func.value == name and facts.iteration_of(call):
                    return True
            return None
        it = facts.iteration_of(region.body)
        scope = m.scope_of(region.body)
        in_loop = any(isinstance(a, (cst.For, cst.While)) for a in _ancestors_within(m, region.body, scope))
        if it is not None and not isinstance(it, (cst.For, cst.While)) and in_loop:
            it = None  # e.g. an evaluation loop in a function that also trains elsewhere
        if it is not None and any(
            facts.contains(it, b.call) and not facts.exclusive(region.body, b.call) for b in facts.trained_backwards()
        ):
            return it
        helper = _helper_training(facts, region, scope)
        if helper is not None:
            return helper
        if _in_module_class(facts, region.body):
            return True
        return None

    # the fix ---------------------------------------------------------------------------------
    def _fix(self, ctx: Context, facts: AmpFacts, it, regions: list[AutocastRegion]):
        m = ctx.model
        if not isinstance(it, (cst.For, cst.While)):
            return None
        torch_name = next((k for k, v in sorted(m.aliases.items()) if v == "torch"), None)
        if torch_name is None:
            return None
        # where the scaler is created: before the outermost loop of the function around `it`
        outer = it
        scope = m.scope_of(it)
        for anc in m.ancestors(it):
            if anc is scope:
                break
            if isinstance(anc, (cst.For, cst.While)):
                outer = anc
        # the scaler's device type, from autocast's
        devices = set()
        for r in regions:
            if r.is_legacy or r.device_arg is None:
                devices.add('"cuda"')
            elif isinstance(r.device_arg, cst.SimpleString):
                devices.add('"cuda"' if "cuda" in (r.devices or ()) else ctx.code(r.device_arg))
            else:
                if not _is_device_type_text(facts, r.device_arg) or not facts.available_at(r.device_arg, outer):
                    return None
                devices.add(ctx.code(r.device_arg))
        if len(devices) != 1:
            return None
        device = devices.pop()
        # the condition that switches AMP, if any
        conds = set()
        for r in regions:
            for c in _conditions(facts, r, it):
                if c is False:
                    return None
                conds.add(c)
        cond_text = None
        if len(conds) > 1:
            return None
        if conds:
            cond = conds.pop()
            cond_text = cond
        # the statements to rewrite
        backwards = [
            b
            for b in facts.backwards
            if b.scaler is None
            and facts.contains(it, b.call)
            and any(not facts.exclusive(r.body, b.call) for r in regions)
        ]
        if not backwards:
            return None
        steps = [
            st for st in facts.direct_steps if facts.contains(it, st.call) and any(facts.may_follow(b.call, st.call) for b in backwards)
        ]
        if not steps or any(st.call.args for st in steps):
            return None
        name = facts.fresh_name("scaler")
        edits = []
        for b in backwards:
            recv = b.call.func.value  # type: ignore[attr-defined]
            inner = recv.with_changes(lpar=[], rpar=[]) if getattr(recv, "lpar", None) else recv
            edits.append(ctx.replace(b.call.func, f"{name}.scale({ctx.render(inner)}).backward"))
        for st in steps:
            edits.append(ctx.replace(st.call, f"{name}.step({st.optimizer})"))
        opts = []
        for st in steps:
            if st.optimizer not in opts:
                opts.append(st.optimizer)
        clips = [
            c
            for c in facts.clips
            if facts.contains(it, c)
            and any(facts.may_follow(b.call, c) for b in backwards)
            and any(facts.may_follow(c, st.call) for st in steps)
        ]
        if clips:
            first = min(clips, key=lambda c: facts.order[c])
            stmt = facts.statement(first)
            if stmt is None or any(facts.contains(stmt, b.call) for b in backwards):
                return None
            edits.append(ctx.insert_before(stmt, "\n".join(f"{name}.unscale_({o})" for o in opts)))
        anchor = facts.update_anchor([st.call for st in steps], it)
        if anchor is None:
            return None
        edits.append(ctx.insert_after(anchor, f"{name}.update()"))
        args = device + (f", enabled={cond_text}" if cond_text else "")
        edits.append(ctx.insert_before(outer, f"{name} = {torch_name}.amp.GradScaler({args})"))
        return ctx.fix(*edits, message="Scale the loss with a GradScaler")


def _helper_training(facts: AmpFacts, region: AutocastRegion, scope):
    """The loop around the region (or its function, when no loop is) when, after the region in
    that loop, it calls a function of the file (by its name, defined once, not a method) whose own body runs a trained `.backward()`,
    passing it a name bound inside the region (`with autocast(...): loss = ...` then
    `step(model, optimizer, loss)`, G35-1); None otherwise."""
    m = facts.m
    loop = next((a for a in _ancestors_within(m, region.body, scope) if isinstance(a, (cst.For, cst.While))), None)
    if loop is None and isinstance(scope, cst.FunctionDef):
        loop = scope  # `def train_one_epoch(...)`: one step per call
    if loop is None:
        return None
    trained = facts.trained_backwards()
    for call in m.calls:
        f = call.func
        if not isinstance(f, cst.Name) or not facts.contains(loop, call) or not facts.may_follow(region.body, call):
            continue
        if facts.contains(region.body, call):
            continue
        defs = m.functions.get(f.value, [])
        if len(defs) != 1 or m.class_of(defs[0]) is not None:
            continue
        fn = defs[0]
        if not any(m.scope_of(b.call) is fn for b in trained):
            continue
        for arg in call.args:
            v = arg.value
            if isinstance(v, cst.Name) and any(facts.contains(region.body, b.node) for b in m.bindings_of(v)):
                return loop
    return None


def _in_module_class(facts: AmpFacts, node) -> bool:
    cls = facts.m.class_of(node)
    return cls is not None and facts.m.class_is(cls.name.value, _module_bases())


def _module_bases():
    from gpulint.model import MODULE_BASES

    return MODULE_BASES


def _no_grad_items(facts: AmpFacts, region: AutocastRegion) -> bool:
    from gpulint.analysis.amp import NO_GRAD_QUALNAMES

    body = region.body
    if isinstance(body, cst.With):
        for item in body.items:
            it = item.item
            if isinstance(it, cst.Call) and facts.m.qualname(it.func) in NO_GRAD_QUALNAMES:
                return True
    return False


def _conditions(facts: AmpFacts, region: AutocastRegion, it):
    """Source texts of the conditions under which the region runs with AMP on (False: one that
    cannot be used for the scaler)."""
    out = []
    enabled = region.enabled
    if enabled is not None and not (isinstance(enabled, cst.Name) and enabled.value == "True"):
        out.append(_cond_text(facts, enabled, True, it))
    if region.condition is not None:
        out.append(_cond_text(facts, region.condition, True, it))
    branches = facts.conditions_between(region.body, it)
    if branches is None:
        return [False]
    for if_node, in_body in branches:
        out.append(_cond_text(facts, if_node.test, in_body, it))
    if len(out) > 1:
        return [False]
    return out


def _cond_text(facts: AmpFacts, expr, positive: bool, it):
    outer = it
    for anc in facts.m.ancestors(it):
        if anc is facts.m.scope_of(it):
            break
        if isinstance(anc, (cst.For, cst.While)):
            outer = anc
    if not facts.available_at(expr, outer):
        return False
    text = facts.text(expr.with_changes(lpar=[], rpar=[]) if getattr(expr, "lpar", None) else expr)
    if positive:
        return text
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        return facts.text(expr.expression)
    if isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
        return f"not {text}"
    return f"not ({text})"


def _ancestors_within(m, node, stop):
    for anc in m.ancestors(node):
        if anc is stop:
            return
        yield anc


def _is_device_type_text(facts: AmpFacts, expr) -> bool:
    """`device.type`, or a name bound only to strings: a valid `GradScaler(device)` argument."""
    if isinstance(expr, cst.Attribute) and expr.attr.value == "type":
        return True
    if isinstance(expr, (cst.SimpleString, cst.IfExp)):
        return isinstance(expr, cst.SimpleString) or (
            _is_device_type_text(facts, expr.body) and _is_device_type_text(facts, expr.orelse)
        )
    if isinstance(expr, cst.Name):
        bindings = facts.m.bindings_of(expr)
        return bool(bindings) and all(
            b.how == "assign" and b.value is not None and _is_device_type_text(facts, b.value) for b in bindings
        )
    return False


def _disabled_scalers(ctx: Context, facts: AmpFacts) -> list[cst.Call]:
    """The file's GradScaler constructors when every one is built with a literal `enabled=False` and
    every scaler the file uses is bound to one of them (oumi-ai/oumi#342: `self.scaler =
    torch.amp.GradScaler(device=..., enabled=False)` while `scale`/`unscale_`/`step`/`update` run
    under float16 autocast): such a scaler passes everything through, as if there were none.
    Empty otherwise (apex, a scaler from a parameter or another module, an enabled one)."""
    m = ctx.model
    ctors = list(facts.scaler_constructors)
    if not ctors or m.uses_module("apex"):
        return []
    for c in ctors:
        kw = next((a for a in c.args if a.keyword is not None and a.keyword.value == "enabled"), None)
        if kw is None or not (isinstance(kw.value, cst.Name) and kw.value.value == "False"):
            return []
    receivers = [s.call.func.value for s in facts.scaler_calls if isinstance(s.call.func, cst.Attribute)]
    for b in facts.backwards:
        if b.scaler is not None and isinstance(b.call.func, cst.Attribute) and isinstance(b.call.func.value, cst.Call) \
                and isinstance(b.call.func.value.func, cst.Attribute):
            receivers.append(b.call.func.value.func.value)
    if not receivers:
        return []
    for recv in receivers:
        if not isinstance(recv, (cst.Name, cst.Attribute)):
            return []
        bindings = m.bindings_of(recv)
        if not bindings or any(not any(b.value is c for c in ctors) for b in bindings):
            return []
    return ctors


def _delegated_loss_scaling(m) -> bool:
    """`loss_scaler(loss, optimizer, ...)`: a scaler object made in another module of the project
    (timm's NativeScaler convention: ConvNeXt, DeiT, BEiT, MAE engines) that scales the loss, runs
    backward and steps. Its GradScaler is not in this file, so AmpFacts cannot see it."""
    for call in m.calls:
        f = call.func
        name = f.attr.value if isinstance(f, cst.Attribute) else f.value if isinstance(f, cst.Name) else None
        if name is None or "scaler" not in name or name != name.lower():
            continue  # an instance (`loss_scaler`, `self.amp_scaler`), not a class such as GradScaler
        if isinstance(f, cst.Name) and name in m.functions:
            continue  # a function of this file: its body is visible to the analysis
        if any(a.keyword is None and not a.star for a in call.args):
            return True
    return _delegated_backward(m)


def _delegated_backward(m) -> bool:
    """`optimizer.backward(loss)`: the backward pass is run by an object given the loss, not by the
    loss itself (fairseq's task `train_step`, as Graphormer's graph_prediction.py:
    `with torch.cuda.amp.autocast(enabled=isinstance(optimizer, AMPOptimizer)): loss = ...`, then
    `optimizer.backward(loss)`, where fairseq's `AMPOptimizer.backward` runs
    `self._grad_scaler.scale(loss).backward()`; apex's `FP16_Optimizer.backward(loss)` and
    DeepSpeed's `engine.backward(loss)` scale the loss the same way). The object comes from another
    module, so its GradScaler is out of sight. Not `loss.backward(gradient)` (a tensor's own
    backward), nor `torch.autograd.backward(loss)`, nor a function or class of this file."""
    for call, recv, _ in m.method_calls("backward"):
        if not any(a.keyword is None and not a.star for a in call.args):
            continue
        if (m.qualname(recv) or "").startswith("torch"):
            continue
        v = m.value_of(recv)
        if m.kind_of(recv).value == "tensor" or v.kind in ("tensor", "module"):
            continue
        if getattr(v, "cls", None) is not None and v.cls in m.classes:
            continue  # an instance of a class of this file: its `backward` is in sight
        if isinstance(recv, cst.Name) and (recv.value in m.functions or recv.value in m.classes):
            continue
        return True
    return False
