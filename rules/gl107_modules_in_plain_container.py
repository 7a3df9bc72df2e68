"""GL107 modules-in-plain-container."""

from __future__ import annotations

import libcst as cst


from gpulint.analysis.modules import ModuleClass, ModuleFacts, nn_prefix, self_attr
from gpulint.analysis.training import dotted
from gpulint.rule import Context, Rule

# attributes of nn.ModuleDict: a key with one of these names cannot be a ModuleDict entry
_MODULEDICT_ATTRS = frozenset(
    "T_destination add_module apply bfloat16 buffers call_super_init children clear compile cpu cuda "
    "double dump_patches eval extra_repr float forward get_buffer get_extra_state get_parameter "
    "get_submodule half ipu items keys load_state_dict modules mtia named_buffers named_children "
    "named_modules named_parameters parameters pop register_backward_hook register_buffer "
    "register_forward_hook register_forward_pre_hook register_full_backward_hook "
    "register_full_backward_pre_hook register_load_state_dict_post_hook "
    "register_load_state_dict_pre_hook register_module register_parameter "
    "register_state_dict_post_hook register_state_dict_pre_hook requires_grad_ set_extra_state "
    "set_submodule share_memory state_dict to to_empty train training type update values xpu "
    "zero_grad".split()
)
_GROWING = frozenset({"append", "extend", "insert"})


