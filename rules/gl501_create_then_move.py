"""GL501 create-then-move."""

from __future__ import annotations

import re

import libcst as cst

from gpulint.analysis.paths import is_test_path
from gpulint.rule import Context, Kind, Rule

DETERMINISTIC = frozenset(
    "zeros ones empty full arange linspace logspace eye zeros_like ones_like empty_like full_like".split()
)
# `torch.tensor(data)`, `torch.as_tensor(data)`, `torch.from_numpy(a)` copy host data: with
# `device=` the data is still read on the host and copied, so the advice would save nothing.
HOST_DATA = frozenset("tensor as_tensor asarray from_numpy".split())
RANDOM = frozenset("rand randn randint randperm rand_like randn_like randint_like".split())
_DEVICE_STRING = re.compile(r"""^[rbuRBU]?["'](cuda|cpu|mps|xpu|meta|hpu|npu)(:\d+)?["']$""")


class CreateThenMove(Rule):
    code = "GL501"
    name = "create-then-move"
    summary = "A tensor is created on the CPU and then copied to the device; create it there."
    message = "`torch.{factory}(...)` builds the tensor on the CPU and `.{meth}(...)` copies it; pass `device={device}` to the factory instead"
    fix_safety = "safe"
    default = True
    kind = "slow"
    prefilter = r"torch|\.(?:to|cuda)\("
    explanation = '''
`torch.zeros(n).to(device)` allocates and fills the tensor in host memory, then copies it to the
device (a host-to-device transfer, and a synchronisation for pageable memory). Passing
`device=` to the factory creates it directly where it is needed.

The rule is silent on `torch.tensor(data)`, `torch.as_tensor(data)` and `torch.from_numpy(a)`:
their data lives on the host, and with `device=` PyTorch still reads it there and copies it, so
nothing is saved. It is also silent in test files (`test_*.py`, `*_test.py`, files under
`tests/`).

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
        for call, recv, meth in m.method_calls("to", "cuda"):
            if not isinstance(recv, cst.Call):
                continue
            q = m.qualname(recv.func) or ""
            if not q.startswith("torch."):
                continue
            factory = q[len("torch."):]
            if factory in HOST_DATA:
                continue
            if factory not in DETERMINISTIC and factory not in RANDOM:
                continue
            if any(a.keyword is not None and a.keyword.value == "device" for a in recv.args):
                continue
            if any(a.star for a in recv.args) or not recv.args:
                continue
            device = self._device(ctx, call, meth)
            if device is None:
                continue
            dev_text, fixable = device
            fix = None
            if fixable:
                fix = ctx.fix(
                    ctx.replace(call, self._with_device(ctx, recv, dev_text)),
                    safe=factory in DETERMINISTIC,
                    message=f"Create the tensor with `device={dev_text}`",
                )
            yield ctx.finding(call, self.message.format(factory=factory, meth=meth, device=dev_text), fix)

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
        )
        if not known:
            return None
        return ctx.code(dev), len(args) == 1

    @staticmethod
    def _with_device(ctx: Context, factory: cst.Call, device: str) -> str:
        text = ctx.code(factory)
        start, _ = ctx.span(factory)
        last = factory.args[-1]
        if isinstance(last.comma, cst.Comma):
            # trailing comma: `torch.zeros(\n    n,\n)` -> `torch.zeros(\n    n, device=d,\n)`
            _, comma_end = ctx.span(last.comma)
            at = comma_end - start
            return text[:at] + f" device={device}," + text[at:]
        _, value_end = ctx.span(last)
        at = value_end - start
        return text[:at] + f", device={device}" + text[at:]
