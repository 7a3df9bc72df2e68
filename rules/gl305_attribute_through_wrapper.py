"""GL305 attribute-through-wrapper."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.distributed import DIST_FRAMEWORKS, DistFacts, engine_wrapper, forwards_attributes
from gpulint.flow import runs_on_gpu
from gpulint.rule import Context, Rule

# Public attributes every nn.Module has: reading them through a wrapper works (on the wrapper).
NN_MODULE_ATTRS = frozenset(
    """
    training forward add_module register_module get_submodule set_submodule get_parameter get_buffer
    get_extra_state set_extra_state apply cuda ipu xpu mtia cpu type float double half bfloat16 to_empty
    to register_backward_hook register_full_backward_hook register_full_backward_pre_hook
    register_forward_pre_hook register_forward_hook state_dict load_state_dict
    register_state_dict_pre_hook register_state_dict_post_hook register_load_state_dict_pre_hook
    register_load_state_dict_post_hook parameters named_parameters buffers named_buffers children
    named_children modules named_modules train eval requires_grad_ zero_grad share_memory extra_repr
    compile register_buffer register_parameter dump_patches call_super_init T_destination
    """.split()
)
# Attributes of the wrappers themselves.
WRAPPER_ATTRS = frozenset(
    """
    module device_ids output_device dim src_device_obj device_type process_group broadcast_buffers
    find_unused_parameters no_sync join join_hook join_device join_process_group register_comm_hook
    static_graph gradient_as_bucket_view reducer logger bucket_bytes_cap scatter gather replicate
    parallel_apply to_kwargs will_sync_module_buffers mixed_precision parameters_to_ignore
    require_backward_grad_sync require_forward_param_sync is_multi_device_module device
    """.split()
)
# what a DataParallel instance has (torch/nn/parallel/data_parallel.py); the other names above are
# DistributedDataParallel's only: `dp.device` raises AttributeError (TraceBERT#10, GLiNER#133)
DP_ATTRS = frozenset("module device_ids output_device dim src_device_obj replicate scatter parallel_apply gather".split())


class AttributeThroughWrapper(Rule):
    code = "GL305"
    name = "attribute-through-wrapper"
    summary = "A custom attribute or method of the model read through its DataParallel/DDP wrapper."
    message = (
        "`{name}` is a `{wrapper}` wrapper, which does not forward attributes: `{name}.{attr}` raises "
        "AttributeError; use `{name}.module.{attr}`"
    )
    fix_safety = "unsafe"
    default = True
    kind = "crash"
    prefilter = r"DataParallel"
    ast_prefilter = r"DataParallel"
    explanation = '''
`DataParallel` and `DistributedDataParallel` are modules of their own that hold the real model in
`.module`; they forward `__call__` (so `model(x)` works) but not the model's own attributes and
methods. After `model = nn.DataParallel(Net())`, `model.classifier` or `model.generate(...)`
raises `AttributeError: 'DataParallel' object has no attribute 'generate'`.

The rule fires on `W.attr` where `W` holds a wrapper of a model whose class is defined in the
file, and `attr` is defined by that class (a method, a `self.attr = ...`, a class attribute), not
by `nn.Module` or by the wrapper. An attribute the file assigns on the wrapper itself
(`model.decode = model.module.decode` after the wrap) is the wrapper's own, and is not reported.
The (unsafe) fix reads it through `.module` (`getattr(W, "module", W).attr` when the model is only
wrapped on some paths).

Bad:

```python
model = nn.DataParallel(Classifier(num_classes=10))
print(model.num_classes)
```

Good:

```python
model = nn.DataParallel(Classifier(num_classes=10))
print(model.module.num_classes)
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        if m.frameworks & DIST_FRAMEWORKS:
            return
        facts: DistFacts = m.facts(DistFacts)
        if not facts.wraps:
            return
        attrs_cache: dict[str, set[str]] = {}
        # a name can hold a wrapper where it is read only if one of its bindings is a wrapper call's
        # target (wrapper_reaching follows the name's own bindings): other names are not asked about
        wrapped_names = {w.target.value for w in facts.wraps if isinstance(w.target, cst.Name)}
        stored = _stored_on_wrapper(m, facts, wrapped_names)
        for node in list(m.parents):
            if not isinstance(node, cst.Attribute):
                continue
            attr = node.attr.value
            if attr.startswith("__") or attr in NN_MODULE_ATTRS or attr in DP_ATTRS:
                continue
            if not isinstance(node.value, cst.Name):
                found = _engine_wrapper_class(m, node.value)  # `self.model.predict(...)`
                if found is None or _is_store(m, node):
                    continue
                kind, cls, _definitely = found
                if forwards_attributes(m, m.value_of(node.value).wrap):
                    continue  # a wrapper subclass whose `__getattr__` falls back to the wrapped module
                if kind != "dp" and attr in WRAPPER_ATTRS:
                    continue
                if _tests_for_wrapper(m, node):
                    continue
                if not _definitely and _unwrapped_instance_branch(m, node):
                    continue  # `if self.num_gpus > 1: wrap` in __init__ ... `else: self.model.attr`
                if cls not in attrs_cache:
                    attrs_cache[cls] = _class_attrs(m, cls)
                if attr not in attrs_cache[cls] or attr in stored.get(cls, ()):
                    continue
                name = ctx.code(node.value)
                wrapper = "DataParallel" if kind == "dp" else "DistributedDataParallel"
                yield ctx.finding(
                    node,
                    self.message.format(name=name, attr=attr, wrapper=wrapper),
                    ctx.fix(ctx.replace(node, f'getattr({name}, "module", {name}).{attr}'),
                            message=f"Read `{attr}` from the wrapped model"),
                )
                continue
            if _is_store(m, node):
                continue
            if any(b.how == "param" for b in m.bindings_of(node.value)) and not _closure_read(m, node.value):
                # a function's parameter: the engine knows what its call sites pass
                found = engine_wrapper(m, node.value)
                if found is None or found[1] is None or _tests_for_wrapper(m, node):
                    continue
                kind, cls, definitely = found
            elif node.value.value not in wrapped_names:
                # `net = switch_model_to_cuda(net)`, a file function returning `nn.DataParallel(model)`
                # (deep-image-retrieval#5): the engine's value, when it is a wrapper on every path
                found = engine_wrapper(m, node.value)
                if found is None or found[1] is None or _tests_for_wrapper(m, node):
                    continue
                kind, cls, definitely = found
                if not definitely and _under_if(m, node):
                    continue  # a wrapper on some paths, read in a branch: it may be the unwrapped one
                if not runs_on_gpu(m, node):
                    continue  # the `else:` of `if iscuda:`: a GPU run, where the helper wraps, skips it
                # "every path" may be every GPU path (a helper wrapping under `if iscuda:`): the fix
                # reads the attribute either way
                definitely = False
            else:
                reach = facts.wrapper_reaching(node.value)
                if reach is None:
                    continue
                w, definitely = reach
                if not definitely and _unwrapped_branch(m, w.call, node):
                    continue  # `if T: wrap` ... `if T: W.module.attr else: W.attr`
                if not definitely and _closure_unwrapped_branch(m, facts, node):
                    continue  # a closure's `if A or B: W.module.attr else: W.attr`, wraps under `if A:`, `if B:`
                kind = w.kind
                cls = facts.wrapped_class(w) or _unpacked_inner_class(m, facts, w)
            if cls is None:
                continue
            if forwards_attributes(m, m.value_of(node.value).wrap) or any(
                    forwards_attributes(m, w.call) for w in facts.wraps if w.target is not None
                    and w.target.value == node.value.value):
                continue  # a wrapper subclass whose `__getattr__` falls back to the wrapped module
            if kind != "dp" and attr in WRAPPER_ATTRS:
                continue
            if cls not in attrs_cache:
                attrs_cache[cls] = _class_attrs(m, cls)
            if attr not in attrs_cache[cls] or attr in stored.get(cls, ()):
                continue
            name = node.value.value
            wrapper = "DataParallel" if kind == "dp" else "DistributedDataParallel"
            new = f"{name}.module.{attr}" if definitely else f'getattr({name}, "module", {name}).{attr}'
            yield ctx.finding(
                node,
                self.message.format(name=name, attr=attr, wrapper=wrapper),
                ctx.fix(ctx.replace(node, new), message=f"Read `{attr}` from the wrapped model"),
            )


def _closure_read(m, use: cst.Name) -> bool:
    """`use` reads a name of an enclosing function from a nested function (a DataLoader
    `collate_fn` closure over `model`, awesome-align#10): the closure runs when it is called, after
    the enclosing function may have rebound the name to a wrapper, so the name's latest binding
    reaches it, not what the enclosing function's caller passed."""
    bindings = m.bindings_of(use)
    use_scope = m.scope_of(use)
    if not bindings or not isinstance(use_scope, cst.FunctionDef):
        return False
    scopes = {m.scope_of(b.node) for b in bindings}
    return len(scopes) == 1 and use_scope not in scopes and m.contains(next(iter(scopes)), use_scope)


def _closure_unwrapped_branch(m, facts: DistFacts, read: cst.Attribute) -> bool:
    """A closure read (`_closure_read`) in the `else:` of an `if` whose test is an `or` of tests
    (awesome-align#10's fix: `if args.n_gpu > 1 or args.local_rank != -1: model.module.attr else:
    model.attr`) such that every wrap of the name in the enclosing function sits in the body of an
    `if` with one of those tests (`if args.n_gpu > 1: model = DataParallel(model)`, `if
    args.local_rank != -1: model = DistributedDataParallel(...)`). The tests must be pure (no call
    but pure queries) and nothing they read may be assigned in the enclosing function: the read then
    runs only where no wrap was made."""
    use = read.value
    if not isinstance(use, cst.Name) or not _closure_read(m, use):
        return False
    closure = m.scope_of(use)
    outer = m.scope_of(m.bindings_of(use)[0].node)
    code = m.module.code_for_node
    wraps = [w for w in facts.wraps if isinstance(w.target, cst.Name) and w.target.value == use.value
             and m.scope_of(w.call) is outer]
    if not wraps:
        return False
    wrap_tests = []
    for w in wraps:
        tests, child = set(), w.call
        for anc in m.ancestors(w.call):
            if anc is outer:
                break
            if isinstance(anc, cst.If) and child is anc.body:
                tests.add(code(anc.test).strip())
            child = anc
        if not tests:
            return False  # a wrap made on every path
        wrap_tests.append(tests)
    child = read
    for anc in m.ancestors(read):
        if anc is closure:
            return False
        if isinstance(anc, cst.If) and isinstance(anc.orelse, cst.Else) and child is anc.orelse:
            disjuncts, stack = [], [anc.test]
            while stack:
                t = stack.pop()
                if isinstance(t, cst.BooleanOperation) and isinstance(t.operator, cst.Or) and not t.lpar:
                    stack.extend((t.left, t.right))
                else:
                    disjuncts.append(t)
            texts = {code(t).strip() for t in disjuncts}
            if all(tests & texts for tests in wrap_tests) and _pure_unassigned(m, anc.test, outer):
                return True
        child = anc
    return False


def _pure_unassigned(m, test: cst.BaseExpression, outer: cst.CSTNode) -> bool:
    """`test` calls nothing but pure queries, and no name or attribute it reads is assigned in the
    function `outer` (nested functions included)."""
    code = m.module.code_for_node
    read: set[str] = set()
    for n in (test, *m.walk(test)):
        if isinstance(n, cst.Call):
            if m.qualname(n.func) not in _PURE_QUERIES:
                return False
        elif isinstance(n, (cst.Name, cst.Attribute)):
            read.add(code(n).strip())
        elif isinstance(n, (cst.Await, cst.Yield, cst.NamedExpr, cst.Lambda, cst.Subscript)):
            return False
    for n in m.walk(outer):
        if isinstance(n, (cst.Global, cst.Nonlocal, cst.Del)):
            return False
        targets = []
        if isinstance(n, cst.AssignTarget):
            targets = [n.target]
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign)):
            targets = [n.target]
        elif isinstance(n, (cst.For, cst.CompFor)):
            targets = [n.target]
        for t in targets:
            for x in (t, *m.walk(t)):
                if isinstance(x, (cst.Name, cst.Attribute)) and code(x).strip() in read:
                    return False
    return True