class ModulesInPlainContainer(Rule):
    code = "GL107"
    name = "modules-in-plain-container"
    summary = "Submodules kept in a plain list/dict/tuple are not registered: never moved, never trained."
    message = (
        "`self.{attr}` keeps modules in a plain {what}: they are not registered, so `model.to(device)`, "
        "`model.parameters()` and `state_dict()` skip them; use {container}"
    )
    fix_safety = "unsafe"
    default = True
    kind = "crash"
    prefilter = r"nn\b|torch"
    ast_prefilter = r"^base (?:Module|Sequential|ModuleList|ModuleDict|LightningModule)$"
    explanation = '''
An `nn.Module` registers the submodules assigned to its attributes, and `nn.ModuleList` /
`nn.ModuleDict` register the modules they hold. A plain Python `list`, `dict` or `tuple` does not:
modules kept in one are invisible to `model.parameters()` (so the optimizer never updates them),
to `model.to(device)` (so they stay on the CPU, and the forward pass fails on a GPU with
`RuntimeError: Expected all tensors to be on the same device`), to `state_dict()`,
`model.train()`/`eval()` and DDP.

The rule fires in `__init__` of the file's `nn.Module` subclasses, on an attribute assigned a list,
tuple or dict literal (or comprehension) that builds modules, or an empty list/dict that modules are
then appended (or assigned) to. Lists of references to modules that are registered anyway
(`[self.conv1, self.conv2]`), lists handed to `nn.Sequential(*layers)`, and modules deliberately
hidden from registration (a teacher model passed in) are not flagged, nor are lists of layers
with nothing to register (`nn.ReLU`, `nn.Upsample`, pooling: no parameter, no buffer, no
train/eval behaviour), nor lists of weightless wrappers (a class of the file that owns no
parameter or buffer and builds no other module) made around parts of something the module already
holds (`for member in self.ensemble.members: self.wrappers.append(Wrapper(member))`): their
weights are registered through the holder, and a ModuleList would register them twice.

The fix wraps the container in `nn.ModuleList` / `nn.ModuleDict` (spelled the way the file
imports torch.nn). It is unsafe: the `state_dict` gains the modules' keys, and list or dict
operations that the Module containers lack would fail. A dict gets no fix unless its keys are
strings that `nn.ModuleDict` accepts.

Bad:

```python
class Ensemble(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.heads = [nn.Linear(16, 2) for _ in range(n)]
```

Good:

```python
class Ensemble(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.heads = nn.ModuleList([nn.Linear(16, 2) for _ in range(n)])
```
'''

    def check(self, ctx: Context):
        facts: ModuleFacts = ctx.model.facts(ModuleFacts)
        seen = set()
        for cls in facts.classes:
            registered = None
            if cls.registers_dynamically:
                registered = _dynamically_registered(ctx, cls)
                if registered is None:
                    continue
            for attr, assigns in cls.init_assigns.items():
                if len(assigns) != 1:
                    continue  # e.g. `self.layers = []` ... `self.layers = nn.ModuleList(self.layers)`
                if registered is not None and attr in registered:
                    continue  # its entries are registered one by one with add_module
                a = assigns[0]
                if a.node in seen or not isinstance(a.node, cst.Assign) or a.value is None:
                    continue
                built = None
                if not isinstance(a.value, _CONTAINERS) and _repeated_list(a.value) is None:
                    built = _list_built_elsewhere(ctx, a.method, a.value)
                    if built is None:
                        continue  # nothing _inspect reports (checked before _handed_on's walk of __init__)
                if self._handed_on(ctx, a.method, attr):
                    continue
                if built is not None:
                    found = self._inspect_built(ctx, facts, a.method, a.value, *built)
                else:
                    found = self._inspect(ctx, facts, cls, a.method, attr, a.value)
                if found is None:
                    continue
                seen.add(a.node)
                what, container, fix_node, fixable = found
                prefix = nn_prefix(ctx.model, container)
                shown = f"`{prefix or 'nn.' + container}`"
                if container == "ModuleDict" and not fixable:
                    shown += " with string keys (no '.')"
                msg = self.message.format(attr=attr, what=what, container=shown)
                fix = None
                if fixable and prefix is not None:
                    start, end = ctx.span(fix_node)
                    if getattr(fix_node, "lpar", None):  # spans leave a node's own parentheses out
                        start, end = ctx.span(fix_node.lpar[0])[0], ctx.span(fix_node.rpar[-1])[1]
                    code = ctx.source[start:end]
                    if isinstance(fix_node, cst.Tuple) and not fix_node.lpar:
                        code = f"({code})"
                    edit = ctx.edit(start, end, f"{prefix}({code})")
                    fix = ctx.fix(edit, message=f"Wrap in `{prefix}`")
                yield ctx.finding(a.node, msg, fix)

    # -------------------------------------------------------------------------------------------
    def _inspect(self, ctx: Context, facts: ModuleFacts, cls: ModuleClass, init, attr: str, value):
        """(what, container class, node to wrap, fixable) when `value` keeps modules unregistered."""
        if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
            if not value.elements:
                if isinstance(value, cst.List):
                    return self._grown_list(ctx, facts, init, attr, value)
                return None
            mods = [self._is_new_module(ctx, facts, init, el.value) for el in value.elements]
            if not _any_stateful(mods):
                return None
            what = {cst.List: "list", cst.Tuple: "tuple", cst.Set: "set"}[type(value)]
            fixable = all(mods) and not isinstance(value, cst.Set)
            return what, "ModuleList", value, fixable
        rep = _repeated_list(value)
        if rep is not None:
            # `(n - 1) * [nn.Conv1d(...)]`: a plain list, and one layer object repeated; no fix (a
            # ModuleList of the product would still share the one layer)
            if _any_stateful(self._is_new_module(ctx, facts, init, el.value) for el in rep.elements):
                return "list", "ModuleList", value, False
            return None
        if isinstance(value, cst.ListComp):
            if self._is_new_module(ctx, facts, init, value.elt) is True:
                return "list", "ModuleList", value, True
            return None
        if isinstance(value, cst.Dict):
            if not value.elements:
                return self._grown_dict(ctx, facts, init, attr, value)
            mods = [
                isinstance(el, cst.DictElement) and self._is_new_module(ctx, facts, init, el.value)
                for el in value.elements
            ]
            if not _any_stateful(mods):
                return None
            keys_ok = all(isinstance(el, cst.DictElement) and _good_key(el.key) for el in value.elements)
            return "dict", "ModuleDict", value, all(mods) and keys_ok
        if isinstance(value, cst.DictComp):
            if self._is_new_module(ctx, facts, init, value.value) is True:
                return "dict", "ModuleDict", value, _good_key(value.key)
            return None
        return None

    def _inspect_built(self, ctx: Context, facts: ModuleFacts, init, value, fn, local: str):
        """`self.x = layers` with `layers = []` grown in __init__, or `self.x = make_blocks(...)` with a
        function of the file that grows a local list and returns it (Zen-NAS's
        `create_netblock_list_from_str`): reported when every item added is a module built there."""
        added = []
        for call in ctx.model.calls_in(fn):
            f = call.func
            if isinstance(f, cst.Attribute) and f.attr.value in _GROWING and isinstance(f.value, cst.Name) and f.value.value == local:
                args = [arg.value for arg in call.args]
                if f.attr.value == "insert":
                    args = args[1:]
                if f.attr.value == "extend" or len(args) != 1:
                    return None  # what an extend adds is not read here
                added.append(self._is_new_module(ctx, facts, fn, args[0]))
        for node in ctx.model.walk(fn):
            if isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name) and node.target.value == local:
                return None
        if not added or not all(added) or not _any_stateful(added):
            return None
        return "list", "ModuleList", value, True

    def _grown_list(self, ctx, facts, init, attr, value):
        """`self.x = []` then `self.x.append(Module(...))` in __init__ (also a list of new modules
        appended as one item, `self.x.append([nn.Linear(...), nn.Tanh()])`: reported, not fixed, as a
        ModuleList takes modules only)."""
        added = []
        nested = False
        for call in ctx.model.calls_in(init):
            f = call.func
            if isinstance(f, cst.Attribute) and f.attr.value in _GROWING and self_attr(f.value) == attr:
                args = [a.value for a in call.args]
                if f.attr.value == "insert":
                    args = args[1:]
                if f.attr.value == "extend":
                    if len(args) == 1 and isinstance(args[0], (cst.List, cst.Tuple)):
                        args = [el.value for el in args[0].elements]
                    elif len(args) == 1 and isinstance(args[0], cst.ListComp):
                        args = [args[0].elt]
                    else:
                        args = [None]
                for v in args:
                    if isinstance(v, (cst.List, cst.Tuple)) and v.elements and f.attr.value != "extend":
                        if _any_stateful(self._is_new_module(ctx, facts, init, el.value) for el in v.elements):
                            added.append(True)
                            nested = True
                            continue
                    added.append(self._is_new_module(ctx, facts, init, v) if v is not None else False)
        for node in ctx.model.walk(init):
            if isinstance(node, cst.AugAssign) and self_attr(node.target) == attr:
                v = node.value
                if isinstance(v, cst.List):
                    added.extend(self._is_new_module(ctx, facts, init, el.value) for el in v.elements)
                else:
                    added.append(False)
        if not _any_stateful(added):
            return None
        return "list", "ModuleList", value, all(added) and not nested

    def _grown_dict(self, ctx, facts, init, attr, value):
        """`self.x = {}` then `self.x[key] = Module(...)` in __init__."""
        added, keys_ok = [], True
        for node in ctx.model.walk(init):
            if isinstance(node, cst.Assign):
                for t in node.targets:
                    target = t.target
                    if isinstance(target, cst.Subscript) and self_attr(target.value) == attr:
                        added.append(self._is_new_module(ctx, facts, init, node.value))
                        sl = target.slice
                        if len(sl) != 1 or not isinstance(sl[0].slice, cst.Index) or not _good_key(sl[0].slice.value):
                            keys_ok = False
        if not _any_stateful(added):
            return None
        return "dict", "ModuleDict", value, all(added) and keys_ok

    @staticmethod
    def _handed_on(ctx: Context, init, attr: str) -> bool:
        """`self.x` is read in __init__ other than to grow it (`nn.Sequential(*self.x)`, a loop that
        registers its items...), or indexed in a method of the class that __init__ calls
        (`self.backbone = self._get_basemodel(name)` returning `self.resnet_dict[name]`): its modules
        may well be registered another way."""
        for helper in _helpers_called(ctx, init):
            for node in ctx.model.walk(helper):
                if isinstance(node, cst.Attribute) and self_attr(node) == attr:
                    parent = ctx.model.parent(node)
                    if isinstance(parent, cst.Subscript) and not isinstance(ctx.model.parent(parent), cst.AssignTarget):
                        return True  # one entry selected by key in a construction helper
        for node in ctx.model.walk(init):
            if not (isinstance(node, cst.Attribute) and self_attr(node) == attr):
                continue
            parent = ctx.model.parent(node)
            if isinstance(parent, cst.AssignTarget):
                continue
            if isinstance(parent, cst.AugAssign) and parent.target is node:
                continue
            if isinstance(parent, cst.Attribute) and parent.attr.value in _GROWING:
                continue
            if isinstance(parent, cst.Subscript) and isinstance(ctx.model.parent(parent), cst.AssignTarget):
                continue
            if _len_of(ctx, parent):
                continue  # `nn.Linear(len(self.convs), n)`: counting the entries registers none of them
            return True
        return False

    @staticmethod
    def _is_new_module(ctx: Context, facts: ModuleFacts, init, expr):
        """A module built right here (not a reference to a registered one, not one passed in):
        True, or INERT for a parameter-free torch.nn layer with no train/eval behaviour
        (`nn.Upsample`, `nn.ReLU`, `nn.MaxPool2d`), which a ModuleList may hold (a fix wraps it with
        the rest) but which alone gives a plain list nothing to lose; False otherwise."""
        if facts.constructs_module(expr):
            if _inert_file_module(ctx, facts, expr):
                return False
            if _wrapper_of_held_parts(ctx, facts, expr):
                return False
            return INERT if _inert_torch_layer(ctx.model, expr) else True
        if isinstance(expr, cst.Name):
            bindings = ctx.model.bindings_of(expr)
            if not bindings or not all(b.how == "assign" and facts.constructs_module(b.value) for b in bindings):
                return False
            if all(_wrapper_of_held_parts(ctx, facts, b.value) for b in bindings):
                return False
            # the local must not reach anything else that could register it (`self.fc = layer`,
            # `nn.Sequential(layer)`, another list): attribute uses such as `layer.bias` are fine
            targets = {id(b.node) for b in bindings}
            for n in ctx.model.walk(init):
                if not (isinstance(n, cst.Name) and n.value == expr.value) or n is expr or id(n) in targets:
                    continue
                parent = ctx.model.parent(n)
                if isinstance(parent, cst.Attribute) and parent.value is n:
                    continue
                return False
            if all(_inert_torch_layer(ctx.model, b.value) for b in bindings):
                return INERT
            return True
        return False


