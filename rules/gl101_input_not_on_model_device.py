"""GL101 input-not-on-model-device."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.mismatch import accelerator_named_cpu, batch_source, device_text_at, moved_back, name_under
from gpulint.analysis.modules import self_attr
from gpulint.analysis.training import argument_for
from gpulint.flow import copy_of_name
from gpulint.rule import Context, Rule


class InputNotOnModelDevice(Rule):
    code = "GL101"
    name = "input-not-on-model-device"
    summary = "The model is moved to a GPU, but the batches from the DataLoader reach it on the CPU."
    message = "`{name}` comes from {source} on the CPU and reaches `{callee}` on `{device}` unmoved; move it first: `{line}`"
    fix_safety = "unsafe"
    default = True
    kind = "crash"
    prefilter = r"DataLoader|return_tensors"
    ast_prefilter = r"DataLoader|return_tensors"
    explanation = '''
A model moved with `model.to(device)` keeps its weights on the GPU; the batches a DataLoader
yields stay on the CPU until they are moved. Passing them unmoved crashes the first step with
`RuntimeError: Expected all tensors to be on the same device, but found at least two devices,
cuda:0 and cpu!` (for `nn.Linear`: `... (when checking argument for argument mat1 in method
wrapper_CUDA_addmm)`), an hour into a cluster job if the script was only tried on a laptop.

The same holds for one batch taken with `next(iter(loader))`, for a tokenizer's
`return_tensors="pt"` output (`model(**inputs)`), and for a batch handed from the loop to another
method of the model (`net.neg_elbo(x=bx, y=by)`, a VAE's `loss_function(x)`): that call is
reported, one finding per unmoved tensor that reaches the model or a loss with its outputs.

The fix (unsafe: it changes where the loop's tensors live) moves the batch at the top of the loop
body (or right after the statement that made it) with the same device expression the model was
moved with, or the model's own `next(model.parameters()).device`, never a literal device:
`x = x.to(device)` for tuple batches, `batch = {k: v.to(device) for k, v in batch.items()}` for
dict batches, `inputs = inputs.to(device)` for tokenizer output. No fix is offered when the code
reads a moved value again beside a tensor it keeps on the CPU (`pred.cpu() == batch["label"]`,
`batch["label"].numpy()`): moving the whole batch would make that line fail instead; the message
still names the move.

The rule is silent when the loader has a `collate_fn` or a Dataset of the file that moves
tensors itself, when the batch is re-bound or moved anywhere in the loop, when the model's own
`forward` re-binds that input with a move of it (`x = x.cuda()`, `x = torch.tensor(x).to(self.device)`,
also when a method of the model calls `self.forward(input)`), and when the model's placement is not
known.

Bad:

```python
model = Net().to(device)
for x, y in loader:
    loss = criterion(model(x), y)
```

Good:

```python
model = Net().to(device)
for x, y in loader:
    x, y = x.to(device), y.to(device)
    loss = criterion(model(x), y)
```
'''

    def check(self, ctx: Context):
        """The flow engine's mismatches whose CPU operand is a batch (of a DataLoader, or a
        tokenizer's tensors) that reaches the model, or a loss with the model's outputs, unmoved."""
        m = ctx.model
        if m.frameworks & {"lightning", "accelerate", "hf-trainer", "deepspeed"}:
            return
        found = []  # (call, root name, host operand, source, mismatch)
        keyed = []  # (key, found's tuple) before the first use of each key is chosen
        seen = set()
        inside = set()  # id(call) of mismatches found with a call's arguments but reported in the callee
        for mm in m.mismatches():
            if accelerator_named_cpu(m, mm):
                continue  # `device = "cpu"`: both operands are on the host
            if mm.op not in ("module-call", "call"):
                continue
            source = batch_source(m, mm.host_value.origin)
            if source is None or moved_back(mm.host_value):
                continue
            node, host = mm.node, mm.host
            lifted = _method_call_site(m, mm) if mm.site is None else None
            if lifted is not None:
                # the batch handed to a method of the model from the loop (`net.neg_elbo(x=bx,
                # y=by)`, a VAE's `loss_function(x)`): reported at that call, where it is moved
                node, host = lifted
            elif mm.site is not None:
                # found with the arguments of one call of a helper (or of the model, whose forward
                # hands the batch on): reported at that call, on the argument that carries the batch;
                # when the callee binds the batch itself (its loop over a loader it is given),
                # reported in the callee where the batch meets the model
                operand = _site_operand(m, mm)
                if operand is not None:
                    node, host = mm.site, operand
                elif _bound_in_callee(m, mm) or _site_hands_loader(m, mm):
                    inside.add(id(node))
                else:
                    continue
            if mm.op == "module-call" and mm.site is None and _forward_moves_argument(m, mm):
                continue  # the model's forward moves this input itself on the path that needs it
            root = _root_name(host)
            if (root is None and isinstance(host, cst.Attribute) and isinstance(host.value, cst.Name)
                    and m.value_of(host.value).kind == "object"):
                root = host.value  # `data.y` of a batch object (what a `collate_fn` made): the batch is `data`
            if root is None:
                # `target.view_as(pred)`, `y.flatten()`: the batch name under methods that keep its device
                base = name_under(host)
                bv = m.value_of(base) if base is not None else None
                if bv is not None and bv.kind == "tensor" and bv.dev is not None and bv.dev.is_host:
                    root = base
            if root is not None and _discarded_move(m, root, node):
                continue  # `x.to(device)` without assigning it: GL104 says so, and its fix fixes this
            key = (root.value if root is not None else ctx.code(host), m.scope_of(node),
                   m.enclosing(node, cst.For))
            keyed.append((key, (node, root, host, source, mm)))
        keyed.sort(key=lambda f: ctx.span(f[1][0]))
        for key, f in keyed:
            if key in seen:
                continue  # one finding per batch name and loop: its first use
            seen.add(key)
            found.append(f)
        # a dict batch handed on whole to a helper or the model gets no fix: which tensors to move
        # (nested dicts among them) is the callee's business
        fixes = self._fixes(ctx, [f for f in found if f[4].site is None or id(f[0]) in inside
                                  or m.value_of(f[2]).kind != "batch"
                                  and (m.value_of(f[2]).kind != "object" or _returning_to(m, m.value_of(f[2])))])
        for call, root, host, source, mm in found:
            name = root.value if root is not None else ctx.code(host)
            fix, line, device, late = fixes.get((id(call), root.value if root is not None else None),
                                                (None, None, None, None))
            at_site = mm.site is not None and id(call) not in inside
            line_device = None
            if device is None:
                d = mm.acc_value.dev
                device = ctx.code(d.expr) if d is not None and d.expr is not None else "the accelerator"
                if device == "the accelerator" and not at_site:
                    # moved with no device expression (`model.cuda()` under `if use_cuda:`): the
                    # suggested line names the model's own device, never a `device` the file may lack
                    line_device = _operand_device_at(ctx, mm, call)
                if not at_site and (mm.site is not None or _local_elsewhere(m, d.expr if d is not None else None, call)):
                    # another function's expression: maybe not a name here (G65-6); the argument the
                    # model's construction gave it, the one the loop moves the batch's other tensors
                    # with, else (in the suggested line only) the model's or the other operand's own device
                    device = ((device_text_at(ctx, d.expr, _model_of(m, mm), call) if mm.site is None else None)
                              or _sibling_move(ctx, None, call) or _loop_move_name(ctx, call) or "the model's device")
                    line_device = _operand_device(ctx, mm)
            callee = ctx.code(mm.acc if mm.op == "module-call" else mm.node.func)
            if (at_site or call is not mm.node and mm.site is None) and isinstance(mm.function, cst.FunctionDef):
                callee = f"{callee}` in `{mm.function.name.value}()"
            if at_site and (m.value_of(host).kind == "batch" or (m.value_of(host).kind == "object" and fix is None)):
                # a dict batch (a batch object) handed on whole: which of its tensors the callee feeds
                # is not named here
                text = self.message.format(name=name, source=source, callee=callee, device=device, line="")
                text = text[:text.index("; move it first")] + f"; move its tensors to `{device}` first"
                yield ctx.finding(call, text, None)
                continue
            if line is None and not (device.startswith("the ") and line_device is None):
                moved = f"{name}.to({device if not device.startswith('the ') else line_device})"
                line = f"{name} = {moved}" if root is not None else moved  # not a name: move the expression
            text = self.message.format(name=name, source=source, callee=callee, device=device, line=line)
            if line is None:
                # no device expression that exists here: say it in words rather than name one
                text = text[:text.index("; move it first")] + "; move it to the model's device first"
            if device.startswith("the "):
                text = text.replace(f"`{device}`", device)  # words, not code
            if late is not None:
                text += (f" (no automatic fix: `{late}` is read again later beside a tensor kept on the CPU;"
                         " keep a CPU copy of what is compared there)")
            yield ctx.finding(call, text, fix)

    def _fixes(self, ctx: Context, found) -> dict:
        """One fix per place the batches are bound: at the top of the loop body for a loop's
        batches, right after the statement for one batch (`next(iter(loader))`, a tokenizer call).
        The other tensors bound there from the same batch and still on the host are moved too
        (the labels beside the inputs). Returns (id(call), batch name) -> (fix, the message's line, device, late)."""
        m = ctx.model
        placed = []
        devices: dict[int, str] = {}  # per binding place: the model's move (module calls first)
        for call, root, host, source, mm in found:
            where = self._bound_at(m, root, call) if root is not None else None
            if where is None:
                continue
            placed.append((where, call, root, host, source))
            device = self._device_text(ctx, where, call, mm)
            if device is not None and (id(where) not in devices or mm.op == "module-call"):
                devices[id(where)] = device
        groups: dict[int, tuple] = {}
        for where, call, root, host, source in placed:
            device = devices.get(id(where))
            if device is None:
                continue
            g = groups.setdefault(id(where), (where, {}, [], device))
            g[1].setdefault(root.value, self._move_line(m, root.value, host, source, device))
            g[2].append((call, root.value))
        out = {}
        moved_at: dict[int, tuple] = {}  # id(where) -> (fix, name -> the line that moves it)
        for where, lines, calls, device in groups.values():
            ordered = []
            moves = {}
            for t in _target_names(where):
                if t.value in lines:
                    ordered.append(lines[t.value])
                elif self._host_sibling(m, t, calls[0][0]):
                    ordered.append(f"{t.value} = {t.value}.to({device})")
                else:
                    continue
                moves[t.value] = ordered[-1]
            late = next((n for n in moves if _meets_host_later(m, n, where, [c for c, _ in calls])), None)
            if late is not None:
                # the function reads a moved value later where it meets a tensor it keeps on the
                # host (`pred.cpu() == batch["label"]`, OpenBookQA#5): moving it there would make
                # the fixed script fail, so no fix; the message still names the move
                for call, name in calls:
                    out[(id(call), name)] = (None, lines[name], device, late)
                continue
            if isinstance(where, cst.For):
                body = where.body
                if not isinstance(body, cst.IndentedBlock) or not body.body or not ordered:
                    continue
                edit = ctx.insert_before(body.body[0], "\n".join(ordered))
                fix = ctx.fix(edit, message="Move the batch to the model's device at the top of the loop")
            else:
                edit = ctx.insert_after(where, "\n".join(ordered))
                fix = ctx.fix(edit, message="Move the batch to the model's device after it is made")
            for call, name in calls:
                out[(id(call), name)] = (fix, lines[name], device, None)
            moved_at[id(where)] = (fix, moves, device)
        # a finding whose operand is computed from a batch name (`target.flatten()`) that one of
        # these edits moves (a sibling of the reported input) shares that edit: fixing one
        # finding resolves the other, so both carry the same fix (applied once)
        for call, root, host, source, mm in found:
            if root is not None or (id(call), None) in out:
                continue
            base = name_under(host)
            if base is None:
                continue
            where = self._bound_at(m, base, call)
            fix, moves, device = moved_at.get(id(where), (None, {}, None))
            if fix is not None and base.value in moves:
                out[(id(call), None)] = (fix, moves[base.value], device, None)
        return out

    @staticmethod
    def _host_sibling(m, t: cst.Name, call) -> bool:
        """A tensor of the same batch, bound beside the reported one, on the host where it is bound
        and not re-bound before the model call."""
        v = m.value_of(t)
        if v.kind != "tensor" or v.dev is None or not v.dev.is_host or batch_source(m, v.origin) is None:
            return False
        if len([b for b in m.bindings_of(t) if m.scope_of(b.node) is m.scope_of(t)]) != 1:
            return False
        return _meets_tensors(m, t)

    @staticmethod
    def _bound_at(m, root: cst.Name, call: cst.Call):
        """The loop whose target binds `root` around `call`, or the one simple statement that
        binds it before `call` in the same scope; None when neither."""
        bindings = m.bindings_of(root)
        loops = []
        for b in bindings:
            if b.how == "for":
                loop = m.enclosing(b.node, cst.For)
                if loop is not None and m.contains(loop.body, call):
                    loops.append(loop)
        if loops:
            return loops[-1] if len(loops) == 1 else None
        if len(bindings) > 1:
            return _if_else_binding(m, bindings, call)
        if len(bindings) != 1 or bindings[0].how not in ("assign", "unpack"):
            return None
        stmt = m.statement_of(bindings[0].node)
        if (not isinstance(stmt, cst.SimpleStatementLine) or m.scope_of(stmt) is not m.scope_of(call)
                or not m.precedes(stmt, call)):
            return None
        return stmt

    @staticmethod
    def _device_text(ctx: Context, where, call: cst.Call, mm) -> str | None:
        """The device expression to move the batch with: the one the model was moved with when it
        is a name bound where the move goes, else the model's own device; never a literal."""
        m = ctx.model
        model_device = None
        if mm.site is not None and isinstance(mm.function, cst.FunctionDef) and m.contains(mm.function, call):
            # reported in the callee: the parameter the call hands the model's device to, if any
            d = mm.acc_value.dev
            given = _parameter_given(m, mm.site, mm.function, d.expr) if d is not None else None
            return given or _sibling_move(ctx, where, call)
        if mm.site is not None:
            # the callee's operand is the caller's only through the call: the model it calls, if any
            func = mm.site.func
            if isinstance(func, (cst.Name, cst.Attribute)) and m.value_of(func).kind == "module":
                model_device = f"next({ctx.code(func)}.parameters()).device"
        elif mm.op == "module-call" and isinstance(mm.acc, (cst.Name, cst.Attribute)):
            acc = mm.acc
            if (isinstance(acc, cst.Attribute) and m.value_of(acc).kind != "module"
                    and m.value_of(acc.value).kind == "module"):
                acc = acc.value  # `model.generate(ids)`: a method of the model, whose parameters are the model's
            model_device = f"next({ctx.code(acc)}.parameters()).device"  # the model: the call's callee
        d = mm.acc_value.dev
        expr = d.expr if d is not None else None
        if expr is None:
            return model_device
        root = expr
        while isinstance(root, (cst.Attribute, cst.Subscript)):
            root = root.value
        if isinstance(root, cst.Name) and root.value != "self":
            scope = m.scope_of(where)
            home = m.scope_of(expr)
            if home is not m.module and home is not scope and (home, root.value) in m.bindings:
                # a local of another function (`Trainer.__init__(self, model, device)` moved the
                # model with its parameter): the same name elsewhere is another value, if any;
                # the attribute that function stored it in, when the batch is moved in a method;
                # the parameter it is handed to, when the batch is moved in a function `home` calls
                return (_stored_attribute(ctx, home, root, where) or _handed_parameter(m, home, root, where)
                        or device_text_at(ctx, expr, _model_of(m, mm), call)
                        or model_device or _sibling_move(ctx, where, call))
            if (scope, root.value) in m.bindings or (m.module, root.value) in m.bindings or root.value in m.aliases:
                if (not isinstance(expr, cst.Call) and (scope, root.value) not in m.bindings
                        and home is m.module and isinstance(scope, cst.FunctionDef)):
                    # a module-level name (`cfg = Config()` under `if __name__ == "__main__":`)
                    # that every call of this function hands it as a parameter (`config`): the
                    # parameter, which exists wherever the function is imported and called from
                    param = _parameter_for_global(m, scope, root.value)
                    if param is not None:
                        return param + ctx.code(expr)[len(root.value):]
                if not isinstance(expr, cst.Call):
                    own = _class_move_attribute(m, where) if (scope, root.value) not in m.bindings else None
                    # in a method of a class whose other methods move batches with `self.device`,
                    # that attribute: a module-level `device` may not exist where the class lives
                    return own or ctx.code(expr)
        if (isinstance(expr, cst.Attribute) and expr is not root and isinstance(expr.value, cst.Name)
                and expr.value.value == "self"):
            # `self.device`, the model moved with it in `__init__`: the same instance's attribute
            # where the batch is moved in another method of that class
            cls = m.class_of(expr)
            fn = m.enclosing(where, cst.FunctionDef)
            if (cls is not None and fn is not None and m.class_of(fn) is cls and fn.params.params
                    and fn.params.params[0].name.value == "self" and not fn.decorators):
                return ctx.code(expr)
        return model_device

    @staticmethod
    def _move_line(m, name: str, host, source: str, device: str) -> str:
        move = f".to({device})"
        parent = m.parents.get(host)
        if source == "the tokenizer":  # a BatchEncoding (or the tensor `encode` made): .to() moves it
            return f"{name} = {name}{move}"
        if (isinstance(parent, cst.Arg) and parent.star == "**") or (
                isinstance(host, cst.Subscript) and _string_keys(host)):
            return f"{name} = {{k: v{move} for k, v in {name}.items()}}"
        if isinstance(host, cst.Subscript):
            return f"{name} = [t{move} for t in {name}]"
        return f"{name} = {name}{move}"


_HOST_ONLY_METHODS = frozenset({"numpy"})


def _meets_host_later(m, name: str, where, calls) -> bool:
    """After the fix's move of `name` (at the top of the loop `where`, or after the statement
    `where`), a read of `name` (`batch`, `batch["label"]`, `batch.label`) outside the reported calls
    meets a tensor the code keeps on the host: an operand of an arithmetic operation or comparison,
    or an argument of a `torch.*` call, whose other operand the engine knows is a host tensor that
    does not come from a batch (`pred.cpu() == batch["label"]`); or it is converted with
    `.numpy()`. The moved value would meet that host tensor (or fail `.numpy()`)."""
    scope = m.scope_of(where)
    region = where.body if isinstance(where, cst.For) else scope
    for node in m.walk(region):
        if not (isinstance(node, cst.Name) and node.value == name):
            continue
        if not isinstance(where, cst.For) and not m.precedes(where, node):
            continue
        if m.scope_of(node) is not scope or any(m.contains(c, node) for c in calls):
            continue
        e: cst.CSTNode = node
        parent = m.parent(e)
        while (isinstance(parent, cst.Subscript) and parent.value is e) or (
                isinstance(parent, cst.Attribute) and parent.value is e
                and not (isinstance(m.parent(parent), cst.Call) and m.parent(parent).func is parent)):
            e, parent = parent, m.parent(parent)
        if isinstance(e, cst.Name) and (isinstance(parent, (cst.AssignTarget, cst.For)) or _bound_here(m, e)):
            continue  # a re-binding, not a read
        others: list = []
        if isinstance(parent, cst.ComparisonTarget):
            parent = m.parent(parent)
        if isinstance(parent, cst.Attribute) and parent.value is e and parent.attr.value in _HOST_ONLY_METHODS:
            return True
        if isinstance(parent, cst.BinaryOperation):
            others = [parent.right if parent.left is e else parent.left]
        elif isinstance(parent, cst.Comparison):
            others = [parent.left, *(c.comparator for c in parent.comparisons)]
        elif isinstance(parent, cst.Arg):
            call = m.parent(parent)
            if isinstance(call, cst.Call) and (m.qualname(call.func) or "").startswith("torch."):
                others = [a.value for a in call.args if a is not parent]
        for o in others:
            if o is e:
                continue
            d, v = m.device_of(o), m.value_of(o)
            if d is not None and d.is_host and v.kind == "tensor" and batch_source(m, v.origin) is None:
                return True
    return False


def _bound_here(m, name: cst.Name) -> bool:
    """`name` is the target of a binding (assigned, a loop target, an unpacked element)."""
    return any(b.node is name for b in m.bindings_of(name))


def _returning_to(m, v) -> bool:
    """`v` is an instance of a class of the file whose `to(self, device)` returns the instance on
    every path (`return self`, or a new instance of the class): `batch = batch.to(device)` moves it.
    A `to` that moves in place and returns nothing would make the fix bind None."""
    found = m.method_of_class(v.cls, "to") if v.cls else None
    if found is None:
        return False
    fn, cls = found
    params = fn.params.params
    if len(params) < 2 or any(p.default is None for p in params[2:]) or fn.params.kwonly_params and any(
            p.default is None for p in fn.params.kwonly_params):
        return False
    body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else ()
    last = body[-1] if body else None
    if not (isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Return)):
        return False
    names = {"self", cls, v.cls}
    for n in m.walk(fn):
        if isinstance(n, (cst.FunctionDef, cst.Lambda)) and n is not fn:
            return False  # a nested function's returns would be read as this one's
        if isinstance(n, (cst.Yield, cst.Await)):
            return False
        if isinstance(n, cst.Return):
            r = n.value
            if isinstance(r, cst.Call):
                r = r.func
            if not (isinstance(r, cst.Name) and r.value in names) or (
                    r.value == "self" and isinstance(n.value, cst.Call)):
                return False
    return True


