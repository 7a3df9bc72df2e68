"""GL105 factory-without-device-in-forward."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.devices import runs_on_cpu_only
from gpulint.analysis.mismatch import (
    construction_state,
    inner_factory,
    moved_after_factory,
    joined_forward_factories,
    legacy_host_constructor,
    random_factory,
    forward_tensor_parameter,
    returned_from_forward,
    reachable_from_forward,
    accelerator_named_cpu,
    ctc_host_argument,
    device_edit,
    factory_device_fix,
    factory_takes_device,
    representative,
)
from gpulint.analysis.modules import ModuleFacts
from gpulint.analysis.paths import is_test_path
from gpulint.flow import _LIGHTNING_BASES
from gpulint.model import MODULE_BASES
from gpulint.rule import Context, Rule


class FactoryWithoutDeviceInForward(Rule):
    code = "GL105"
    name = "factory-without-device-in-forward"
    summary = "A tensor created in `forward` without `device=` lands on the CPU and meets inputs on the GPU."
    message = "`{name}(...)` creates its tensor on the CPU, and it meets tensors on the model's device; pass `device={x}.device`"
    #: when no tensor name can be shown: never a made-up `x.device` (detrex#295's Stage1Assigner
    #: indexes the arange with `matched_labels == 1`, and its forward has no `x`)
    message_unnamed = ("`{name}(...)` creates its tensor on the CPU, and it meets {what} on the model's device; "
                       "pass `device=` the device of the tensor it meets")
    #: the factory's result is cast to a host tensor type before it meets the device
    #: (graph_transformer_networks' `H * ((torch.eye(n) == 0).type(torch.FloatTensor))`): `device=`
    #: on the factory alone would leave the mismatch, so no fix is offered
    pinned_note = "; no automatic fix: `{cast}` puts the result back on the CPU: cast it with `.float()` there as well"
    fix_safety = "mixed"  # safe or unsafe per fix (see the explanation)
    fix_partial = True
    default = True
    kind = "crash"
    # (a LightningModule's steps run on the module's device too, with or without a `forward`)
    prefilter = r"def (?:forward|training_step|validation_step|test_step|predict_step)\b"
    ast_prefilter = (r"^base (?:Module|Sequential|ModuleList|ModuleDict|LightningModule)$",
                     r"^def (?:forward|training_step|validation_step|test_step|predict_step)$")
    explanation = '''
Inside an `nn.Module`'s `forward` (and the methods it calls), `torch.zeros(...)`, `torch.arange(...)`,
`torch.ones(...)`, `torch.tensor([...])`, `torch.randn(...)`, `torch.FloatTensor(...)`... without
`device=` create their tensor on the CPU, whatever device the model and its inputs are on. It works
on a CPU-only machine, and on a GPU the first operation that mixes it with the input or a parameter
fails: `RuntimeError: Expected all tensors to be on the same device, but found at least two devices,
cuda:0 and cpu!`.

The rule fires only when the new tensor meets a forward input, a parameter or a buffer (arithmetic,
a comparison, `torch.cat`, a call of a submodule that has weights, ...), and not when it is used for
a shape, a Python number, as an index (also when it is handed to a submodule of the file whose
`forward` only indexes a tensor with it: a CUDA tensor takes a CPU index tensor), or is moved with
`.to(x.device)` / `.type_as(x)`. Code that
picks the placement with `torch.cuda.is_available()` is followed: a factory in the branch that runs
without an accelerator (`else:` of `if torch.cuda.is_available():`) meets host tensors only, and
`t = torch.ones(n)` followed by `if torch.cuda.is_available(): t = t.cuda()` is moved. `*_like`
factories and `x.new_zeros(...)` follow their argument's device and are never flagged. It is silent
in a script that never asks for an accelerator (no `.cuda()`, no move to a device, no device string,
no availability check): there the module only ever runs on the CPU. Library files (no `__main__`
guard, no top-level training) are still checked: their modules are moved by the scripts that use them.
It is also silent in test files (`test_*.py`, `*_test.py`, files under `tests/`/`testing/`): a test
suite's modules run where its tests put them, and a mismatch fails the test that runs it.

The fix passes `device=x.device`, `x` being the first tensor parameter of `forward` (of the helper
method, for a factory in a helper called from forward); legacy constructors such as
`torch.FloatTensor(...)` take no `device=` and get `.to(x.device)`. It is safe for deterministic
factories; for random ones (`rand`, `randn`, `randint`) it is unsafe, because drawing on the GPU
changes the random stream. No fix is offered when the factory's value is cast to a host tensor
type in the same expression before it meets the device (`(torch.eye(n) == 0).type(torch.FloatTensor)`,
`.cpu()`): `device=` on the factory would not change where that result lives.

Bad:

```python
class Tagger(nn.Module):
    def forward(self, tokens):
        positions = torch.arange(tokens.size(1))
        return self.tok(tokens) + self.pos(positions)
```

Good:

```python
class Tagger(nn.Module):
    def forward(self, tokens):
        positions = torch.arange(tokens.size(1), device=tokens.device)
        return self.tok(tokens) + self.pos(positions)
```
'''

    def check(self, ctx: Context):
        facts: ModuleFacts = ctx.model.facts(ModuleFacts)
        if facts.default_device_set:
            return
        if is_test_path(ctx.path):
            return  # a test suite's modules run where its tests put them: a mismatch fails that test itself
        if runs_on_cpu_only(ctx.model, ctx.source, ctx.path):
            # a script or notebook that runs on the CPU only (pytorch/examples
            # time_sequence_prediction, d2l notebooks): nothing meets
            return
        seen = set()
        for cls in facts.classes:
            for call, site in cls.flow.factories.items():
                if not site.met or call in seen:
                    continue
                seen.add(call)
                if _index_only_in_submodule(ctx.model, call):
                    continue  # an index tensor for a submodule's forward (P51-5)
                x = site.fix_param
                spelled = ctx.code(call.func)
                if x:
                    msg = self.message.format(name=spelled, x=x)
                else:
                    msg = self.message_unnamed.format(name=spelled, what="tensors")
                if site.legacy:
                    # a legacy constructor takes no device=: it is copied over with `.to(...)`
                    where = f"`.to({x}.device)`" if x else "`.to(...)` to the device of the tensor it meets"
                    msg = (
                        f"`{spelled}(...)` creates its tensor on the CPU, and it meets tensors on the "
                        f"model's device; move it with {where}"
                    )
                fix = None
                pin = _host_cast_after(ctx.model, call)
                if pin is not None:
                    msg += self.pinned_note.format(cast=ctx.code(pin))
                elif x is not None:
                    if site.legacy:
                        end = ctx.span(call)[1]
                        edit = ctx.insert_text(end, f".to({x}.device)")
                        fix = ctx.fix(edit, safe=True, message=f"Append `.to({x}.device)`")
                    else:
                        edit = self._add_device(ctx, call, f"device={x}.device")
                        fix = ctx.fix(edit, safe=not site.random, message=f"Pass `device={x}.device`")
                yield ctx.finding(call, msg, fix)
        yield from self._engine(ctx, seen)

    def _returned_finding(self, ctx: Context, call: cst.Call, fwd: cst.FunctionDef):
        """The report at a factory of `forward` whose host tensor forward returned, fixed with
        forward's tensor input."""
        m = ctx.model
        x = forward_tensor_parameter(m, fwd)
        fix = None
        if x is not None and call.args and not any(a.star for a in call.args) and not any(
                a.keyword is not None and a.keyword.value == "device" for a in call.args):
            random = random_factory(m, call)
            fix = ctx.fix(self._add_device(ctx, call, f"device={x}.device"), safe=not random,
                          message=f"Pass `device={x}.device`")
        msg = (self.message.format(name=ctx.code(call.func), x=x) if x is not None else
               self.message_unnamed.format(name=ctx.code(call.func), what="tensors"))
        pin = _host_cast_after(m, call)
        if pin is not None:
            fix, msg = None, msg + self.pinned_note.format(cast=ctx.code(pin))
        return ctx.finding(call, msg, fix)

    def _engine(self, ctx: Context, seen: set):
        """The flow engine's mismatches whose CPU operand a `torch.*` factory of a module's method
        made: shapes the forward-input analysis does not follow (helpers called from `forward`
        through values, index operations, values kept on `self`)."""
        m = ctx.model
        for mm in _each_host([*m.mismatches(), *m.site_alternatives()]):
            if accelerator_named_cpu(m, mm):
                continue  # `device = "cpu"`: both operands are on the host
            if mm.op == "module-host":
                continue
            call = mm.host_value.origin
            if moved_after_factory(m, mm, call) is not None:
                continue  # `torch.arange(n).to(self.device)`: the move decides where it is (GL116, G63-1)
            joined = joined_forward_factories(m, mm, call) if not ctc_host_argument(m, mm.node, mm.host) else []
            if joined:
                # `return torch.cat([past_error, forecast])` of forward's device-less factories: each one
                for f in joined:
                    if f not in seen:
                        seen.add(f)
                        yield self._returned_finding(ctx, f, returned_from_forward(m, mm, f))
                continue
            if (isinstance(call, cst.Call) and not factory_takes_device(m.qualname(call.func))
                    and not legacy_host_constructor(m.qualname(call.func))
                    and (m.qualname(call.func) or "").startswith("torch.")):
                call = inner_factory(m, call)  # `torch.triu(torch.full((n, n), -inf), 1)`: the factory inside
            if isinstance(call, cst.BinaryOperation):
                # `torch.LongTensor(range(n)) * k`: the factory inside the arithmetic
                nodes = (call, *m.walk(call))
                inner = [n for n in nodes if isinstance(n, cst.Call) and (
                    factory_takes_device(m.qualname(n.func)) or legacy_host_constructor(m.qualname(n.func)))]
                placed = any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
                             and n.func.attr.value in ("cpu", "to", "numpy", "tolist") for n in nodes)
                # `grid.cpu() * torch.tensor([1, m, m])`: an operand put on the host on purpose
                call = inner[0] if len(inner) == 1 and not placed else None
            if not isinstance(call, cst.Call) or call in seen:
                continue
            if not (factory_takes_device(m.qualname(call.func)) or legacy_host_constructor(m.qualname(call.func))):
                continue
            if ctc_host_argument(m, mm.node, mm.host):
                continue  # CTC targets and lengths: the loss copies them where it needs them
            if _index_only_in_submodule(m, call):
                continue  # an index tensor for a submodule's forward (P51-5)
            cls = m.class_of(call)
            fwd = returned_from_forward(m, mm, call)
            if fwd is not None:
                # forward returns the host tensor it made, and its caller meets it (seq2seq decoders'
                # `outputs = torch.zeros(...)`): reported at the factory, fixed with forward's input
                seen.add(call)
                yield self._returned_finding(ctx, call, fwd)
                continue
            if cls is None or m.class_of(mm.node) is not cls:
                continue
            made_in = m.enclosing(call, cst.FunctionDef)
            if made_in is not None and made_in.name.value == "__init__":
                continue  # construction state (a list of tensors kept on `self`): not forward's factory
            if not reachable_from_forward(m, made_in):
                continue  # an epoch-end hook's accumulator (code2seq#52): GL116's shape
            name = cls.name.value
            if not (m.class_is(name, MODULE_BASES) or m.flow._unresolved_bases(name)
                    or m.flow._class_kind(name) in ("module", "metric")):
                continue
            top = call  # up a method chain: `self.fb = torch.tensor(fb).unsqueeze(0)`
            while True:
                up = m.parents.get(top)
                if isinstance(up, cst.Attribute) and up.value is top:
                    top = up
                elif isinstance(up, cst.Call) and up.func is top:
                    top = up
                else:
                    break
            parent = m.parents.get(top)
            if isinstance(parent, cst.Assign) and any(
                isinstance(t.target, cst.Attribute) and isinstance(t.target.value, cst.Name)
                and t.target.value.value == "self" for t in parent.targets
            ) and construction_state(m, cls, parent):
                continue  # a plain tensor attribute set while the module is built: GL106
            seen.add(call)
            param = _witness(m, call, made_in)
            acc = param or representative(m, mm.acc)
            if m.value_of(acc).kind not in (None, "tensor"):
                # `self.lstm(x, (h0, c0))`: a module has no `.device` to name; nor has a list of
                # tensors (`torch.stack(parts)` of a display holding the factory, G62-1)
                acc = mm.node
            if (param is None and m.class_is(name, _LIGHTNING_BASES) and not (
                    isinstance(acc, cst.Name) and m.enclosing(acc, cst.FunctionDef) is made_in)):
                # a LightningModule step whose factory meets the device in a helper method (the
                # GAN template's `self.adversarial_loss(y_hat, valid)`): the module's own device
                edit = self._add_device(ctx, call, "device=self.device")
                fix = ctx.fix(edit, safe=not random_factory(m, call), message="Pass `device=self.device`")
                yield ctx.finding(call, self.message.format(name=ctx.code(call.func), x="self"), fix)
                continue
            if param is not None:
                # bound when the function starts: the fix holds wherever the factory meets the device
                made = device_edit(ctx, call, param.value)
            else:
                made = factory_device_fix(ctx, mm, call, acc, allow_random=True)
            fix = None
            if made is not None:
                fix = ctx.fix(made[0], safe=not made[1], message=f"Pass `device={acc.value}.device`")
            if isinstance(acc, (cst.Name, cst.Attribute)) and legacy_host_constructor(m.qualname(call.func)):
                msg = (f"`{ctx.code(call.func)}(...)` creates its tensor on the CPU, and it meets tensors on the "
                       f"model's device; move it with `.to({ctx.code(acc)}.device)`")
            elif isinstance(acc, (cst.Name, cst.Attribute)):
                msg = self.message.format(name=ctx.code(call.func), x=ctx.code(acc))
            else:
                code = ctx.code(mm.acc)
                what = f"`{code}`" if len(code) <= 40 and "\n" not in code else "tensors"
                msg = self.message_unnamed.format(name=ctx.code(call.func), what=what)
                if legacy_host_constructor(m.qualname(call.func)):
                    msg = (f"`{ctx.code(call.func)}(...)` creates its tensor on the CPU, and it meets {what} on the "
                           f"model's device; move it there with `.to(...)` (a legacy constructor takes no `device=`)")
            pin = _host_cast_after(m, call)
            if pin is not None:
                fix, msg = None, msg + self.pinned_note.format(cast=ctx.code(pin))
            yield ctx.finding(call, msg, fix)

    @staticmethod
    def _add_device(ctx: Context, call, text: str):
        if call.args:
            value = call.args[-1].value
            # a node's span leaves its own parentheses out: `torch.zeros((3, 4))`
            end = ctx.span(value.rpar[-1])[1] if getattr(value, "rpar", None) else ctx.span(value)[1]
            return ctx.insert_text(end, f", {text}")
        end = ctx.span(call)[1]
        return ctx.insert_text(end - 1, text)


