"""GL112 model-not-moved."""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from gpulint.analysis.devices import DeviceFacts
from gpulint.analysis.mismatch import accelerator_named_cpu, placed_on_host
from gpulint.flow import CONTAINERS
from gpulint.rule import Context, Rule
from gpulint.sites import line_ref


class ModelNotMoved(Rule):
    code = "GL112"
    name = "model-not-moved"
    summary = "Inputs are moved to a device and passed to a model that is never moved there."
    message = "`{model}` receives inputs moved to `{device}` but the model itself is never moved; add `{model} = {model}.to({device})` after it is built"
    fix_safety = "unsafe"
    default = True
    kind = "crash"
    prefilter = r"DataLoader|\.to\(|\.cuda\(|cuda\.[A-Za-z]*Tensor"
    ast_prefilter = r"DataLoader|^\.(?:to|cuda)\($|^\.[A-Za-z]*Tensor$"
    explanation = '''
Moving every batch to the GPU is half the job: a model built on the CPU and never moved has its
weights on the CPU, and the first forward pass fails with `RuntimeError: Expected all tensors to
be on the same device, but found at least two devices, cuda:0 and cpu!`.

The fix (unsafe: the model's placement changes for the whole script) moves the model once, right
after it is built, with the device expression the inputs are moved with.

The rule is silent when the model is built with `device=`/`device_map=`, moved anywhere (also
in place: `model.to(device)`), handed to a function that might move it, or not built in this file;
nor when the inputs go to the device of an object of an imported class built with the model
(`sbs = StepByStep(model, ...)`, then `x.to(sbs.device)`): that trainer placed the model.
Silent too when the file (or another file of its project) sets a default tensor type or device that
may be CUDA (`torch.set_default_tensor_type(torch.cuda.FloatTensor)`): the layers are built there.
Loss modules and other parameter-free layers are never reported: they work on any device; nor
are instances of the file's own module classes that hold no parameter, buffer or stateful layer,
nor those whose every parameter the class makes on the inputs' device itself in `__init__`
(`self.weight = nn.Parameter(torch.empty(n, d).to(device))`, with parts of the same kind or without
weights): nothing of theirs is left on the CPU.

`nn.DataParallel(model, device_ids=[0, 1])` over a model never moved does not place it: DataParallel
moves the module itself only when it has a single device. With several `device_ids` (or none, on a
machine with several GPUs) the first forward fails with "module must have its parameters and buffers
on device cuda:0 (device_ids[0])" (d2l PR#2461); reported when the wrapper is called with inputs
moved to a device, and not for a one-item literal `device_ids`.

Bad:

```python
model = Net()
for x, y in loader:
    x, y = x.to(device), y.to(device)
    loss = criterion(model(x), y)
```

Good:

```python
model = Net()
model = model.to(device)
for x, y in loader:
    x, y = x.to(device), y.to(device)
    loss = criterion(model(x), y)
```
'''

    def check(self, ctx: Context):
        """The flow engine: a module holding parameters that is on the host where it is called with
        inputs on the accelerator (built here, or built or loaded in a helper, and never moved)."""
        from gpulint import flowkb

        m = ctx.model
        if m.frameworks:
            return
        if m.cuda_default_set():
            return  # layers built after `set_default_tensor_type(torch.cuda.FloatTensor)` are on the GPU
        reported = set()
        for mm in m.mismatches():
            if accelerator_named_cpu(m, mm):
                continue  # `device = "cpu"`: both operands are on the host
            if mm.op != "module-host":
                continue
            if mm.loop is not None:
                continue  # moved, then put back on the host in place later in the loop: GL116's
            ctor = mm.host_value.origin
            if isinstance(ctor, cst.Call) and _built_from_parts(m, ctor):
                continue
            if isinstance(ctor, cst.Call) and _quantized_load(ctor):
                continue  # bitsandbytes weights are placed on the GPU by the load itself
            if isinstance(ctor, cst.Call) and _file_wrapper_of_moved_module(m, ctor):
                continue  # `gl = MyDataParallel(gl)` after `gl = Loss(...).to(device)`: the wrapped module is placed
            q = m.qualname(ctor.func) if isinstance(ctor, cst.Call) else None
            if q and ("loss" in flowkb.class_tags(q) or q.endswith("Loss")):
                continue  # GL108's
            if isinstance(ctor, cst.Call) and _parameter_free_layer(m, ctor, q):
                continue  # no weight, no buffer: it runs on the device of its input
            if isinstance(ctor, cst.Call) and _parameter_free_file_module(m, ctor):
                continue  # a class of the file with nothing for `.to()` to move
            d0 = mm.acc_value.dev
            if isinstance(ctor, cst.Call) and _device_built_file_module(
                    m, ctor, ctx.code(d0.expr) if d0 is not None and d0.expr is not None else None):
                continue  # every parameter made on the inputs' device in `__init__` (Hands-on-RL's PETS)
            if isinstance(ctor, cst.Call) and _sequential_of_opaque_modules(m, ctor, q):
                continue  # `nn.Sequential(ImportedLayer(...))`: as silent as the bare imported instance
            owner = m.class_of(ctor) if ctor is not None else None
            if owner is not None and m.class_of(mm.node) is owner and (
                    m.flow._class_kind(owner.name.value) == "module" or _module_mixin(m, owner)):
                built = _built_in_call(m, mm.node, ctor)
                if built is not None and ctor not in reported:
                    # `proj = nn.Linear(d, 2)` inside forward, then `proj(x)`: made on the CPU at
                    # every call (each construction once: two `nn.BatchNorm2d(4)(x)` are two layers)
                    reported.add(ctor)
                    yield ctx.finding(mm.node, self._built_in_call_message(ctx, mm, ctor, built))
                    continue
                node = None if built is not None else _method_call_site(m, mm, owner, ctor)
                if node is None:
                    continue  # a module's own part kept out of its registry (a plain list): GL107's shape
                # `out, feat = model.getFeatures(data)`: a method of the model's class that runs its
                # registered layer on the moved input; the model itself was never moved (E38-3)
                mm = replace(mm, node=node)
                callee = node.func.value
            else:
                callee = mm.node.func
            if _element_of_self_container(m, mm.node, callee):
                continue  # a part a module keeps in a container attribute: registered or not, GL107's shape
            if isinstance(callee, cst.Attribute) and callee.attr.value in _MODEL_METHODS:
                callee = callee.value  # `model.generate(**inputs)`: the model is `model`
            if not isinstance(callee, (cst.Name, cst.Attribute)):
                continue  # built and called at once (`Metric(...)(x)`) or kept in a container: no name to move
            if _self_call_of_moved_class(m, mm.node, callee):
                continue  # `self.forward(x.to(self.device))` in a class whose instance the file moves
            if m.value_of(callee).kind == "metric":
                continue  # GL119's
            if placed_on_host(m, callee) is not None:
                continue  # put on the CPU on purpose (`.to("cpu")`): its input is the wrong one, GL116's
            name = ctx.code(callee)
            if name in reported:
                continue
            d = mm.acc_value.dev
            device = d.expr if d is not None else None
            if device is not None and _device_of_model_holder(m, device, callee):
                continue  # `device = sbs.device` of `sbs = StepByStep(model, ...)`: the holder placed the model
            reported.add(name)
            fix = self._fix(ctx, callee, ctor, device)
            if device is not None:
                shown = ctx.code(device)
            elif d is not None and d.key == "cuda":
                shown = "cuda"  # moved with `.cuda()`: the advice below is `.cuda()` too
            elif isinstance(mm.acc, (cst.Name, cst.Attribute)):
                shown = f"{ctx.code(mm.acc)}.device"  # where the input is, never a literal device
            else:
                shown = "cuda"
            cv = m.value_of(callee).dev
            if cv is not None and cv.where == "either" and isinstance(ctor, cst.CSTNode):
                # moved on one branch of an `if` only (BRANCH_HOST)
                msg = (f"`{name}` receives inputs moved to `{shown}`, but it is moved there on one branch only: "
                       f"the path that builds it on {line_ref(ctx, ctor)} leaves it on the CPU; move it "
                       f"(`.to({shown})`) on that path too")
                yield ctx.finding(mm.node, msg, fix)
                continue
            if name == "self" and isinstance(ctor, cst.Call):
                # `self.forward(image)` in a method that moved `image` itself (Depth-Anything-V2#45's
                # `infer_image`): `self = self.to(...)` is no advice; name the instance built outside
                yield ctx.finding(mm.node, _self_call_message(ctx, m, mm.node, ctor, shown), fix)
                continue
            if device is None and shown == "cuda":
                msg = (f"`{name}` receives inputs moved to the GPU (`.cuda()`) but the model itself is never "
                       f"moved; add `{name} = {name}.cuda()` after it is built")
                yield ctx.finding(mm.node, msg, fix)
                continue
            yield ctx.finding(mm.node, self.message.format(model=name, device=shown), fix)
        yield from self._dataparallel_over_host_module(ctx, reported)

    def _dataparallel_over_host_module(self, ctx: Context, reported: set):
        """E65-1 (d2l PR#2461): `net = nn.DataParallel(net, device_ids=devices)` over a module never
        moved, called with inputs moved to the accelerator. DataParallel moves the module itself only
        when it has one device; with several (`device_ids` not a one-item literal, or none given on a
        machine with several GPUs) the module stays on the CPU and the first forward fails with
        "module must have its parameters and buffers on device cuda:0 (device_ids[0])". The engine
        treats the wrapper as moving its inputs (no mismatch at the call): found here."""
        from gpulint import flowkb

        m = ctx.model
        for call in m.calls:
            callee = call.func
            if not isinstance(callee, (cst.Name, cst.Attribute)):
                continue
            v = m.value_of(callee)
            wrap = v.wrap
            if (v.kind != "module" or not v.scatters or not isinstance(wrap, cst.Call) or v.dev is None
                    or not v.dev.is_host or m.qualname(wrap.func) not in _DATA_PARALLEL):
                continue
            ids = _keyword_or_position(wrap, "device_ids", 1)
            if isinstance(ids, (cst.List, cst.Tuple)) and len(ids.elements) == 1:
                continue  # one device: DataParallel moves the module there itself
            if isinstance(ids, cst.Name) and ids.value == "None":
                ids = None
            inner = _keyword_or_position(wrap, "module", 0)
            iv = m.value_of(inner) if inner is not None else None
            if iv is None or iv.kind != "module" or iv.dev is None or not iv.dev.is_host:
                continue
            ctor = iv.origin
            if not isinstance(ctor, cst.Call):
                continue  # where the module was made (and whether it holds parameters) is not known
            q = m.qualname(ctor.func)
            if q and ("loss" in flowkb.class_tags(q) or q.endswith("Loss")):
                continue
            if (_built_from_parts(m, ctor) or _quantized_load(ctor) or _parameter_free_layer(m, ctor, q)
                    or _parameter_free_file_module(m, ctor) or _sequential_of_opaque_modules(m, ctor, q)):
                continue
            shown = target = None
            for a in call.args:
                shown, target = _moved_input_device(ctx, m.value_of(a.value))
                if shown is not None:
                    break
            if shown is None:
                continue  # inputs not known to be moved: the wrapper scatters host inputs itself
            name = ctx.code(callee)
            if name in reported:
                continue
            reported.add(name)
            how = (f"`device_ids={ctx.code(ids)}`" if ids is not None
                   else "no `device_ids` (every visible GPU)")
            if target is None:
                moved_to, advice = "the GPU (`.cuda()`)", f"{name} = {name}.cuda()"
            else:
                moved_to, advice = f"`{shown}`", f"{name} = {name}.to({shown})"
            msg = (f"`{name}` is an `nn.DataParallel` (on {line_ref(ctx, wrap)}) over a model that is never "
                   f"moved, called with inputs moved to {moved_to}: DataParallel moves the model itself only when it "
                   f"has a single device, and with {how} on a machine with several GPUs the first forward fails "
                   f"(\"module must have its parameters and buffers on device cuda:0 (device_ids[0])\"); move the "
                   f"model to the first device before or after wrapping it (`{advice}`)")
            fix = self._fix(ctx, callee, wrap, target) if target is not None else None
            yield ctx.finding(call, msg, fix)

    @staticmethod
    def _built_in_call_message(ctx: Context, mm, ctor, fn) -> str:
        name = ctx.code(mm.node.func)
        made = ctx.code(ctor.func)
        x = mm.acc if isinstance(mm.acc, (cst.Name, cst.Attribute)) else None
        place = f" (or build it with `device={ctx.code(x)}.device`)" if x is not None else ""
        return (f"`{name}` is a `{made}` built inside `{fn.name.value}()`, after the model was moved: its weights "
                f"are made on the CPU at every call while its input is on the accelerator (and, rebuilt at each "
                f"call, they are never trained); build it once in `__init__` so that `.to()` moves it{place}")

    def _fix(self, ctx: Context, callee, ctor, device):
        """Move the model once, right after the statement that builds it (`model = Net()`), with
        the device expression its inputs are moved with, when that expression is defined there."""
        m = ctx.model
        if device is not None and _self_attr(callee):
            return self._attribute_fix(ctx, callee, device)
        if device is None or not isinstance(callee, cst.Name) or not isinstance(ctor, cst.Call):
            return None
        stmt = m.statement_of(ctor)
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            return None
        assign = stmt.body[0]
        if not (isinstance(assign, cst.Assign) and assign.value is ctor and len(assign.targets) == 1
                and isinstance(assign.targets[0].target, cst.Name)
                and assign.targets[0].target.value == callee.value):
            return None
        if m.scope_of(stmt) is not m.scope_of(callee):
            names = _names_at_call_sites(m, callee, device, assign.targets[0].target.value, stmt)
            if names is None or not self._visible(ctx, names[1], stmt):
                return None
            model_name, dev = names[0], names[1]
            return ctx.fix(
                ctx.insert_after(stmt, f"{model_name} = {model_name}.to({ctx.code(dev)})"),
                message="Move the model to the inputs' device after it is built",
            )
        if not self._visible(ctx, device, stmt):
            return None
        return ctx.fix(
            ctx.insert_after(stmt, f"{callee.value} = {callee.value}.to({ctx.code(device)})"),
            message="Move the model to the inputs' device after it is built",
        )

    def _attribute_fix(self, ctx: Context, callee: cst.Attribute, device):
        """`self.model(x)` with `self.model` bound once, in `__init__` (`self.model = model`, a
        model it is given): move it right there, `self.model = self.model.to(D)`, when D can be
        read at that point (a module-level name bound above, or a `self` attribute `__init__` set
        above). Not for a class the file subclasses (another `__init__` may bind it)."""
        m = ctx.model
        cls = m.class_of(callee)
        if cls is None or any(cls.name.value in (m.classes[n].bases or ()) for n in m.classes if n != cls.name.value):
            return None
        bindings = m.bindings_of(callee)
        if len(bindings) != 1:
            return None
        stmt = m.statement_of(bindings[0].node)
        fn = m.scope_of(stmt) if stmt is not None else None
        if not (isinstance(fn, cst.FunctionDef) and fn.name.value == "__init__" and m.class_of(fn) is cls):
            return None
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            return None
        assign = stmt.body[0]
        if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1
                and ctx.code(assign.targets[0].target) == ctx.code(callee)):
            return None
        if _self_attr(device):
            dev_bindings = m.bindings_of(device)
            if not dev_bindings or any(m.scope_of(b.node) is not fn or not m.precedes(b.node, stmt)
                                       for b in dev_bindings):
                return None
        elif (not isinstance(device, cst.Name) or (fn, device.value) in m.bindings
              or (m.scope_of(callee), device.value) in m.bindings or not self._visible(ctx, device, stmt)):
            return None  # a local of the calling method, or shadowed in `__init__`
        name = ctx.code(callee)
        return ctx.fix(
            ctx.insert_after(stmt, f"{name} = {name}.to({ctx.code(device)})"),
            message="Move the model to the inputs' device where the class stores it",
        )

    @staticmethod
    def _visible(ctx: Context, device: cst.BaseExpression, stmt) -> bool:
        m = ctx.model
        root = device
        while isinstance(root, (cst.Attribute, cst.Call)):
            root = root.value if isinstance(root, cst.Attribute) else root.func
        if isinstance(root, cst.SimpleString):
            return True
        if not isinstance(root, cst.Name):
            return False
        if root.value in m.aliases:
            return True
        scope = m.scope_of(stmt)
        for key in ((scope, root.value), (m.module, root.value)):
            for b in m.bindings.get(key, []):
                if ctx.span(b.node)[0] < ctx.span(stmt)[0] or b.how == "param":
                    return True
        return False