def _wrapper_of_held_parts(ctx: Context, facts: ModuleFacts, expr) -> bool:
    """`PreferenceModel(cast(RewardNet, member), self.noise_prob)` for each `member` of
    `self.ensemble_model.members` (HumanCompatibleAI/imitation, PRECISION55): an instance of a
    class of the file that owns no parameter or buffer and builds no module of another class in
    its `__init__` (it keeps what it is given), made around a part of something this module
    already holds (a loop variable over `self.<...>`, or `self.<...>` itself). Its weights are
    registered through the holder; a ModuleList would register them twice."""
    if not isinstance(expr, cst.Call) or not isinstance(expr.func, cst.Name):
        return False
    cls = next((c for c in facts.classes if c.name == expr.func.value), None)
    if cls is None or cls.init is None or cls.parameters or cls.buffers or cls.registers_dynamically:
        return False
    m = ctx.model
    for call in m.calls_in(cls.init):
        if facts.constructs_module(call) and not (isinstance(call.func, cst.Name) and call.func.value == cls.name):
            return False
    held = False
    for a in expr.args:
        v = a.value
        if a.star:
            return False
        if isinstance(v, cst.Call) and m.qualname(v.func) in ("typing.cast", "cast") and len(v.args) == 2:
            v = v.args[1].value  # `cast(RewardNet, member)`: the member
        if facts.constructs_module(v):
            return False
        if _held_part(m, v):
            held = True
    return held