def _witness(m, call: cst.Call, fn) -> cst.Name | None:
    """The tensor whose device the factory should take: the first parameter of the function that
    makes it which the flow engine finds on the accelerator wherever the function reads it, and
    that the function never rebinds (forward's `x`). Bound before any statement of the function,
    so a `device=x.device` fix can always be written; the operand that met the factory is often
    bound only after it (`scores = ... + torch.arange(n)`)."""
    if not isinstance(fn, cst.FunctionDef):
        return None
    loop = m.enclosing(call, cst.For, cst.While)
    for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params):
        name = p.name.value
        if name in ("self", "cls"):
            continue
        uses = [n for n in m.walk(fn.body) if isinstance(n, cst.Name) and n.value == name
                and m.scope_of(n) is fn]
        if not uses:
            continue
        others = [b for b in m.bindings_of(uses[0]) if b.how != "param"]
        if others:
            # rebound later (`inputs = self.norm(inputs)`): the parameter itself, read before that
            first = min((b.node for b in others), key=lambda n: m.order[n])
            if not m.precedes(call, first) or (loop is not None and m.contains(loop, first)):
                continue
            uses = [u for u in uses if m.precedes(u, first)]
            if not uses:
                continue
        values = [m.value_of(u) for u in uses]
        if any(v.kind != "tensor" for v in values):  # not a dict of tensors (`outputs["anchors"]`)
            continue
        devices = [m.device_of(u) for u in uses]
        if not all(d is not None and d.is_acc for d in devices):
            continue
        return uses[0]
    return None