def _names_at_call_sites(m, callee: cst.Name, device, built: str, stmt):
    """`def train(model, device, ...)`, called as `train(model, device, ...)` with `model = Net()`
    built above (the MNIST example's shape, Mastering-PyTorch#9): the model and device parameters of
    the function that calls the model, when every call site the engine resolved passes for them the
    name the statement binds and one same device name. Returns (model name, device argument node)."""
    fn = m.scope_of(callee)
    if not isinstance(fn, cst.FunctionDef) or not isinstance(device, cst.Name):
        return None
    params = [x.name.value for x in (*fn.params.posonly_params, *fn.params.params)]
    if callee.value not in params or device.value not in params or m.class_of(fn) is not None:
        return None
    sites = m.resolved_sites(fn)
    if not sites:
        return None
    dev_arg = None
    for site in sites:
        got = {}
        for i, a in enumerate(site.args):
            if a.star:
                return None
            if a.keyword is not None:
                got[a.keyword.value] = a.value
            elif i < len(params):
                got[params[i]] = a.value
        mv, dv = got.get(callee.value), got.get(device.value)
        if not (isinstance(mv, cst.Name) and mv.value == built and isinstance(dv, cst.Name)):
            return None
        if m.scope_of(site) is not m.scope_of(stmt) or not m.precedes(stmt, site):
            return None
        if dev_arg is not None and dv.value != dev_arg.value:
            return None
        dev_arg = dv
    return built, dev_arg


