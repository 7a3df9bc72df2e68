"""Helpers for rules that report the flow engine's device mismatches (GL101, GL105, GL116)."""

from __future__ import annotations

import libcst as cst

RANDOM_FACTORIES = frozenset(
    "rand randn randint randperm normal bernoulli multinomial rand_like randn_like randint_like".split()
)


NO_DEVICE_ARG = frozenset({"from_numpy", "from_dlpack", "frombuffer", "from_file", "as_strided"})


def factory_takes_device(q: str | None, like: bool = False) -> bool:
    """`q` (a qualified name) is a `torch.*` factory that takes `device=`: what the knowledge base
    says creates a tensor, or `torch.tensor`/`torch.as_tensor`; with `like`, also the `*_like`
    factories (their device defaults to their input's). Not `torch.meshgrid`, `torch.stack`,
    `torch.from_numpy` (no `device=` to give)."""
    if not q or not q.startswith("torch."):
        return False
    from gpulint import flowkb

    info = flowkb.function(q)
    short = q.rsplit(".", 1)[-1]
    return info is not None and (info.creates or short in ("tensor", "as_tensor") or (like and short.endswith("_like")))


def legacy_host_constructor(q: str | None) -> bool:
    """`torch.Tensor(...)`, `torch.LongTensor(...)`: a legacy constructor that makes a host tensor
    and takes no `device=` (the `torch.cuda.*` ones make device tensors)."""
    from gpulint.flowkb import LEGACY_TENSOR_TYPES

    return q == "torch.Tensor" or (q in LEGACY_TENSOR_TYPES and not q.startswith("torch.cuda."))


def construction_state(m, cls, assign) -> bool:
    """The `self.<attr> = ...` assignment `assign` is made while the module class `cls` is built
    (`__init__` or a helper it calls): GL106's shape, not forward's factory."""
    from gpulint.analysis.modules import ModuleFacts

    facts = m.facts(ModuleFacts).by_name.get(cls.name.value)
    return facts is not None and any(a.node is assign for assigns in facts.init_assigns.values() for a in assigns)


_CTC_FUNCTIONS = frozenset({"torch.nn.functional.ctc_loss", "torch.ctc_loss"})
_CTC_CLASSES = frozenset({"torch.nn.CTCLoss", "torch.nn.modules.loss.CTCLoss"})
#: CTC loss arguments ATen puts where it needs them itself: positions (after log_probs) and keywords
_CTC_HOST_POSITIONS = (1, 2, 3)
_CTC_HOST_KEYWORDS = ("targets", "input_lengths", "target_lengths")


def ctc_host_argument(m, node, host) -> bool:
    """`host` is the `targets`, `input_lengths` or `target_lengths` argument of a CTC loss call
    (`F.ctc_loss`, or a `nn.CTCLoss()` instance bound to a name or a `self.` attribute). ATen
    copies the lengths to the CPU itself (LossCTC.cpp: `input_lengths.to(Device(at::kCPU),
    at::kLong)`) and, off the cuDNN path, the targets to the device of the log-probabilities
    (`targets.to(log_probs.device(), kLong)`: cuDNN even wants them on the CPU). So CPU targets and
    lengths with CUDA log-probs are right: kospeech's tests (PRECISION7.md), flowtron's
    `AttentionCTCLoss` with `torch.arange(...)` targets (PRECISION8.md)."""
    if not isinstance(node, cst.Call):
        return False
    ctc = (m.qualname(node.func) or "") in _CTC_FUNCTIONS
    if not ctc and isinstance(node.func, (cst.Name, cst.Attribute)):
        bound = m.bindings_of(node.func)
        ctc = bool(bound) and all(
            b.how == "assign" and isinstance(b.value, cst.Call) and (m.qualname(b.value.func) or "") in _CTC_CLASSES
            for b in bound
        )
    if not ctc:
        # a loss handed on as a parameter (`def finetune(model, criterion, ...)`): what the flow
        # engine says it was made by (deepspeech.pytorch's loop as a helper, fixtures11b)
        origin = m.value_of(node.func).origin
        ctc = isinstance(origin, cst.Call) and (m.qualname(origin.func) or "") in _CTC_CLASSES
    if not ctc:
        return False
    for i, a in enumerate(node.args):
        if a.star:
            return False
        if not (a.value is host or m.contains(a.value, host)):
            continue
        if a.keyword is None:
            return i in _CTC_HOST_POSITIONS
        return a.keyword.value in _CTC_HOST_KEYWORDS
    return False