def _held_part(m, v) -> bool:
    """`self.a.b`, or a loop variable over such a chain (`for member in self.ensemble.members`)."""
    d = dotted(v)
    if d is not None and d.startswith("self.") and isinstance(v, cst.Attribute):
        return True
    if isinstance(v, cst.Name):
        bindings = m.bindings_of(v)
        if bindings and all(b.how == "for" for b in bindings):
            for b in bindings:
                loop = m.enclosing(b.node, cst.For)
                it = loop.iter if loop is not None else None
                di = dotted(it) if it is not None else None
                if di is None or not di.startswith("self."):
                    return False
            return True
    return False


_MODE_SENSITIVE = ("Dropout", "AlphaDropout")


class _Inert:
    """A new module with nothing to register (truthy: it counts for the fix's "all modules")."""

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "INERT"


INERT = _Inert()


def _len_of(ctx: Context, arg) -> bool:
    """`arg` is the one argument of a call to the builtin `len` (not shadowed in the file)."""
    if not isinstance(arg, cst.Arg) or arg.keyword is not None or arg.star:
        return False
    call = ctx.model.parent(arg)
    if not (isinstance(call, cst.Call) and len(call.args) == 1 and isinstance(call.func, cst.Name)):
        return False
    if call.func.value != "len":
        return False
    return not any(
        isinstance(n, (cst.FunctionDef, cst.ClassDef)) and n.name.value == "len"
        or isinstance(n, cst.AssignTarget) and isinstance(n.target, cst.Name) and n.target.value == "len"
        or isinstance(n, cst.ImportAlias) and (n.evaluated_alias or n.evaluated_name) == "len"
        for n in ctx.model.walk(ctx.model.module)
    )