def _unpacked_inner_class(m, facts: DistFacts, w) -> str | None:
    """The file class a wrapper wraps when the wrapped name was bound by tuple unpacking
    (`netG, netD_im, netD_st = self.load_network_stageI()`, VLCStoryGan#12) or is a parameter
    (`def train(args, train_dataset, model)` wrapped twice, awesome-align#10), where the engine's
    value of the name at the wrap joins the instance with another wrapper (last iteration's, or
    the DataParallel wrap before a DistributedDataParallel one) and keeps no class. Every binding
    of the name that is not a wrap must give the same class: an unpacked target by the engine's
    value at it, a parameter by the argument of every call site, an assigned one by its
    expression."""
    inner = w.inner
    if not isinstance(inner, cst.Name):
        return None
    found: set[str] = set()
    unpacked = False
    for b in m.bindings_of(inner):
        if facts.wrap_binding(b) is not None:
            continue
        if b.how == "unpack":
            v = m.value_of(b.node)
            if v.kind != "module" or v.cls not in m.classes:
                return None
            found.add(v.cls)
            unpacked = True
        elif b.how == "param":
            args = m.param_arguments(b)  # every call site's argument (none when one cannot be matched)
            if not args:
                return None
            for a in args:
                v = m.value_of(a)
                if v.kind != "module" or v.cls not in m.classes:
                    return None
                found.add(v.cls)
            unpacked = True
        elif b.how == "assign" and b.value is not None:
            c = facts.class_of_module_expr(b.value)
            if c is None:
                return None
            found.add(c)
        else:
            return None
    return found.pop() if unpacked and len(found) == 1 else None