def accelerator_named_cpu(m, mm) -> bool:
    """The engine's accelerator operand of `mm` was placed with a device expression that the file
    binds only to the CPU: `device = 'cpu'  # 'cuda' if torch.cuda.is_available() else 'cpu'`, then
    `encoder.to(device)` (sthalles/PyTorch-BYOL `eval/linear_feature_eval.ipynb`). The engine takes a
    name bound to a device *string* for an accelerator by its name alone (ENGINE_FP.md, eighth pass
    #3); `DeviceFacts.device_is_cpu` follows the bindings: every one of them must name the CPU."""
    d = getattr(mm.acc_value, "dev", None)
    expr = getattr(d, "expr", None) if d is not None else None
    if not isinstance(expr, (cst.Name, cst.Attribute)):
        return False
    from gpulint.analysis.devices import DeviceFacts

    return m.facts(DeviceFacts).device_is_cpu(expr)


def representative(m, acc):
    """A name for the accelerator operand: itself when it is a name, else the first tensor name
    on the accelerator inside it (`pred` in `(pred - target) ** 2`)."""
    if isinstance(acc, (cst.Name, cst.Attribute)):
        return acc
    for n in m.walk(acc):
        if isinstance(n, (cst.Name, cst.Attribute)):
            d = m.device_of(n)
            if d is not None and d.is_acc and m.value_of(n).kind in ("tensor", None):
                return n
    return acc


def factory_device_fix(ctx, mm, origin, acc, allow_random: bool = False):
    """`device=<acc>.device` added to the CPU operand's `torch.*` factory, when the factory is in
    the same function, before the operation, and `acc` is a name bound before the factory runs.
    Returns (edit, random) or None."""
    m = ctx.model
    if not isinstance(origin, cst.Call):
        return None
    if m.scope_of(origin) is not m.scope_of(mm.node) or not (
        m.precedes(origin, mm.node) or m.contains(mm.node, origin)
    ):
        return None
    if not isinstance(acc, cst.Name):
        return None
    if m.value_of(acc).kind not in (None, "tensor"):
        return None  # a list or dict of tensors (`torch.stack(parts)`), a module: no `.device` to name
    # the device operand must be bound before the factory runs: not by the statement that runs it
    # (`parts = [pred.mean(), torch.tensor(0.0)]`: `parts` is bound after its value is made, G62-1)
    bound = [b for b in m.bindings_of(acc) if b.how in ("assign", "param", "unpack", "for")]
    if not bound or any(not m.precedes(b.node, origin) for b in bound):
        return None
    for b in bound:
        if b.how in ("assign", "unpack"):
            stmt = m.enclosing(b.node, cst.Assign, cst.AnnAssign, cst.AugAssign, cst.NamedExpr)
            if stmt is not None and m.contains(stmt, origin):
                return None
    if m.enclosing(origin, cst.For, cst.While) is not m.enclosing(acc, cst.For, cst.While):
        return None
    made = device_edit(ctx, origin, acc.value)
    if made is None or (made[1] and not allow_random):
        return None
    return made


def random_factory(model, call: cst.Call) -> bool:
    """`torch.randn(...)` and the other random factories: with `device=` they draw other numbers
    than the CPU generator did, so a fix that adds one is not safe."""
    return (model.qualname(call.func) or "").rsplit(".", 1)[-1] in RANDOM_FACTORIES


def device_edit(ctx, call: cst.Call, name: str):
    """`device=<name>.device` written into a `torch.*` factory call (`.to(<name>.device)` after a
    legacy constructor, which takes no device=), `name` bound where the factory runs. Returns
    (edit, random) or None when the call takes no device that way."""
    q = ctx.model.qualname(call.func)
    if not q or not q.startswith("torch."):
        return None
    if q.rsplit(".", 1)[-1] in NO_DEVICE_ARG:
        return None  # `torch.from_numpy(a)` takes no device=: the copy has to be made with .to()
    random = random_factory(ctx.model, call)
    if any(a.keyword is not None and a.keyword.value == "device" for a in call.args):
        return None
    if any(a.star for a in call.args) or not call.args:
        return None
    from gpulint import flowkb

    if q in flowkb.LEGACY_TENSOR_TYPES:
        # `torch.FloatTensor(...)` takes no device= (a CUDA device is refused): copy it over
        return ctx.insert_text(ctx.span(call)[1], f".to({name}.device)"), random
    if not factory_takes_device(q, like=True):
        return None  # `torch.meshgrid(...)`, `torch.stack(...)`: no device= to give
    return ctx.insert_text(_after_last_argument(ctx, call), f", device={name}.device"), random