_HOST_TYPES = frozenset(
    f"torch.{n}Tensor" for n in ("Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Char", "Byte", "Bool")
)
_CLIMB = (cst.Comparison, cst.ComparisonTarget, cst.BinaryOperation, cst.UnaryOperation)


def _host_cast_after(m, call: cst.Call) -> cst.Call | None:
    """The `.type(torch.FloatTensor)` (a host tensor type, by name or as a string) or `.cpu()` that the
    factory's value goes through in the same expression before anything else uses it:
    `(torch.eye(n) == 0).type(torch.FloatTensor)` (seongjunyun/Graph_Transformer_Networks
    prev_GTN/model.py, `GTN.norm`). Passing `device=` to the factory would not change the device of
    that result, which is what meets the device tensor."""
    node = call
    while True:
        up = m.parents.get(node)
        if isinstance(up, _CLIMB):
            node = up
            continue
        if isinstance(up, cst.Attribute) and up.value is node:
            grand = m.parents.get(up)
            if not (isinstance(grand, cst.Call) and grand.func is up):
                return None
            attr = up.attr.value
            if attr == "cpu" and not grand.args:
                return grand
            if attr == "type" and len(grand.args) == 1 and grand.args[0].keyword is None:
                arg = grand.args[0].value
                q = m.qualname(arg) or ""
                text = arg.evaluated_value if isinstance(arg, cst.SimpleString) else None
                if q in _HOST_TYPES or text in _HOST_TYPES:
                    return grand
                return None
            if attr in ("to", "cuda", "type_as", "type", "new_tensor"):
                return None
            node = grand  # `.unsqueeze(0)`, `.float()`, `.sum()`: the same value, reshaped or cast
            continue
        return None


