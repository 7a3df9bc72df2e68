"""GL101 input-not-on-model-device."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.placement import PlacementFacts
from gpulint.model import Move
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

The same holds for one batch taken with `next(iter(loader))` and for a tokenizer's
`return_tensors="pt"` output (`model(**inputs)`).

The fix (unsafe: it changes where the loop's tensors live) moves the batch at the top of the loop
body (or right after the statement that made it) with the same device expression the model was
moved with, or the model's own `next(model.parameters()).device`, never a literal device:
`x = x.to(device)` for tuple batches, `batch = {k: v.to(device) for k, v in batch.items()}` for
dict batches, `inputs = inputs.to(device)` for tokenizer output.

The rule is silent when the loader has a `collate_fn` or a Dataset of the file that moves
tensors itself, when the batch is re-bound or moved anywhere in the loop, and when the model's
placement is not known.

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
        m = ctx.model
        if m.frameworks & {"lightning", "accelerate", "hf-trainer", "deepspeed"}:
            return
        facts = m.facts(PlacementFacts)
        done: set = set()
        yield from self._loops(ctx, facts, done)
        yield from self._engine(ctx, done)

    def _engine(self, ctx: Context, done: set):
        """The flow engine's mismatches whose CPU operand is a DataLoader batch: shapes the loop
        analysis does not follow (loaders and models kept on `self` across methods and base classes,
        batches passed to helpers). Message only: where to move the batch is the author's call."""
        from gpulint import flowkb

        m = ctx.model
        for mm in m.mismatches():
            if mm.op not in ("module-call", "call") or mm.node in done:
                continue
            origin = mm.host_value.origin
            if not isinstance(origin, cst.Call) or flowkb.class_kind(m.qualname(origin.func)) != "loader":
                continue
            call = mm.node
            name = ctx.code(mm.host)
            dev = mm.acc_value.dev
            device = ctx.code(dev.expr) if dev is not None and dev.expr is not None else "the accelerator"
            yield ctx.finding(
                call,
                self.message.format(
                    name=name, source="the DataLoader", callee=ctx.code(call.func), device=device,
                    line=f"{name} = {name}.to({device if dev is not None and dev.expr is not None else 'device'})",
                ),
            )

    def _loops(self, ctx: Context, facts, done: set):
        m = ctx.model
        for ll in facts.loops:
            placed = facts.model_moves(ll)
            if not placed:
                continue
            first_call, moves = placed[0]
            move = moves[0]
            device_text = self._device_text(ctx, ll.loop, first_call, move)
            reported: dict[str, tuple] = {}
            for use in ll.uses:
                if use.moved or use.origin in reported:
                    continue
                reported[use.origin] = (use.call, use)
            if not reported:
                continue
            lines = self._move_lines(ll, reported, device_text)
            fix = self._fix(ctx, ll, lines)
            for origin, (call, use) in sorted(reported.items(), key=lambda kv: ctx.span(kv[1][0])):
                done.add(call)
                yield ctx.finding(
                    call,
                    self.message.format(
                        name=origin,
                        source="the tokenizer" if ll.source == "tokenizer" else "the DataLoader",
                        callee=ctx.code(call.func),
                        device=ctx.code(move.device) if move.device is not None else "cuda",
                        line=lines[origin],
                    ),
                    fix,
                )

    @staticmethod
    def _device_text(ctx: Context, loop: cst.For, model_call: cst.Call, move: Move) -> str | None:
        m = ctx.model
        model_device = None
        if isinstance(model_call.func, (cst.Name, cst.Attribute)):
            model_device = f"next({ctx.code(model_call.func)}.parameters()).device"
        if move.method == "cuda":
            # `.cuda()` is often conditional; the model's own device is right in every case
            return model_device
        d = move.device
        if d is None:
            return None
        root = d
        while isinstance(root, cst.Attribute):
            root = root.value
        if isinstance(root, cst.Name):
            scope = m.scope_of(loop)
            if (scope, root.value) in m.bindings or (m.module, root.value) in m.bindings:
                return ctx.code(d)
            return model_device
        if isinstance(d, (cst.SimpleString, cst.Integer)) or (
            isinstance(d, cst.Call) and all(isinstance(a.value, (cst.SimpleString, cst.Integer)) for a in d.args)
        ):
            # never write a literal device where the model's own device is at hand
            return model_device or ctx.code(d)
        return model_device

    @staticmethod
    def _move_lines(ll, reported, device_text: str | None) -> dict[str, str]:
        move = f".to({device_text})" if device_text else ".cuda()"
        lines = {}
        for origin in ll.targets:  # keep the loop target's order
            if origin not in reported:
                continue
            use = reported[origin][1]
            arg = use.arg
            if ll.source == "tokenizer":  # a BatchEncoding: its .to() moves every tensor
                lines[origin] = f"{origin} = {origin}{move}"
            elif use.starred or (isinstance(arg, cst.Subscript) and _string_keys(arg)):
                lines[origin] = f"{origin} = {{k: v{move} for k, v in {origin}.items()}}"
            elif isinstance(arg, cst.Subscript):
                lines[origin] = f"{origin} = [t{move} for t in {origin}]"
            else:
                lines[origin] = f"{origin} = {origin}{move}"
        return lines

    @staticmethod
    def _fix(ctx: Context, ll, lines: dict[str, str]):
        if ll.source is not None:  # one batch bound by a statement: move it right after
            if not lines:
                return None
            return ctx.fix(
                ctx.insert_after(ll.loop, "\n".join(lines.values())),
                message="Move the batch to the model's device after it is made",
            )
        body = ll.loop.body
        if not isinstance(body, cst.IndentedBlock) or not body.body or not lines:
            return None
        return ctx.fix(
            ctx.insert_before(body.body[0], "\n".join(lines.values())),
            message="Move the batch to the model's device at the top of the loop",
        )

def _string_keys(sub: cst.Subscript) -> bool:
    for el in sub.slice:
        if isinstance(el.slice, cst.Index) and isinstance(el.slice.value, cst.SimpleString):
            return True
    return False