def _after_last_argument(ctx, call: cst.Call) -> int:
    """Where `, name=value` can be written into `call`'s argument list: right after its last
    argument, parentheses included (the span of a parenthesized value such as the tuple of
    `torch.ones((n, 1))` leaves them out, the argument's own span keeps them), before its trailing
    comma and any comment."""
    return ctx.span(call.args[-1])[1]


def batch_source(m, origin) -> str | None:
    """Where a host operand's batch comes from, when it is one: "the DataLoader" (a loader's
    batches, also one taken with `next(iter(loader))`) or "the tokenizer" (`return_tensors="pt"`)."""
    if not isinstance(origin, cst.Call):
        return None
    if origin in m.flow.tokenized:
        return "the tokenizer"
    from gpulint import flowkb

    if flowkb.class_kind(m.qualname(origin.func)) == "loader":
        return "the DataLoader"
    return None


def moved_back(value) -> bool:
    """A host value whose last placement is an explicit conversion of its own (`labels.to(device)
    .type_as(reals)` of host `reals`, SpatialAttentionGAN#1, E60-3): not a batch left unmoved, but
    one converted back to the host; GL116 reports it, where it was converted."""
    placed = value.placed
    return (isinstance(placed, cst.Call) and placed is not value.origin and isinstance(placed.func, cst.Attribute)
            and placed.func.attr.value in ("to", "cpu", "type", "type_as"))


# methods whose result may live elsewhere than their receiver: moving the receiver does not move it
DEVICE_CHANGING_METHODS = frozenset("to cpu cuda xpu mps type numpy tolist item pin_memory".split())


def name_under(host, subscripts: bool = True) -> cst.Name | None:
    """`target` for `target.flatten()`, `x.view(n, -1).float()` and, with `subscripts`, `y[:, 0]`:
    the name under a chain of method calls (and subscripts) that keep their receiver's device;
    None for other shapes. Without `subscripts`, `x[i]` is not taken for `x` (in a loop it is
    another element at each use)."""
    node = host
    while True:
        if isinstance(node, cst.Name):
            return node
        if subscripts and isinstance(node, cst.Subscript):
            node = node.value
        elif (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
              and node.func.attr.value not in DEVICE_CHANGING_METHODS):
            node = node.func.value
        else:
            return None


def reachable_from_forward(m, fn) -> bool:
    """`fn` is a method of a module class of the file that its `forward` reaches through
    `self.<method>(...)` calls (GL105's premise: its values meet forward's inputs), or a helper
    the flow engine runs only from forward-ish code. An epoch-end hook is not (code2seq#52)."""
    from gpulint.analysis.modules import ModuleFacts

    if fn is None:
        return False
    cls = m.class_of(fn)
    if cls is not None:
        mc = m.facts(ModuleFacts).by_name.get(cls.name.value)
        if mc is not None and fn in mc.reachable:
            return True
    return isinstance(fn, cst.FunctionDef) and m.flow._forwardish(fn)


def returned_from_forward(m, mm, origin):
    """The host operand of `mm` is a `torch.*` factory written in `forward` of a module class of
    the file, and the mismatch happens outside that class: forward returned the tensor it made on
    the host (`outputs = torch.zeros(...)` filled step by step, seq2seq decoders), and its caller
    meets it with device tensors. Returns that `forward`, or None."""
    if not isinstance(origin, cst.Call) or not factory_takes_device(m.qualname(origin.func)):
        return None
    fn = m.enclosing(origin, cst.FunctionDef)
    if fn is None or fn.name.value != "forward":
        return None
    cls = m.class_of(fn)
    if cls is None or m.contains(cls, mm.node) or m.flow._class_kind(cls.name.value) != "module":
        return None
    return fn


_SHAPE_STEPS = frozenset({"split", "chunk", "unbind", "narrow", "flatten", "reshape", "view", "squeeze", "unsqueeze",
                          "transpose", "permute", "contiguous", "select"})
