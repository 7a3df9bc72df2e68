"""GL117 parameter-moved-in-init."""

from __future__ import annotations

import libcst as cst

from gpulint.rule import Context, Rule

_PARAMETER = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
_CONVERSIONS = frozenset("to cuda half float double bfloat16".split())


class ParameterMovedInInit(Rule):
    code = "GL117"
    name = "parameter-moved-in-init"
    summary = "`nn.Parameter(...).to(D)` / `.cuda()` / `.half()` stored on a module is a plain tensor, not a parameter."
    message = "`{code}` is a plain tensor, not a registered parameter (never trained, not moved with the model); convert inside: `{fixed}`"
    fix_safety = "safe"
    default = True
    kind = "silent"
    prefilter = r"Parameter\("
    ast_prefilter = (r"^base (?:Module|Sequential|ModuleList|ModuleDict|LightningModule)$", r"^Parameter$")
    explanation = '''
`nn.Parameter(t).to(device)`, `.cuda()`, `.half()` return a new tensor computed from the parameter
(whenever the device or dtype changes): a non-leaf tensor, not an `nn.Parameter`. Assigned to a
module attribute, it is not registered: it is missing from `model.parameters()` (the optimizer
never updates it), from `state_dict()`, and `model.to(...)` does not move it. On a CPU-only machine
`.to("cpu")` returns the parameter itself, so the bug only shows on the GPU, silently. For the
same reason the rule is silent when the data was already converted the same way inside the
Parameter (`nn.Parameter(torch.randn(n, 10).to(device)).to(device)`): the outer call changes nothing
and returns the Parameter.

The fix converts the data first and wraps the result: `nn.Parameter(t.to(device))` (safe: the
parameter is then what the code meant).

Bad:

```python
class Scale(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(4)).to(device)
```

Good:

```python
class Scale(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(4).to(device))
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        classes = {c.node for c in m.module_classes()}
        if not classes:
            return
        stored: dict[cst.FunctionDef, set[str]] = {}  # method -> its names stored on self
        for (scope, name), bindings in m.bindings.items():
            if scope in classes:
                if not name.startswith("self."):
                    continue
            elif not (isinstance(scope, cst.FunctionDef) and m.class_of(scope) is not None
                      and m.class_of(scope) in classes):
                continue
            else:
                names = stored.get(scope)
                if names is None:
                    names = stored[scope] = _stored_on_self(m, scope)
                if name not in names:
                    continue  # a local of a method, then `self.centers = centers`
            for b in bindings:
                if b.how != "assign" or not isinstance(b.value, cst.Call):
                    continue
                found = self._converted_parameter(m, b.value)
                if found is None:
                    continue
                node = m.enclosing(b.node, cst.Assign)
                if node is None or node.value is not b.value:
                    continue
                outer, param, data = found
                conv = ctx.code(outer)[len(ctx.code(param)):]  # `.to(device)`, `.cuda()`, ...
                rest = "".join(
                    ", " + (f"{a.keyword.value}={ctx.code(a.value)}" if a.keyword is not None else ctx.code(a.value))
                    for a in param.args[1:]
                )
                code = ctx.code(data)
                if not isinstance(data, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
                    code = f"({code})"
                fixed = f"{ctx.code(param.func)}({code}{conv}{rest})"
                fix = ctx.fix(ctx.replace(outer, fixed), message=f"Convert inside: `{fixed}`")
                yield ctx.finding(node, self.message.format(code=ctx.code(outer), fixed=fixed), fix)

    @staticmethod
    def _converted_parameter(m, value):
        """(the whole chain, the Parameter call, its data argument) for `nn.Parameter(x).to(d)...`."""
        outer = value
        cur = value
        seen = False
        while (
            isinstance(cur, cst.Call)
            and isinstance(cur.func, cst.Attribute)
            and cur.func.attr.value in _CONVERSIONS
        ):
            if cur.func.attr.value == "to" and not cur.args:
                return None
            seen = True
            cur = cur.func.value
        if not seen or not isinstance(cur, cst.Call) or m.qualname(cur.func) not in _PARAMETER:
            return None
        if not cur.args or cur.args[0].keyword is not None or cur.args[0].star:
            return None
        if any(a.star for a in cur.args):
            return None
        if _noop_float(m, value, cur):
            return None
        if _data_already_converted(m, value, cur):
            return None
        # `.to(d)` with d = "cpu" changes nothing on a CPU parameter
        first = outer
        if first.func.attr.value == "to" and first.args:
            lit = m.device_literal(first.args[0].value)
            if lit is not None and lit.split(":")[0] == "cpu":
                return None
        return outer, cur, cur.args[0].value


# factories whose result has the default floating dtype (float32) when no dtype= is given
_FLOAT_FACTORIES = frozenset(
    f"torch.{n}" for n in ("ones", "zeros", "empty", "rand", "randn", "eye", "Tensor", "FloatTensor")
)
_FLOAT32 = frozenset({"torch.float32", "torch.float"})
_DEFAULT_DTYPE_SETTERS = ("torch.set_default_dtype", "torch.set_default_tensor_type")


def _noop_float(m, outer: cst.Call, param: cst.Call) -> bool:
    """`nn.Parameter(torch.ones(n)).float()`: every conversion asks for float32 and the data is a
    float32 factory, so `Tensor.float()` / `.to(torch.float32)` return the Parameter itself (it
    stays registered). Not when the file changes the default dtype."""
    data = param.args[0].value
    if not isinstance(data, cst.Call) or m.qualname(data.func) not in _FLOAT_FACTORIES:
        return False
    if any(a.keyword is not None and a.keyword.value == "dtype" for a in data.args):
        return False
    cur = outer
    while cur is not param:
        meth = cur.func.attr.value
        if meth == "to":
            if len(cur.args) != 1 or m.qualname(cur.args[0].value) not in _FLOAT32 or (
                cur.args[0].keyword is not None and cur.args[0].keyword.value != "dtype"
            ):
                return False
        elif meth != "float" or cur.args:
            return False
        cur = cur.func.value
    return not any(True for _ in m.iter_calls(*_DEFAULT_DTYPE_SETTERS))


def _data_already_converted(m, outer: cst.Call, param: cst.Call) -> bool:
    """`nn.Parameter(torch.randn(n, 10).to(device)).to(device)` (nnzhan/Graph-WaveNet model.py):
    the data was already converted the same way inside (the same method with the same arguments,
    written out or through a name bound once to it), so every conversion after the Parameter finds
    its device and dtype and returns the Parameter itself: it stays registered."""
    data = param.args[0].value
    if isinstance(data, cst.Name):
        bindings = m.bindings_of(data)
        if len(bindings) != 1 or bindings[0].how != "assign" or bindings[0].value is None:
            return False
        data = bindings[0].value
    if not (isinstance(data, cst.Call) and isinstance(data.func, cst.Attribute)
            and data.func.attr.value in _CONVERSIONS):
        return False
    inside = _conversion_text(m, data)
    cur = outer
    while cur is not param:
        if _conversion_text(m, cur) != inside:
            return False
        cur = cur.func.value
    return True


def _conversion_text(m, call: cst.Call) -> tuple:
    """`.to(device)` -> ("to", "device"): the method and its arguments as written."""
    return (call.func.attr.value,) + tuple(
        (a.keyword.value if a.keyword is not None else "", a.star, m.module.code_for_node(a.value))
        for a in call.args
    )


def _stored_on_self(m, fn: cst.FunctionDef) -> set[str]:
    """The names `name` of `self.attr = name` somewhere in the method (one walk per method), and the
    names the method returns when the class stores its result on self (`self.wh =
    self.init_weight(shape)` with `init_weight` ending in `return _para`: pytorch#127760)."""
    found = set()
    returns = []
    for n in m.walk(fn):
        if (isinstance(n, cst.Assign) and isinstance(n.value, cst.Name)
                and any(_on_self(t.target) for t in n.targets)):
            found.add(n.value.value)
        elif isinstance(n, cst.Return) and isinstance(n.value, cst.Name):
            if m.enclosing(n, cst.FunctionDef) is fn:
                returns.append(n.value.value)
    if returns and _result_stored_on_self(m, fn):
        found.update(returns)
    return found


def _on_self(target) -> bool:
    return isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self"


def _result_stored_on_self(m, fn: cst.FunctionDef) -> bool:
    """Some method of the class assigns `self.attr = self.<fn>(...)`."""
    cls = m.class_of(fn)
    if cls is None:
        return False
    for n in m.walk(cls):
        if not (isinstance(n, cst.Assign) and any(_on_self(t.target) for t in n.targets)):
            continue
        v = n.value
        if (isinstance(v, cst.Call) and isinstance(v.func, cst.Attribute) and isinstance(v.func.value, cst.Name)
                and v.func.value.value == "self" and v.func.attr.value == fn.name.value):
            return True
    return False
