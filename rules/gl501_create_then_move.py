"""GL501 create-then-move."""

from __future__ import annotations

import re

import libcst as cst

from gpulint.analysis.paths import is_test_path
from gpulint.model import dotted
from gpulint.rule import Context, Kind, Rule
from gpulint.sites import lines_of, other_lines, outermost, unsuppressed

DETERMINISTIC = frozenset(
    "zeros ones empty full arange linspace logspace eye zeros_like ones_like empty_like full_like".split()
)
# `torch.tensor(data)`, `torch.as_tensor(data)`, `torch.from_numpy(a)` copy host data: with
# `device=` the data is still read on the host and copied, so the advice would save nothing.
HOST_DATA = frozenset("tensor as_tensor asarray from_numpy".split())
RANDOM = frozenset("rand randn randint randperm rand_like randn_like randint_like".split())
# Legacy typed constructors given sizes (`torch.FloatTensor(b, n, d)`) allocate uninitialised host
# memory as `torch.empty(b, n, d, dtype=torch.float32)` does (SoftRas#50: `.fill_(0.0).to(device)`
# on every forward); given one argument they may be a data constructor (`torch.FloatTensor(weights)`).
LEGACY = {
    "FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16", "BFloat16Tensor": "bfloat16",
    "LongTensor": "int64", "IntTensor": "int32", "ShortTensor": "int16", "CharTensor": "int8",
    "ByteTensor": "uint8", "BoolTensor": "bool",
}
# Static methods of torch classes that build a tensor on the default device and take `device=`:
# `nn.Transformer.generate_square_subsequent_mask(sz)` (a `torch.full(..., -inf)` + `torch.triu`;
# `device=` and `dtype=` since pytorch/pytorch PR #85609, torch 2.0), also called on an instance
# (`self.transformer.generate_square_subsequent_mask(sz)`). Deterministic.
MASK_FACTORIES = {
    "torch.nn.Transformer.generate_square_subsequent_mask": "torch.nn.Transformer",
    "torch.nn.modules.transformer.Transformer.generate_square_subsequent_mask": "torch.nn.Transformer",
}
_MASK_METHODS = frozenset(q.rsplit(".", 1)[1] for q in MASK_FACTORIES)
_DEVICE_STRING = re.compile(r"""^[rbuRBU]?["'](cuda|cpu|mps|xpu|meta|hpu|npu)(:\d+)?["']$""")