def _each_host(mismatches):
    """Each mismatch once per host operand (`self.lstm(x, (h0, c0))`: both states' factories)."""
    import dataclasses

    for mm in mismatches:
        yield mm
        for x, v in mm.more_hosts:
            yield dataclasses.replace(mm, host=x, host_value=v, more_hosts=())


def _submodule_class(m, func: cst.BaseExpression) -> str | None:
    """The module class of the file that `self.<attr>(...)` runs: `self.head = NodeHead(dim)`
    bound in the calling class."""
    if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"):
        return None
    cls = m.value_of(func).cls
    if cls is None:
        ctor = m.constructor_of(func)
        if ctor is not None and isinstance(ctor.func, cst.Name):
            cls = ctor.func.value
    if cls not in m.classes or not m.class_is(cls, MODULE_BASES):
        return None
    return cls


def _none_test(m, name: cst.Name) -> bool:
    """`name is None` / `name is not None`."""
    up = m.parents.get(name)
    if not isinstance(up, cst.Comparison) or len(up.comparisons) != 1:
        return False
    other = up.comparisons[0].comparator if up.left is name else up.left
    return (isinstance(up.comparisons[0].operator, (cst.Is, cst.IsNot))
            and isinstance(other, cst.Name) and other.value == "None")


def _index_element(m, name: cst.Name) -> bool:
    """`name` is an index element of a subscript of another value: `x[:, name, :]`, `x[name]`."""
    up = m.parents.get(name)
    if not isinstance(up, cst.Index):
        return False
    el = m.parents.get(up)
    sub = m.parents.get(el)
    return isinstance(el, cst.SubscriptElement) and isinstance(sub, cst.Subscript) and sub.value is not name