def _class_move_attribute(m, where) -> str | None:
    """`self.<attr>` when `where` is in an instance method of a class whose methods move tensors
    with one attribute only (`x.to(self.device)`), else None."""
    fn = m.enclosing(where, cst.FunctionDef) if not isinstance(where, cst.FunctionDef) else where
    cls = m.class_of(fn) if fn is not None else None
    if cls is None or not (fn.params.params and fn.params.params[0].name.value == "self"):
        return None
    if any(isinstance(d.decorator, cst.Name) and d.decorator.value in ("staticmethod", "classmethod")
           for d in fn.decorators):
        return None
    found = set()
    for call, _recv, _meth in m.method_calls("to"):
        if m.class_of(call) is not cls or not call.args:
            continue
        a = call.args[0].value if call.args[0].keyword is None else None
        if a is None:
            a = next((x.value for x in call.args if x.keyword is not None and x.keyword.value == "device"), None)
        if self_attr(a) is not None:
            found.add(self_attr(a))
    return f"self.{found.pop()}" if len(found) == 1 else None


def _stored_attribute(ctx: Context, home, name: cst.Name, where) -> str | None:
    """`self.device` when `home`, a method, stores its local `name` there (`self.device =
    device`) and the batch is moved in a method of the same class; None otherwise."""
    m = ctx.model
    cls = m.class_of(home)
    fn = m.enclosing(where, cst.FunctionDef) if not isinstance(where, cst.FunctionDef) else where
    if cls is None or fn is None or m.class_of(fn) is not cls or not isinstance(home, cst.FunctionDef):
        return None
    if not (fn.params.params and fn.params.params[0].name.value == "self" and not fn.decorators):
        return None
    for node in m.walk(home):
        if (isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and node.value.value == name.value
                and len(node.targets) == 1):
            t = node.targets[0].target
            if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self":
                return f"self.{t.attr.value}"
    return None


