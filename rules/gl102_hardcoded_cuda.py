"""GL102 hardcoded-cuda."""

from __future__ import annotations

import libcst as cst

from gpulint.rule import Context, Rule

# Calls whose "cuda" string is a device *type* for a feature, not a placement.
_DEVICE_TYPE_CALLS = (
    "torch.autocast",
    "torch.amp.autocast",
    "torch.amp.GradScaler",
    "torch.GradScaler",
    "torch.cuda.amp.autocast",
    "torch.get_autocast_dtype",
    "torch.is_autocast_enabled",
    "torch.backends.",
    "torch.cuda.",
    "torch.profiler.",
    "torch.compile",
)


def _cuda_literal(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.SimpleString):
        v = node.evaluated_value
        if isinstance(v, str) and (v == "cuda" or v.startswith("cuda:")):
            return v
    return None


class HardcodedCuda(Rule):
    code = "GL102"
    name = "hardcoded-cuda"
    summary = "`.cuda()` or a `\"cuda\"` device in a file that never checks whether CUDA is available."
    message = "hard-coded CUDA device with no CPU fallback: the file never checks `torch.cuda.is_available()`; use a device chosen at run time"
    fix_safety = "unsafe"
    default = True
    kind = "crash"
    prefilter = r"cuda"
    explanation = '''
A script that says `.cuda()` or `.to("cuda")` everywhere and never asks whether CUDA is there
crashes on a laptop, a CPU CI runner or a Mac (`AssertionError: Torch not compiled with CUDA
enabled` / `RuntimeError: Found no NVIDIA driver on your system`), so it cannot be tried before
it is queued on the cluster.

The fix (unsafe: it changes where a CPU-only run places tensors) introduces one
`device = torch.device("cuda" if torch.cuda.is_available() else "cpu")` after the imports
(or turns an existing module-level `device = "cuda"` into that) and routes every hard-coded site
through it: `.cuda()` becomes `.to(device)`, `"cuda"` becomes `device`. Sites with an explicit
other index (`"cuda:1"`) are reported without a fix.

The rule is silent in files that check availability (`torch.cuda.is_available()`,
`torch.accelerator`, `device_count()`, a `--device`/`--cuda` command-line flag, test-suite guards
such as `TEST_CUDA`), and on `"cuda"` used as an autocast/GradScaler device *type*.

Bad:

```python
model = Net().cuda()
x = torch.randn(8, 3, device="cuda")
```

Good:

```python
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
x = torch.randn(8, 3, device=device)
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        if m.checks_availability or m.frameworks or not m.is_script:
            return  # libraries gate CUDA code at their call sites; the fix is for scripts
        sites = list(self._sites(ctx))
        if not sites:
            return
        group = self._group_fix(ctx, sites)
        for node, what, routable in sites:
            fix = group if routable and group is not None else None
            yield ctx.finding(node, self.message.replace("hard-coded CUDA device", what), fix)

    # sites ---------------------------------------------------------------------------------------
    def _sites(self, ctx: Context):
        """(node, description, routable) for every hard-coded CUDA placement."""
        m = ctx.model
        inside_device_call: set = set()
        for call in m.calls:
            f = call.func
            q = m.qualname(f)
            if q == "torch.device":
                if call.args and _cuda_literal(call.args[0].value):
                    lit = _cuda_literal(call.args[0].value)
                    index = call.args[1].value if len(call.args) > 1 else None
                    routable = lit in ("cuda", "cuda:0") and (
                        index is None or (isinstance(index, cst.Integer) and index.value == "0")
                    )
                    inside_device_call.add(call.args[0].value)
                    yield call, f"hard-coded `torch.device({ctx.code(call.args[0].value)})`", routable
                continue
            if isinstance(f, cst.Attribute) and f.attr.value == "cuda" and q is None:
                pos = [a for a in call.args if a.keyword is None]
                idx = pos[0].value if pos else None
                if (idx is not None and not isinstance(idx, cst.Integer)) or len(pos) > 1 or any(
                    a.keyword is not None and a.keyword.value not in ("non_blocking", "memory_format") for a in call.args
                ):
                    continue  # `.cuda(device)` is not hard-coded; other signatures are not Tensor.cuda
                fn = m.enclosing(call, cst.FunctionDef)
                if fn is not None and fn.name.value in ("cuda", "to", "_apply"):
                    continue  # implementing the .cuda() API itself
                routable = idx is None or (isinstance(idx, cst.Integer) and idx.value == "0")
                routable = routable and all(
                    a.keyword is not None and a.keyword.value == "non_blocking" or a.keyword is None for a in call.args
                )
                yield call, "hard-coded `.cuda()`", routable
        for call in m.calls:
            q = m.qualname(call.func) or ""
            if q == "torch.device" or any(q == p or (p.endswith(".") and q.startswith(p)) for p in _DEVICE_TYPE_CALLS):
                continue
            is_to = isinstance(call.func, cst.Attribute) and call.func.attr.value == "to"
            for i, arg in enumerate(call.args):
                lit = _cuda_literal(arg.value)
                if lit is None or arg.value in inside_device_call:
                    continue
                kw = arg.keyword.value if arg.keyword is not None else None
                if kw == "device" or (is_to and kw is None and i == 0):
                    yield arg.value, f'hard-coded device {ctx.code(arg.value)}', lit in ("cuda", "cuda:0")
        # `device = "cuda"` and `def f(device="cuda")` in a script (its caller passes nothing else)
        for (scope, name), bindings in m.bindings.items():
            for b in bindings:
                if b.how in ("assign", "param") and b.value is not None and _cuda_literal(b.value):
                    if b.how == "param" or "device" in name.lower() or "dev" == name.lower():
                        yield b.value, f'hard-coded device {ctx.code(b.value)}', _cuda_literal(b.value) in ("cuda", "cuda:0")

    # the one fix for the whole file ------------------------------------------------------------------
    def _group_fix(self, ctx: Context, sites):
        m = ctx.model
        torch_alias = next((k for k, v in m.aliases.items() if v == "torch"), None)
        guarded = '{t}.device("cuda" if {t}.cuda.is_available() else "cpu")'.format(t=torch_alias or "torch")
        # an existing module-level device variable that is itself a site gets the guarded value
        definition = None
        module_device = m.bindings.get((m.module, "device"), [])
        site_nodes = {id(n) for n, _, _ in sites}
        if len(module_device) == 1 and module_device[0].how == "assign" and id(module_device[0].value) in site_nodes:
            definition = module_device[0].value
        elif module_device:
            definition = "existing"
        for (scope, name), bindings in m.bindings.items():
            if name == "device" and scope is not m.module and any(b.how not in ("param",) for b in bindings):
                return None  # a local `device` of another meaning could capture the routed sites
        edits = []
        if definition is None:
            anchor = self._after_imports(m)
            header = ("" if torch_alias else "import torch\n") + "device = " + guarded
            if anchor is None:
                first = m.module.body[0] if m.module.body else None
                if first is None:
                    return None
                edits.append(ctx.insert_before(first, header))
            else:
                edits.append(ctx.insert_after(anchor, "\n" + header))
        chosen = []
        for node, _what, routable in sites:
            if not routable:
                continue
            if any(self._within(ctx, node, other) for other, _, r in sites if other is not node and r):
                continue  # nested in another site: the next round handles it
            chosen.append(node)
        for node in chosen:
            if ctx.suppressed(ctx.line_of(node), self.code):
                continue
            if node is definition:
                edits.append(ctx.replace(node, guarded))
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "cuda":
                extra = "".join(
                    f", {ctx.code(a)}" for a in node.args if a.keyword is not None and a.keyword.value == "non_blocking"
                )
                edits.append(ctx.replace(node, f"{ctx.code(node.func.value)}.to(device{extra})"))
            else:
                edits.append(ctx.replace(node, "device"))
        if len(edits) <= (0 if definition is not None else 1):
            return None
        return ctx.fix(*edits, message="Choose the device at run time and route hard-coded sites through it")

    @staticmethod
    def _within(ctx: Context, inner: cst.CSTNode, outer: cst.CSTNode) -> bool:
        a, b = ctx.span(inner)
        c, d = ctx.span(outer)
        return c <= a and b <= d and (a, b) != (c, d)

    @staticmethod
    def _after_imports(m):
        last = None
        for stmt in m.module.body:
            if isinstance(stmt, cst.SimpleStatementLine) and all(
                isinstance(s, (cst.Import, cst.ImportFrom)) or (isinstance(s, cst.Expr) and isinstance(s.value, cst.SimpleString))
                for s in stmt.body
            ):
                if any(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body):
                    last = stmt
                continue
            break
        return last