def _engine_wrapper_class(m, recv):
    """(kind, class name, on every path) for `self.attr` holding a wrapper around an instance of a
    class of the file. A wrapper on some paths only counts when it is made in `__init__` (under an
    `if`): a `self` attribute's value joins every method's assignments whatever their order, and a
    wrap made in another method (`prepare_distributed()`) may come after the read."""
    if not (isinstance(recv, cst.Attribute) and isinstance(recv.value, cst.Name)):
        return None
    if recv.value.value != "self":
        # `modules.temp` of a record (a dataclass of the file) whose field the engine knows holds a
        # wrapper of a file class on every path (d3rlpy's `Modules.wrap_models_by_ddp()`, E51-2)
        owner = m.value_of(recv.value)
        if owner.kind != "object":
            return None
        found = engine_wrapper(m, recv)
        if found is None or found[1] is None:
            return None
        if found[2]:
            return found
        # a wrap on some paths made in the `__init__` of the instance's own class (`if
        # len(gpu_ids) > 1: self.netG = DataParallel(self.netG)`): the constructor has run before
        # any read through the instance, as for a read inside the class (LLFlow#19's
        # `model.netG.RRDB` in `main()`, E67-1)
        w = m.value_of(recv).wrap
        fn = m.enclosing(w, cst.FunctionDef) if isinstance(w, cst.CSTNode) else None
        cls = m.class_of(fn) if fn is not None and fn.name.value == "__init__" else None
        if isinstance(cls, cst.ClassDef) and cls.name.value == owner.cls:
            return found
        return None
    found = engine_wrapper(m, recv)
    if found is None or found[1] is None:
        return None
    if not found[2]:
        w = m.value_of(recv).wrap
        if not isinstance(w, cst.CSTNode):
            return None
        fn = m.enclosing(w, cst.FunctionDef)
        reader = m.enclosing(recv, cst.FunctionDef)
        cls = m.class_of(reader) if reader is not None else None
        info = m.classes.get(cls.name.value) if isinstance(cls, cst.ClassDef) else None
        outside = (info is not None and (fn is None or m.class_of(fn) is not cls)
                   and _bound_in_init_only(m, info, recv))
        # a wrap made outside the class (module level, `if device == "cuda": net = DataParallel(net)`)
        # that reaches the attribute through the constructor's argument happens before any method
        # runs (dnn-topology#3); one made in another method of the class may come after the read
        if not outside and (fn is None or fn.name.value != "__init__"):
            return None
    return found