_MODEL_METHODS = frozenset({"generate", "forward"})


def _quantized_load(ctor: cst.Call) -> bool:
    """`from_pretrained(..., load_in_8bit=True)` / `load_in_4bit=True` / `quantization_config=...`:
    transformers puts quantized weights on the current GPU when no `device_map` is given
    (TinyLlama's speculative_decoding/instruct_hf_assisted_decoding.py loads llama-13b so and
    moves only its inputs)."""
    f = ctor.func
    if not (isinstance(f, cst.Attribute) and f.attr.value == "from_pretrained"):
        return False
    for a in ctor.args:
        if a.keyword is None:
            continue
        k = a.keyword.value
        if k == "quantization_config" and not (isinstance(a.value, cst.Name) and a.value.value == "None"):
            return True
        if k in ("load_in_8bit", "load_in_4bit") and isinstance(a.value, cst.Name) and a.value.value == "True":
            return True
    return False


def _element_of_self_container(m, node, callee) -> bool:
    """`for block in self.block_list: x = block(x)` (or `self.blocks[i](x)`) in a method of an
    `nn.Module` subclass: the element is a part of the module, kept in a container attribute. If
    that container is a plain list nothing registers, it is GL107's shape (at the attribute); if
    the same objects are also registered elsewhere (`self.module_list = nn.ModuleList(block_list)`
    beside `self.block_list = block_list`, Zen-NAS's PlainNet) they move with the module. Either
    way "the model is never moved, add `block = block.to(device)` after it is built" is wrong."""
    owner = m.class_of(node)
    if owner is None or m.flow._class_kind(owner.name.value) != "module":
        return False
    if isinstance(callee, cst.Subscript):
        return _self_attr(callee.value)
    if not isinstance(callee, cst.Name):
        return False
    bindings = m.bindings_of(callee)
    if not bindings:
        return False
    for b in bindings:
        if b.how != "for":
            return False
        source, _ = m.unwrap_iterable(b.value, b.index)
        if source is None:
            # `for i, blk in enumerate(self.blocks)`: see through enumerate to the container
            it = b.value
            if isinstance(it, cst.Call) and it.args and b.index[:1] == (1,):
                source = it.args[0].value
        while isinstance(source, cst.Call) and isinstance(source.func, cst.Name) and source.func.value in ("reversed", "list") and source.args:
            source = source.args[0].value
        if isinstance(source, cst.Subscript):
            source = source.value  # `self.blocks[1:]`
        if not _self_attr(source):
            return False
    return True