def _not_a_read(up, n: cst.Name) -> bool:
    """`n` under `up` names no value: an attribute's name (`self.idx`), a keyword (`idx=`)."""
    return (isinstance(up, cst.Attribute) and up.attr is n) or (isinstance(up, cst.Arg) and up.keyword is n)


def _uses(m, fn: cst.FunctionDef, name: str) -> list[cst.Name] | None:
    """The reads of `name` in `fn`'s body (nested functions and classes left out); None when the
    body binds it again (an assignment, a loop target, an unpacking, `del`...)."""
    reads = []
    for n in m.walk(fn.body, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if not (isinstance(n, cst.Name) and n.value == name):
            continue
        up = m.parents.get(n)
        if _not_a_read(up, n):
            continue
        if isinstance(up, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For, cst.Del, cst.AsName,
                           cst.CompFor, cst.NamedExpr, cst.Element, cst.StarredElement)):
            return None  # bound again, or an item of a display: followed no further
        reads.append(n)
    return reads


def _param_of(fn: cst.FunctionDef, call: cst.Call, arg: cst.Arg) -> str | None:
    """The parameter of method `fn` (`self` first) that `arg` of `call` binds."""
    if arg.star:
        return None
    names = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)][1:]
    kw = {p.name.value for p in fn.params.kwonly_params}
    if arg.keyword is not None:
        k = arg.keyword.value
        return k if k in names or k in kw else None
    pos = [a for a in call.args if a.keyword is None]
    if any(a.star for a in pos[:pos.index(arg) + 1]):
        return None
    i = pos.index(arg)
    return names[i] if i < len(names) else None


