"""GL502 dataloader-host-settings."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.training import (
    TrainingFacts,
    batch_loader_call,
    forwarded_keywords,
    is_bool,
    keyword,
    method_of,
    set_keyword_edit,
    walk,
)
from gpulint.rule import Context, Rule
from gpulint.sites import line_ref

DEFAULT_WORKERS = "2"


class DataLoaderHostSettings(Rule):
    code = "GL502"
    name = "dataloader-host-settings"
    summary = "A DataLoader feeding CUDA training loads batches in the main process and does not pin memory."
    message = (
        "this DataLoader feeds training on the GPU with the default host settings: set `num_workers` "
        "and `pin_memory=True`"
    )
    fix_safety = "unsafe"
    default = False
    kind = "slow"
    prefilter = r"DataLoader"
    ast_prefilter = (r"DataLoader", r"^loop$", r"backward")
    explanation = f'''
With `num_workers=0` (the default) the main process loads and collates every batch between
training steps, and the GPU sits idle meanwhile. Without `pin_memory=True`, host-to-device copies
come from pageable memory and cannot overlap with compute.

The rule looks at DataLoaders whose batches are moved to a device in a training loop of a script
that uses CUDA. Off by default.

The fix (unsafe) adds `pin_memory=True` and `num_workers={DEFAULT_WORKERS}` (tune it to your CPU
count): worker processes re-import the script on platforms that spawn them (Windows, macOS), which
needs an `if __name__ == "__main__":` guard, and a dataset that is not picklable or uses CUDA fails
in workers.

Bad:

```python
loader = DataLoader(train_ds, batch_size=64, shuffle=True)
```

Good:

```python
loader = DataLoader(train_ds, batch_size=64, shuffle=True, num_workers=4, pin_memory=True)
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        if "cuda" not in ctx.source:
            return
        facts: TrainingFacts = m.facts(TrainingFacts)
        seen = set()
        for loop in facts.loops:
            if not loop.is_step_loop:
                continue
            for n in walk(loop.node, into_defs=False):
                if not isinstance(n, cst.Call):
                    continue
                mo = method_of(n)
                if mo is None or mo[1] not in ("to", "cuda") or not (n.args or mo[1] == "cuda"):
                    continue
                mv = m.move_of_call(n)
                if mv is not None and mv.to_cpu:
                    continue  # `X.to("cpu")`: a loop that trains on the host (a CPU-vs-GPU timing)
                loader = batch_loader_call(m, mo[0])
                if loader is None or loader in seen or not _no_forwarded_settings(m, loader):
                    continue
                seen.add(loader)
                finding = self._finding(ctx, loader, n)
                if finding is not None:
                    yield finding

    def _finding(self, ctx: Context, loader: cst.Call, move: cst.Call):
        problems, edits, effects, advice = [], [], [], []
        workers = keyword(loader, "num_workers")
        option = _option_default_zero(ctx, workers.value) if workers is not None else None
        if workers is None or (isinstance(workers.value, cst.Integer) and workers.value.value == "0"):
            problems.append("`num_workers=0`" if workers is not None else "no `num_workers`")
            edits.append(set_keyword_edit(ctx, loader, "num_workers", DEFAULT_WORKERS))
            effects.append("the main process loads each batch while the GPU waits")
            advice.append(f"`num_workers` (e.g. {DEFAULT_WORKERS})")
        elif option is not None:
            # `num_workers=args.workers` with `add_argument("--workers", default=0)`: 0 unless the
            # user passes the option (barc_release#9); the option stays, its default is the advice
            problems.append(f"`num_workers={ctx.code(workers.value)}` (0 by default, {option})")
            effects.append("the main process loads each batch while the GPU waits unless the option is passed")
            advice.append(f"a non-zero default for the option (e.g. {DEFAULT_WORKERS})")
        pin = keyword(loader, "pin_memory")
        if pin is None or is_bool(pin.value, False):
            problems.append("`pin_memory=False`" if pin is not None else "no `pin_memory`")
            edits.append(set_keyword_edit(ctx, loader, "pin_memory", "True"))
            effects.append("its batches are copied from pageable memory, which cannot overlap with compute")
            advice.append("`pin_memory=True`")
        if not problems:
            return None
        # two insertions at the same point (the end of the call) become one edit
        if len(edits) == 2 and edits[0].start == edits[0].end == edits[1].start == edits[1].end:
            a, b = edits[0].content, edits[1].content
            if a.endswith(("\n", "\r", ",")) or b.startswith(","):
                text = a + b  # `name=v,\n` lines, ` name=v,` after a trailing comma, `, name=v`, `,\n    name=v`
            else:
                text = a + ", " + b  # an empty call: `DataLoader(num_workers=2, pin_memory=True)`
            edits = [ctx.insert_text(edits[0].start, text)]
        where = ""
        mo = method_of(move)
        if mo is not None:
            dev = "cuda" if mo[1] == "cuda" else None
            if dev is None:
                arg = move.args[0] if move.args and move.args[0].keyword is None else keyword(move, "device")
                dev = ctx.code(arg.value) if arg is not None else None
            if dev is not None:
                where = f" (its batches are moved to `{dev}` on {line_ref(ctx, move)})"
        message = (
            f"this DataLoader feeds training on the GPU{where} with {' and '.join(problems)}: "
            f"{'; '.join(effects)}; set {' and '.join(advice)}"
        )
        fix_advice = [a for a in advice if not a.startswith("a non-zero default")]
        return ctx.finding(
            loader,
            message,
            ctx.fix(*edits, message="Set " + " and ".join(fix_advice)) if edits else None,
        )


def _option_default_zero(ctx: Context, expr: cst.BaseExpression) -> str | None:
    """Where the file makes `expr` 0 unless the user says otherwise, or None: `opts.<field>` whose
    only definitions in the file are `add_argument("--<field>", default=0)` (several spellings of
    one option allowed), with no assignment of the field, no `set_defaults`, no update of the
    namespace's `__dict__`/`vars()` and no other string naming the field (a config file or
    `getattr(args, "workers", 4)` may set it)."""
    m = ctx.model
    if not isinstance(expr, cst.Attribute):
        return None
    field = expr.attr.value
    where = None
    for n in m.nodes:
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute):
            meth = n.func.attr.value
            if meth == "set_defaults":
                return None  # `parser.set_defaults(**yaml_config)`
            if meth == "update" and ctx.code(n.func.value).endswith(("__dict__", ")")):
                return None  # `vars(args).update(cfg)`, `args.__dict__.update(cfg)`
            if meth == "add_argument":
                kw = {a.keyword.value: a.value for a in n.args if a.keyword is not None}
                opts = [a.value.evaluated_value for a in n.args
                        if a.keyword is None and isinstance(a.value, cst.SimpleString)]
                opts = [o for o in opts if isinstance(o, str)]
                dest = kw.get("dest")
                if dest is not None:
                    name = dest.evaluated_value if isinstance(dest, cst.SimpleString) else None
                else:
                    long = [o for o in opts if o.startswith("--")]
                    name = (long[0] if long else opts[0] if opts else "").lstrip("-").replace("-", "_")
                if name != field:
                    continue
                default = kw.get("default")
                if not (isinstance(default, cst.Integer) and default.value == "0"):
                    return None
                where = where or line_ref(ctx, n)
        elif isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target]
            for t in targets:
                for x in [t, *m.walk(t)]:
                    if isinstance(x, cst.Attribute) and x.attr.value == field:
                        return None  # `args.workers = min(4, os.cpu_count())`
        elif (isinstance(n, cst.Arg) and n.keyword is not None and n.keyword.value == field
              and not (isinstance(n.value, cst.Attribute) and n.value.attr.value == field)):
            return None  # `Namespace(workers=4)`, `SimpleNamespace(workers=...)`
        elif isinstance(n, cst.SimpleString):
            text = n.evaluated_value
            if isinstance(text, str) and text.lstrip("-").replace("-", "_") == field:
                parent = m.parent(n)
                call = m.parent(parent) if isinstance(parent, cst.Arg) else None
                if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                        and call.func.attr.value == "add_argument"):
                    return None  # `{"workers": 4}`, `getattr(args, "workers", 4)`
    return where


def _no_forwarded_settings(m, loader) -> bool:
    """No `*args` / `**kwargs` of the loader call can carry `num_workers` or `pin_memory`."""
    fwd = forwarded_keywords(m, loader)
    return fwd is not None and not fwd & {"num_workers", "pin_memory"}