def _self_attr(e) -> bool:
    return isinstance(e, cst.Attribute) and isinstance(e.value, cst.Name) and e.value.value == "self"


def _built_from_parts(m, ctor: cst.Call) -> bool:
    """`nn.Sequential(*layers)` / `nn.ModuleList(parts)`: a container of modules made elsewhere,
    which may have been moved one by one (`local_layers = [l.to(0) for l in layers]` in torch's
    dist_autograd tests): where it lives is not known from the container's constructor."""
    q = m.qualname(ctor.func) or ""
    if q not in CONTAINERS:
        return False
    return any((a.star or not isinstance(a.value, cst.Call)) and not _fresh_parts(m, a.value) for a in ctor.args)


def _fresh_parts(m, parts) -> bool:
    """A list the engine knows holds only modules still on the host (`layers = []` filled with
    `layers.append(nn.Conv2d(...))`, VGG's make_layers): nothing moved them one by one."""
    if (isinstance(parts, cst.Attribute) and isinstance(parts.value, cst.Name) and parts.value.value == "self"):
        # `nn.Sequential(self.featurizer, self.classifier)` of layers the constructor built on the
        # spot (`self.featurizer = nn.Linear(...)`) and never moves itself (TSD#6's ERM, F22-2)
        bs = m.bindings_of(parts)
        return bool(bs) and all(
            b.how == "assign" and isinstance(b.value, cst.Call) and _host_module_made(m, b.value)
            and m.enclosing(b.node, cst.FunctionDef) is m.enclosing(parts, cst.FunctionDef) for b in bs) and not any(
            isinstance(c.func, cst.Attribute) and c.func.attr.value in ("to", "cuda") and m.bindings_of(c.func.value) is bs
            for c in m.calls_in(m.enclosing(parts, cst.FunctionDef)) if isinstance(c.func.value, cst.Attribute))
    v = m.value_of(parts)
    if v.kind != "tuple":
        return False
    items = list(v.items) if v.items is not None else ([v.elem] if v.elem is not None else [])
    return bool(items) and all(it.kind == "module" and it.dev is not None and it.dev.is_host for it in items)


def _host_module_made(m, call: cst.Call) -> bool:
    """`call` builds a module on the host: a `torch.nn` constructor, or (the engine's value) a
    helper or class of the file whose module stays on the host (`self.featurizer = get_fea(args)`,
    `self.classifier = feat_classifier(n)` in TSD's ERM)."""
    if (m.qualname(call.func) or "").startswith("torch.nn."):
        return True
    v = m.value_of(call)
    return v.kind == "module" and v.dev is not None and v.dev.is_host