_JOINS = frozenset({"torch.cat", "torch.concat", "torch.concatenate", "torch.stack", "torch.hstack", "torch.vstack"})


def joined_forward_factories(m, mm, origin) -> list:
    """The host operand of `mm` is `torch.cat`/`torch.stack` of tensors that `forward` of a
    module class made with device-less factories and filled (`past_error = torch.zeros(...)`,
    `past_error[t] = self.cell(...)`, then `return torch.cat([past_error, forecast])`), met
    outside that class: those factories, in order (each one's `returned_from_forward` holds);
    empty when any joined tensor is something else (E36-5, prosper's HCNN)."""
    for _ in range(6):  # through shape-only steps: `past_errors, forecasts = torch.split(output, n)`
        if not isinstance(origin, cst.Call):
            return []
        f = origin.func
        if isinstance(f, cst.Attribute) and f.attr.value in _SHAPE_STEPS and not m.qualname(f):
            src = f.value  # `output.view(...)`, `output.chunk(2)`
        elif (m.qualname(f) or "").startswith("torch.") and (m.qualname(f) or "")[6:] in _SHAPE_STEPS:
            first = [a for a in origin.args if a.keyword is None]
            src = first[0].value if first and not first[0].star else None
        else:
            break
        v = m.value_of(src) if src is not None else None
        if v is None or v.kind != "tensor" or v.dev is None or not v.dev.is_host or v.origin is None:
            return []
        origin = v.origin
    if not isinstance(origin, cst.Call) or (m.qualname(origin.func) or "") not in _JOINS:
        return []
    pos = [a for a in origin.args if a.keyword is None]
    if not pos or pos[0].star or not isinstance(pos[0].value, (cst.List, cst.Tuple)):
        return []
    out = []
    for el in pos[0].value.elements:
        if isinstance(el, cst.StarredElement):
            return []
        x = el.value
        f = x
        if not isinstance(x, cst.Call):
            v = m.value_of(x)
            f = v.origin if v.kind == "tensor" and v.dev is not None and v.dev.is_host else None
        if not isinstance(f, cst.Call) or returned_from_forward(m, mm, f) is None:
            return []
        if f not in out:
            out.append(f)
    return out


def forward_tensor_parameter(m, fn) -> str | None:
    """The first parameter of the module class's `forward` that every call of its instance in
    the file gives a tensor (the device source of a `device=x.device` fix), or None."""
    params = [p for p in (*fn.params.posonly_params, *fn.params.params)][1:]
    for p in params[:1]:
        site = m.flow._forward_site(fn, p.name.value)
        if site is not None and site.kind == "tensor":
            return p.name.value
    return None


def attribute_root(m, host):
    """The `self.<attr>` a CPU operand was computed from (see _root), or None."""
    r = _root(m, host, frozenset(), 0)
    return None if r is _CYCLE else r


def _root(m, host, seen: frozenset, depth: int):
    """The `self.<attr>` that the CPU operand `host` was computed from: through indexing, tensor
    methods, `torch.*` functions and arithmetic of host tensors, and local names every binding of
    which in the function is such a value (`noise = self.noise.normal_(0.0, std)`, then `noise =
    noise.clamp(...)`; `phase = self.phase_advance * rate`, then `torch.cos(phase)`). None when
    there is none, or more than one, or another host tensor takes part; _CYCLE for a name being
    resolved."""
    if depth >= 16:
        return None
    depth += 1
    if isinstance(host, cst.Attribute) and isinstance(host.value, cst.Name) and host.value.value == "self":
        return host
    if isinstance(host, cst.Subscript):
        return _root(m, host.value, seen, depth)
    if isinstance(host, cst.UnaryOperation):
        return _root(m, host.expression, seen, depth)
    if isinstance(host, (cst.BinaryOperation, cst.Comparison)):
        sides = [host.left, host.right] if isinstance(host, cst.BinaryOperation) else (
            [host.left, *(c.comparator for c in host.comparisons)])
        return _one_root(m, [x for x in sides if _host_tensor(m, x)], seen, depth)
    if isinstance(host, cst.Call):
        f = host.func
        if isinstance(f, cst.Attribute) and m.value_of(f.value).kind == "tensor":
            if f.attr.value in ("to", "cuda", "cpu", "type", "type_as", "new_tensor"):
                return None
            return _root(m, f.value, seen, depth)  # `self.freqs.view(1, -1)`
        q = m.qualname(f)
        if q and q.startswith("torch.") and not any(a.keyword is not None and a.keyword.value == "device" for a in host.args):
            return _one_root(m, [a.value for a in host.args if not a.star and _host_tensor(m, a.value)], seen, depth)
        return None
    if not isinstance(host, cst.Name):
        return None
    if host.value in seen:
        return _CYCLE
    bs = m.bindings_of(host)
    if not bs or any(b.how != "assign" or b.value is None or m.scope_of(b.node) is not m.scope_of(host) for b in bs):
        return None
    return _one_root(m, [b.value for b in bs], seen | {host.value}, depth)