def _any_stateful(flags) -> bool:
    """Some item is a new module that `.to()`, `parameters()`, `state_dict()` or `train()` reach:
    robot-surgery-segmentation's `self.upsamplers = [upsample] * len(self.up)` (one `nn.Upsample`
    repeated) loses nothing in a plain list."""
    return any(f is True for f in flags)


def _inert_torch_layer(m, expr) -> bool:
    """`nn.Upsample(...)`, `nn.ReLU()`, `nn.MaxPool2d(2)`: a torch.nn layer with no parameter, no
    buffer and no train/eval behaviour (dropout is not: `model.eval()` would not reach it)."""
    if not isinstance(expr, cst.Call):
        return False
    q = m.qualname(expr.func) or ""
    last = q.rsplit(".", 1)[-1]
    return q.startswith("torch.nn.") and m.is_stateless_module(expr) and not last.startswith(_MODE_SENSITIVE)


def _inert_file_module(ctx: Context, facts: ModuleFacts, expr, depth: int = 0) -> bool:
    """`moving_avg(kernel, stride=1)`, a class of this file deriving from `nn.Module` whose
    `__init__` keeps only numbers, names of its arguments and parameter-free torch.nn layers
    (`nn.AvgPool1d`), nothing that `train()`/`eval()` changes (no dropout), no buffer or parameter
    (LTSF-Linear's FEDformer `series_decomp_multi` keeps them in a list), or inert modules of
    this file in turn (Time-Series-Library's `series_decomp` keeps one `moving_avg`): `model.to()`,
    `state_dict()` and `train()` have nothing to reach in it, so a plain list loses nothing."""
    m = ctx.model
    if depth > 4 or not isinstance(expr, cst.Call) or not isinstance(expr.func, cst.Name):
        return False
    cls = next((c for c in facts.classes if c.name == expr.func.value), None)
    if cls is None or cls.init is None or cls.buffers or cls.parameters or cls.registers_dynamically:
        return False
    if any(b != "torch.nn.Module" for b in cls.info.bases):
        return False
    for attr, assigns in cls.init_assigns.items():
        for a in assigns:
            if a.kind in ("scalar", "none"):
                continue
            v = a.value
            if a.kind == "module" and isinstance(v, cst.Call):
                q = m.qualname(v.func) or ""
                last = q.rsplit(".", 1)[-1]
                if q.startswith("torch.nn.") and m.is_stateless_module(v) and not last.startswith(_MODE_SENSITIVE):
                    continue
                if _inert_file_module(ctx, facts, v, depth + 1):
                    continue
                return False
            if a.kind == "other":
                arg = _config_value_of(v)
                if arg is not None and all(b.how == "param" for b in m.bindings_of(arg)):
                    if not any(p.annotation is not None for p in cls.init.params.params if p.name.value == arg.value):
                        # `self.kernel_size = kernel_size`: an unannotated argument kept as is;
                        # `self.model_name = model_config['name']`: a value read from one (P48-4)
                        continue
            return False
    return True


def _config_value_of(v) -> cst.Name | None:
    """`kernel_size`, or `model_config['hparams']['n_group_size']` (literal keys read from an
    argument, radtts's `AttributePredictionLoss`): the argument name, else None."""
    while isinstance(v, cst.Subscript):
        if len(v.slice) != 1 or not isinstance(v.slice[0].slice, cst.Index) or not isinstance(
                v.slice[0].slice.value, (cst.SimpleString, cst.Integer)):
            return None
        v = v.value
    return v if isinstance(v, cst.Name) else None


def _helpers_called(ctx: Context, init) -> list:
    """The methods of __init__'s class that __init__ calls as `self.<name>(...)` (construction
    helpers), one level deep."""
    cls = ctx.model.class_of(init)
    if cls is None or not isinstance(cls.body, cst.IndentedBlock):
        return []
    methods = {st.name.value: st for st in cls.body.body if isinstance(st, cst.FunctionDef) and st is not init}
    out = []
    for call in ctx.model.calls_in(init):
        f = call.func
        if (
            isinstance(f, cst.Attribute)
            and isinstance(f.value, cst.Name)
            and f.value.value == "self"
            and f.attr.value in methods
            and methods[f.attr.value] not in out
        ):
            out.append(methods[f.attr.value])
    return out