def _device_of_model_holder(m, device: cst.BaseExpression, callee: cst.BaseExpression) -> bool:
    """The inputs go to `<holder>.device` (or `<holder>.accelerator.device`, directly or through a
    name bound only to it) where every binding of `<holder>` is an instance of a class the file
    does not define, built with the model itself as an argument: a trainer object that owns the
    model and the device and moves one to the other (dvgodoy/PyTorchStepByStep's
    `sbs = StepByStep(model, loss_fn, optimizer)` then `device = sbs.device`; torchkeras'
    `keras_model = KerasModel(net, ...)` then `device = keras_model.accelerator.device`)."""
    expr = device
    if isinstance(expr, cst.Name):
        bound = m.bindings_of(expr)
        if not bound or any(b.how != "assign" or b.value is None for b in bound):
            return False
        values = [b.value for b in bound]
    else:
        values = [expr]
    model_text = m.module.code_for_node(callee)
    for v in values:
        if not (isinstance(v, cst.Attribute) and v.attr.value == "device"):
            return False
        root = v.value
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name):
            return False
        holders = m.bindings_of(root)
        if not holders:
            return False
        for h in holders:
            made = h.value
            if h.how != "assign" or not isinstance(made, cst.Call):
                return False
            if isinstance(made.func, cst.Name) and made.func.value in m.classes:
                return False  # a class of the file: the engine reads what it does
            if m.qualname(made.func) and m.qualname(made.func).startswith("torch."):
                return False
            if not any(not a.star and m.module.code_for_node(a.value) == model_text for a in made.args):
                return False
    return True


def _self_call_of_moved_class(m, node, callee) -> bool:
    """A method calls the module itself (`self(x)`, `self.forward(x)`) and the file moves an
    instance of that class to a device (`bc = BC(); bc.to(bc.device)`, `BC().cuda()`) with a device
    expression the flow engine does not evaluate (IL-Datasets' behavioural-cloning policy moved by
    its caller with its own `self.device`): the instance is moved, the engine only lost where."""
    if isinstance(callee, cst.Name):
        if callee.value != "self":
            return False
    elif not (isinstance(callee.value, cst.Name) and callee.value.value == "self"):
        return False
    cls = m.class_of(node)
    if cls is None:
        return False
    if isinstance(callee, cst.Attribute) and not any(
            isinstance(f, cst.FunctionDef) and f.name.value == callee.attr.value for f in cls.body.body):
        return False  # `self.encoder(x)`: a submodule, not the module itself
    name = cls.name.value
    facts = m.facts(DeviceFacts)
    for call, recv, _meth in m.method_calls("to", "cuda"):
        mv = m.move_of_call(call)
        if mv is None or mv.to_cpu or (mv.device is not None and facts.device_is_cpu(mv.device)):
            continue
        if isinstance(recv, cst.Call) and isinstance(recv.func, cst.Name) and recv.func.value == name:
            return True
        if isinstance(recv, cst.Name) and any(
                isinstance(b.value, cst.Call) and isinstance(b.value.func, cst.Name) and b.value.func.value == name
                for b in m.bindings_of(recv)):
            return True
    return False


#: torch.nn layers that never hold a parameter or a buffer (besides `STATELESS_MODULES` of the model)
_PARAMETER_FREE = frozenset(
    "Upsample UpsamplingBilinear2d UpsamplingNearest2d ZeroPad1d ZeroPad2d ZeroPad3d ConstantPad1d "
    "ConstantPad2d ConstantPad3d ReflectionPad1d ReflectionPad2d ReflectionPad3d ReplicationPad1d "
    "ReplicationPad2d ReplicationPad3d CircularPad1d CircularPad2d CircularPad3d ChannelShuffle Fold "
    "Unfold Softmin Softmax2d LogSigmoid Softsign Tanhshrink Threshold Hardshrink Softshrink GLU CELU "
    "RReLU MaxUnpool1d MaxUnpool2d MaxUnpool3d LPPool1d LPPool2d LPPool3d".split()
)


def _parameter_free_layer(m, ctor: cst.Call, q: str | None) -> bool:
    """`ctor` builds a torch.nn layer that holds no parameter and no buffer (an activation, a
    pooling, padding or upsampling layer): called on the host with inputs on the accelerator, it
    runs there. pytorch-grad-cam's ScoreCAM builds `torch.nn.UpsamplingBilinear2d(size=...)` in a
    method and calls it on `activation_tensor.to(self.device)`."""
    if not q or not q.startswith("torch.nn.") or q.count(".") != 2:
        return False
    return m.is_stateless_module(ctor) or q.rsplit(".", 1)[-1] in _PARAMETER_FREE


def _sequential_of_opaque_modules(m, ctor: cst.Call, q: str | None) -> bool:
    """`nn.Sequential(ColorJitterLayer(...))` with `ColorJitterLayer` imported from another file
    (MishaLaskin/rad data_augs.py, PRECISION40): the analysis cannot tell whether an instance of an
    imported class holds weights, and the rule is silent when such an instance is called bare with
    inputs on the accelerator; a Sequential around it adds no weight of its own. Silent when every
    element is built in the call from an imported class the analysis does not know as a module, or
    is a parameter-free torch.nn layer (or parameter-free class of the file), and one at least is
    imported. A torch.nn layer with weights, a known model (torchvision's), a name or a `*list`
    keeps the report."""
    if q != "torch.nn.Sequential" or not ctor.args:
        return False
    opaque = False
    for a in ctor.args:
        v = a.value
        if a.star or a.keyword is not None or not isinstance(v, cst.Call):
            return False
        vq = m.qualname(v.func)
        if vq and vq.startswith("torch.nn.") and vq.count(".") == 2 and _parameter_free_layer(m, v, vq):
            continue
        if isinstance(v.func, cst.Name) and v.func.value in m.classes:
            if _parameter_free_file_module(m, v):
                continue
            return False
        if not vq or vq.startswith("torch.") or vq in m.classes or m.value_of(v).kind is not None:
            return False  # not an import, or one the analysis knows (a torch layer, a zoo model)
        opaque = True
    return opaque