def _bound_in_init_only(m, cls, recv: cst.Attribute) -> bool:
    """`self.<attr>` is assigned only in `__init__` of the class (`self.network = network`)."""
    key = f"self.{recv.attr.value}"
    found = False
    for (scope, k), bindings in m.bindings.items():
        if k != key or scope is not cls.node:
            continue
        for b in bindings:
            fn = m.enclosing(b.node, cst.FunctionDef)
            if fn is None or fn.name.value != "__init__":
                return False
            found = True
    return found


def _tests_for_wrapper(m, node: cst.Attribute) -> bool:
    """The function reading `R.attr` tests R for the wrapper (`hasattr(R, "module")`,
    `isinstance(R, DataParallel)`): it handles both cases, on paths the engine does not split."""
    fn = m.enclosing(node, cst.FunctionDef) or m.module
    recv = m.module.code_for_node(node.value)
    for call in m.walk(fn):
        if (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and len(call.args) == 1
                and call.args[0].keyword is None and not call.args[0].star
                and m.module.code_for_node(call.args[0].value) == recv and _wrapper_test_function(m, call.func.value)):
            # `multi_gpu = is_parallel(model)` (YOLO repositories' helper: `type(model) in
            # (DataParallel, DistributedDataParallel)`), read later as `model.module.X if multi_gpu
            # else model.X` (PyTorch_YOLOv4's build_targets, fixtures63 P63-1)
            return True
        if (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "type"
                and len(call.args) == 1 and m.module.code_for_node(call.args[0].value) == recv):
            cmp = m.parents.get(call)
            if isinstance(cmp, cst.Comparison) and "Parallel" in m.module.code_for_node(cmp):
                return True  # `multi_gpu = type(model) in (nn.parallel.DataParallel, ...)` (yolov3)
        if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Name) or len(call.args) != 2:
            continue
        if call.func.value not in ("hasattr", "isinstance"):
            continue
        if m.module.code_for_node(call.args[0].value) != recv:
            continue
        if call.func.value == "isinstance" or "module" in m.module.code_for_node(call.args[1].value):
            return True
    return False