def _index_only_in_submodule(m, call: cst.Call) -> bool:
    """The factory's tensor, bound to a local, is only handed to a submodule of a module class of
    the file (`self.head(feats, output_nodes=idx)`), whose forward only indexes a tensor with it
    (`x = x[:, output_nodes, :]`) or tests it against None: a CUDA tensor takes a CPU index tensor,
    so the tensor never meets the device as an operand (mmf's krisp GraphNetworkModule, P51-5)."""
    parent = m.parents.get(call)
    if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1
            and isinstance(parent.targets[0].target, cst.Name) and parent.value is call):
        return False
    name = parent.targets[0].target.value
    fn = m.enclosing(call, cst.FunctionDef)
    if fn is None:
        return False
    reads = []
    for n in m.walk(fn.body, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if isinstance(n, cst.Name) and n.value == name:
            up = m.parents.get(n)
            if _not_a_read(up, n):
                continue
            if isinstance(up, cst.AssignTarget):
                continue  # another binding of the local (None, an attribute): not this tensor
            if isinstance(up, (cst.AnnAssign, cst.AugAssign, cst.For, cst.Del, cst.AsName, cst.CompFor,
                               cst.NamedExpr, cst.Element, cst.StarredElement)):
                return False
            reads.append(n)
    handed = 0
    for n in reads:
        if _none_test(m, n):
            continue
        arg = m.parents.get(n)
        site = m.parents.get(arg)
        if not (isinstance(arg, cst.Arg) and arg.value is n and isinstance(site, cst.Call)):
            return False
        cls = _submodule_class(m, site.func)
        fwd = m.classes[cls].methods.get("forward") if cls is not None else None
        if fwd is None:
            return False
        param = _param_of(fwd, site, arg)
        if param is None:
            return False
        uses = _uses(m, fwd, param)
        if not uses or not all(_index_element(m, u) or _none_test(m, u) for u in uses):
            return False
        handed += 1
    return handed > 0