def _file_wrapper_of_moved_module(m, ctor: cst.Call) -> bool:
    """`MyDataParallel(gl)` where `MyDataParallel` is a class of the file deriving from
    `nn.DataParallel`/`DistributedDataParallel` (StyleTTS2's train scripts add a `__getattr__` that
    forwards to `.module`) and `gl` was moved to a device before: the wrapper runs the wrapped module
    where it is, as `nn.DataParallel(gl)` does."""
    from gpulint.model import WRAPPER_CLASSES

    f = ctor.func
    if not (isinstance(f, cst.Name) and f.value in m.classes and m.class_is(f.value, WRAPPER_CLASSES)):
        return False
    pos = [a for a in ctor.args if a.keyword is None and not a.star]
    kw = [a for a in ctor.args if a.keyword is not None and a.keyword.value == "module"]
    arg = (pos or kw or [None])[0]
    if arg is None:
        return False
    v = m.value_of(arg.value)
    if v.dev is not None and v.dev.where != "host":
        return True
    return bool(m.device_moves(arg.value)) if isinstance(arg.value, (cst.Name, cst.Attribute)) else False


def _parameter_free_file_module(m, ctor: cst.Call, env: dict | None = None, depth: int = 0) -> bool:
    """`SubsetsDKNN(k, tau)` / `SoftDiceLoss(n_classes=3)`: an instance of a class of the file that
    derives from `nn.Module` only, registers no parameter or buffer (nor anything dynamically), and
    whose `__init__` keeps only numbers, strings and None (literals, or arguments given such values
    at this construction), parameter-free torch.nn layers, instances of such classes in turn, and
    bound methods (`One_Hot(n).forward`, never registered), and plain tensors (`self.alpha =
    torch.tensor(alpha)`: not registered, so `.to()` leaves them where they are; GL106 reports them
    where forward meets device tensors). `.to()` has nothing to move in it: called
    on the host with inputs on the accelerator, it runs there (uvadlc_notebooks' DL2 sampling
    tutorial, Attention-Gated-Networks' dice loss)."""
    from gpulint.analysis.modules import ModuleFacts

    f = ctor.func
    if depth > 4 or not isinstance(f, cst.Name):
        return False
    facts = m.facts(ModuleFacts)
    cls = next((c for c in facts.classes if c.name == f.value), None)
    if cls is None or cls.init is None or cls.buffers or cls.parameters or cls.registers_dynamically:
        return False
    if any(b != "torch.nn.Module" for b in cls.info.bases):
        return False
    params = cls.init.params
    if params.star_kwarg is not None or params.kwonly_params or not params.params:
        return False
    named = [p for p in params.params[1:]]
    args: dict[str, bool] = {}
    pos = [a for a in ctor.args if a.keyword is None]
    if any(a.star for a in ctor.args) or len(pos) > len(named):
        return False
    for p, a in zip(named, pos):
        args[p.name.value] = _plain_value(m, a.value, env)
    for a in ctor.args:
        if a.keyword is not None:
            args[a.keyword.value] = _plain_value(m, a.value, env)
    for p in named:
        if p.name.value not in args:
            args[p.name.value] = p.default is not None and _plain_value(m, p.default, None)
    for assigns in cls.init_assigns.values():
        for a in assigns:
            v = a.value
            if a.kind in ("scalar", "none"):
                continue
            if a.kind == "tensor":
                continue  # a plain tensor attribute: `.to()` leaves it behind too (GL106's shape)
            if isinstance(v, cst.Name) and v.value in args and all(b.how == "param" for b in m.bindings_of(v)):
                if args[v.value]:
                    continue
                return False
            if isinstance(v, cst.Attribute) and v.attr.value == "forward" and isinstance(v.value, cst.Call):
                continue  # a bound method of a temporary module: a plain attribute
            if a.kind == "module" and isinstance(v, cst.Call):
                q = m.qualname(v.func) or ""
                if q.startswith("torch.nn.") and m.is_stateless_module(v):
                    continue
                if _parameter_free_file_module(m, v, args, depth + 1):
                    continue
            return False
    return True


def _device_built_file_module(m, ctor: cst.Call, device: str | None, depth: int = 0) -> bool:
    """`EnsembleModel(state_dim, action_dim)` of a class of the file that makes every parameter
    on the device itself: `self.weight = nn.Parameter(torch.Tensor(n, d).to(device))` (or a
    factory with `device=`), its submodules instances of such classes or parameter-free layers,
    no buffer, nothing registered dynamically (boyu-ai/Hands-on-RL, chapters 16 and 17: the PETS
    and MBPO ensembles are never moved, their weights are built on `device`; PRECISION55). When
    the inputs' device expression is known, the parameters' must be the same text."""
    from gpulint.analysis.modules import ModuleFacts

    f = ctor.func
    if depth > 4 or not isinstance(f, cst.Name):
        return False
    facts = m.facts(ModuleFacts)
    cls = next((c for c in facts.classes if c.name == f.value), None)
    if cls is None or cls.init is None or cls.buffers or cls.registers_dynamically:
        return False
    if any(b != "torch.nn.Module" for b in cls.info.bases):
        return False
    built = False
    for attr, assigns in cls.init_assigns.items():
        for a in assigns:
            v = a.value
            if a.kind in ("scalar", "none"):
                continue
            if a.kind == "parameter":
                if not _parameter_made_on_device(m, v, device):
                    return False
                built = True
                continue
            if a.kind == "module" and isinstance(v, cst.Call):
                q = m.qualname(v.func) or ""
                if q.startswith("torch.nn.") and m.is_stateless_module(v):
                    continue
                if _parameter_free_file_module(m, v, None, depth + 1) or _empty_file_module(m, v):
                    continue
                if _device_built_file_module(m, v, device, depth + 1):
                    built = True
                    continue
                return False
            if isinstance(v, cst.Name) and all(b.how == "param" for b in m.bindings_of(v)):
                # an argument (the activation layer given to it): what this construction passes
                arg = _argument_of(cls, ctor, v.value)
                if arg is None:
                    return False
                if isinstance(arg, cst.Call) and m.value_of(arg).kind == "module":
                    q = m.qualname(arg.func) or ""
                    if not ((q.startswith("torch.nn.") and m.is_stateless_module(arg))
                            or _parameter_free_file_module(m, arg, None, depth + 1)
                            or _empty_file_module(m, arg)):
                        return False
                elif m.value_of(arg).kind in ("module", "tensor"):
                    return False
                continue
            if isinstance(v, cst.Call) and (m.qualname(v.func) or "").startswith("torch.optim."):
                continue  # its own optimizer over `self.parameters()`
            if v is None and a.kind == "other":
                v = getattr(a.node, "value", None)  # `self._i, self._o = input_dim, output_dim`
            if v is not None and not any(isinstance(n, cst.Call) for n in _nodes(v)):
                continue  # `(state_dim + 1) * 2`, `input_dim`: sizes
            return False
    for attr in cls.parameters:
        if not any(a.kind == "parameter" for a in cls.init_assigns.get(attr, ())):
            return False  # `register_parameter(...)` or a parameter made outside `__init__`
    return built


