"""GL303 ddp-without-set-device."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.distributed import DIST_FRAMEWORKS, DistFacts
from gpulint.flow import argparse_default, is_parsed_namespace
from gpulint.rule import Context, Rule


class DdpWithoutSetDevice(Rule):
    code = "GL303"
    name = "ddp-without-set-device"
    summary = "DDP model moved with an index-less `.cuda()`/`\"cuda\"` and no `torch.cuda.set_device`: every rank uses GPU 0."
    message = (
        "every rank moves the model to the *current* CUDA device, which is GPU 0 unless "
        "`torch.cuda.set_device(local_rank)` runs first: all processes pile onto one GPU (slow, or out of memory / NCCL hang); "
        "call `torch.cuda.set_device(local_rank)` after `init_process_group` and pass `device_ids=[local_rank]`"
    )
    fix_safety = "unsafe"
    default = True
    kind = "slow"
    prefilter = r"init_process_group"
    ast_prefilter = r"init_process_group"
    explanation = '''
Under `torchrun` every process starts with GPU 0 as its current CUDA device. `.cuda()`,
`.to("cuda")` and `torch.device("cuda")` mean "the current device", so unless each process
calls `torch.cuda.set_device(local_rank)` (or moves the model to `f"cuda:{local_rank}"`), all
ranks put their replica on GPU 0: the other GPUs idle, GPU 0 runs out of memory, or NCCL hangs
because two ranks share a device. `DistributedDataParallel` without `device_ids` does not fix it.

The rule fires when the file calls `init_process_group`, wraps a model in
`DistributedDataParallel` without `device_ids`, moves that model with an index-less
`.cuda()`/`"cuda"`, never calls `torch.cuda.set_device` and never sets `CUDA_VISIBLE_DEVICES`.
The (unsafe) fix inserts `torch.cuda.set_device(local_rank)` after `init_process_group` and adds
`device_ids=[local_rank]`, when the file has a local-rank expression
(`int(os.environ["LOCAL_RANK"])`, `args.local_rank`, the rank parameter of an `mp.spawn` target).

Bad:

```python
dist.init_process_group("nccl")
local_rank = int(os.environ["LOCAL_RANK"])
model = Net().cuda()
model = DDP(model)
```

Good:

```python
dist.init_process_group("nccl")
local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
model = Net().cuda()
model = DDP(model, device_ids=[local_rank])
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        if m.frameworks & DIST_FRAMEWORKS or "CUDA_VISIBLE_DEVICES" in ctx.source:
            return
        facts: DistFacts = m.facts(DistFacts)
        if not facts.init_calls or facts.set_device_calls:
            return
        for w in facts.wraps_of_module("ddp"):
            positional = [a for a in w.call.args if a.keyword is None]
            if w.keyword("device_ids") is not None or len(positional) >= 2 or any(a.star for a in w.call.args):
                continue
            if not _moved_indexless(m, w.inner):
                continue
            yield ctx.finding(w.call, fix=self._fix(ctx, facts, w))

    @staticmethod
    def _fix(ctx: Context, facts: DistFacts, w):
        m = ctx.model
        torch = next((k for k, v in m.aliases.items() if v == "torch"), None)
        if torch is None:
            return None
        lr = facts.local_rank_at(w.call)
        if lr is None:
            return None
        init = min(facts.init_calls, key=facts.order)
        init_stmt = m.statement_of(init)
        if not isinstance(init_stmt, cst.SimpleStatementLine):
            return None
        anchor, text = None, facts.local_rank_at(init_stmt)
        if text is not None:
            anchor = init_stmt
        else:
            # the local rank is read after init_process_group: set the device right after that
            for (scope, name), bindings in m.bindings.items():
                if name != lr or len(bindings) != 1 or scope is not m.scope_of(init_stmt):
                    continue
                stmt = m.statement_of(bindings[0].node)
                if (
                    isinstance(stmt, cst.SimpleStatementLine)
                    and facts.order(init_stmt) < facts.order(stmt) < facts.order(w.call)
                    and m.parent(stmt) is m.parent(init_stmt)
                ):
                    anchor, text = stmt, lr
        if anchor is None or text != lr:
            return None
        inner_end = ctx.span(w.inner)[1]
        return ctx.fix(
            ctx.insert_after(anchor, f"{torch}.cuda.set_device({lr})"),
            ctx.insert_text(inner_end, f", device_ids=[{lr}]"),
            message=f"Call `torch.cuda.set_device({lr})` and pass `device_ids=[{lr}]`",
        )


def _indexless_cuda(m, expr, depth: int = 0) -> bool:
    """"cuda", torch.device("cuda"), "cuda" if ... else "cpu", or a name bound only to those."""
    if expr is None or depth > 6:
        return False
    if isinstance(expr, cst.SimpleString):
        try:
            return expr.evaluated_value == "cuda"
        except Exception:
            return False
    if isinstance(expr, cst.IfExp):
        return _indexless_cuda(m, expr.body, depth + 1)
    if isinstance(expr, cst.Call):
        if m.qualname(expr.func) == "torch.device" and len(expr.args) == 1 and expr.args[0].keyword is None:
            return _indexless_cuda(m, expr.args[0].value, depth + 1)
        return False
    if isinstance(expr, cst.Name):
        bindings = m.bindings_of(expr)
        return bool(bindings) and all(
            b.how == "assign" and _indexless_cuda(m, b.value, depth + 1) for b in bindings
        )
    if _is_self_attr(expr):
        # `self.device = torch.device("cuda")` on every binding
        bindings = m.bindings_of(expr)
        return bool(bindings) and all(
            b.how == "assign" and _indexless_cuda(m, b.value, depth + 1) for b in bindings
        )
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and is_parsed_namespace(m, expr.value):
        # `ns.device` of `add_argument("--device", default=torch.device("cuda"))` (probe69 argsdev)
        return _indexless_cuda(m, argparse_default(m, expr.attr.value), depth + 1)
    return False


def _move_is_indexless(m, call: cst.Call) -> bool:
    f = call.func
    if not isinstance(f, cst.Attribute):
        return False
    if f.attr.value == "cuda":
        return not call.args
    if f.attr.value == "to":
        args = [a for a in call.args if a.keyword is None or a.keyword.value == "device"]
        return bool(args) and _indexless_cuda(m, args[0].value)
    return False


def _moved_indexless(m, inner, depth: int = 0) -> bool:
    if inner is None or depth > 6:
        return False
    if isinstance(inner, cst.Call):
        if _move_is_indexless(m, inner):
            return True
        f = inner.func
        if isinstance(f, cst.Attribute) and f.attr.value in ("to", "cuda", "train", "float", "half"):
            return _moved_indexless(m, f.value, depth + 1)
        return False
    if isinstance(inner, cst.Name):
        bindings = m.bindings_of(inner)
        for b in bindings:
            if b.how == "assign" and isinstance(b.value, cst.Call) and _moved_indexless(m, b.value, depth + 1):
                return True
        scope = m.scope_of(inner)
        for call, recv, _meth in m.method_calls("cuda", "to"):
            if isinstance(recv, cst.Name) and recv.value == inner.value and m.scope_of(recv) is scope:
                if _move_is_indexless(m, call):
                    return True
    if _is_self_attr(inner):
        # `self.model = Net().cuda()` (or `self.model.cuda()`) in the class, then
        # `self.model = DDP(self.model)` (probe69 classify, Q:G69-4)
        for b in m.bindings_of(inner):
            if b.how == "assign" and isinstance(b.value, cst.Call) and _moved_indexless(m, b.value, depth + 1):
                return True
        cls = m.class_of(inner)
        for call, recv, _meth in m.method_calls("cuda", "to"):
            if (_is_self_attr(recv) and recv.attr.value == inner.attr.value and m.class_of(recv) is cls
                    and _move_is_indexless(m, call)):
                return True
    return False


def _is_self_attr(e) -> bool:
    return isinstance(e, cst.Attribute) and isinstance(e.value, cst.Name) and e.value.value == "self"
