"""GL304 wrapped-model-state-dict."""

from __future__ import annotations

import re

import libcst as cst

from gpulint.analysis.distributed import DIST_FRAMEWORKS, DistFacts, engine_wrapper
from gpulint.analysis.training import argument_for, dotted
from gpulint.rule import Context, Rule
from gpulint.sites import line_ref, line_refs

SAVE_FUNCS = frozenset({"torch.save", "torch.serialization.save"})


class WrappedModelStateDict(Rule):
    code = "GL304"
    name = "wrapped-model-state-dict"
    summary = "`torch.save(model.state_dict())` of a DataParallel/DDP wrapper: every key gets a `module.` prefix."
    message = (
        "`{name}` is a `{wrapper}` wrapper: its state_dict keys all start with `module.`, so loading the "
        "checkpoint into a plain model fails (unexpected/missing keys); save "
        '`getattr({name}, "module", {name}).state_dict()`'
    )
    conditional_message = (
        "`{name}` is a `{wrapper}` wrapper on some paths only ({line}): the checkpoint saved here has "
        "`module.` keys where the wrap ran and plain keys where it did not, so a checkpoint written on one "
        "path fails to load ({loads}) on the other ({example}); save and load "
        '`getattr({name}, "module", {name})`'
    )
    helper_message = (
        "`{name}` is a `{wrapper}` wrapper and `{helper}(...)` packs `{param}.state_dict()` of it into the "
        "checkpoint: its keys all start with `module.`, so loading the checkpoint into a plain model fails "
        '(unexpected/missing keys); pass `getattr({name}, "module", {name})` to `{helper}`'
    )
    fix_safety = "unsafe"
    default = True
    kind = "crash"
    prefilter = r"DataParallel"
    ast_prefilter = r"DataParallel"
    explanation = '''
`DataParallel` and `DistributedDataParallel` keep the real model in `.module`, so the wrapper's
`state_dict()` has every key prefixed with `module.`. A checkpoint saved that way does not load
into the unwrapped model (single-GPU inference, another script, a different number of GPUs):
`load_state_dict` fails with `Missing key(s) ... Unexpected key(s) "module.fc.weight"`.

The rule fires on `torch.save(W.state_dict(), ...)` (also inside a dict/list passed to
`torch.save`) where `W` holds a wrapper of a known model at that point, and on
`torch.save(pack(W, ...), ...)` where `pack` is a function or a static method of the file that puts
`P.state_dict()` of its parameter P into what it returns without unwrapping it
(deepspeech.pytorch's `DeepSpeech.serialize(model, ...)`): the fix passes `getattr(W, "module", W)`
to it. The rule is silent when the same file loads a checkpoint back into the wrapper
(`W.load_state_dict(...)`, a resume path), or loads one into the plain model after dropping the
prefix (`{k[7:]: v for k, v in sd.items()}`, `k.replace("module.", "")`, or a loop filling a new
dict with `new_sd[k[7:]] = v`): that code expects the
`module.` keys, and changing what is saved would break it. It is also silent when the function
that takes the state dict renames its keys without the prefix before saving it
(`sd[k.replace("module.", "")] = sd.pop(k)` in a loop, as micronet's `save_state` does): what is
saved has plain keys. Except when the wrap depends on the machine (`if device == "cuda":
net = nn.DataParallel(net)`, `if torch.cuda.device_count() > 1:`; not a command-line choice such as
`if args.distributed:`, which a resume repeats) and the file saves and loads through that maybe-wrapped name only:
then the keys depend on the path that ran, a checkpoint written on a GPU machine does not load on
a CPU one (and the other way round), and the unsafe fix saves and loads
`getattr(W, "module", W)` on both sides. A wrap decided by the launch (`if world_size > 1:` with
torchrun's `WORLD_SIZE`, `if dist.get_world_size() > 1:`, `if dist.is_initialized():`) counts the
same way when every load of that round trip drops the `module.` prefix (ai2cm/ace#120): the restore
expects plain keys, which a restart with more than one process loads into the wrapper and fails;
a load that takes the keys as saved (also as a first try before stripping) stays silent. The load
may go through an attribute (`trainer.model.load_state_dict(...)` in a restore helper). The (unsafe: the keys of
the saved file change) fix saves `getattr(W, "module", W).state_dict()`, which also works when
the wrapping is conditional.

Bad:

```python
model = nn.DataParallel(Net()).to(device)
...
torch.save(model.state_dict(), "model.pt")
```

Good:

```python
model = nn.DataParallel(Net()).to(device)
...
torch.save(getattr(model, "module", model).state_dict(), "model.pt")
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        if m.frameworks & DIST_FRAMEWORKS:
            return
        facts: DistFacts = m.facts(DistFacts)
        if not facts.wraps:
            return
        if _loads_back_into_wrapper(m, facts):
            # the file's own resume path expects the `module.` keys: changing the save alone breaks
            # it; but when the wrap is conditional, the keys depend on the path that ran
            yield from self._conditional_round_trip(ctx, facts)
            return
        stripped = _prefix_stripped_loads(m)
        for call, obj in _save_sites(m):
            found = []
            for sd in _state_dict_calls(obj, 0, m):
                recv = _unmoved(sd.func.value)  # type: ignore[union-attr]
                if isinstance(recv, cst.Name) and recv.value in stripped:
                    continue  # the file's own resume path drops the `module.` prefix: the keys are on purpose
                if _renamed_before_save(m, sd):
                    continue  # the keys lose their `module.` prefix before the save (micronet's save_state)
                reach = facts.wrapper_reaching(recv) if isinstance(recv, cst.Name) else None
                if reach is not None:
                    if facts.only_saved(reach[0]):
                        continue  # wrapped only to save with `module.` keys, never run: on purpose
                    if _other_side_of_wrap_flag(m, facts, reach[0].call, sd):
                        continue  # `if multi_gpu: ... else: save(model.state_dict())`: not wrapped here
                    found.append((recv, "dp" if reach[0].kind == "dp" else "ddp"))
                    continue
                kind = _engine_wrapper(m, recv)  # `self.model` holding the wrapper, helpers' returns
                wrap = m.value_of(recv).wrap if kind is not None else None
                if isinstance(wrap, cst.Call) and _other_side_of_wrap_flag(m, facts, wrap, sd):
                    continue  # the engine's wrapper (a helper's result, `self.model`): the same test
                if kind is not None and not _wrapper_checked(m, sd):
                    found.append((recv, kind))
            helper_note = None
            for arg, fn_text, param, sd in _packaged_by_helper(m, obj):
                # `torch.save(DeepSpeech.serialize(model, ...), path)` whose static method packs
                # `model.state_dict()` of its parameter (deepspeech.pytorch#475, G67-1)
                if arg.value in stripped or _renamed_before_save(m, sd) or _wrapper_checked(m, obj):
                    continue
                reach = facts.wrapper_reaching(arg)
                if reach is None or facts.only_saved(reach[0]) or _other_side_of_wrap_flag(m, facts, reach[0].call, obj):
                    continue
                if all(r is not arg for r, _ in found):
                    found.append((arg, "dp" if reach[0].kind == "dp" else "ddp"))
                    helper_note = helper_note or (arg, fn_text, param)
            if not found:
                continue
            edits = [ctx.replace(recv, f'getattr({ctx.code(recv)}, "module", {ctx.code(recv)})') for recv, _ in found]
            recv, kind = found[0]
            wrapper = "DataParallel" if kind == "dp" else "DistributedDataParallel"
            msg = self.message.format(name=ctx.code(recv), wrapper=wrapper)
            if helper_note is not None and helper_note[0] is recv:
                name, fn_text, param = ctx.code(recv), helper_note[1], helper_note[2]
                msg = self.helper_message.format(name=name, wrapper=wrapper, helper=fn_text, param=param)
            yield ctx.finding(
                call,
                msg,
                ctx.fix(*edits, message="Save the unwrapped model's state_dict"),
            )

    def _conditional_round_trip(self, ctx: Context, facts: DistFacts):
        """`if device == "cuda": net = DataParallel(net)`, then `torch.save({"net": net.state_dict()})`
        and `net.load_state_dict(checkpoint["net"])` (kuangliu/pytorch-cifar#153): every save and
        every load of a wrapper in the file go through names that hold the same wrap on some paths
        only. A checkpoint written where the wrap ran (`module.` keys) does not load where it did
        not, and the other way round. Fix (unsafe): save and load `getattr(net, "module", net)`."""
        m = ctx.model
        loads = []
        for _call, recv, _meth in m.method_calls("load_state_dict"):
            if _engine_wrapper(m, recv) is None and not (isinstance(recv, cst.Name) and facts.wrapper_reaching(recv)):
                continue
            reach = facts.wrapper_reaching(recv) if isinstance(recv, cst.Name) else None
            if reach is None and isinstance(recv, cst.Attribute):
                reach = _engine_reach(m, facts, recv)  # `trainer.model`, `self.model`: the engine's wrap
            if reach is None or reach[1] or _wrapper_checked(m, recv):
                return  # a load into a wrapper the file always has (or one only the engine sees)
            loads.append((recv, reach[0], _call))
        if not loads:
            return
        for call, obj in _save_sites(m):
            found = []
            for sd in _state_dict_calls(obj, 0, m):
                recv = _unmoved(sd.func.value)  # type: ignore[union-attr]
                reach = facts.wrapper_reaching(recv) if isinstance(recv, cst.Name) else None
                if reach is None:
                    reach = _engine_reach(m, facts, recv)  # the net a loader helper returns
                if reach is None:
                    continue
                if reach[1] or _wrapper_checked(m, sd):
                    found = []
                    break
                found.append((recv, reach[0]))
            if not found:
                continue
            wraps = {id(w.call) for _, w in found}
            same = [(r, w) for r, w, _c in loads if id(w.call) in wraps]
            if not same or len(same) != len(loads):
                continue  # loads into another wrap: not this checkpoint's round trip
            recv, w = found[0]
            example = "a GPU checkpoint on a CPU machine"
            if not _machine_dependent_wrap(m, w.call):
                example = "a restart with more than one process cannot load the keys stripped of `module.`"
            if not _machine_dependent_wrap(m, w.call) and not (
                    _machine_dependent_wrap(m, w.call, _LAUNCH)
                    and all(_strips_loaded_keys(m, c) for _r, _w, c in loads)):
                # wrapped by a command-line choice (`if args.distributed:`): resumed the same way; a
                # wrap decided by the process count (`if world_size > 1:`) only when every load drops
                # the `module.` prefix (it expects plain keys, and the wrapped restart gets them)
                continue
            name = ctx.code(recv)
            wrapper = "DataParallel" if w.kind == "dp" else "DistributedDataParallel"
            line = line_ref(ctx, w.call)
            load_lines = line_refs(ctx, [r for r, _ in same])
            edits = [ctx.replace(r, f'getattr({ctx.code(r)}, "module", {ctx.code(r)})') for r, _ in found + same]
            yield ctx.finding(
                call,
                self.conditional_message.format(name=name, wrapper=wrapper, line=line, loads=load_lines,
                                                example=example),
                ctx.fix(*edits, message="Save and load the unwrapped model's state_dict"),
            )


def _engine_reach(m, facts: DistFacts, recv):
    """(wrap, definitely) for a save's receiver that the flow engine knows holds one of the file's
    wraps on some path, when no binding of the name reaches it (deep-thinking#5: `net, epoch, opt =
    load_model_from_checkpoint(...)`, the helper wrapping `net` in DataParallel when `device ==
    "cuda"` and loading the checkpoint back into it; main saves `{"net": net.state_dict()}`)."""
    if not isinstance(recv, (cst.Name, cst.Attribute)):
        return None
    v = m.value_of(recv)
    if v.kind != "module" or not isinstance(v.wrap, cst.Call):
        return None
    for w in facts.wraps:
        if w.call is v.wrap:
            return w, bool(v.scatters)
    return None


_MACHINE = re.compile(r"is_available|device_count|[\"']cuda[\"']")
# the launch: how many processes torchrun started (ai2cm/ace#120: `if params.world_size > 1:` with
# `world_size = int(os.environ["WORLD_SIZE"])`), or whether a process group exists
_LAUNCH = re.compile(r"(?i)world_size|get_world_size|is_initialized")


def _machine_dependent_wrap(m, wrap: cst.Call, pattern: re.Pattern = _MACHINE) -> bool:
    """The wrap runs or not depending on the machine: an `if`/`elif` around it (in its scope) tests
    CUDA availability or the number of GPUs (`if device == "cuda":`, `if torch.cuda.device_count() >
    1:`), directly or through a name bound once to such a test (`device = "cuda" if
    torch.cuda.is_available() else "cpu"`, `n_gpu = torch.cuda.device_count()`). With `_LAUNCH`:
    the test reads the process count instead (`if world_size > 1:`, `if dist.is_initialized():`)."""
    scope = m.scope_of(wrap)
    for anc in m.ancestors(wrap):
        if anc is scope:
            break
        if not isinstance(anc, cst.If):
            continue
        tests = [anc.test]
        p = m.parent(anc)
        while isinstance(p, cst.If) and p.orelse is anc:
            tests.append(p.test)  # `elif`: the earlier tests decide too
            anc, p = p, m.parent(p)
        for t in tests:
            if pattern.search(m.module.code_for_node(t)):
                return True
            for n in [t, *m.walk(t)]:
                if isinstance(n, cst.Name):
                    bs = m.bindings_of(n)
                    if (len(bs) == 1 and bs[0].value is not None
                            and pattern.search(m.module.code_for_node(bs[0].value))):
                        return True
    return False


def _flag_side(m, if_node: cst.If, node) -> tuple[str, bool] | None:
    """(flag, truth) for `node` inside `if FLAG:` / `if not FLAG:` (FLAG a plain name or a dotted
    attribute such as `args.multi_gpu`): the value FLAG has where `node` runs."""
    test, truth = if_node.test, True
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, truth = test.expression, False
    if not isinstance(test, (cst.Name, cst.Attribute)):
        return None
    flag = dotted(test)
    if flag is None:
        return None
    if any(m.contains(st, node) for st in if_node.body.body) or node is if_node.body:
        return flag, truth
    if if_node.orelse is not None and m.contains(if_node.orelse, node):
        return flag, not truth
    return None


def _other_side_of_wrap_flag(m, facts: DistFacts, wrap: cst.Call, node) -> bool:
    """The wrap runs under a plain flag (`if multi_gpu: model = nn.DataParallel(model)`) and `node`
    runs under the same flag with the other value (`else:` of `if multi_gpu:`, or `if not
    multi_gpu:`), in the same scope, the flag never rebound: where `node` runs, the wrap did not
    (ssl-wearables#2's repair: `if multi_gpu: save(model.module.state_dict()) else:
    save(model.state_dict())`). Not when another wrap sits in the same if/elif chain (`if
    distributed: DDP(...) elif multi_gpu: DataParallel(...)`: the `else` may hold the DDP)."""
    scope = m.scope_of(wrap)
    node_scope = m.scope_of(node)
    if node_scope is not scope and scope is not m.module:
        return False  # (a flag of the module, read in a function: DLLXW/baby-llama2-chinese's `ddp`)
    guard_if = next((a for a in m.ancestors(wrap) if isinstance(a, (cst.If, type(scope)))), None)
    if not isinstance(guard_if, cst.If) or guard_if is scope:
        return False
    guard = _flag_side(m, guard_if, wrap)
    if guard is None:
        return False
    flag, wrapped_when = guard
    if _rebound(m, flag, guard_if.test):
        return False
    if node_scope is not scope and "." not in flag and m.bindings.get((node_scope, flag)):
        return False  # a local of the function, not the module's flag
    top = guard_if
    while isinstance(m.parent(top), cst.If) and m.parent(top).orelse is top:
        top = m.parent(top)
    if top is not guard_if or any(w.call is not wrap and m.contains(top, w.call) for w in facts.wraps):
        return False
    for anc in m.ancestors(node):
        if anc is node_scope:
            break
        if isinstance(anc, cst.If):
            side = _flag_side(m, anc, node)
            if side is not None and side[0] == flag and side[1] != wrapped_when:
                return True
    return False


def _rebound(m, flag: str, test: cst.BaseExpression) -> bool:
    """FLAG may change value: a name with more than one binding (a parameter and an assignment
    count as two), or a dotted attribute assigned more than once in the file."""
    if isinstance(test, cst.UnaryOperation):
        test = test.expression
    if isinstance(test, cst.Name):
        return len(m.bindings_of(test)) > 1
    count = 0
    for n in m.walk(m.module):
        targets = []
        if isinstance(n, cst.Assign):
            targets = [t.target for t in n.targets]
        elif isinstance(n, (cst.AnnAssign, cst.AugAssign)):
            targets = [n.target]
        for t in targets:
            if dotted(t) == flag:
                count += 1
    return count > 1


def _save_sites(m):
    """(call, saved object) for every `torch.save(obj, ...)`, and for every call of a function or
    method of the file that saves one of its parameters (`save_checkpoint(state, path)` whose body
    is `torch.save(state, path)`; `self.save_model(state, epoch)`): the argument passed for it."""
    out = []
    helpers = {}
    for call in m.iter_calls(*SAVE_FUNCS):
        args = [a for a in call.args if a.keyword is None]
        obj = args[0].value if args else next((a.value for a in call.args if a.keyword and a.keyword.value == "obj"), None)
        out.append((call, obj))
        fn = m.enclosing(call, cst.FunctionDef)
        if isinstance(obj, cst.Name) and fn is not None:
            params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
            if obj.value in params and obj.value != "self":
                helpers[fn] = obj.value
    for fn, name in helpers.items():
        # a method (`Trainer.save_model(self, state, epoch)`): the calls the engine resolved to it
        sites = m.call_sites(fn) if m.class_of(fn) is None else m.resolved_sites(fn)
        for site in sites:
            arg = argument_for(fn, site, name)
            if arg is not None:
                out.append((site, arg))
    return out


def _packaged_by_helper(m, obj):
    """(argument, helper's text, parameter, the `state_dict()` call) for a saved object that is
    a call of a module-level function or a static method of the file (`DeepSpeech.serialize(model,
    optimizer=...)`) whose body calls `P.state_dict()` on one of its parameters P, never re-bound
    nor unwrapped there (`P.module`, `hasattr(P, "module")`), when the call passes a plain name for
    P: that name's state_dict is what the checkpoint holds."""
    if not isinstance(obj, cst.Call):
        return
    f = obj.func
    fn = None
    if isinstance(f, cst.Name) and f.value not in m.classes:
        fns = m.functions.get(f.value, [])
        if len(fns) == 1 and m.class_of(fns[0]) is None:
            fn = fns[0]
    elif isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value in m.classes:
        found = m.method_of_class(f.value.value, f.attr.value)
        if found is not None and any(isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod"
                                     for d in found[0].decorators):
            fn = found[0]
    if fn is None:
        return
    params = {p.name.value for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)}
    for sd in m.calls_in(fn.body):
        g = sd.func
        if not (isinstance(g, cst.Attribute) and g.attr.value == "state_dict" and not sd.args
                and isinstance(g.value, cst.Name) and g.value.value in params):
            continue
        if m.enclosing(sd, cst.FunctionDef) is not fn:
            continue
        param = g.value.value
        if any(b.how != "param" for b in m.bindings_of(g.value)):
            continue  # `model = model.module if hasattr(model, "module") else model`
        if _unwraps_in(m, fn, param):
            continue
        arg = argument_for(fn, obj, param)
        if isinstance(arg, cst.Name):
            yield arg, m.module.code_for_node(f), param, sd


def _unwraps_in(m, fn: cst.FunctionDef, param: str) -> bool:
    """`fn` looks through its parameter for a wrapper: `param.module`, or a test naming `module`
    or `Parallel` about it (`hasattr(model, "module")`, `isinstance(model, DataParallel)`)."""
    for n in m.walk(fn.body):
        if (isinstance(n, cst.Attribute) and n.attr.value == "module" and isinstance(n.value, cst.Name)
                and n.value.value == param):
            return True
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value in ("hasattr", "isinstance", "getattr"):
            text = m.module.code_for_node(n)
            if param in text and ("module" in text or "Parallel" in text):
                return True
    return False


def _wrapper_checked(m, node) -> bool:
    """Under an `if` that tests for the wrapper (`isinstance(model, DataParallel)`,
    `hasattr(model, "module")`): the code already handles both cases."""
    for anc in m.ancestors(node):
        if isinstance(anc, (cst.If, cst.IfExp)):
            text = m.module.code_for_node(anc.test)
            if "isinstance" in text or "module" in text or "Parallel" in text:
                return True
    return False


def _engine_wrapper(m, recv) -> str | None:
    found = engine_wrapper(m, recv)
    return found[0] if found is not None else None


def _loads_back_into_wrapper(m, facts: DistFacts) -> bool:
    """`W.load_state_dict(...)` where W holds a DataParallel/DDP wrapper (directly, or as the
    parameter of a function of the file that is called with the wrapper)."""
    for call in m.calls:
        # the wrapper handed to a resume helper of another file (`restart_from_checkpoint(path,
        # state_dict=linear_classifier)`): it may load the checkpoint back into the wrapper
        f = call.func
        name = f.value if isinstance(f, cst.Name) else f.attr.value if isinstance(f, cst.Attribute) else ""
        low = name.lower()
        if (not any(h in low for h in ("load", "resume", "restart", "checkpoint", "ckpt")) or m.functions.get(name)
                or (isinstance(f, cst.Name) and name in m.classes)):
            # (a class of the file, `Checkpoint(model)` (ignite#750's handler): what it does with
            # the wrapper is in this file, its loads are found below)
            continue
        for a in call.args:
            x = a.value
            if _engine_wrapper(m, x) is not None or (
                    isinstance(x, cst.Name) and facts.wrapper_reaching(x) is not None):
                return True
    for call, recv, _meth in m.method_calls("load_state_dict"):
        if _engine_wrapper(m, recv) is not None:
            return True
        if not isinstance(recv, cst.Name):
            continue
        if facts.wrapper_reaching(recv) is not None:
            return True
        for b in m.bindings_of(recv):
            if b.how == "param" and any(
                isinstance(a, cst.Name) and facts.wrapper_reaching(a) is not None for a in m.param_arguments(b)
            ):
                return True
    return False


def _prefix_stripped_loads(m) -> set[str]:
    """Names N with `N.load_state_dict(D)` where D's keys drop a `module.` prefix: a dict
    comprehension (directly, or through a name assigned one) whose key is `k[7:]`,
    `k[len("module."):]` or an expression that names the string `module.` (`k.replace("module.",
    "")`, `re.sub("^module.", "", k)`, `k.removeprefix("module.")`). selimsef/dfdc_deepfake_challenge's
    trainer always saves its wrapper and resumes with `{k[7:]: w for k, w in state_dict.items()}`:
    the `module.` keys are the checkpoint format the file itself reads back."""
    out = set()
    for call, recv, _meth in m.method_calls("load_state_dict"):
        if isinstance(recv, cst.Name) and _strips_loaded_keys(m, call):
            out.add(recv.value)
    return out


def _strips_loaded_keys(m, call: cst.Call) -> bool:
    """`X.load_state_dict(D)` where D's keys drop the `module.` prefix (see `_prefix_stripped_loads`)."""
    if not call.args:
        return False
    arg = call.args[0].value
    values = [arg]
    if isinstance(arg, cst.Name):
        values = [b.value for b in m.bindings_of(arg) if b.how == "assign"]
    return (
        any(isinstance(v, cst.DictComp) and _strips_module_prefix(m, v.key) for v in values)
        or (isinstance(arg, cst.Name) and _loop_filled_stripped(m, arg))
        or any(_helper_strips(m, v) for v in values)
    )


def _helper_strips(m, value) -> bool:
    """`trim_state_dict_name(ckpt)`: a call of a function of the file (by name, one level) that
    returns a dict whose keys drop the `module.` prefix (a stripping dict comprehension, directly or
    through a name assigned one, or a name filled in a loop with stripped keys). HA-GAN's train.py
    resumes with `ckpt = trim_state_dict_name(ckpt); G.load_state_dict(ckpt)`, its helper filling
    an OrderedDict with `name = k[7:]`."""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name)):
        return False
    for fn in m.functions.get(value.func.value, []):
        for node in m.walk(fn, skip=(cst.ClassDef, cst.Lambda)):
            if not isinstance(node, cst.Return) or node.value is None:
                continue
            if m.enclosing(node, cst.FunctionDef) is not fn:
                continue
            ret = node.value
            rets = [ret]
            if isinstance(ret, cst.Name):
                rets = [b.value for b in m.bindings_of(ret) if b.how == "assign"]
            if any(isinstance(v, cst.DictComp) and _strips_module_prefix(m, v.key) for v in rets):
                return True
            if isinstance(ret, cst.Name) and _loop_filled_stripped(m, ret):
                return True
    return False


def _loop_filled_stripped(m, d: cst.Name) -> bool:
    """`D[key] = v` in a `for` loop of D's scope, with a key that drops the `module.` prefix
    (directly, or a name one of whose bindings does): Pytorch_Retinaface's resume path,
    `new_state_dict = OrderedDict()`, `for k, v in sd.items(): ... name = k[7:] ...
    new_state_dict[name] = v`."""
    scope = m.scope_of(d)
    for node in m.walk(scope, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if not isinstance(node, cst.Assign) or m.enclosing(node, cst.For) is None:
            continue
        for t in node.targets:
            tgt = t.target
            if not (isinstance(tgt, cst.Subscript) and isinstance(tgt.value, cst.Name)
                    and tgt.value.value == d.value and len(tgt.slice) == 1
                    and isinstance(tgt.slice[0].slice, cst.Index)):
                continue
            key = tgt.slice[0].slice.value
            if _strips_module_prefix(m, key):
                return True
            if isinstance(key, cst.Name) and any(
                    b.how == "assign" and b.value is not None and _strips_module_prefix(m, b.value)
                    for b in m.bindings_of(key)):
                return True
    return False


def _renamed_before_save(m, sd: cst.Call) -> bool:
    """`W.state_dict()` is taken into a name (`state = {"state_dict": model.state_dict(), ...}`) whose
    dictionary the same function renames in place, in a loop, with keys that drop the `module.`
    prefix: 666DZY666/micronet's `save_state`, `for key in state_copy.keys(): if "module" in key:
    state["state_dict"][key.replace("module.", "")] = state["state_dict"].pop(key)`, before every
    `torch.save(state, ...)`. What is saved has no `module.` keys."""
    stmt = next((a for a in m.ancestors(sd) if isinstance(a, cst.Assign)), None)
    if stmt is None or len(stmt.targets) != 1 or not isinstance(stmt.targets[0].target, cst.Name):
        return False
    root = stmt.targets[0].target.value
    scope = m.enclosing(sd, cst.FunctionDef) or m.module
    for node in m.walk(scope, skip=(cst.ClassDef, cst.Lambda)):
        if not isinstance(node, cst.Assign) or m.enclosing(node, cst.For) is None or len(node.targets) != 1:
            continue
        if (m.enclosing(node, cst.FunctionDef) or m.module) is not scope:
            continue
        tgt, val = node.targets[0].target, node.value
        if not (isinstance(tgt, cst.Subscript) and len(tgt.slice) == 1 and isinstance(tgt.slice[0].slice, cst.Index)):
            continue
        base = m.module.code_for_node(tgt.value)
        if not (base == root or base.startswith((root + "[", root + "."))):
            continue
        if not (isinstance(val, cst.Call) and isinstance(val.func, cst.Attribute) and val.func.attr.value == "pop"
                and m.module.code_for_node(val.func.value) == base):
            continue  # a rename in place: `D[new_key] = D.pop(old_key)`
        if _strips_module_prefix(m, tgt.slice[0].slice.value):
            return True
    return False


def _strips_module_prefix(m, key) -> bool:
    if isinstance(key, cst.Subscript) and len(key.slice) == 1 and isinstance(key.slice[0].slice, cst.Slice):
        sl = key.slice[0].slice
        lower = sl.lower
        if sl.upper is None and sl.step is None and lower is not None:
            if isinstance(lower, cst.Integer) and lower.value == "7":
                return True
            if (isinstance(lower, cst.Call) and isinstance(lower.func, cst.Name) and lower.func.value == "len"
                    and len(lower.args) == 1 and isinstance(lower.args[0].value, cst.SimpleString)
                    and "module." in lower.args[0].value.value):
                return True
    for node in m.walk(key):
        if isinstance(node, cst.SimpleString) and re.search(r"module\\?\.", node.value):
            return True
    return False


def _state_dict_name(m, name: cst.Name) -> bool:
    """A name in a saved dict assigned once from a (copied) `state_dict()` call."""
    bindings = m.bindings_of(name)
    if len(bindings) != 1 or bindings[0].how != "assign" or not isinstance(bindings[0].value, cst.Call):
        return False
    v = bindings[0].value
    if m.qualname(v.func) in ("copy.copy", "copy.deepcopy") and len(v.args) == 1:
        v = v.args[0].value
    return isinstance(v, cst.Call) and isinstance(v.func, cst.Attribute) and v.func.attr.value == "state_dict"


def _definitely_reaching(m, use: cst.Name, bindings) -> list:
    """[the binding of `use` that reaches it on every path] when the name has several bindings:
    the latest binding before `use` in the same function whose enclosing blocks (up to the
    function) all contain `use` as well (StyleGAN2_PyTorch's train.py: `state = torch.load(...)`
    under the resume `if`, then `state = {"G": G.state_dict(), ...}; torch.save(state, ...)` in the
    epoch loop). [] otherwise."""
    scope = m.scope_of(use)
    before = [b for b in bindings if m.scope_of(b.node) is scope and m.precedes(b.node, use)
              and not m.contains(b.node, use)]
    if not before:
        return []
    last = max(before, key=lambda b: m.order[b.node])
    for anc in m.ancestors(last.node):
        if anc is scope:
            break
        if isinstance(anc, (cst.If, cst.Else, cst.For, cst.While, cst.Try, cst.ExceptHandler, cst.Finally,
                            cst.With, cst.IndentedBlock)) and not m.contains(anc, use):
            return []
    return [last]


def _string_key(sub: cst.Subscript) -> bool:
    return (len(sub.slice) == 1 and isinstance(sub.slice[0].slice, cst.Index)
            and isinstance(sub.slice[0].slice.value, cst.SimpleString))


# Module methods that move or retype the module in place and return it: `W.cpu().state_dict()` is
# the state_dict of W itself (EnlightenGAN's `save_network`, B70-G1).
_IN_PLACE_MODULE_MOVES = frozenset({"cpu", "cuda", "to", "float", "half", "double", "bfloat16", "train", "eval"})


def _unmoved(expr):
    """`W` for `W.cpu()`, `W.cuda(0)`, `W.to(device).eval()`, ...; the expression itself otherwise."""
    while (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)
           and expr.func.attr.value in _IN_PLACE_MODULE_MOVES):
        expr = expr.func.value
    return expr


def _state_dict_calls(expr, depth: int = 0, m=None):
    """`W.state_dict()` calls at the top of a torch.save argument or inside dict/list/tuple literals
    (with the model: also in the literal a name saved was assigned once, `ckpt = {...}`, or
    `train_state = [model.state_dict(), optim.state_dict(), epoch, step]` as PNDM's runner saves)."""
    if expr is None or depth > 4:
        return
    recv = _unmoved(expr.func.value) if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) else None
    if (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == "state_dict"
        and (isinstance(recv, cst.Name) or (
            isinstance(recv, cst.Attribute) and isinstance(recv.value, cst.Name)
            and recv.value.value == "self") or (
            # `to_save["model"].state_dict()`: an entry of a mapping the engine knows
            isinstance(recv, cst.Subscript) and isinstance(recv.value, cst.Name)
            and _string_key(recv)))
    ):
        yield expr
    elif isinstance(expr, cst.Name) and m is not None and (depth == 0 or depth <= 2 and _state_dict_name(m, expr)):
        bindings = m.bindings_of(expr)
        if len(bindings) > 1 and depth == 0:
            bindings = _definitely_reaching(m, expr, bindings)
        if len(bindings) == 1 and bindings[0].how == "assign" and isinstance(
                bindings[0].value, (cst.Dict, cst.List, cst.Tuple, cst.Call)):
            yield from _state_dict_calls(bindings[0].value, depth + 1, m)
    elif (isinstance(expr, cst.Call) and m is not None and len(expr.args) == 1
          and m.qualname(expr.func) in ("copy.copy", "copy.deepcopy")):
        # `state_dict = copy.copy(self.network.state_dict())`, then popped from (DrQA's save)
        yield from _state_dict_calls(expr.args[0].value, depth + 1, m)
    elif isinstance(expr, cst.Dict):
        for el in expr.elements:
            if isinstance(el, cst.DictElement):
                yield from _state_dict_calls(el.value, depth + 1, m)
    elif isinstance(expr, (cst.List, cst.Tuple)):
        for el in expr.elements:
            yield from _state_dict_calls(el.value, depth + 1, m)
    elif isinstance(expr, cst.DictComp):
        # `{name: obj.state_dict() for name, obj in self.to_save.items()}` (ignite#750's handler)
        yield from _state_dict_calls(expr.value, depth + 1, m)
    elif isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
        yield from _state_dict_calls(expr.elt, depth + 1, m)
    elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "dict":
        for a in expr.args:
            if a.keyword is not None:
                yield from _state_dict_calls(a.value, depth + 1, m)