def _parameter_made_on_device(m, v, device: str | None) -> bool:
    """`nn.Parameter(<t>.to(D))`, `nn.Parameter(<t>.cuda())`, `nn.Parameter(torch.zeros(n, device=D))`,
    with D not a CPU literal (and, when `device` is given, written `device`)."""
    if not isinstance(v, cst.Call) or (m.qualname(v.func) or "") not in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
        return False
    pos = [a for a in v.args if a.keyword is None]
    if not pos:
        return False
    t = pos[0].value
    if not isinstance(t, cst.Call):
        return False
    where = None
    if isinstance(t.func, cst.Attribute) and t.func.attr.value == "cuda":
        return device is None
    if isinstance(t.func, cst.Attribute) and t.func.attr.value == "to":
        args = [a for a in t.args if a.keyword is None]
        kw = {a.keyword.value: a.value for a in t.args if a.keyword is not None}
        where = kw.get("device", args[0].value if args else None)
    else:
        kw = {a.keyword.value: a.value for a in t.args if a.keyword is not None}
        where = kw.get("device")
    if where is None:
        return False
    text = cst.Module([]).code_for_node(where)
    if "cpu" in text.lower():
        return False
    return device is None or text == device


def _empty_file_module(m, ctor: cst.Call) -> bool:
    """`Swish()`: a class of the file deriving from `nn.Module` only, with no `__init__` of its own
    (nor of a file base), no parameter, buffer or dynamic registration: nothing to move."""
    from gpulint.analysis.modules import ModuleFacts

    f = ctor.func
    if not isinstance(f, cst.Name):
        return False
    cls = next((c for c in m.facts(ModuleFacts).classes if c.name == f.value), None)
    return (cls is not None and cls.init is None and not cls.init_assigns and not cls.buffers
            and not cls.parameters and not cls.registers_dynamically
            and all(b == "torch.nn.Module" for b in cls.info.bases))


def _argument_of(cls, ctor: cst.Call, name: str):
    """The expression `ctor` passes for `__init__`'s parameter `name` (its literal default when
    not passed), else None (a star argument, no such parameter)."""
    params = cls.init.params
    if params.star_kwarg is not None or any(a.star for a in ctor.args):
        return None
    named = list(params.params[1:]) + list(params.kwonly_params)
    pos = [a for a in ctor.args if a.keyword is None]
    for p, a in zip(params.params[1:], pos):
        if p.name.value == name:
            return a.value
    for a in ctor.args:
        if a.keyword is not None and a.keyword.value == name:
            return a.value
    p = next((p for p in named if p.name.value == name), None)
    return p.default if p is not None else None


def _nodes(e: cst.CSTNode):
    stack = [e]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(n.children)


def _plain_value(m, expr, env: dict | None) -> bool:
    """A number, a string, a bool or None: a literal, an argument known to be one (`env`), or a name
    only ever assigned such literals."""
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.expression, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.Name):
        if expr.value in ("True", "False", "None"):
            return True
        bindings = m.bindings_of(expr)
        if env is not None and expr.value in env and bindings and all(b.how == "param" for b in bindings):
            return env[expr.value]
        return bool(bindings) and all(
            b.how == "assign" and b.value is not None and not isinstance(b.value, cst.Name) and _plain_value(m, b.value, None)
            for b in bindings
        )
    return False


def _built_in_call(m, call: cst.Call, ctor: cst.Call):
    """The method of a module class (not `__init__`, nor a helper building the instance) that both
    builds the layer `ctor` and calls it (`call`): a layer made inside `forward`; else None."""
    from gpulint.analysis.mismatch import construction_state

    fn = m.enclosing(ctor, cst.FunctionDef)
    if fn is None or fn.name.value == "__init__" or m.enclosing(call, cst.FunctionDef) is not fn:
        return None
    q = m.qualname(ctor.func)
    if not q or not q.startswith("torch.nn.") or q.startswith("torch.nn.functional."):
        return None  # a torch layer (a class of the file may be built where its caller wants it)
    stmt = m.parent(ctor)
    cls = m.class_of(fn)
    if isinstance(stmt, cst.Assign) and cls is not None and construction_state(m, cls, stmt):
        return None
    return fn


# what only an nn.Module's `self` answers: a mixin that calls one of these on `self` (and does not
# define it) is written for a class that derives from nn.Module as well
_MODULE_ONLY_METHODS = frozenset({
    "apply", "register_buffer", "register_parameter", "add_module", "register_module", "parameters",
    "named_parameters", "buffers", "named_buffers", "modules", "named_modules", "children",
    "named_children", "state_dict", "load_state_dict",
})


