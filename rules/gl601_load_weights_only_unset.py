"""GL601 load-weights-only-unset."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.training import method_of, set_keyword_edit
from gpulint.rule import Context, Rule


_HOLDER_KINDS = frozenset({"module", "optimizer", "scheduler", "scaler", "metric"})


def _own_load_state_dict(m, call: cst.Call) -> bool:
    """`R.load_state_dict(...)` where R is an instance of a class of the file that is not a module,
    optimizer, scheduler, scaler or metric, or that defines `load_state_dict` itself (diffwave's
    `DiffWaveLearner.load_state_dict` reads a checkpoint holding the run's params dict, the step, the
    scaler): what it accepts is the class's business, and `weights_only=True` can refuse the file."""
    recv = call.func.value if isinstance(call.func, cst.Attribute) else None
    if recv is None:
        return False
    value = m.value_of(recv)
    cls = getattr(value, "cls", None)
    if cls is None:
        return False
    return value.kind not in _HOLDER_KINDS or m.method_of_class(cls, "load_state_dict") is not None


def _has_weights_only(call: cst.Call) -> bool:
    return any(a.keyword is not None and a.keyword.value in ("weights_only", "pickle_module") for a in call.args)


def _reads_version(node: cst.CSTNode) -> bool:
    """The test reads a `__version__` attribute (`version.parse(torch.__version__) >= ...`)."""
    found = False

    class _V(cst.CSTVisitor):
        def visit_Attribute(self, n: cst.Attribute) -> None:
            nonlocal found
            if n.attr.value == "__version__":
                found = True

    node.visit(_V())
    return found


def _old_torch_branch(m, call: cst.Call, guarded: list[cst.Call]) -> bool:
    """skrl's `Agent.load`: `if version.parse(torch.__version__) >= version.parse("1.13"):
    torch.load(..., weights_only=False) else: torch.load(...)`. The call lies in one branch of an
    `if` that tests the installed version, and the other branch loads with `weights_only=` set:
    the bare load is the fallback for a torch that has no such keyword."""
    child, node = call, m.parent(call)
    while node is not None and not isinstance(node, (cst.FunctionDef, cst.Module)):
        if isinstance(node, cst.If) and _reads_version(node.test):
            other = None
            if child is node.body:
                other = node.orelse
            elif child is node.orelse:
                other = node.body
            if other is not None:
                for g in guarded:
                    up = m.parent(g)
                    while up is not None and up is not node:
                        if up is other:
                            return True
                        up = m.parent(up)
        child, node = node, m.parent(node)
    return False


class LoadWeightsOnlyUnset(Rule):
    code = "GL601"
    name = "load-weights-only-unset"
    summary = "`torch.load(...)` without `weights_only=`."
    message = (
        "`torch.load` without `weights_only=`: the default changed to `True` in PyTorch 2.6 and full "
        "unpickling can run arbitrary code; pass `weights_only=True` (or `False` for a trusted file "
        "that stores other objects)"
    )
    fix_safety = "safe"
    fix_partial = True  # only where the load feeds load_state_dict, and for torch >= 1.13
    default = False
    kind = "future"
    prefilter = r"\bload\("
    ast_prefilter = r"^load$"
    explanation = '''
`torch.load` unpickles the file. With `weights_only=False`, a checkpoint can run arbitrary code
when loaded; with `weights_only=True` only tensors, primitive types and containers are accepted.
PyTorch 2.6 changed the default from `False` to `True`, so a script that does not say which one it
needs behaves differently across versions: a checkpoint that stores other objects (an argparse
`Namespace`, a numpy array) stops loading. Saying it explicitly makes the script portable.

The fix adds `weights_only=True` only when the loaded object goes straight into
`load_state_dict(...)` (a state dict is plain tensors and containers); elsewhere the rule only
reports, because the file may hold other objects. `weights_only` exists since PyTorch 1.13: for a
project that targets an older torch (the `torch-version` setting or its torch requirement) the
rule only reports. Off by default.

Bad:

```python
model.load_state_dict(torch.load("model.pt", map_location="cpu"))
```

Good:

```python
model.load_state_dict(torch.load("model.pt", map_location="cpu", weights_only=True))
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        calls = list(m.iter_calls("torch.load", "torch.serialization.load"))
        guarded = [c for c in calls if _has_weights_only(c)]
        for call in calls:
            if _has_weights_only(call):
                continue
            if any(a.star for a in call.args):
                continue
            if guarded and _old_torch_branch(m, call, guarded):
                continue
            fix = None
            version = getattr(ctx.settings, "torch_version", None)
            if (version is None or tuple(version) >= (1, 13)) and self._feeds_load_state_dict(ctx, call):
                fix = ctx.fix(set_keyword_edit(ctx, call, "weights_only", "True"), message="Add `weights_only=True`")
            yield ctx.finding(call, fix=fix)

    @staticmethod
    def _is_load_state_dict_arg(m, node) -> bool:
        arg = m.parent(node)
        call = m.parent(arg) if isinstance(arg, cst.Arg) else None
        if isinstance(call, cst.Call) and arg.keyword is None and call.args and call.args[0] is arg:
            mo = method_of(call)
            return mo is not None and mo[1] == "load_state_dict" and not _own_load_state_dict(m, call)
        return False

    def _feeds_load_state_dict(self, ctx: Context, call: cst.Call) -> bool:
        m = ctx.model
        if self._is_load_state_dict_arg(m, call):
            return True
        assign = m.parent(call)
        if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name)):
            return False
        name = assign.targets[0].target
        if len(m.bindings_of(name)) != 1:
            return False
        scope = m.scope_of(call)
        uses = []
        for n in m.parents:
            if not isinstance(n, cst.Name) or n.value != name.value or n is name or m.scope_of(n) is not scope:
                continue
            parent = m.parent(n)
            if isinstance(parent, cst.Attribute) and parent.attr is n:
                continue  # `x.sd`, not the name
            if isinstance(parent, cst.Arg) and parent.keyword is n:
                continue  # `f(sd=...)` keyword
            uses.append(n)
        return bool(uses) and all(self._is_load_state_dict_arg(m, n) for n in uses)