def _discarded_move(m, root: cst.Name, call: cst.Call) -> bool:
    """`x.to(device)` (or `.cuda()`) as a statement before the call, in its scope: the batch was
    meant to be moved and the result thrown away (pytorch/pytorch#43313's train_step). GL104
    reports that statement, and its safe fix (`x = x.to(device)`) is the move; a second fix here
    would move the batch twice."""
    scope, loop = m.scope_of(call), m.enclosing(call, cst.For)
    for move, recv, _meth in m.method_calls("to", "cuda"):
        if (isinstance(recv, cst.Name) and recv.value == root.value and m.scope_of(move) is scope
                and m.enclosing(move, cst.For) is loop
                and isinstance(m.parents.get(move), cst.Expr) and m.precedes(move, call)):
            return True
    return False


def _if_else_binding(m, bindings, call):
    """The `if`/`elif`/`else` statement each of whose branches binds the batch once with a plain
    statement, before `call` in the same scope (simalign#16: `inputs = self.tokenizer(...,
    return_tensors="pt")` in both branches of `if not isinstance(sent_pair[0], str):`, then
    `self.emb_model(**inputs)`); None for any other shape."""
    if any(b.how not in ("assign", "unpack") for b in bindings):
        return None
    scope = m.scope_of(call)
    tops = set()
    for b in bindings:
        stmt = m.statement_of(b.node)
        block = m.parents.get(stmt)
        branch = m.parents.get(block)
        if (not isinstance(stmt, cst.SimpleStatementLine) or not isinstance(block, cst.IndentedBlock)
                or not isinstance(branch, (cst.If, cst.Else)) or m.scope_of(stmt) is not scope):
            return None
        top = branch
        while True:
            up = m.parents.get(top)
            if isinstance(up, (cst.If, cst.Else)) and (getattr(up, "orelse", None) is top or isinstance(up, cst.Else)):
                top = up
            else:
                break
        if isinstance(top, cst.Else):
            return None
        tops.add(top)
    if len(tops) != 1:
        return None
    top = tops.pop()
    if m.contains(top, call) or not m.precedes(top, call) or m.scope_of(top) is not scope:
        return None
    # every branch, `else` included, binds the batch exactly once
    branches = []
    node = top
    while isinstance(node, cst.If):
        branches.append(node.body)
        node = node.orelse
    if not isinstance(node, cst.Else):
        return None
    branches.append(node.body)
    stmts = [m.statement_of(b.node) for b in bindings]
    for body in branches:
        if sum(1 for st in stmts if st in body.body) != 1:
            return None
    return top