def _module_mixin(m, owner: cst.ClassDef) -> bool:
    """A class of the file that is not itself an nn.Module but holds the layers of one: a mixin
    (ReChorus' `class SASRecBase(object)`, whose `_base_define_params` builds `self.p_embeddings`
    and whose `forward` calls it, combined in `class SASRec(SequentialModel, SASRecBase)` with the
    project's model base). Its `self` is the combined module, which the script that builds it
    moves as a whole (`model_name(args, corpus).to(args.device)` in another file). Recognised when
    a class of the file that derives from it is an nn.Module, or when its own methods call an
    nn.Module method on `self` (`self.apply(self.init_weights)`) that it does not define."""
    name = owner.name.value
    for other, info in m.classes.items():
        if other != name and name in (info.bases or ()) and m.flow._class_kind(other) == "module":
            return True
    info = m.classes.get(name)
    if info is None:
        return False
    for meth in info.methods.values():
        for n in m.walk(meth.body):
            if (isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
                    and isinstance(n.func.value, cst.Name) and n.func.value.value == "self"
                    and n.func.attr.value in _MODULE_ONLY_METHODS
                    and m.method_of_class(name, n.func.attr.value) is None):
                return True
    return False


def _self_call_message(ctx: Context, m, node, ctor: cst.Call, shown: str) -> str:
    """GL112's message when the model called is `self` (a method of the class moves its own inputs
    and calls `self(...)` / `self.forward(...)`): the instance built on the host, named by the
    assignment that binds it when there is one."""
    cls = m.class_of(node)
    what = f"`{cls.name.value}`" if cls is not None else "the model"
    parent = m.parent(ctor)
    inst = None
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
        inst = parent.targets[0].target.value
    built = f"`{inst}`, built on {line_ref(ctx, ctor)}," if inst else f"the instance built on {line_ref(ctx, ctor)}"
    move = f"`{inst} = {inst}.to(...)`" if inst else "`.to(...)`"
    return (f"{what} moves the inputs of this call to `{shown}` in its own method, but {built} is never "
            f"moved: its weights stay on the CPU; move it after it is built ({move}, to that device)")


def _method_call_site(m, mm, owner: cst.ClassDef, ctor: cst.Call) -> cst.Call | None:
    """For a layer that `owner.__init__` registers (`self.conv = nn.Conv2d(...)`) met on the host
    by an accelerator input inside a method of `owner` other than `forward`: the first call of
    that method the engine resolved whose receiver is a name (or attribute) holding an instance of
    `owner` on the host (`model.getFeatures(data)`), else None."""
    fn = m.enclosing(mm.node, cst.FunctionDef)
    if fn is None or fn.name.value in ("forward", "__call__", "__init__") or m.class_of(fn) is not owner:
        return None
    parent = m.parents.get(ctor)
    if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1
            and isinstance(parent.targets[0].target, cst.Attribute)
            and isinstance(parent.targets[0].target.value, cst.Name)
            and parent.targets[0].target.value.value == "self"):
        return None  # not a registered layer (`self.x = nn.Conv2d(...)`)
    init = m.enclosing(ctor, cst.FunctionDef)
    if init is None or init.name.value != "__init__":
        return None
    return _named_instance_site(m, fn, owner, 0)


def _named_instance_site(m, fn: cst.FunctionDef, owner: cst.ClassDef, depth: int) -> cst.Call | None:
    """The first resolved call of method `fn` of `owner` whose receiver is a name or attribute
    holding an instance of `owner` on the host; through `self.<method>(...)` calls of other
    methods of the class, up to three (`algorithm.update(batches)` -> `self.predict(x)` ->
    `self.network(x)`, TSD's ERM, F22-2)."""
    for site in m.resolved_sites(fn):
        f = site.func
        if not (isinstance(f, cst.Attribute) and isinstance(f.value, (cst.Name, cst.Attribute))):
            continue
        if isinstance(f.value, cst.Name) and f.value.value == "self":
            caller = m.enclosing(site, cst.FunctionDef)
            if (depth < 3 and caller is not None and caller is not fn and m.class_of(caller) is owner
                    and caller.name.value not in ("forward", "__call__", "__init__")):
                found = _named_instance_site(m, caller, owner, depth + 1)
                if found is not None:
                    return found
            continue
        v = m.value_of(f.value)
        if v.kind == "module" and v.cls == owner.name.value and v.dev is not None and v.dev.is_host:
            return site
    return None


_DATA_PARALLEL = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
                            "torch.nn.parallel.data_parallel.DataParallel"})


def _keyword_or_position(call: cst.Call, keyword: str, index: int):
    """The argument given for `keyword` (by name, or at position `index`); None when absent."""
    pos = 0
    for a in call.args:
        if a.star:
            return None
        if a.keyword is not None:
            if a.keyword.value == keyword:
                return a.value
            continue
        if pos == index:
            return a.value
        pos += 1
    return None


def _moved_input_device(ctx: Context, av) -> tuple:
    """The device text a tensor input was moved with (`X.to(devices[0])`, `x.cuda()`) when the move
    aims at an accelerator or at a device the analysis cannot name (not the CPU, not another
    value's own `.device`: `next(net.parameters()).device` follows the model wherever it is), and
    the device expression node when there is one: (text, node), (None, None) when not moved."""
    none = (None, None)
    if av.kind != "tensor" or av.dev is None and av.placed is None or av.dev is not None and not av.dev.is_acc:
        return none
    placed = av.placed
    if not (isinstance(placed, cst.Call) and isinstance(placed.func, cst.Attribute)
            and placed.func.attr.value in ("to", "cuda")):
        if av.dev is None:
            return none
        return (ctx.code(av.dev.expr), av.dev.expr) if av.dev.expr is not None else ("cuda", None)
    if placed.func.attr.value == "cuda":
        return "cuda", None
    target = _keyword_or_position(placed, "device", 0)
    if target is None or (isinstance(target, cst.Attribute) and target.attr.value == "device"):
        return none
    if isinstance(target, cst.SimpleString) and "cuda" not in target.value:
        return none
    if isinstance(target, cst.Name) and any(
            isinstance(b.value, cst.Attribute) and b.value.attr.value == "device"
            for b in ctx.model.bindings_of(target)):
        return none  # `device = next(iter(net.parameters())).device` on some path: the model's own place
    return ctx.code(target), target