def _wrapper_test_function(m, name: str) -> bool:
    """A function that tells whether a model is wrapped: one of the file whose body names a wrapper
    class or tests for `module` (`def is_parallel(model): return type(model) in (nn.parallel.
    DataParallel, nn.parallel.DistributedDataParallel)`), or, imported, one named so
    (`from utils.torch_utils import is_parallel`)."""
    fn = m.module_function(name)
    if fn is not None:
        text = m.module.code_for_node(fn.body)
        return any(w in text for w in ("DataParallel", "DistributedDataParallel", '"module"', "'module'"))
    low = name.lower()
    return low.startswith(("is_", "has_")) and ("parallel" in low or "ddp" in low or "wrapped" in low)


def _stored_on_wrapper(m, facts: DistFacts, wrapped_names: set[str]) -> dict[str, set[str]]:
    """Wrapped class -> attributes the file assigns on a wrapper of it (bonito's train.py:
    `model = DataParallel(model)`, then `model.decode = model.module.decode`): the wrapper object
    then has them, and reading them through it (there, or as `self.model.decode` in the trainer the
    wrapper is handed to) works. The store's order against the reads is not followed: silent."""
    out: dict[str, set[str]] = {}
    for node in list(m.parents):
        if not isinstance(node, cst.Attribute) or not _is_store(m, node):
            continue
        cls = None
        if isinstance(node.value, cst.Name):
            if node.value.value in wrapped_names:
                reach = facts.wrapper_reaching(node.value)
                if reach is not None:
                    cls = facts.wrapped_class(reach[0])
            if cls is None:
                found = engine_wrapper(m, node.value)
                if found is not None:
                    cls = found[1]
        else:
            found = _engine_wrapper_class(m, node.value)
            if found is not None:
                cls = found[1]
        if cls is not None:
            out.setdefault(cls, set()).add(node.attr.value)
    return out