def _host_tensor(m, e) -> bool:
    v = m.value_of(e)
    return v.kind == "tensor" and v.dev is not None and v.dev.is_host


def _one_root(m, parts, seen: frozenset, depth: int):
    out = None
    for x in parts:
        r = _root(m, x, seen, depth)
        if r is _CYCLE:
            continue  # `noise = noise.clamp(...)`: the same value again
        if r is None or (out is not None and r.attr.value != out.attr.value):
            return None
        out = r
    return out


_CYCLE = object()


def inner_factory(m, call: cst.Call):
    """The one `torch.*` factory inside the arguments of a `torch.*` function call (through
    nested calls), when nothing there places a value; else the call itself."""
    nodes = list(m.walk(call))
    inner = [n for n in nodes if isinstance(n, cst.Call) and n is not call and (
        factory_takes_device(m.qualname(n.func)) or legacy_host_constructor(m.qualname(n.func)))]
    placed = any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
                 and n.func.attr.value in ("cpu", "to", "cuda", "numpy", "tolist") for n in nodes)
    placed = placed or any(isinstance(n, cst.Arg) and n.keyword is not None and n.keyword.value == "device"
                           for n in nodes)
    return inner[0] if len(inner) == 1 and not placed else call


def file_function_call(m, value) -> bool:
    """`value` calls a function of this file by name (`get_2dalibi(...)`), or a method the
    enclosing class itself defines through `self` (`self.one_hot(...)` in `__init__`,
    pytorch-lightning#3674): calls whose result only the flow engine can tell (GL106, GL116)."""
    if not isinstance(value, cst.Call):
        return False
    f = value.func
    if isinstance(f, cst.Name):
        return f.value in m.functions
    if not (isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == "self"):
        return False
    cls = m.class_of(value)
    info = m.classes.get(cls.name.value) if cls is not None else None
    fn = info.methods.get(f.attr.value) if info is not None else None
    return fn is not None and m.class_of(fn) is cls  # defined by the class itself, not a base


def placed_on_host(m, callee, site=None):
    """The call that put the called module on the CPU on purpose (`.to("cpu")`, `.cpu()`), or None:
    its device inputs are the wrong ones (GL116), not the module left unmoved (GL112).

    `site`: the call of the file's module through which the mismatch was found (`net(x)` with `net`
    moved by `net.to("cpu")`, and `self.rnn(...)` failing inside its forward, E64-3): the instance
    called there counts for the layers it holds."""
    if isinstance(callee, cst.Attribute) and callee.attr.value in ("forward", "__call__"):
        callee = callee.value  # `self.forward(x)`: the module is `self`
    if not isinstance(callee, (cst.Name, cst.Attribute)):
        return None
    if isinstance(site, cst.Call) and site.func is not callee and isinstance(site.func, (cst.Name, cst.Attribute)):
        found = placed_on_host(m, site.func)
        if found is not None:
            return found
    v = m.value_of(callee)
    placed = v.placed
    if v.kind != "module" or v.dev is None or not v.dev.is_host or not isinstance(placed, cst.Call):
        return None
    f = placed.func
    if not isinstance(f, cst.Attribute) or f.attr.value not in ("to", "cpu"):
        return None
    return placed