def _target_names(where) -> list[cst.Name]:
    """The names a loop target or an assignment binds, in order (for an `if` whose branches bind
    the batch, the names its branches' plain assignments bind)."""
    if isinstance(where, cst.If):
        out, seen = [], set()
        node = where
        while node is not None:
            body = node.body
            for st in body.body if isinstance(body, cst.IndentedBlock) else ():
                if isinstance(st, cst.SimpleStatementLine):
                    for t in _target_names(st):
                        if t.value not in seen:
                            seen.add(t.value)
                            out.append(t)
            node = node.orelse if isinstance(node, cst.If) else None
        return out
    if isinstance(where, cst.For):
        targets = [where.target]
    else:
        stmt = where.body[0] if isinstance(where, cst.SimpleStatementLine) and where.body else None
        targets = [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else []
    out = []

    def walk(t):
        if isinstance(t, cst.Name):
            out.append(t)
        elif isinstance(t, (cst.Tuple, cst.List)):
            for el in t.elements:
                walk(el.value)

    for t in targets:
        walk(t)
    return out


def _sibling_move(ctx: Context, where, call) -> str | None:
    """The one device expression the batch's other tensors are moved with in the loop (or
    function) around `call` (`inputs = inputs.to(dev)` beside the labels left behind), when it is
    a name or attribute the engine knows for an accelerator device; else None."""
    m = ctx.model
    scope = m.scope_of(call)
    area = where if isinstance(where, cst.For) else (m.enclosing(call, cst.For) or scope)
    found = set()
    for mv, _recv, _meth in m.method_calls("to"):
        if m.scope_of(mv) is not scope or not m.contains(area, mv) or not mv.args:
            continue
        a = mv.args[0]
        if a.keyword is not None or a.star or not isinstance(a.value, (cst.Name, cst.Attribute)):
            continue
        v = m.value_of(a.value)
        if v.kind != "device" or v.dev is None or not v.dev.is_acc:
            continue
        found.add(ctx.code(a.value))
    return found.pop() if len(found) == 1 else None


def _loop_move_name(ctx: Context, call) -> str | None:
    """The one device name the loop around `call` moves other tensors with (`src.to(device)` beside
    the `src_lengths` left behind), when that name is bound in the call's function (a parameter,
    an assignment) and reads as a device; else None. For the message only."""
    m = ctx.model
    loop = m.enclosing(call, cst.For)
    scope = m.scope_of(call)
    if loop is None or not m.contains(scope, loop):
        return None
    found = set()
    for mv, _recv, _meth in m.method_calls("to"):
        if m.scope_of(mv) is not scope or not m.contains(loop, mv) or not mv.args:
            continue
        a = mv.args[0]
        if a.keyword is not None or a.star or not isinstance(a.value, cst.Name):
            continue
        if (scope, a.value.value) not in m.bindings or not m.is_device_expr(a.value):
            continue
        found.add(a.value.value)
    return found.pop() if len(found) == 1 else None


def _local_elsewhere(m, expr, where) -> bool:
    """`expr` (a device expression) is rooted in a local name of a function other than the one
    `where` is in: the name may mean nothing (or something else) at `where`."""
    root = expr
    while isinstance(root, (cst.Attribute, cst.Subscript, cst.Call)):
        root = root.func if isinstance(root, cst.Call) else root.value
    if not isinstance(root, cst.Name) or root.value == "self":
        return False
    home = m.scope_of(expr)
    return home is not m.module and home is not m.scope_of(where) and (home, root.value) in m.bindings


def _handed_parameter(m, home, name: cst.Name, where) -> str | None:
    """The parameter of the function around `where` that every call of it in `home` hands `name`
    to (`train_one_epoch(model, loader, device)` called from `main`, whose `device` the model was
    moved with); None when there is no such call or the calls disagree."""
    fn = m.enclosing(where, cst.FunctionDef) if not isinstance(where, cst.FunctionDef) else where
    if fn is None:
        return None
    found = set()
    for call in m.call_sites(fn):
        if m.scope_of(call) is home:
            found.add(_parameter_given(m, call, fn, name))
    return found.pop() if len(found) == 1 else None


def _parameter_for_global(m, fn, name: str, depth: int = 0) -> str | None:
    """The parameter of the plain function `fn` that each of its calls hands the module-level
    `name` to, directly from module level or through the parameter of a calling function that
    receives it the same way (`teacher_train(model, cfg)` -> `teacher_evaluate(model, config)`);
    None when `fn` has no call, or a call hands something else."""
    if depth > 3 or m.class_of(fn) is not None:
        return None
    found = set()
    for call in m.call_sites(fn):
        home = m.scope_of(call)
        if home is m.module:
            given = name
        elif isinstance(home, cst.FunctionDef) and home is not fn:
            given = _parameter_for_global(m, home, name, depth + 1)
        else:
            return None
        if given is None:
            return None
        found.add(_parameter_given(m, call, fn, cst.Name(given)))
    if len(found) != 1:
        return None
    return found.pop()


def _bound_in_callee(m, mm) -> bool:
    """The mismatch was found with the arguments of `mm.site`, and its host operand is a name the
    callee binds itself (a loop over the loader it is given), never a parameter: the batch is the
    callee's, so the finding belongs there."""
    fn = mm.function
    if not isinstance(fn, cst.FunctionDef) or not m.contains(fn, mm.node):
        return False
    root = _root_name(mm.host) or name_under(mm.host)
    if root is None:
        return False
    bindings = m.bindings_of(root)
    return bool(bindings) and all(
        b.how in ("for", "assign", "unpack") and m.scope_of(b.node) is fn for b in bindings)


def _parameter_given(m, site: cst.Call, fn: cst.FunctionDef, expr) -> str | None:
    """The name of `fn`'s parameter that `site` passes `expr` (a name) to, when `fn` is a plain
    function (not a method) and the call names it directly; else None."""
    if not isinstance(expr, cst.Name) or not isinstance(site.func, cst.Name) or m.class_of(fn) is not None:
        return None
    params = fn.params.params
    for i, a in enumerate(site.args):
        if a.star:
            return None
        if not (isinstance(a.value, cst.Name) and a.value.value == expr.value):
            continue
        if a.keyword is not None:
            name = a.keyword.value
            ok = any(p.name.value == name for p in params) or any(
                p.name.value == name for p in fn.params.kwonly_params)
            return name if ok else None
        return params[i].name.value if i < len(params) else None
    return None


def _method_call_site(m, mm):
    """(the call, its argument) when the mismatch is in a method of a module class of the file
    other than `forward`, its host operand is a parameter of that method, and the method is called
    once, from outside its class, on the model (`net.neg_elbo(x=bx, y=by)` in the training loop),
    with a batch tensor on the host for that parameter (UQ360#28, G69-3); None otherwise."""
    fn = mm.function
    if not isinstance(fn, cst.FunctionDef) or fn.name.value in ("forward", "__call__", "__init__"):
        return None
    cls = m.class_of(fn)
    if cls is None or m.value_of(cls.name).kind not in (None, "module") or not m.contains(fn, mm.node):
        return None
    root = _root_name(mm.host) or name_under(mm.host)
    if root is None:
        return None
    bs = m.bindings_of(root)
    if len(bs) != 1 or bs[0].how != "param" or m.scope_of(bs[0].node) is not fn:
        return None
    sites = list((m.flow.site_values.get(fn) or {}).keys())
    if len(sites) != 1:
        return None
    site = sites[0]
    f = site.func
    if not isinstance(f, cst.Attribute) or f.attr.value != fn.name.value or (
            isinstance(f.value, cst.Name) and f.value.value == "self") or m.contains(cls, site):
        return None
    if m.value_of(f.value).kind != "module":
        return None
    arg = argument_for(fn, site, root.value)
    if arg is None:
        return None
    v = m.value_of(arg)
    if v.kind not in ("tensor", "batch") or v.dev is None or not v.dev.is_host or v.origin is not mm.host_value.origin:
        return None
    return site, arg


def _site_operand(m, mm):
    """The argument of `mm.site` that carries the batch tensor the callee's operation got on the
    host (the same origin, on the host at the call); None when no single one does (unless the
    operand is a parameter of the callee: the argument given for it)."""
    origin = mm.host_value.origin
    fn = mm.function
    root = _root_name(mm.host) or name_under(mm.host)
    if isinstance(fn, cst.FunctionDef) and root is not None and m.contains(fn, mm.node):
        bs = m.bindings_of(root)
        if len(bs) == 1 and bs[0].how == "param" and m.scope_of(bs[0].node) is fn:
            arg = argument_for(fn, mm.site, root.value)
            if arg is not None:
                v = m.value_of(arg)
                if v.origin is origin and v.kind in ("tensor", "batch") and v.dev is not None and v.dev.is_host:
                    return arg
    found = []
    for a in mm.site.args:
        if a.keyword is not None and a.star:
            continue
        v = m.value_of(a.value)
        if v.origin is origin and v.kind in ("tensor", "batch") and v.dev is not None and v.dev.is_host:
            found.append(a.value)
        elif v.kind == "object" and v.attrs and any(
                x.origin is origin and x.kind == "tensor" and x.dev is not None and x.dev.is_host for _, x in v.attrs):
            # an instance of a batch class of the file (what the loader's `collate_fn` returns) whose
            # host tensor the callee reads (`self.lin(data.x)` in forward, E50-6)
            found.append(a.value)
    return found[0] if len(found) == 1 else None


def _site_hands_loader(m, mm) -> bool:
    """`mm.site` hands the callee the loader itself (`self.all_batches(self.data.train_dl)`), which
    a function down the chain iterates: the batch is bound in the callees, none of the site's
    arguments is a batch, so the finding belongs where the batch meets the model."""
    origin = mm.host_value.origin
    if origin is None or len(mm.site.args) == 0:
        return False
    loader = False
    for a in mm.site.args:
        v = m.value_of(a.value)
        if v.kind in ("tensor", "batch") or (v.kind is None and v.dev is not None):
            return False
        if v.kind == "loader" and v.origin is origin:
            loader = True
    return loader


def _root_name(host) -> cst.Name | None:
    """`x` for `x`, `batch` for `batch["input"]` / `batch[0]`; None for other shapes."""
    if isinstance(host, cst.Name):
        return host
    if isinstance(host, cst.Subscript) and isinstance(host.value, cst.Name):
        return host.value
    return None


def _string_keys(sub: cst.Subscript) -> bool:
    for el in sub.slice:
        if isinstance(el.slice, cst.Index) and isinstance(el.slice.value, cst.SimpleString):
            return True
    return False


def _forward_moves_argument(m, mm) -> bool:
    """The called module is a class of the file whose `forward` re-binds the parameter that receives
    the host batch with a device move of itself (`x = x.cuda()`, `x = x.to(...)`), even under a
    condition: `if not x.is_cuda and next(self.parameters()).is_cuda: x = x.cuda()` moves the
    batch exactly when the model is on the GPU. (A move on every path already satisfies the flow
    engine; a move on some paths leaves the engine with a host value it cannot rule out.)"""
    node = mm.node
    if not isinstance(node, cst.Call):
        return False
    cls = m.value_of(mm.acc).cls if mm.acc is not None else None
    if cls is None and isinstance(mm.acc, cst.Attribute) and mm.acc.attr.value == "forward":
        # `self.forward(input)` called by name in a method of the model (philtabor's
        # simple_cnn_mnist.py `_train`): the class of `self`, or of the receiver
        recv = mm.acc.value
        cls = m.value_of(recv).cls
        if cls is None and isinstance(recv, cst.Name) and recv.value == "self":
            home = m.class_of(node)
            cls = home.name.value if home is not None else None
    found = m.method_of_class(cls, "forward") if cls else None
    if found is None:
        return False
    fn = found[0]
    params = [p.name.value for p in fn.params.params]
    if params and params[0] == "self":
        params = params[1:]
    target = None
    for i, arg in enumerate(node.args):
        if arg.value is mm.host or mm.host in m.walk(arg.value):
            if arg.keyword is not None:
                target = arg.keyword.value
            elif arg.star == "" and i < len(params):
                target = params[i]
            break
    if target is None:
        return False
    for stmt in m.walk(fn):
        if not isinstance(stmt, cst.Assign) or len(stmt.targets) != 1:
            continue
        t = stmt.targets[0].target
        v = stmt.value
        if (isinstance(t, cst.Name) and t.value == target and isinstance(v, cst.Call)
                and isinstance(v.func, cst.Attribute) and v.func.attr.value in ("cuda", "to")
                and copy_of_name(m, v.func.value, target)):
            return True
    return False


def _meets_tensors(m, t: cst.Name) -> bool:
    """A read of the batch name `t` in its scope meets tensors: an operand of arithmetic or a
    comparison, or an argument of a module, a loss or a `torch.*` function (`criterion(out, y)`,
    `(pred == y).sum()`). A batch item only collected (`all_inds.extend(ind)`, braindecode PR#381:
    a list of index tensors after collation) is not moved by the fix: `.to()` of a list fails
    (fixtures64 G64-1)."""
    scope = m.scope_of(t)
    for n in m.walk(scope):
        if type(n) is not cst.Name or n.value != t.value or n is t:
            continue
        node, parent = n, m.parent(n)
        for _ in range(8):  # up a chain: `y.view(-1)`, `y[:, 0].long()`
            if isinstance(parent, cst.Attribute) and parent.value is node:
                up = m.parent(parent)
                if isinstance(up, cst.Call) and up.func is parent:
                    if parent.attr.value in ("cpu", "numpy", "tolist", "item"):
                        break  # read back on the host
                    node, parent = up, m.parent(up)
                    continue
                node, parent = parent, up
                continue
            if isinstance(parent, cst.Subscript) and parent.value is node:
                node, parent = parent, m.parent(parent)
                continue
            break
        if isinstance(parent, (cst.BinaryOperation, cst.Comparison, cst.ComparisonTarget)):
            return True
        if isinstance(parent, cst.Arg):
            call = m.parent(parent)
            if not isinstance(call, cst.Call):
                continue
            q = m.qualname(call.func) or ""
            if q.startswith("torch.") or m.value_of(call.func).kind == "module":
                return True
    return False


def _model_of(m, mm):
    """The name (or attribute) that holds the model of the mismatch: the callee of a module call,
    or the module whose call made the accelerator operand of a loss call (`pred = dec(...)`)."""
    if mm.op == "module-call":
        return mm.acc if isinstance(mm.acc, (cst.Name, cst.Attribute)) else None
    if isinstance(mm.acc, cst.Name):
        origin = m.value_of(mm.acc).origin
        if (isinstance(origin, cst.Call) and isinstance(origin.func, (cst.Name, cst.Attribute))
                and m.value_of(origin.func).kind == "module"):
            return origin.func
    return None


def _operand_device_at(ctx: Context, mm, at) -> str | None:
    """`_operand_device` when the model (or operand) it names is an expression of `at`'s own scope
    or of the module (not a parameter of the function the mismatch was found in)."""
    m = ctx.model
    acc = mm.acc
    model = None
    if (mm.op == "call" and isinstance(acc, cst.Call) and isinstance(acc.func, (cst.Name, cst.Attribute))
            and m.value_of(acc.func).kind == "module"):
        model = acc = acc.func  # `F.cross_entropy(model(x), y)`: the model whose output it is
    if not isinstance(acc, (cst.Name, cst.Attribute)):
        return None
    root = acc
    while isinstance(root, cst.Attribute):
        root = root.value
    if not isinstance(root, cst.Name):
        return None
    home = m.scope_of(acc)
    if home is not m.scope_of(at) and not (home is m.module and (m.scope_of(at), root.value) not in m.bindings):
        return None
    if model is not None:
        return f"next({ctx.code(model)}.parameters()).device"
    return _operand_device(ctx, mm)


def _operand_device(ctx: Context, mm) -> str | None:
    """A device expression that exists at the call: the model's own parameters' device for a
    module call, the accelerator operand's `.device` for a loss call whose operand is a name."""
    if mm.op == "module-call" and isinstance(mm.acc, (cst.Name, cst.Attribute)):
        return f"next({ctx.code(mm.acc)}.parameters()).device"
    if mm.op == "call" and isinstance(mm.acc, (cst.Name, cst.Attribute)):
        return f"{ctx.code(mm.acc)}.device"
    return None


# the same function as GL116's (rules do not import each other; a test keeps the two equal)