def _is_store(m, node: cst.Attribute) -> bool:
    parent = m.parent(node)
    if isinstance(parent, cst.AssignTarget) and parent.target is node:
        return True
    if isinstance(parent, (cst.AugAssign, cst.AnnAssign)) and parent.target is node:
        return True
    if isinstance(parent, cst.Del):
        return True
    return False


def _class_attrs(m, name: str, seen: frozenset = frozenset()) -> set[str]:
    """Attributes a class of the file defines: methods, `self.x = ...` in its methods, buffers and
    parameters registered by name in its methods (`self.register_buffer("queue", ...)`, the
    momentum queue multihop_dense_retrieval's loss reads through DataParallel), class-level
    assignments, and those of its file-defined bases."""
    info = m.classes.get(name)
    if info is None or name in seen:
        return set()
    out = set(info.methods)
    for (scope, key), _bindings in m.bindings.items():
        if scope is info.node and key.startswith("self."):
            out.add(key[len("self."):])
    for call, recv, _meth in m.method_calls("register_buffer", "register_parameter"):
        if (isinstance(recv, cst.Name) and recv.value == "self" and m.class_of(call) is info.node
                and call.args and isinstance(call.args[0].value, cst.SimpleString)):
            out.add(call.args[0].value.evaluated_value)
    body = info.node.body
    if isinstance(body, cst.IndentedBlock):
        for stmt in body.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    targets = []
                    if isinstance(small, cst.Assign):
                        targets = [t.target for t in small.targets]
                    elif isinstance(small, cst.AnnAssign):
                        targets = [small.target]
                    out.update(t.value for t in targets if isinstance(t, cst.Name))
            elif isinstance(stmt, cst.FunctionDef):
                out.add(stmt.name.value)
    for base in info.bases:
        if base in m.classes:
            out |= _class_attrs(m, base, seen | {name})
    return out


# calls whose result does not change while a script runs (queries of the machine)
_PURE_QUERIES = frozenset({
    "torch.cuda.device_count", "torch.cuda.is_available", "torch.distributed.is_available",
    "torch.backends.mps.is_available",
})


def _under_if(m, node) -> bool:
    """`node` sits in a branch of an `if` (or a conditional expression) of its function whose
    test may say whether it is wrapped: it names the receiver, a `.module` / "module", or the
    GPUs, ranks or parallelism (`if isinstance(layer, nn.ReLU):` does not)."""
    name = node.value.value if isinstance(node.value, cst.Name) else None
    for anc in m.ancestors(node):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        if isinstance(anc, (cst.If, cst.IfExp)) and _about_wrapping(m, anc.test, name):
            return True
    return False


_WRAPPING_WORDS = ("parallel", "device_count", "world_size", "gpu", "cuda", "distributed", "rank", "multi", "ddp")


def _about_wrapping(m, test, name: str | None) -> bool:
    for n in (test, *m.walk(test)):
        if isinstance(n, cst.Name) and (n.value == name or any(w in n.value.lower() for w in _WRAPPING_WORDS)):
            return True
        if isinstance(n, cst.Attribute) and (n.attr.value == "module" or any(w in n.attr.value.lower() for w in _WRAPPING_WORDS)):
            return True
        if isinstance(n, cst.SimpleString) and "module" in n.value:
            return True
    return False


def _unwrapped_branch(m, wrap: cst.Call, read: cst.Attribute) -> bool:
    """The read sits in the `else:` of an `if T:` whose test is the same side-effect-free
    expression as that of an `if T:` whose body makes the wrap; both `if`s are statements of one
    block, the wrap's first; no name or attribute the test reads is assigned from the wrap's `if`
    to the read's. Then the read runs only where the wrap did not."""
    wrap_ifs = []
    child = wrap
    for anc in m.ancestors(wrap):
        if isinstance(anc, cst.If) and child is anc.body:
            wrap_ifs.append(anc)
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            break
        child = anc
    if not wrap_ifs:
        return False
    child = read
    for anc in m.ancestors(read):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        if isinstance(anc, cst.If) and anc.orelse is not None and child is anc.orelse and isinstance(anc.orelse, cst.Else):
            for w_if in wrap_ifs:
                if _same_pure_test(m, w_if, anc):
                    return True
        child = anc
    return False