def moved_after_factory(m, mm, origin) -> cst.Call | None:
    """The `.to(...)` / `.cuda()` / `.cpu()` that the factory's value goes through in its own
    expression before it meets the accelerator operand (`torch.arange(n).expand(b, n).to(self.device)`
    with `self.device` the constructor's `"cpu"` default, fixtures63 G63-1): that move, not the
    factory, decides where the value is, so `device=` on the factory would not change it. None when
    the host value was not placed by a move of the factory's own chain."""
    placed = mm.host_value.placed
    if not isinstance(placed, cst.Call) or not isinstance(origin, cst.Call) or placed is origin:
        return None
    f = placed.func
    if not (isinstance(f, cst.Attribute) and f.attr.value in ("to", "cuda", "cpu")):
        return None
    node = origin
    for _ in range(16):  # up the chain: `.expand(...)`, `.unsqueeze(0)`, `.long()`, then the move
        up = m.parents.get(node)
        if isinstance(up, cst.Attribute) and up.value is node:
            grand = m.parents.get(up)
            if not (isinstance(grand, cst.Call) and grand.func is up):
                return None
            if grand is placed:
                return placed
            node = grand
            continue
        return None
    return None


def device_text_at(ctx, expr, model, at) -> str | None:
    """The text of the device expression `expr` (what a module was moved with) that means the same
    thing at `at`, where `model`, a name or attribute holding that module, is used (G65-6):
    `expr` itself when its root name is bound where `at` is (or at module level); for a parameter
    of the class's `__init__` (`self.to(dev)`), the argument the construction bound to `model` in
    `at`'s scope gives it (`StaticEncoder(device)` -> `device`; `Encoder(args)` ->
    `args.cuda_device`); for `self.<attr>` read outside the class's methods, the same attribute of
    `model` (`enc.device`); None when none of these holds."""
    m = ctx.model
    root = expr
    while isinstance(root, (cst.Attribute, cst.Subscript)):
        root = root.value
    if not isinstance(root, cst.Name):
        return None
    scope = m.scope_of(at)
    home = m.scope_of(expr)
    if root.value == "self":
        cls = m.class_of(expr)
        fn = m.enclosing(at, cst.FunctionDef)
        if cls is not None and fn is not None and m.class_of(fn) is cls:
            return ctx.code(expr)  # another method of the same class: its own `self`
        if (cls is not None and isinstance(model, (cst.Name, cst.Attribute)) and expr is not root
                and m.value_of(model).cls == cls.name.value):
            return ctx.code(model) + ctx.code(expr)[len("self"):]
        return None
    if home is m.module or m.contains(home, at) or (home, root.value) not in m.bindings:
        return ctx.code(expr)  # bound at module level, in `at`'s function or one around it
    stored = _stored_in_self(m, home, root, at)
    if stored is not None:
        return stored + ctx.code(expr)[len(root.value):]  # `self.cfg = cfg` in `__init__`: `self.cfg.device`
    # a local of another function: a parameter of the `__init__` of the model's class
    if not (isinstance(home, cst.FunctionDef) and home.name.value == "__init__" and isinstance(model, cst.Name)):
        return None
    cls = m.class_of(home)
    params = [p.name.value for p in (*home.params.posonly_params, *home.params.params)][1:]
    kwonly = {p.name.value for p in home.params.kwonly_params}
    if cls is None or (root.value not in params and root.value not in kwonly):
        return None
    if any(b.how != "param" for b in m.bindings[(home, root.value)]):
        return None  # re-bound inside `__init__`: not the argument any more
    bindings = [b for b in m.bindings_of(model) if m.scope_of(b.node) is scope]
    if len(bindings) != 1 or bindings[0].how not in ("assign", "unpack") or not m.precedes(bindings[0].node, at):
        return None
    ctor = bindings[0].value
    for i in bindings[0].index if bindings[0].how == "unpack" else ():
        if not isinstance(ctor, (cst.Tuple, cst.List)) or i >= len(ctor.elements):
            return None
        ctor = ctor.elements[i].value
    if not (isinstance(ctor, cst.Call) and isinstance(ctor.func, cst.Name) and ctor.func.value == cls.name.value):
        return None
    given = None
    for i, a in enumerate(ctor.args):
        if a.star:
            return None
        if a.keyword is None and i < len(params) and params[i] == root.value:
            given = a.value
        elif a.keyword is not None and a.keyword.value == root.value:
            given = a.value
    if given is None or not isinstance(given, (cst.Name, cst.Attribute)):
        return None
    inner = given
    while isinstance(inner, cst.Attribute):
        inner = inner.value
    if not isinstance(inner, cst.Name) or inner.value == "self" and m.class_of(at) is None:
        return None
    return ctx.code(given) + ctx.code(expr)[len(root.value):]