class CreateThenMove(Rule):
    code = "GL501"
    name = "create-then-move"
    summary = "A tensor is created on the CPU and then copied to the device; create it there."
    message = "`torch.{factory}(...)` builds the tensor on the CPU and `.{meth}(...)` copies it; pass `device={device}` to the factory instead"
    fix_safety = "mixed"  # safe or unsafe per fix (see the explanation)
    fix_partial = True
    default = True
    kind = "slow"
    prefilter = r"torch|\.(?:to|cuda)\("
    ast_prefilter = r"^\.(?:to|cuda)\($"
    explanation = '''
`torch.zeros(n).to(device)` allocates and fills the tensor in host memory, then copies it to the
device (a host-to-device transfer, and a synchronisation for pageable memory). Passing
`device=` to the factory creates it directly where it is needed.

The rule is silent on `torch.tensor(data)`, `torch.as_tensor(data)` and `torch.from_numpy(a)`:
their data lives on the host, and with `device=` PyTorch still reads it there and copies it, so
nothing is saved. It is also silent in test files (`test_*.py`, `*_test.py`, files under
`tests/`) and in library modules (a file with no `__main__` guard, top-level loop or top-level
call of its own functions), as GL102 is: there a per-step copy is one finding among the crash
bugs of the scripts being checked, and the scripts that run the library's code are where the
time is measured.

`nn.Transformer.generate_square_subsequent_mask(sz)`, a static method that builds the causal
mask with `torch.full` and `torch.triu` on the default device, counts as a deterministic factory
(it takes `device=` since pytorch/pytorch PR #85609, torch 2.0), also when called on an
`nn.Transformer` instance (`self.transformer.generate_square_subsequent_mask(sz).to(device)`); a
method of the file's own with that name is not torch's and is left alone.

Dtype casts and in-place fills between the factory and the move change nothing to that:
`torch.ones(n).float().to(device)` becomes `torch.ones(n, device=device).float()`, and
`torch.zeros(b, d).uniform_(-1, 1).to(device)` (a GAN's noise) becomes
`torch.zeros(b, d, device=device).uniform_(-1, 1)`, an unsafe fix since the device's generator
then draws the numbers. A fill given a `generator=` is left alone. A legacy typed constructor given
sizes, `torch.FloatTensor(b, n).fill_(0.0).to(device)`, allocates as `torch.empty` does and takes no
device: it becomes `torch.empty(b, n, device=device, dtype=torch.float32).fill_(0.0)`; given a single
non-literal argument (`torch.FloatTensor(weights)`) it may copy host data and is left alone.

It reports only code that runs every step, where the copy is paid again and again: the body of an
innermost loop (a loop that neither contains another loop nor calls a function of the file that
has one), a `forward` method, and functions of the file called from those places. A tensor built
once (before the training loop, in an epoch loop around the batch loop, in a demo under
`if __name__ == "__main__":`, or lazily initialised under `if state is None:` /
`if len(state) == 0:`) costs one copy: the rule stays silent on it. A random factory given a
`generator=` draws from that (CPU) generator on purpose, for reproducible numbers (torch's
gradcheck): `device=` would not accept it, and the rule stays silent. So it is on an empty tensor
(`torch.empty(0).to(device)`, a buffer grown with `torch.cat`): there is nothing to copy. A
`*_like` factory (`torch.randn_like(x)`) builds its tensor on the device of `x`: it is reported only
when the engine knows `x` lives on the host.

The sites of one file are reported once, at the first; the message lists the lines of the others
(a site silenced with `# noqa: GL501` on its line is neither listed nor rewritten). One safe fix
gives `device=` to every deterministic factory of the file; the random ones are rewritten by one
unsafe fix, offered with the finding when the file has no deterministic site, else in the next
round once the safe fix is applied (`gpulint fix --unsafe-fixes` applies both). A move that passes
other arguments (`.to(d, non_blocking=True)`) is listed but not rewritten.

The fix moves the device into the factory call (`torch.zeros(n, device=device)`). It is safe for
deterministic factories; for random ones (`rand`, `randn`, `randint`, `randperm`, ...) the values
come from the device's random generator instead of the CPU's, so a seeded run gives different
numbers: that fix is unsafe.

Bad:

```python
mask = torch.ones(batch, seq_len).to(device)
noise = torch.randn(batch, dim).cuda()
```

Good:

```python
mask = torch.ones(batch, seq_len, device=device)
noise = torch.randn(batch, dim, device="cuda")
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        if is_test_path(ctx.path):
            return  # a test suite's tensors are tiny and built once: the copy costs nothing worth reading about
        if not m.is_script:
            return  # a library module (measured: a quarter of the default output on transformers/timm)
        hot = _HotCode(m)
        sites = []  # (call, recv, factory, meth, device text, fixable, deterministic)
        for call, recv, meth in m.method_calls("to", "cuda"):
            recv, random_fill = _factory_under_casts(recv)
            if not isinstance(recv, cst.Call):
                continue
            q = m.qualname(recv.func) or _mask_method_of_instance(m, recv.func)
            if not q.startswith("torch."):
                continue
            factory = q[len("torch."):]
            mask = q in MASK_FACTORIES
            if mask:
                factory = ctx.code(recv.func).removeprefix("torch.")
            if factory in HOST_DATA:
                continue
            if factory in LEGACY and not _legacy_sizes(recv):
                continue  # `torch.FloatTensor(weights)`: host data, copied with or without `device=`
            if factory not in DETERMINISTIC and factory not in RANDOM and factory not in LEGACY and not mask:
                continue
            if any(a.keyword is not None and a.keyword.value in ("device", "generator") for a in recv.args):
                continue  # `generator=`: a CPU generator on purpose (reproducible draws); device= would not accept it
            if any(a.star == "**" for a in recv.args) or not recv.args:
                continue  # `**kwargs` may carry a device already; `*shape` cannot (`torch.zeros(*shape, device=d)`)
            if factory.endswith("_like") and not _on_host(m, recv):
                continue  # `torch.randn_like(latents)` is made where `latents` lives: on the host only if it does
            if _empty(factory, recv):
                continue  # `torch.empty(0).to(d)`: no element to copy (dino's MultiCropWrapper output buffer)
            device = self._device(ctx, call, meth)
            if device is None:
                continue
            if not hot.is_hot(call):
                continue  # built once (setup, a demo, a lazily initialised state): one copy costs nothing
            dev_text, fixable = device
            if factory in LEGACY and not isinstance(recv.func, cst.Attribute):
                fixable = False  # `from torch import FloatTensor`: no module text to write `empty` with
            deterministic = (factory in DETERMINISTIC or factory in LEGACY or mask) and not random_fill
            sites.append((call, recv, factory, meth, dev_text, fixable, deterministic))
        # one finding per file, at the first site, as GL102 does; the message lists the others
        sites = unsuppressed(ctx, sites)
        if not sites:
            return
        call, recv, factory, meth, dev_text, _, _ = sites[0]
        msg = self.message.format(factory=factory, meth=meth, device=dev_text)
        if not (ctx.code(recv.func).startswith("torch.") or factory in DETERMINISTIC or factory in RANDOM
                or factory in LEGACY or factory in HOST_DATA):
            msg = msg.replace(f"`torch.{factory}(...)`", f"`{factory}(...)`", 1)  # `nn.Transformer.generate_...`
        if factory in LEGACY:
            msg = msg.replace("to the factory instead", f"to `torch.empty(..., dtype=torch.{LEGACY[factory]})` instead (the legacy constructor takes no device)", 1)
        msg += other_lines(ctx, call, [s[0] for s in sites[1:]])
        safe = [s for s in sites if s[5] and s[6]]
        unsafe = [s for s in sites if s[5] and not s[6]]
        kept = [s for s in sites if not s[5]]
        # The safe fix gives `device=` to every deterministic factory; the random ones change
        # which generator draws the numbers, so they get an unsafe fix of their own: in a file
        # with both, that one is offered in the next round, once the safe one is applied.
        chosen = safe or unsafe
        fix = None
        if chosen:
            by_call = {id(s[0]): s for s in chosen}
            edits = [
                ctx.replace(c, self._moved_text(ctx, c, by_call[id(c)][1], by_call[id(c)][4]))
                for c in outermost(ctx, [s[0] for s in chosen])
            ]
            fix = ctx.fix(
                *edits,
                safe=chosen is safe,
                message=f"Create the tensor{'s' if len(edits) > 1 else ''} with `device=`",
            )
        if safe and unsafe:
            one = len(unsafe) == 1
            msg += (
                f"; the random factor{'y' if one else 'ies'} ({_where(ctx, call, unsafe)}) get{'s' if one else ''} an unsafe"
                " fix of {0} own: with `device=` the device's generator draws {1} values".format(*(("its", "its") if one else ("their", "their")))
            )
        if kept and fix is not None:
            many = len({ctx.line_of(s[0]) for s in kept}) > 1
            msg += f"; the move{'s' if many else ''} on {_where(ctx, call, kept)} pass{'' if many else 'es'} other arguments and {'are' if many else 'is'} not rewritten"
        yield ctx.finding(call, msg, fix)

    @staticmethod
    def _device(ctx: Context, call: cst.Call, meth: str) -> tuple[str, bool] | None:
        """The device expression of `.to(D)` / `.cuda()`, and whether the call only moves."""
        m = ctx.model
        if meth == "cuda":
            if not call.args:
                return '"cuda"', True
            return None
        args = list(call.args)
        dev = None
        for a in args:
            if a.keyword is None and dev is None:
                dev = a.value
            elif a.keyword is not None and a.keyword.value == "device":
                dev = a.value
        if dev is None:
            return None
        known = (
            m.kind_of(dev) is Kind.DEVICE
            or (isinstance(dev, cst.SimpleString) and _DEVICE_STRING.match(dev.value))
            or (isinstance(dev, cst.Attribute) and dev.attr.value == "device")
            or (isinstance(dev, cst.Name) and "device" in dev.value.lower())
            # a name bound only to device expressions, whatever it is called (`d = x.device`)
            or (isinstance(dev, cst.Name) and m.is_device_expr(dev))
        )
        if not known:
            return None
        return ctx.code(dev), len(args) == 1

    @classmethod
    def _moved_text(cls, ctx: Context, move: cst.Call, factory: cst.Call, device: str) -> str:
        """`torch.ones(n).float().to(d)` -> `torch.ones(n, device=d).float()`: the factory gets the
        device, the dtype casts after it stay (they now run on the device), the move goes."""
        chain = move.func.value  # type: ignore[union-attr]
        text = ctx.code(chain)
        start, _ = ctx.span(chain)
        f_start, f_end = ctx.span(factory)
        return text[: f_start - start] + cls._with_device(ctx, factory, device) + text[f_end - start:]

    @staticmethod
    def _with_device(ctx: Context, factory: cst.Call, device: str) -> str:
        text = ctx.code(factory)
        start, _ = ctx.span(factory)
        f = factory.func
        if isinstance(f, cst.Attribute) and f.attr.value in LEGACY and (ctx.model.qualname(f) or "").startswith("torch."):
            # `torch.FloatTensor(b, n)` -> `torch.empty(b, n, dtype=torch.float32, device=d)`
            base = ctx.code(f.value)
            device = f"{device}, dtype={base}.{LEGACY[f.attr.value]}"
            _, f_end = ctx.span(f)
            text = f"{base}.empty" + text[f_end - start:]
            start = f_end - len(f"{base}.empty")
        last = factory.args[-1]
        if isinstance(last.comma, cst.Comma):
            _, comma_end = ctx.span(last.comma)
            src = ctx.source
            arg_start, _ = ctx.span(last)
            indent = src[src.rfind("\n", 0, arg_start) + 1 : arg_start]
            eol = src.find("\n", comma_end)
            if 0 <= eol < start + len(text) and not indent.strip() and not src[comma_end:eol].strip():
                # one argument per line: `torch.zeros(\n    n,\n)` -> `torch.zeros(\n    n,\n    device=d,\n)`
                at = (eol - 1 if src[eol - 1] == "\r" else eol) - start
                return text[:at] + f"{ctx.newline}{indent}device={device}," + text[at:]
            # `torch.zeros(n,)` -> `torch.zeros(n, device=d,)`
            at = comma_end - start
            return text[:at] + f" device={device}," + text[at:]
        arg_start, value_end = ctx.span(last)
        at = value_end - start
        src = ctx.source
        indent = src[src.rfind("\n", 0, arg_start) + 1 : arg_start]
        eol = src.find("\n", value_end)
        if not indent.strip() and 0 <= eol < start + len(text) and not src[value_end:eol].strip():
            # one argument per line, no trailing comma: `device=d` on a line of its own
            return text[:at] + f",{ctx.newline}{indent}device={device}" + text[at:]
        return text[:at] + f", device={device}" + text[at:]


_SHAPED = frozenset("zeros ones empty full rand randn".split())
# Between the factory and the move, the tensor is still built on the host: dtype casts that take
# no argument (`torch.ones(n).float().to(device)`) and in-place fills
# (`torch.zeros(b, d).uniform_(-1, 1).to(device)`, a GAN's noise every step). With `device=` on the
# factory they run on the device; a random fill then draws from the device's generator.
_CASTS = frozenset("float double half bfloat16 long int short char byte bool".split())
_FILLS = frozenset("fill_ zero_".split())
_RANDOM_FILLS = frozenset("uniform_ normal_ random_ bernoulli_ exponential_ geometric_ cauchy_ log_normal_".split())


def _factory_under_casts(recv: cst.BaseExpression) -> tuple[cst.BaseExpression, bool]:
    """The expression under dtype casts and in-place fills (`torch.ones(n).float()` ->
    `torch.ones(n)`), and whether a fill on the way draws random numbers."""
    depth = 0
    random_fill = False
    while isinstance(recv, cst.Call) and isinstance(recv.func, cst.Attribute) and depth < 4:
        meth = recv.func.attr.value
        if meth in _CASTS and not recv.args:
            pass
        elif meth in _FILLS or meth in _RANDOM_FILLS:
            if any(a.star or (a.keyword is not None and a.keyword.value == "generator") for a in recv.args):
                break  # a fill from a generator of its own (a CPU one): device= would change that
            random_fill = random_fill or meth in _RANDOM_FILLS
        else:
            break
        recv = recv.func.value
        depth += 1
    return recv, random_fill


def _mask_method_of_instance(m, func: cst.BaseExpression) -> str:
    """`self.transformer.generate_square_subsequent_mask` where `self.transformer` was built by
    `nn.Transformer(...)`: the qualified name of the static method; "" otherwise."""
    if not (isinstance(func, cst.Attribute) and func.attr.value in _MASK_METHODS
            and isinstance(func.value, (cst.Name, cst.Attribute))):
        return ""
    ctor = m.constructor_of(func.value)
    q = m.qualname(ctor.func) if ctor is not None else None
    if q is not None and f"{q}.{func.attr.value}" in MASK_FACTORIES:
        return f"{MASK_FACTORIES[q + '.' + func.attr.value]}.{func.attr.value}"
    return ""


def _legacy_sizes(factory: cst.Call) -> bool:
    """`torch.FloatTensor(b, n, d)` / `torch.FloatTensor(8)`: sizes (two or more positional
    arguments, or one integer literal), not a data sequence."""
    args = factory.args
    if any(a.star or a.keyword is not None for a in args):
        return False
    return len(args) >= 2 or (len(args) == 1 and isinstance(args[0].value, cst.Integer))


def _on_host(m, factory: cst.Call) -> bool:
    """The input of a `*_like` factory is known to live on the host (the result is made there)."""
    first = next((a.value for a in factory.args if a.keyword is None and not a.star), None)
    if first is None:
        first = next((a.value for a in factory.args if a.keyword is not None and a.keyword.value == "input"), None)
    dev = m.device_of(first) if first is not None else None
    return dev is not None and dev.is_host


def _empty(factory: str, recv: cst.Call) -> bool:
    """A factory whose literal shape has a 0 (`torch.empty(0)`, `torch.zeros((0, 4))`): the
    tensor has no element, and its move copies nothing."""
    if factory not in _SHAPED:
        return False
    pos = [a.value for a in recv.args if a.keyword is None]
    if not pos:
        return False
    dims = pos[0].elements if isinstance(pos[0], (cst.Tuple, cst.List)) else pos[:1] if factory == "full" else pos
    dims = [d.value if isinstance(d, cst.Element) else d for d in dims]
    return any(isinstance(d, cst.Integer) and d.value == "0" for d in dims)


def _where(ctx: Context, first: cst.CSTNode, sites) -> str:
    """The lines of some of the sites, said from the reported one (`this line and line 9`)."""
    here = any(ctx.line_of(s[0]) == ctx.line_of(first) for s in sites)
    rest = lines_of(ctx, first, [s[0] for s in sites])
    return " and ".join(p for p in ("this line" if here else "", rest) if p)


_LOOPS = (cst.For, cst.While)


class _HotCode:
    """Code that runs every step: the body of an innermost loop (one that neither contains a loop
    nor calls a function of the file that has one), a `forward` method, or a function of the file
    called from such places. A lazily initialised value (`if state is None:`, `if len(state) == 0:`,
    `if not cache:`, `if key not in d:`) is built once even inside such code."""

    def __init__(self, m):
        self.m = m
        self._fn_has_loop: dict[cst.CSTNode, bool] = {}
        self._fn_hot: dict[cst.CSTNode, bool] = {}

    def is_hot(self, node: cst.CSTNode, depth: int = 0) -> bool:
        m = self.m
        for anc in m.ancestors(node):
            if isinstance(anc, cst.If) and m.contains(anc.body, node) and _lazy_init_of(m, anc.test, node):
                return False
            if isinstance(anc, _LOOPS):
                return self._innermost(anc)
            if isinstance(anc, cst.Lambda):
                return False
            if isinstance(anc, cst.FunctionDef):
                if anc.name.value == "forward" and m.class_of(anc) is not None:
                    return True
                return self._called_hot(anc, depth)
        return False

    def _innermost(self, loop: cst.CSTNode) -> bool:
        m = self.m
        for n in m.walk(loop, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            if n is loop:
                continue
            if isinstance(n, _LOOPS):
                return False
            if isinstance(n, cst.Call) and isinstance(n.func, cst.Name):
                for fn in m.functions.get(n.func.value, []):
                    if self._has_loop(fn):
                        return False
        return True

    def _has_loop(self, fn: cst.FunctionDef) -> bool:
        if fn not in self._fn_has_loop:
            self._fn_has_loop[fn] = any(
                isinstance(n, _LOOPS) for n in self.m.walk(fn.body, skip=(cst.FunctionDef, cst.ClassDef))
            )
        return self._fn_has_loop[fn]

    def _called_hot(self, fn: cst.FunctionDef, depth: int) -> bool:
        if depth >= 2:
            return False
        if fn not in self._fn_hot:
            self._fn_hot[fn] = False  # recursion guard
            self._fn_hot[fn] = any(self.is_hot(c, depth + 1) for c in self._sites(fn))
        return self._fn_hot[fn]


    def _sites(self, fn: cst.FunctionDef) -> list:
        """A function's calls by name; a method's calls as `self.<name>(...)` from its own class
        (`bases = self._build_bases(...)` in `forward`)."""
        m = self.m
        cls = m.class_of(fn)
        if cls is None:
            return m.call_sites(fn)
        if m.enclosing(fn, cst.FunctionDef) is not None:
            return []
        name = fn.name.value
        out = []
        for call, recv, _meth in m.method_calls(name):
            if isinstance(recv, cst.Name) and recv.value == "self" and m.class_of(call) is cls:
                out.append(call)
        return out


def _lazy_init_of(m, test: cst.BaseExpression, node: cst.CSTNode) -> bool:
    """The `if` initialises what the factory is assigned to, once: `if x is None: x = ...`,
    `if not x:`, `if len(state) == 0: state["k"] = ...`, `if k not in d: d[k] = ...` (the tested
    name is the root of the assignment target). `if query is None: out = torch.zeros(...).to(d)`
    tests something else: the tensor is built at every such call."""
    subjects = _tested_names(test)
    if not subjects:
        return False
    stmt = m.statement_of(node)
    targets = []
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            if isinstance(small, cst.Assign):
                targets += [t.target for t in small.targets]
            elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
                targets.append(small.target)
    for t in targets:
        while isinstance(t, (cst.Subscript, cst.Attribute)):
            if isinstance(t, cst.Attribute) and dotted(t) in subjects:
                return True
            t = t.value
        if isinstance(t, cst.Name) and t.value in subjects:
            return True
    return False


def _tested_names(test: cst.BaseExpression) -> set[str]:
    """The names a lazy-initialisation test looks at: `x is None`, `not x`, `len(x) == 0`,
    `k not in d` (-> d), and `and`/`or` of such tests."""
    if isinstance(test, cst.BooleanOperation):
        return _tested_names(test.left) | _tested_names(test.right)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        d = dotted(test.expression)
        return {d} if d else set()
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        op = test.comparisons[0].operator
        right = test.comparisons[0].comparator
        if isinstance(op, cst.Is) and isinstance(right, cst.Name) and right.value == "None":
            d = dotted(test.left)
            return {d} if d else set()
        if isinstance(op, cst.NotIn):
            d = dotted(right)
            return {d} if d else set()
        if (
            isinstance(op, cst.Equal)
            and isinstance(right, cst.Integer)
            and right.value == "0"
            and isinstance(test.left, cst.Call)
            and isinstance(test.left.func, cst.Name)
            and test.left.func.value == "len"
            and test.left.args
        ):
            d = dotted(test.left.args[0].value)
            return {d} if d else set()
    return set()
