"""GL111 optimizer-state-before-model-move."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.devices import DeviceFacts
from gpulint.analysis.modules import self_attr
from gpulint.analysis.training import argument_for
from gpulint.rule import Context, Kind, Rule
from gpulint.sites import line_ref


class OptimizerStateBeforeModelMove(Rule):
    code = "GL111"
    name = "optimizer-state-before-model-move"
    summary = "The optimizer's state is loaded before the model it was built from is moved to the GPU."
    message = "`{opt}.load_state_dict()` runs before `{model}` is moved to the device: the state is restored on the CPU and the first call of `{opt}` that reads it (`step()`, or a schedule-free optimizer's `eval()`/`train()`) fails; move the model first"
    fix_safety = "unsafe"
    default = True
    kind = "crash"
    prefilter = r"load_state_dict"
    ast_prefilter = r"load_state_dict"
    explanation = '''
`Optimizer.load_state_dict` puts the loaded state (Adam's `exp_avg`, SGD's momentum buffers)
on the device of the parameters *at the time of the call*. When the model is moved afterwards,
its parameters go to the GPU and the state stays behind on the CPU; the first `optimizer.step()`
fails, with Adam's default multi-tensor implementation:
`RuntimeError: Tensors of the same index must be on the same device and the same dtype except
`step` tensors that can be CPU and float32/64 notwithstanding`.

The rule fires when the optimizer was built from `model.parameters()` (or a list/filter/param
groups of them, also inside a function of the file that returns it: `make_optimizer(model)`) and
every move of that model to a device comes after the optimizer's `load_state_dict` in the same
function (a move made by a function of the file the model is handed to counts at that call). A
module-level helper that restores the optimizer (`load_checkpoint(model, optimizer, path)`) is
reported when a caller moves the model only after calling it, also a trainer's `__init__` that
passes its `self.model`/`self.optimizer` and moves `self.model` afterwards (monodle's resume).

A class that restores its optimizer while it is built (`__init__`, or a method it calls such as
`self._setup_optim(state_dict)`) and moves its model only in a later method (`def cuda(self):
self.network.cuda()`) is reported too, when the optimizer's parameters trace to that model
(`self.network.parameters()`, a local holding them, the parameter groups a `self._get_param_groups()`
returns) and the model is not moved while the instance is built. So is a class whose methods
build and restore the optimizer in one method (or methods it calls) and move the model in another,
when every caller that runs both on one instance runs the restoring one first
(`info.create_optimizer_and_load(state)`, then `info.adjust_model_for_gpus()`).

The rule is silent when, after the load, the code moves the optimizer's state itself (a loop over
`optimizer.state.values()` that assigns `v.to(device)` / `v.cuda()`, written inline or in a
function of the file called with the optimizer): the usual workaround; and when the file binds the
optimizer only after the load (a notebook whose `%run -i` cell built it): the object restored is
not one the file builds.

The fix (unsafe: statements between the two may depend on where the model is) moves the
model-move statement just above the `load_state_dict` call, when both are simple statements in
the same block.

Bad:

```python
model = Net()
optimizer = torch.optim.Adam(model.parameters())
optimizer.load_state_dict(ckpt["optimizer"])
model.to(device)
```

Good:

```python
model = Net()
optimizer = torch.optim.Adam(model.parameters())
model.to(device)
optimizer.load_state_dict(ckpt["optimizer"])
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        facts = m.facts(DeviceFacts)
        for call, recv, _meth in m.method_calls("load_state_dict"):
            if not isinstance(recv, (cst.Name, cst.Attribute)):
                continue
            if self_attr(recv) is not None:
                found = _trainer_restore(m, facts, call, recv)
                if found is not None:
                    msg = self.message.format(opt=ctx.code(recv), model=found)
                    yield ctx.finding(call, msg + " (the instance restores it while it is built; the model is moved in a later method)")
                    continue
                later = _restored_before_moving_method(m, facts, call, recv)
                if later is not None and not _state_moved_after(m, recv, call):
                    model, mover, site = later
                    msg = self.message.format(opt=ctx.code(recv), model=model)
                    yield ctx.finding(call, msg + f" (`{mover}()` moves it, called after this method on {line_ref(ctx, site)})")
                    continue
            helper = _helper_load(m, facts, call, recv)
            if helper is not None:
                model, site = helper
                msg = self.message.format(opt=ctx.code(recv), model=model)
                yield ctx.finding(call, msg + f" (this function is called on {line_ref(ctx, site)}, before the move)")
                continue
            if m.kind_of(recv) is not Kind.OPTIMIZER and m.value_of(recv).kind != "optimizer":
                continue  # (the engine knows an optimizer a function of the file returns)
            if _bound_only_after(m, recv, call):
                continue  # the optimizer loaded here comes from elsewhere (a notebook's `%run -i`)
            models = facts.optimizer_models(recv)
            if not models:
                found = _engine_model_moved_after(m, ctx, facts, call, recv)
                if found is not None:
                    model, site = found
                    msg = self.message.format(opt=ctx.code(recv), model=model)
                    if site is not None:
                        # a method of the holder moves it (`trainer.fit(device)`: `self.net.to(device)`)
                        msg += f" (`{ctx.code(site.func)}()` moves it, on {line_ref(ctx, site)})"
                    yield ctx.finding(call, msg)
                continue
            for model in models:
                moves = [mv for mv in m.moves_of(model)]
                # moves of an earlier object under the same name (a first run's `model = Net().to(d)`
                # before `model = Net()` is rebuilt for the resume) do not move this one
                moves = _after_rebinding(m, facts, model, moves)
                # moved by a function of the file it is handed to (`do_train(model, ...)`)
                handed = facts.callee_moves(model)
                moves += handed
                if not moves or any(mv.to_cpu or facts.device_is_cpu(mv.device) for mv in moves):
                    continue
                if any(not facts.runs_before(call, mv.call, a_always=False) for mv in moves):
                    continue  # some move comes first, elsewhere, or in another function
                if _state_moved_after(m, recv, call):
                    continue  # `for state in optimizer.state.values(): ... state[k] = v.to(device)`
                first = min(moves, key=lambda mv: facts.order(mv.call))
                # a move inside a called function: moving that call would move the training with it
                fix = None if first in handed else self._fix(ctx, facts, call, first.call, model)
                yield ctx.finding(call, self.message.format(opt=ctx.code(recv), model=ctx.code(model)), fix)
                break

    @staticmethod
    def _fix(ctx: Context, facts: DeviceFacts, load: cst.Call, move: cst.Call, model: cst.BaseExpression):
        m = ctx.model
        load_stmt = m.statement_of(load)
        move_stmt = m.statement_of(move)
        if not isinstance(load_stmt, cst.SimpleStatementLine) or not isinstance(move_stmt, cst.SimpleStatementLine):
            return None
        if len(load_stmt.body) != 1 or len(move_stmt.body) != 1:
            return None
        block, i = facts.block_and_index(load_stmt)
        block2, j = facts.block_and_index(move_stmt)
        if block is None or block is not block2 or not isinstance(block, (cst.IndentedBlock, cst.Module)) or j <= i:
            return None
        # the move statement reads names; none of them may be (re)bound between the two
        between = block.body[i:j]
        read = _names_read(move_stmt)
        for stmt in between:
            for b in _bound_names(m, stmt):
                if b in read:
                    return None
        first, _ = ctx._line_bounds(move_stmt)
        _, last = ctx._line_bounds(move_stmt)
        text = ctx.source[first:last]
        if not text.endswith(("\n", "\r")):
            text += ctx.newline
        load_first, _ = ctx._line_bounds(load_stmt)
        return ctx.fix(
            ctx.edit(first, last, ""),
            ctx.insert_text(load_first, text),
            message=f"Move `{ctx.code(move_stmt.body[0])}` above the optimizer's `load_state_dict`",
        )


def _engine_model_moved_after(m, ctx: Context, facts, load: cst.Call, opt: cst.BaseExpression):
    """The flow engine's answer where the optimizer's names do not lead to its model (an optimizer
    returned by a method in a tuple, `optimizer, scheduler = self.get_optimizers(...)`, a model
    read through an alias, `model = self.model`: transformers#4240's early `Trainer.train`): the
    optimizer value knows the module object its parameters came from; every in-place move of
    that object to a device in the file runs after the load, in the same function, and none
    before. (The model's text, the holder's method call that moves it or None), or None."""
    v = m.value_of(opt)
    src = v.source
    if v.kind != "optimizer" or src is None or m.moves_in_chain(src):
        return None
    if not _built_on_host(m, src):
        return None  # `define_G(args, gpu_ids)` of another file may have moved it already (BIT_CD)
    scope = m.scope_of(load)
    holder = _holder_built_here(m, opt, load)
    moves = []
    for call, recv, _meth in m.method_calls("to", "cuda"):
        mv = m.move_of_call(call)
        if mv is None:
            continue
        rv = m.value_of(recv)
        if rv.kind != "module" or rv.origin is not src:
            continue
        if mv.to_cpu or facts.device_is_cpu(mv.device):
            return None
        if m.scope_of(call) is scope:
            moves.append((call, ctx.code(recv), None))
            continue
        fn = m.enclosing(call, cst.FunctionDef)
        if holder is None or fn is None or self_attr(recv) is None or m.class_of(fn) is None:
            return None  # moved in another function: which runs first is not known here
        # a method of the holder's class moves it (`def fit(self, device): self.net.to(device)`):
        # where this scope calls that method on the holder (P51-2); a method it never calls on
        # the holder here moves other instances, or none (P51-2b)
        name = fn.name.value
        moves += [(c, f"{holder}.{self_attr(recv)}", c) for c in m.calls
                  if isinstance(c.func, cst.Attribute) and c.func.attr.value == name
                  and isinstance(c.func.value, cst.Name) and c.func.value.value == holder
                  and m.scope_of(c) is scope]
    if not moves or any(not facts.runs_before(load, c, a_always=False) for c, _, _ in moves):
        return None
    if _state_moved_after(m, opt, load):
        return None
    _, model, site = min(moves, key=lambda mv: m.order[mv[0]])
    return model, site


def _built_on_host(m, src) -> bool:
    """The module object was made by a constructor that puts it on the host: a torch layer or a
    module class of the file (not a builder function, imported or not, that may move it)."""
    if not isinstance(src, cst.Call):
        return False
    q = m.qualname(src.func) or ""
    if not (q.startswith("torch.") or (isinstance(src.func, cst.Name) and src.func.value in m.classes)):
        return False
    # (a class of the file whose `__init__` moves itself, `self.to(device)`, is not on the host)
    made = m.value_of(src)
    return made.kind == "module" and made.dev is not None and made.dev.is_host


def _holder_built_here(m, opt, load: cst.Call) -> str | None:
    """`trainer` of `trainer.optim.load_state_dict(...)` when the load's scope builds it with one
    plain assignment before the load (`trainer = Trainer()`): nothing else has run its methods
    yet, so its methods called after the load are the only moves of its model."""
    if not (isinstance(opt, cst.Attribute) and isinstance(opt.value, cst.Name)):
        return None
    name = opt.value.value
    scope = m.scope_of(load)
    bound = m.bindings.get((scope, name)) or []
    if len(bound) != 1 or bound[0].how != "assign" or bound[0].node is None or not m.precedes(bound[0].node, load):
        return None
    if not isinstance(bound[0].value, cst.Call) or not isinstance(bound[0].value.func, cst.Name):
        return None
    if bound[0].value.func.value not in m.classes:
        return None
    if any(isinstance(a, (cst.For, cst.While)) for a in m.ancestors(load)):
        return None
    return name


def _bound_only_after(m, recv: cst.BaseExpression, load: cst.Call) -> bool:
    """Every binding of the optimizer's name in the load's own scope comes after the load, and the
    load is not in a loop: the object restored here is not the one the file builds later (a
    notebook whose `%run -i model_configuration/v3.py` cell built and moved model and optimizer,
    then `optimizer.load_state_dict(checkpoint[...])`, and a later cell rebuilds both with
    `model = nn.Sequential(...).to(device)`: dvgodoy/PyTorchStepByStep Chapter02)."""
    if not isinstance(recv, cst.Name):
        return False
    scope = m.scope_of(load)
    bound = m.bindings.get((scope, recv.value))
    if not bound:
        return False
    if any(isinstance(a, (cst.For, cst.While)) for a in m.ancestors(load)):
        return False
    return all(b.node is not None and m.precedes(load, b.node) for b in bound)


def _moves_state_of(m, loop: cst.For, holder: str) -> bool:
    """`for s in <holder>.state.values()` (or `.items()`, or `<holder>.state`) whose body moves
    tensors (`.to(...)`, `.cuda()`): the optimizer's state is put on the device by hand."""
    it = loop.iter
    if isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and it.func.attr.value in ("values", "items"):
        it = it.func.value
    if not (isinstance(it, cst.Attribute) and it.attr.value == "state" and m.module.code_for_node(it.value) == holder):
        return False
    return any(isinstance(c.func, cst.Attribute) and c.func.attr.value in ("to", "cuda") for c in m.calls_in(loop.body))


def _state_moved_after(m, opt: cst.BaseExpression, load: cst.Call) -> bool:
    """After the optimizer's `load_state_dict`, in the same scope, a loop moves the tensors of its
    `.state` to the device (the usual workaround, reid-strong-baseline#114), itself or in a function
    of the file called with the optimizer (`optimizer_to(optimizer, device)`)."""
    holder = m.module.code_for_node(opt)
    scope = m.scope_of(load)
    for loop in m.fors:
        if m.scope_of(loop) is scope and m.precedes(load, loop) and _moves_state_of(m, loop, holder):
            return True
    for c in m.calls:
        if m.scope_of(c) is not scope or not m.precedes(load, c) or not isinstance(c.func, cst.Name):
            continue
        fn = m.module_function(c.func.value)
        if fn is None:
            continue
        params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
        for i, a in enumerate(c.args):
            if a.keyword is None and not a.star and i < len(params) and m.module.code_for_node(a.value) == holder:
                name = params[i]
            elif a.keyword is not None and m.module.code_for_node(a.value) == holder:
                name = a.keyword.value
            else:
                continue
            if _function_moves_state(m, fn, name, 0):
                return True
    return False


def _function_moves_state(m, fn: cst.FunctionDef, name: str, depth: int) -> bool:
    """The file's function `fn` moves the state of its optimizer parameter `name` by hand, or
    hands `name` on to a function of the file that does (reid#114's trainer: `do_train(model,
    optimizer, ...)` -> `create_supervised_trainer(model, optimizer, ...)`, two levels at most)."""
    if any(m.scope_of(loop) is fn and _moves_state_of(m, loop, name) for loop in m.fors):
        return True
    if depth >= 2:
        return False
    for c in m.calls_in(fn):
        if not isinstance(c.func, cst.Name):
            continue
        callee = m.module_function(c.func.value)
        if callee is None or callee is fn:
            continue
        params = [p.name.value for p in (*callee.params.posonly_params, *callee.params.params)]
        for i, a in enumerate(c.args):
            if a.star or not isinstance(a.value, cst.Name) or a.value.value != name:
                continue
            inner = a.keyword.value if a.keyword is not None else (params[i] if i < len(params) else None)
            if inner is not None and _function_moves_state(m, callee, inner, depth + 1):
                return True
    return False


def _names_read(node: cst.CSTNode) -> set[str]:
    out: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Attribute(self, n: cst.Attribute) -> bool:
            n.value.visit(self)
            return False

        def visit_Arg(self, n: cst.Arg) -> bool:
            n.value.visit(self)
            return False

        def visit_Name(self, n: cst.Name) -> None:
            out.add(n.value)

    node.visit(V())
    return out


def _bound_names(m, stmt: cst.CSTNode) -> set[str]:
    out: set[str] = set()
    for (scope, name), bs in m.bindings.items():
        for b in bs:
            if b.how == "param":
                continue
            s = m.statement_of(b.node)
            if s is stmt or (s is not None and any(a is stmt for a in m.ancestors(s))):
                out.add(name.split(".", 1)[-1] if name.startswith("self.") else name)
    return out



def _construction_methods(m, cls: cst.ClassDef) -> set:
    """`__init__` and the methods of the class it calls as `self.<method>(...)` (any depth)."""
    methods = {f.name.value: f for f in cls.body.body if isinstance(f, cst.FunctionDef)}
    init = methods.get("__init__")
    if init is None:
        return set()
    out, todo = {init}, [init]
    while todo:
        fn = todo.pop()
        for c in m.calls_in(fn):
            name = self_attr(c.func)
            callee = methods.get(name) if name is not None else None
            if callee is not None and callee not in out:
                out.add(callee)
                todo.append(callee)
    return out


def _param_attributes(m, init: cst.FunctionDef) -> dict:
    """attribute -> parameter for every `self.<attr> = <param>` that is the attribute's only binding
    in `__init__`."""
    attrs = {self_attr(n.targets[0].target) for n in m.walk(init.body)
             if isinstance(n, cst.Assign) and len(n.targets) == 1 and self_attr(n.targets[0].target)}
    found = {a: _init_param_bound(m, init, a) for a in attrs}
    return {a: p for a, p in found.items() if p is not None}


def _init_param_bound(m, init: cst.FunctionDef, attr: str) -> str | None:
    """`self.<attr> = <param>` in `__init__` as the attribute's only binding: that parameter."""
    params = {p.name.value for p in (*init.params.posonly_params, *init.params.params, *init.params.kwonly_params)}
    found = None
    for node in m.walk(init.body):
        if isinstance(node, cst.Assign) and len(node.targets) == 1 and self_attr(node.targets[0].target) == attr:
            if found is not None or not isinstance(node.value, cst.Name) or node.value.value not in params:
                return None
            found = node.value.value
    return found


def _built_from_attribute(m, cls: cst.ClassDef, building: set, attr: str) -> str | None:
    """`self.<attr> = torch.optim.X(<params>, ...)` as the only binding of the attribute in the
    methods that build the instance (`__init__` and those it calls: mt-dnn's `_setup_optim`),
    with <params> traced to `.parameters()` / `.named_parameters()` of one model attribute
    (`self.<model>.parameters()` inline, or through a local, a parameter of the method that every
    call passes such a value, a `self.<method>()` result: `self._get_param_groups()`). That
    model attribute, or None (no such binding, or the parameters cannot be traced to one model)."""
    found = None
    for fn in building:
        for node in m.walk(fn.body):
            if not (isinstance(node, cst.Assign) and any(self_attr(t.target) == attr for t in node.targets)):
                continue
            if found is not None or len(node.targets) != 1 or not isinstance(node.value, cst.Call):
                return None
            if not (m.qualname(node.value.func) or "").startswith("torch.optim."):
                return None
            params = _params_argument(node.value)
            if params is None:
                return None
            roots = _param_roots(m, cls, building, fn, params, 0)
            if roots is None or len(roots) != 1:
                return None
            found = next(iter(roots))
    return found


def _params_argument(ctor: cst.Call) -> cst.BaseExpression | None:
    """The optimizer constructor's first argument (`params`)."""
    for i, a in enumerate(ctor.args):
        if a.star:
            return None
        if (a.keyword is None and i == 0) or (a.keyword is not None and a.keyword.value == "params"):
            return a.value
    return None


def _param_roots(m, cls: cst.ClassDef, building: set, fn: cst.FunctionDef, expr: cst.BaseExpression,
                 depth: int) -> set | None:
    """The model attributes whose `.parameters()` / `.named_parameters()` `expr` (evaluated in
    `fn`) is built from: the calls inside it; else, for a name, what each of its bindings in `fn`
    gives (a local: its assigned values; a parameter: the arguments of every `self.<fn>(...)`
    call in the building methods); for `self.<method>()`, what every `return` of that method
    gives. None when some part cannot be traced (a parameter call on something that is not a
    `self` attribute, a name bound otherwise, no call site, too deep)."""
    if depth > 4:
        return None
    calls = [c for c in (expr, *m.calls_in(expr)) if isinstance(c, cst.Call)
             and isinstance(c.func, cst.Attribute) and c.func.attr.value in ("parameters", "named_parameters")]
    if calls:
        roots = {self_attr(c.func.value) for c in calls}
        return None if None in roots else roots
    if isinstance(expr, cst.Name):
        bindings = m.bindings.get((fn, expr.value))
        if not bindings:
            return None
        out: set = set()
        for b in bindings:
            if b.how == "assign" and b.value is not None:
                got = _param_roots(m, cls, building, fn, b.value, depth + 1)
            elif b.how == "param" and fn.name.value != "__init__":
                got = _roots_from_callers(m, cls, building, fn, expr.value, depth + 1)
            else:
                got = None
            if got is None:
                return None
            out |= got
        return out
    if isinstance(expr, cst.Call) and not expr.args:
        name = self_attr(expr.func)
        meth = next((f for f in cls.body.body if isinstance(f, cst.FunctionDef) and f.name.value == name), None)
        if name is None or meth is None:
            return None
        returns = [r for r in m.walk(meth.body, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) if isinstance(r, cst.Return)]
        if not returns or any(r.value is None for r in returns):
            return None
        out = set()
        for r in returns:
            got = _param_roots(m, cls, building, meth, r.value, depth + 1)
            if got is None:
                return None
            out |= got
        return out
    return None


def _roots_from_callers(m, cls: cst.ClassDef, building: set, fn: cst.FunctionDef, param: str,
                        depth: int) -> set | None:
    """The roots of the arguments every `self.<fn>(...)` call of the building methods passes for
    `param`; None when there is no such call, one passes nothing for it, or one is made elsewhere."""
    out: set = set()
    sites = 0
    for c in m.calls:
        if self_attr(c.func) != fn.name.value or m.class_of(c) is not cls:
            continue
        caller = m.enclosing(c, cst.FunctionDef)
        if caller not in building:
            return None  # also called later, with other parameters: not this construction's
        arg = argument_for(fn, c, param)
        if arg is None:
            return None
        got = _param_roots(m, cls, building, caller, arg, depth + 1)
        if got is None:
            return None
        out |= got
        sites += 1
    return out if sites else None


def _trainer_restore(m, facts, load: cst.Call, opt: cst.Attribute) -> str | None:
    """A class (a trainer) restores its optimizer's state while it is built (`__init__`, or a
    method `__init__` calls: `self.restore_checkpoint()`), the optimizer and the model were both
    handed to the constructor (`Trainer(model, ..., optimizer)` with `optimizer` built from
    `model.parameters()`), the model is not moved before the construction nor while the instance
    is built, and a later method moves it (`self._model.to(device)` in `train()`): schnetpack#126.
    Returns the model attribute's text, or None."""
    cls = m.class_of(load)
    fn = m.enclosing(load, cst.FunctionDef)
    if cls is None or fn is None:
        return None
    building = _construction_methods(m, cls)
    if fn not in building:
        return None
    init = next(f for f in building if f.name.value == "__init__")
    methods = [f for f in cls.body.body if isinstance(f, cst.FunctionDef)]
    later = [f for f in methods if f not in building]
    sites = [c for c in m.calls if isinstance(c.func, cst.Name) and c.func.value == cls.name.value]
    if not sites:
        return None
    opt_param = _init_param_bound(m, init, opt.attr.value)
    model_attr = None
    if opt_param is None:
        # `self.optimizer = torch.optim.Adam(self.model.parameters())` built by the constructor
        model_attr = _built_from_attribute(m, cls, building, opt.attr.value)
        if model_attr is None:
            return None
        p = _init_param_bound(m, init, model_attr)
        if p is not None and not _handed_in_unmoved(m, init, sites, p):
            return None  # `Trainer(Net().to(device), ...)`, or a model moved before the construction
        sites = []
    for site in sites:
        arg = argument_for(init, site, opt_param)
        if not isinstance(arg, cst.Name):
            return None
        models = facts.optimizer_models(arg)
        if len(models) != 1:
            return None
        model = models[0]
        # the attribute the constructor keeps that model in
        attr = None
        for a, p in _param_attributes(m, init).items():
            given = argument_for(init, site, p)
            if isinstance(given, cst.Name) and given.value == model.value:
                attr = a
        if attr is None or (model_attr is not None and attr != model_attr):
            return None
        model_attr = attr
        # not moved before the instance is built (nor in the expression that gave it)
        for mv in m.moves_of(model):
            if m.precedes(mv.call, site) or mv.to_cpu:
                return None
    # moved by a later method, never while the instance is built
    moves_later, moves_building = False, False
    for call, recv, meth in m.method_calls("to", "cuda"):
        if self_attr(recv) != model_attr or m.class_of(call) is not cls:
            continue
        owner = m.enclosing(call, cst.FunctionDef)
        if owner in building:
            moves_building = True
        elif owner in later:
            mv = m.move_of_call(call)
            if mv is not None and not mv.to_cpu and not facts.device_is_cpu(mv.device):
                moves_later = True
    if moves_building or not moves_later:
        return None
    if _state_moved_after(m, opt, load):
        return None
    return "self." + model_attr


def _restored_before_moving_method(m, facts, load: cst.Call, opt: cst.Attribute):
    """InnerEye#198's `ModelAndInfo`: methods of a class build `self.<opt>` from
    `self.<model>.parameters()` and restore its state; another method moves `self.<model>`
    (`self.model = self.model.cuda()`, also through `self.to_cuda()`); and every caller that runs
    both on one instance (`info.try_create_optimizer_and_load_from_checkpoint()`, then
    `info.adjust_model_for_gpus()`) runs the restoring one first, with no move of the model while
    the instance is built. (model text, moving method's name, the later call), or None."""
    cls = m.class_of(load)
    fn = m.enclosing(load, cst.FunctionDef)
    if cls is None or fn is None or m.class_of(fn) is not cls:
        return None
    building = _construction_methods(m, cls)
    if fn in building:
        return None
    methods = {f.name.value: f for f in cls.body.body if isinstance(f, cst.FunctionDef)}
    # the optimizer: one binding in the class's methods, from one model attribute's parameters,
    # made by a later method (InnerEye) or while the instance is built (pytorch#8741's `Trainer`:
    # `self.optim = Adam(self.network.parameters())` in `__init__`, restored by `load()`)
    later_built = _built_from_attribute(m, cls, set(methods.values()) - building, opt.attr.value)
    init_built = _built_from_attribute(m, cls, building, opt.attr.value)
    if (later_built is None) == (init_built is None):
        return None
    model_attr = later_built or init_built
    if init_built is not None and not _model_unmoved_at_construction(m, cls, building, model_attr):
        return None
    # the methods that move the model (none of them a building one or the restoring one)
    movers = set()
    for call, recv, _meth in m.method_calls("to", "cuda"):
        if self_attr(recv) != model_attr or m.class_of(call) is not cls:
            continue
        owner = m.enclosing(call, cst.FunctionDef)
        mv = m.move_of_call(call)
        if owner is None or mv is None or mv.to_cpu or facts.device_is_cpu(mv.device):
            continue
        if owner is fn or owner in building or owner.name.value not in methods:
            return None
        movers.add(owner.name.value)
    if not movers:
        return None

    def reaching(names: set) -> set:
        # the methods that run one of `names` through `self.<name>(...)` calls, and those themselves
        out, todo = set(names), list(names)
        while todo:
            target = todo.pop()
            for name, f in methods.items():
                if name in out:
                    continue
                if any(isinstance(c.func, cst.Attribute) and c.func.attr.value == target
                       and isinstance(c.func.value, cst.Name) and c.func.value.value == "self"
                       for c in m.calls_in(f)):
                    out.add(name)
                    todo.append(name)
        return out

    loading = reaching({fn.name.value})
    moving = reaching(movers)
    if loading & moving or loading & {f.name.value for f in building}:
        return None

    def outside_calls(names: set) -> list:
        return [c for c in m.calls if isinstance(c.func, cst.Attribute) and c.func.attr.value in names
                and isinstance(c.func.value, cst.Name) and c.func.value.value != "self"
                and m.class_of(c) is not cls]

    load_sites = [c for c in outside_calls(loading) if _instance_of(m, c.func.value, cls)]
    move_sites = [c for c in outside_calls(moving) if _instance_of(m, c.func.value, cls)]
    if not load_sites or not move_sites:
        return None
    later = None
    for site in load_sites:
        scope = m.enclosing(site, cst.FunctionDef)
        same = [mv for mv in move_sites if mv.func.value.value == site.func.value.value
                and m.enclosing(mv, cst.FunctionDef) is scope]
        if not same or any(m.precedes(mv, site) or m.exclusive(site, mv) for mv in same):
            return None  # moved first, in another caller, or on another branch
        later = later or min(same, key=lambda c: m.order[c])
    return "self." + model_attr, later.func.attr.value, later


def _model_unmoved_at_construction(m, cls: cst.ClassDef, building: set, model_attr: str) -> bool:
    """The model attribute is not on a device when the instance is built: made by the building
    methods, or a parameter of `__init__` that no construction of the class passes moved
    (`Trainer(Net().to(device))`, or a name moved before the construction)."""
    init = next((f for f in building if f.name.value == "__init__"), None)
    if init is None:
        return False
    for fn in building:
        for node in m.walk(fn.body):
            if isinstance(node, cst.Assign) and any(self_attr(t.target) == model_attr for t in node.targets):
                if isinstance(node.value, cst.Call) and m.moves_in_chain(node.value):
                    return False  # `self.network = Net().to(device)`
    p = _init_param_bound(m, init, model_attr)
    if p is None:
        return True
    sites = [c for c in m.calls if isinstance(c.func, cst.Name) and c.func.value == cls.name.value]
    return bool(sites) and _handed_in_unmoved(m, init, sites, p)


def _handed_in_unmoved(m, init: cst.FunctionDef, sites: list, param: str) -> bool:
    """Every construction (`sites`) hands `__init__`'s `param` a model not yet on a device: no move
    in the argument's own chain (`Trainer(Net().to(device))`), and a name not moved (nor put on the
    host) before the construction."""
    for site in sites:
        arg = argument_for(init, site, param)
        if isinstance(arg, cst.Call):
            if m.moves_in_chain(arg):
                return False
        elif not isinstance(arg, cst.Name) or any(m.precedes(mv.call, site) or mv.to_cpu for mv in m.moves_of(arg)):
            return False
    return True


def _instance_of(m, recv: cst.Name, cls: cst.ClassDef) -> bool:
    """The engine knows `recv` holds an instance of the file's class `cls`."""
    v = m.value_of(recv)
    return v.cls == cls.name.value


def _after_rebinding(m, facts, model: cst.BaseExpression, moves: list) -> list:
    """Drop the moves that run before the plain assignment of `model`'s name that always runs
    before `model` is read here (the binding the optimizer was built from): they moved the object
    the name held before (`model = Net().to(d)` ... `model = Net()` for the resume). Not when that
    assignment builds on the old object (`model = nn.DataParallel(model)`)."""
    if not isinstance(model, cst.Name):
        return moves
    reaching = [b for b in m.bindings_of(model)
                if b.how == "assign" and facts.runs_before(b.node, model, a_always=True)]
    if not reaching:
        return moves
    last = max(reaching, key=lambda b: facts.order(m.statement_of(b.node)))
    stmt = m.statement_of(last.node)
    if stmt is None or last.value is None or model.value in _names_read(last.value):
        return moves  # `model = nn.DataParallel(model)`: the same (moved) parameters under a new name
    return [mv for mv in moves if not facts.runs_before(mv.call, stmt, a_always=False)]


def _helper_load(m, facts, call: cst.Call, recv) -> tuple[str, cst.Call] | None:
    """`optm.load_state_dict(...)` in a module-level function of the file whose parameter `optm`
    every call site gives a name of an optimizer over a model that the caller moves only after
    that call (mrs's `load_epoch(path, model, optm)` then `model.to(device)`, E52-2): (the
    model's text, the first such call site); None otherwise."""
    if not isinstance(recv, cst.Name):
        return None
    bindings = m.bindings_of(recv)
    if len(bindings) != 1 or bindings[0].how != "param":
        return None
    fn = m.enclosing(call, cst.FunctionDef)
    if fn is None or m.class_of(fn) is not None or m.enclosing(fn, cst.FunctionDef) is not None:
        return None
    sites = m.call_sites(fn)
    args = m.param_arguments(bindings[0])
    if not sites or len(args) != len(sites):
        return None
    for site, arg in zip(sites, args):
        if m.value_of(arg).kind != "optimizer":
            return None
        if not isinstance(arg, cst.Name):
            # `load_checkpoint(self.model, self.optimizer, resume)` in a trainer's `__init__` that
            # moves `self.model` after the call (monodle#7, E69-3): the engine knows the module
            # object the optimizer's parameters came from
            found = _moved_after_site(m, facts, site, arg)
            if found is not None:
                return None if _state_moved_after(m, recv, call) else (found, site)
            continue
        if _bound_only_after(m, arg, site):
            return None
        for model in facts.optimizer_models(arg):
            moves = _after_rebinding(m, facts, model, list(m.moves_of(model))) + facts.callee_moves(model)
            if not moves or any(mv.to_cpu or facts.device_is_cpu(mv.device) for mv in moves):
                continue
            if any(not facts.runs_before(site, mv.call, a_always=False) for mv in moves):
                continue
            if _state_moved_after(m, recv, call):
                return None
            return m.module.code_for_node(model), site
    return None


def _moved_after_site(m, facts, site: cst.Call, opt: cst.BaseExpression) -> str | None:
    """The text of the module the optimizer `opt` (an argument of `site`) was built over, when that
    module object was made on the host by this file and every move of it to a device is in the
    function of `site`, after it; None otherwise."""
    src = m.value_of(opt).source
    if src is None or m.moves_in_chain(src) or not _built_on_host(m, src):
        return None
    scope = m.scope_of(site)
    moves = []
    for mcall, recv, _meth in m.method_calls("to", "cuda"):
        mv = m.move_of_call(mcall)
        if mv is None:
            continue
        rv = m.value_of(recv)
        if rv.kind != "module" or rv.origin is not src:
            continue
        if mv.to_cpu or facts.device_is_cpu(mv.device) or m.scope_of(mcall) is not scope:
            return None  # moved back, or in another function: which runs first is not known here
        moves.append((mcall, recv))
    if not moves or any(not facts.runs_before(site, c, a_always=False) for c, _ in moves):
        return None
    return m.module.code_for_node(min(moves, key=lambda mv: m.order[mv[0]])[1])