def _list_built_elsewhere(ctx: Context, init, value, _depth: int = 0):
    """(function, local name) when `value` is a local of __init__ bound once to `[]`, or a call of a
    function of the file whose only return is a local bound once to `[]` (directly or through one
    local of __init__: `block_list = make_blocks(...)`, `self.block_list = block_list`); None
    otherwise. The local must not be read anywhere else than where it is grown and returned or
    stored (a list also handed to `nn.ModuleList(...)`, `nn.Sequential(*...)` or another attribute
    may be registered that way)."""
    m = ctx.model
    if isinstance(value, cst.Name):
        fn, local, stored = init, value.value, value
    elif isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and _depth < 2:
        fn = m.module_function(value.func.value)
        if fn is None or m.class_of(fn) is not None:
            return None
        returns = [n for n in m.walk(fn) if isinstance(n, cst.Return)]
        if len(returns) != 1 or not isinstance(returns[0].value, cst.Name):
            return None
        local, stored = returns[0].value.value, returns[0].value
    else:
        return None
    binds = [
        n for n in m.walk(fn)
        if isinstance(n, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == local for t in n.targets)
    ]
    if len(binds) != 1 or len(binds[0].targets) != 1:
        return None
    bound = binds[0].value
    if not (isinstance(bound, cst.List) and not bound.elements) and not (
        fn is init and isinstance(bound, cst.Call) and isinstance(bound.func, cst.Name)
    ):
        return None
    target = binds[0].targets[0].target
    for n in m.walk(fn):
        if not (isinstance(n, cst.Name) and n.value == local) or n is stored or n is target:
            continue
        parent = m.parent(n)
        if isinstance(parent, cst.Attribute) and parent.attr is n:
            continue  # `self.layers`: an attribute's name, not the local
        if isinstance(parent, cst.Attribute) and parent.value is n and parent.attr.value in _GROWING:
            continue
        return None  # read, indexed, iterated, handed on: it may be registered or moved another way
    if isinstance(bound, cst.Call):
        return _list_built_elsewhere(ctx, init, bound, _depth + 1)
    return fn, local


# the values _inspect looks into (it returns None for any other)
_CONTAINERS = (cst.List, cst.Tuple, cst.Set, cst.ListComp, cst.Dict, cst.DictComp)


def _repeated_list(value) -> cst.List | None:
    """The list literal of `k * [...]` / `[...] * k`."""
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Multiply):
        for side in (value.left, value.right):
            if isinstance(side, cst.List) and side.elements:
                return side
    return None


def _good_key(key) -> bool:
    """A key nn.ModuleDict accepts for sure: a string without '.', not a Module attribute name."""
    if isinstance(key, (cst.SimpleString, cst.ConcatenatedString)):
        try:
            value = key.evaluated_value
        except Exception:  # pragma: no cover
            return False
        return (
            isinstance(value, str) and value != "" and "." not in value and not value.startswith("_")
            and value not in _MODULEDICT_ATTRS
        )
    if isinstance(key, cst.FormattedString):
        parts = key.parts
        text = "".join(p.value for p in parts if isinstance(p, cst.FormattedStringText))
        first = parts[0] if parts else None
        return (
            "." not in text
            and isinstance(first, cst.FormattedStringText)
            and not first.value.startswith("_")
            and any(isinstance(p, cst.FormattedStringExpression) for p in parts)
        )
    return False


def _dynamically_registered(ctx: Context, cls: ModuleClass) -> set[str] | None:
    """The attributes whose entries the class registers with `self.add_module(name, self.x[k])` /
    `self.register_module(...)` / `setattr(self, name, self.x[k])` (RLlib's ComplexInputNetwork
    registers `self.cnns[i]` but not `self.one_hot[i]`, ray#22659). None when any registration
    hands over something else (a local name, a call): what it registers cannot be told apart
    from what the class keeps in its plain containers, so the class is left alone."""
    names: set[str] = set()
    for fn in cls.methods.values():
        for call in ctx.model.calls_in(fn):
            f = call.func
            if isinstance(f, cst.Attribute) and f.attr.value in ("add_module", "register_module") and (
                    isinstance(f.value, cst.Name) and f.value.value == "self"):
                args = [a for a in call.args if a.keyword is None]
                module = args[1].value if len(args) > 1 else None
            elif isinstance(f, cst.Name) and f.value == "setattr" and call.args and (
                    isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == "self"):
                module = call.args[2].value if len(call.args) > 2 else None
            else:
                continue
            while isinstance(module, cst.Subscript):
                module = module.value
            attr = self_attr(module) if module is not None else None
            if attr is None:
                return None
            names.add(attr)
    return names