def _stored_in_self(m, home, root: cst.Name, at) -> str | None:
    """`self.<attr>` when `home`, a method, stores its parameter `root` there (`self.cfg = cfg`),
    `self.<attr>` is bound nowhere else in the class, and `at` is in a method of the same class."""
    cls = m.class_of(home)
    fn = m.enclosing(at, cst.FunctionDef)
    if cls is None or fn is None or m.class_of(fn) is not cls or not fn.params.params:
        return None
    if fn.params.params[0].name.value != "self" or any(b.how != "param" for b in m.bindings[(home, root.value)]):
        return None
    for (scope, key), bs in m.bindings.items():
        if scope is not cls or not key.startswith("self."):
            continue
        if len(bs) == 1 and isinstance(bs[0].value, cst.Name) and bs[0].value.value == root.value and (
                m.scope_of(bs[0].node) is home):
            return key
    return None


def given_host_tensors(m, method: cst.FunctionDef, value) -> bool:
    """`self.pos_weight = pos_weight` in `__init__` (`method`), where every construction of the
    class in the file passes a tensor for that parameter and one passes a tensor on the host
    (`BCELossMasked(pos_weight=torch.tensor(c.stopnet_pos_weight))`, coqui-ai/TTS#1816, G69-1): a
    plain attribute that `.to(device)` leaves behind, like one `__init__` makes itself (GL106's,
    so GL116 leaves it to GL106). Only when the host tensor is made by another class's `__init__`
    (state the module family builds itself, not a tensor the script hands the model) and some
    instance is moved (else GL106's "`.to(device)` leaves it behind" is false)."""
    from gpulint.analysis.training import argument_for

    if not isinstance(value, cst.Name) or method.name.value != "__init__":
        return False
    bindings = m.bindings_of(value)
    if len(bindings) != 1 or bindings[0].how != "param" or m.function_of_param(bindings[0]) is not method:
        return False
    cls = m.class_of(method)
    if cls is None or len(m.bindings.get((m.module, cls.name.value), ())) != 1:
        return False
    sites = [c for c in m.calls if isinstance(c.func, cst.Name) and c.func.value == cls.name.value]
    if not sites:
        return False
    host = False
    for call in sites:
        arg = argument_for(method, call, value.value)
        if arg is None:
            return False  # the default, or `*args`: not known to be a tensor
        v = m.value_of(arg)
        if v.kind != "tensor" or v.dev is None:
            return False
        if v.dev.is_host:
            made_in = m.enclosing(call, cst.FunctionDef)
            if made_in is None or made_in.name.value != "__init__" or m.class_of(made_in) is None:
                return False  # a tensor the script hands the model (STGCN's `gso`): GL116's use site
            if isinstance(arg, cst.Name) and any(b.how == "param" for b in m.bindings_of(arg)):
                return False  # handed down from further out (STGCN -> ... -> GraphConv)
            host = True
    return host and instances_moved(m, cls.name.value)


def instances_moved(m, name: str, depth: int = 0) -> bool:
    """Some instance of the file's class `name` is moved off the host: `C(...).to(d)`, `c = C(...)`
    then `c.to(d)`, or `self.part = C(...)` (also under a conditional expression) in a method of
    another class of the file whose instances are moved (TacotronLoss holding BCELossMasked). A
    class never moved keeps every attribute where its inputs put it (GL106's premise fails)."""
    if depth > 3:
        return False
    for call in m.calls:
        if not (isinstance(call.func, cst.Name) and call.func.value == name):
            continue
        top = call
        parent = m.parents.get(top)
        while isinstance(parent, cst.Attribute) and isinstance(m.parents.get(parent), cst.Call):
            top = m.parents.get(parent)
            parent = m.parents.get(top)
        moves = list(m.moves_in_chain(top))
        while isinstance(parent, cst.IfExp):
            top, parent = parent, m.parents.get(parent)
        target = None
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
            target = parent.targets[0].target
        elif isinstance(parent, cst.AnnAssign):
            target = parent.target
        if isinstance(target, (cst.Name, cst.Attribute)):
            moves.extend(m.moves_of(target))
        if any(not m.is_cpu_move(mv) for mv in moves):
            return True
        if (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
                and target.value.value == "self"):
            fn = m.enclosing(call, cst.FunctionDef)
            holder = m.class_of(fn) if fn is not None else None
            if holder is not None and holder.name.value != name and instances_moved(m, holder.name.value, depth + 1):
                return True
    return False