def _unwrapped_instance_branch(m, read: cst.Attribute) -> bool:
    """`self.W.attr` read in the `else:` of an `if T:` (coqui-ai/Trainer's `if self.num_gpus > 1:
    ... self.model.module.test_run(...) else: ... self.model.test_run(...)`) where `__init__` of
    the class wraps `self.W` in the body of an `if` with the same test T, and T reads only
    attributes of `self` that `__init__` alone assigns, with no call but pure queries: the flag is
    the one that decided the wrap, so the read runs only where the wrap did not."""
    w = m.value_of(read.value).wrap
    if not isinstance(w, cst.CSTNode):
        return False
    init = m.enclosing(w, cst.FunctionDef)
    reader = m.enclosing(read, cst.FunctionDef)
    if init is None or init.name.value != "__init__" or reader is None:
        return False
    cls = m.class_of(init)
    if cls is None or m.class_of(reader) is not cls:
        return False
    info = m.classes.get(cls.name.value)
    if info is None:
        return False
    wrap_ifs = []
    child = w
    for anc in m.ancestors(w):
        if isinstance(anc, cst.If) and child is anc.body:
            wrap_ifs.append(anc)
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            break
        child = anc
    tests = {m.module.code_for_node(i.test).strip() for i in wrap_ifs if _instance_flag_test(m, info, i.test)}
    if not tests:
        return False
    child = read
    for anc in m.ancestors(read):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        if (isinstance(anc, cst.If) and isinstance(anc.orelse, cst.Else) and child is anc.orelse
                and m.module.code_for_node(anc.test).strip() in tests
                and (reader is not init or all(m.precedes(i, anc) for i in wrap_ifs))):
            return True
        child = anc
    return False


def _instance_flag_test(m, info, test) -> bool:
    """`self.num_gpus > 1`, `self.distributed`: a test that reads only attributes of `self` bound in
    `__init__` alone, literals and operators, and calls nothing but pure queries."""
    seen_attr = False
    for n in (test, *m.walk(test)):
        if isinstance(n, cst.Call):
            if m.qualname(n.func) not in _PURE_QUERIES:
                return False
        elif isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) and n.value.value == "self":
            if not _bound_in_init_only(m, info, n):
                return False
            seen_attr = True
        elif isinstance(n, cst.Name) and n.value not in ("self", "True", "False", "None") and not (
                isinstance(m.parent(n), cst.Attribute) and m.parent(n).attr is n):
            return False
        elif isinstance(n, (cst.Await, cst.Yield, cst.NamedExpr, cst.Lambda, cst.Subscript)):
            return False
    return seen_attr


def _same_pure_test(m, first: cst.If, second: cst.If) -> bool:
    code = m.module.code_for_node
    if code(first.test).strip() != code(second.test).strip():
        return False
    block = m.parent(first)
    if block is None or m.parent(second) is not block or not m.precedes(first, second):
        return False
    read: set[str] = set()
    for n in (first.test, *m.walk(first.test)):
        if isinstance(n, cst.Call):
            if m.qualname(n.func) not in _PURE_QUERIES:
                return False
        elif isinstance(n, (cst.Name, cst.Attribute)):
            read.add(code(n))
        elif isinstance(n, (cst.Await, cst.Yield, cst.NamedExpr, cst.Lambda, cst.Subscript)):
            return False
    stmts = list(block.body)
    between = stmts[stmts.index(first):stmts.index(second)]
    for stmt in between:
        for n in m.walk(stmt):
            targets = []
            if isinstance(n, cst.AssignTarget):
                targets = [n.target]
            elif isinstance(n, (cst.AugAssign, cst.AnnAssign)):
                targets = [n.target]
            elif isinstance(n, (cst.For, cst.CompFor)):
                targets = [n.target]
            elif isinstance(n, cst.AsName):
                targets = [n.name]
            elif isinstance(n, (cst.Global, cst.Nonlocal, cst.Del)):
                return False
            for t in targets:
                for x in (t, *m.walk(t)):
                    if isinstance(x, (cst.Name, cst.Attribute)) and any(
                        r == code(x) or r.startswith(code(x) + ".") for r in read
                    ):
                        return False
    return True
