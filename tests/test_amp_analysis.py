"""Unit tests of gpulint.analysis.amp (autocast regions, scaler order, deprecated torch.cuda.amp)
and of GL2 rule decisions on small snippets that are not worth a whole fixture script."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from fixture_support import check, fix
from gpulint.analysis.amp import AmpFacts, DeprecatedAmp
from gpulint.model import ScriptModel


def facts(src: str) -> AmpFacts:
    return ScriptModel(cst.parse_module(textwrap.dedent(src))).facts(AmpFacts)


def deprecated(src: str) -> DeprecatedAmp:
    return ScriptModel(cst.parse_module(textwrap.dedent(src))).facts(DeprecatedAmp)


def codes(src: str, *select: str):
    return [(d.line, d.code) for d in check(textwrap.dedent(src), set(select))]


# autocast regions ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "head, devices, dtypes",
    [
        ('torch.autocast("cuda")', {"cuda"}, {"float16"}),
        ('torch.autocast("cuda:0", dtype=torch.bfloat16)', {"cuda"}, {"bfloat16"}),
        ('torch.amp.autocast(device_type="cpu")', {"cpu"}, {"bfloat16"}),
        ("torch.autocast(device.type)", {"cuda", "cpu"}, {"float16", "bfloat16"}),
        ("torch.autocast(device.type, torch.float16)", {"cuda", "cpu"}, {"float16"}),
        ("torch.cuda.amp.autocast()", {"cuda"}, {"float16"}),
        ("torch.cuda.amp.autocast(True, torch.bfloat16)", {"cuda"}, {"bfloat16"}),
        ("torch.cpu.amp.autocast()", {"cpu"}, {"bfloat16"}),
        ("torch.autocast(args.device)", None, None),
        ("torch.autocast(**cfg)", None, None),
        ("torch.autocast('cuda', dtype=amp_dtype)", {"cuda"}, {"float16", "bfloat16"}),
    ],
)
def test_region_device_and_dtype(head, devices, dtypes):
    f = facts(
        f"""
        import torch
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        amp_dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        with {head}:
            pass
        """
    )
    (region,) = f.regions
    assert region.devices == (frozenset(devices) if devices is not None else None)
    assert region.dtypes == (frozenset(dtypes) if dtypes is not None else None)


def test_region_forms_decorator_variable_and_disabled():
    f = facts(
        """
        import torch
        from contextlib import nullcontext
        ctx = torch.autocast("cuda") if use_amp else nullcontext()

        @torch.amp.autocast("cuda", enabled=False)
        def fp32_part(x):
            return x

        with ctx:
            pass
        """
    )
    by_kind = {r.via_decorator: r for r in f.regions}
    assert by_kind[True].disabled and not by_kind[True].may_be_cuda_fp16
    var = by_kind[False]
    assert isinstance(var.body, cst.With) and var.may_be_cuda_fp16
    assert f.text(var.condition) == "use_amp"


def test_if_else_branches_are_exclusive_and_order():
    src = """
    import torch
    for x in loader:
        if use_amp:
            scaler.scale(loss).backward()
            scaler.step(opt)
        else:
            loss.backward()
            opt.step()
        scaler.update()
    """
    f = facts(src)
    scaled, plain = f.backwards
    assert scaled.scaler == "scaler" and plain.scaler is None
    step_s = next(c for c in f.scaler_calls if c.method == "step")
    update = next(c for c in f.scaler_calls if c.method == "update")
    assert f.exclusive(scaled.call, plain.call)
    assert not f.may_follow(scaled.call, plain.call)
    assert f.may_follow(step_s.call, update.call) and f.may_follow(plain.call, update.call)
    assert isinstance(f.iteration_of(step_s.call), cst.For)


def test_iteration_is_innermost_loop_with_backward():
    f = facts(
        """
        for epoch in range(3):
            for micro in range(4):
                scaler.scale(loss).backward()
            for opt in optimizers:
                scaler.step(opt)
            scaler.update()
        """
    )
    step = next(c for c in f.scaler_calls if c.method == "step")
    it = f.iteration_of(step.call)
    assert isinstance(it, cst.For) and f.text(it.target) == "epoch"


def test_loss_scaling_and_frameworks():
    assert facts("import torch\ns = torch.amp.GradScaler('cuda')\n").uses_loss_scaling
    assert facts("def f(s):\n    s.scale(loss).backward()\n").uses_loss_scaling
    assert not facts("import torch\nloss.backward()\n").uses_loss_scaling
    assert facts("from accelerate import Accelerator\n").framework_precision


# deprecated torch.cuda.amp ---------------------------------------------------------------------


def test_deprecated_import_groups():
    d = deprecated(
        """
        import torch
        from torch.cuda.amp import autocast as ac, GradScaler
        from torch.cuda.amp import custom_fwd, autocast as ac2
        try:
            from torch.amp import autocast
        except ImportError:
            from torch.cuda.amp import autocast
        with ac():
            pass
        s = GradScaler()
        with ac2():
            pass
        f = torch.cuda.amp.autocast
        """
    )
    first, mixed = d.imports
    assert [u.kind for u in first.uses] == ["autocast", "GradScaler"] and first.reason is None
    assert mixed.reason is not None  # custom_fwd has no drop-in torch.amp equivalent
    (direct,) = d.direct
    assert direct.call is None and direct.reason == "not called"


def test_gl205_suppressed_call_blocks_the_group_fix():
    src = """\
    from torch.cuda.amp import GradScaler, autocast
    scaler = GradScaler()  # noqa: GL205
    with autocast():
        pass
    """
    diags = check(textwrap.dedent(src), {"GL205"})
    assert [(d.line, d.fix is None) for d in diags] == [(1, True), (3, True)]
    assert fix(textwrap.dedent(src), {"GL205"}, False).text == textwrap.dedent(src)


def test_gl205_keywords_for_old_positionals_and_idempotent():
    src = "import torch\nwith torch.cuda.amp.autocast(False, torch.float16, True):\n    pass\n"
    out = fix(src, {"GL205"}, False).text
    assert out == (
        'import torch\nwith torch.amp.autocast("cuda", enabled=False, dtype=torch.float16, cache_enabled=True):\n'
        "    pass\n"
    )
    assert fix(out, {"GL205"}, False).text == out



def _run_with_torch(src: str, version, do_fix: bool):
    from fixture_support import rules_for
    from gpulint.config import RuleSettings
    from gpulint.engine import Options, run_text

    opts = Options(fix=do_fix, write=False, settings=RuleSettings(torch_version=version))
    return run_text("train.py", textwrap.dedent(src), rules_for({"GL205"}), opts)


_OLD_SCALER = """\
import torch
from torch.cuda.amp import GradScaler, autocast
scaler = GradScaler()
with autocast():
    pass
direct = torch.cuda.amp.GradScaler()
"""


def test_gl205_no_gradscaler_fix_for_projects_below_torch_2_3():
    out = _run_with_torch(_OLD_SCALER, (2, 1), do_fix=True)
    assert out.text == textwrap.dedent(_OLD_SCALER)  # nothing rewritten into an API torch 2.1 lacks
    diags = out.diagnostics
    assert [d.line for d in diags] == [2, 3, 4, 6] and all(d.fix is None for d in diags)
    assert "needs torch 2.3" in diags[0].message and "2.1" in diags[0].message
    # the same project on torch 2.4: fixed
    fixed = _run_with_torch(_OLD_SCALER, (2, 4), do_fix=True).text
    assert 'GradScaler("cuda")' in fixed and "torch.cuda.amp" not in fixed


def test_gl205_autocast_alone_is_fixed_on_torch_2_1():
    src = "import torch\nwith torch.cuda.amp.autocast():\n    pass\n"
    assert 'torch.amp.autocast("cuda")' in _run_with_torch(src, (2, 1), do_fix=True).text


def test_gl205_leaves_compatibility_handlers_alone():
    src = """\
    import torch
    def scaler():
        try:
            return torch.amp.GradScaler("cuda")
        except (AttributeError, TypeError):
            return torch.cuda.amp.GradScaler()
    def autocast_ctx():
        try:
            return torch.cuda.amp.autocast()
        except NameError:
            return None
    s = torch.cuda.amp.GradScaler()
    """
    # only the unguarded use at the end is reported (and fixed)
    assert codes(src, "GL205") == [(12, "GL205")]
    out = fix(textwrap.dedent(src), {"GL205"}, False).text
    assert out.count("torch.cuda.amp.") == 2 and 's = torch.amp.GradScaler("cuda")' in out


# rule decisions -------------------------------------------------------------------------------

TRAIN_FP32_EVAL_AUTOCAST = """
import torch

def main(model, loader, optimizer):
    for x, y in loader:
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
    for x, y in loader:
        with torch.autocast("cuda"):
            out = model(x)
"""


def test_gl201_silent_on_evaluation_loop_next_to_fp32_training():
    assert codes(TRAIN_FP32_EVAL_AUTOCAST, "GL201") == []


def test_gl201_device_object_is_reported_without_fix():
    src = """
    import torch
    device = torch.device("cuda")
    for x, y in loader:
        with torch.autocast(device):
            loss = model(x).sum()
        loss.backward()
        optimizer.step()
    """
    diags = check(textwrap.dedent(src), {"GL201"})
    assert [d.code for d in diags] == ["GL201"] and diags[0].fix is None


def test_gl201_two_training_loops_get_no_partial_fix():
    src = """
    import torch
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in a:
        with torch.autocast("cuda"):
            loss = model(x).sum()
        loss.backward()
        opt.step()
    for x in b:
        with torch.autocast("cuda"):
            loss = model(x).sum()
        loss.backward()
        opt.step()
    """
    diags = check(textwrap.dedent(src), {"GL201"})
    assert len(diags) == 2 and all(d.fix is None for d in diags)


def test_gl204_silent_when_another_function_updates():
    src = """
    import torch
    class Trainer:
        def __init__(self):
            self.scaler = torch.amp.GradScaler("cuda")
        def after_step(self):
            self.scaler.update()
        def fit(self, loader):
            for x in loader:
                self.scaler.scale(self.loss(x)).backward()
                self.scaler.step(self.opt)
                self.after_step()
    """
    assert codes(src, "GL204") == []


def test_gl204_update_after_the_loop_is_reported():
    src = """
    import torch
    scaler = torch.amp.GradScaler("cuda")
    for x in loader:
        scaler.scale(loss).backward()
        scaler.step(opt)
    scaler.update()
    """
    assert codes(src, "GL204") == [(6, "GL204")]


def test_gl202_silent_when_a_helper_unscales():
    src = """
    import torch
    scaler = torch.amp.GradScaler("cuda")
    def unscale_all():
        scaler.unscale_(opt)
    for x in loader:
        scaler.scale(loss).backward()
        unscale_all()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        scaler.step(opt)
        scaler.update()
    """
    assert codes(src, "GL202") == []


def test_gl202_gan_unscales_only_the_optimizer_of_its_cycle():
    src = """\
    import torch
    scaler = torch.amp.GradScaler("cuda")
    for x in loader:
        scaler.scale(loss_d).backward()
        torch.nn.utils.clip_grad_norm_(d.parameters(), 1.0)
        scaler.step(opt_d)
        scaler.scale(loss_g).backward()
        scaler.step(opt_g)
        scaler.update()
    """
    out = fix(textwrap.dedent(src), {"GL202"}, False).text
    assert "scaler.unscale_(opt_d)\n" in out and "unscale_(opt_g)" not in out


def test_gl206_frozen_half_model_is_silent_and_trained_one_is_not():
    src = """
    import torch
    vae = Vae().half()
    model = Net()
    model.half()
    optimizer = torch.optim.AdamW(model.parameters())
    for x in loader:
        loss = model(vae(x)).sum()
        loss.backward()
        optimizer.step()
    """
    assert codes(src, "GL206") == [(5, "GL206")]


def test_device_type_from_str_of_a_device_parameter():
    import libcst as cst

    from gpulint.analysis.amp import AmpFacts
    from gpulint.model import ScriptModel

    src = (
        "import torch\n"
        "def train(device):\n"
        "    with torch.autocast(device_type=str(device)):\n"
        "        pass\n"
        "def other(device):\n"
        "    with torch.autocast(device_type=str(device)):\n"
        "        pass\n"
        "train(torch.device('cuda' if torch.cuda.is_available() else 'cpu'))\n"
    )
    m = ScriptModel(cst.parse_module(src), src)
    regions = m.facts(AmpFacts).regions
    by_fn = {m.enclosing(r.call, cst.FunctionDef).name.value: r.devices for r in regions}
    assert by_fn["train"] == frozenset({"cuda", "cpu"})
    assert by_fn["other"] is None  # no call site: cannot tell


# the scope analysis of deprecated imports runs on the statements that mention their names only:
# the same groups, uses and reasons as on the whole module

_SCOPE_CASES = [
    # uses in functions, a class, a comprehension, before the import, shadowed in a function
    """
    import torch
    def early():
        with autocast():
            pass
    x = [autocast() for _ in range(2)]
    from torch.cuda.amp import autocast, GradScaler
    y = 1
    class T:
        s = GradScaler()
        def f(self):
            with autocast():
                return 2
    def g():
        autocast = None
        return autocast
    z = 3
    """,
    # bound twice (by an assignment far from the import): no group
    """
    from torch.cuda.amp import autocast
    a = 1
    b = 2
    autocast = None
    """,
    # a string annotation naming it, a typing.cast, a global statement, an escaped string
    """
    import typing
    from torch.cuda import amp
    unrelated = 0
    def f(x: "amp.GradScaler") -> None:
        return typing.cast("amp.autocast", x)
    def g():
        global amp
        v: "\\x61mp.GradScaler" = None
    with amp.autocast():
        pass
    """,
    # used in a nested function only, the import inside a function
    """
    def outer():
        import torch.cuda.amp as amp2
        q = 0
        def inner():
            with amp2.autocast():
                pass
        return inner
    r = 1
    """,
    # statements pruned inside kept bodies: a shadowing assignment deep in a loop's `if` (the
    # whole function's name is then local), `else`/`except` parts, a nested def and class
    """
    from torch.cuda.amp import autocast, GradScaler
    def train(n):
        total = 0
        for i in range(n):
            total += i
            if i > 2:
                autocast = None
            else:
                total -= 1
        with autocast():
            pass
        return total
    def other(n):
        a = 1
        try:
            b = 2
        except ValueError:
            GradScaler = int
        with autocast():
            c = a + 1
            d = c * 2
        class Inner:
            e = 3
            s = GradScaler()
        return Inner
    def third():
        for j in range(3):
            k = j
            while k:
                k -= 1
                with autocast(enabled=k > 1):
                    pass
    """,
]


def _summary(d: DeprecatedAmp):
    groups = [
        (id(g.stmt), g.new_module, g.old, g.reason, [(id(u.node), u.kind, u.reason, id(u.call)) for u in g.uses])
        for g in d.imports
    ]
    return groups, [(id(u.node), u.reason) for u in d.direct]


@pytest.mark.parametrize("src", _SCOPE_CASES)
def test_deprecated_scope_analysis_on_relevant_statements_only(src, monkeypatch):
    import gpulint.analysis.amp as amp_mod

    text = textwrap.dedent(src)
    model = ScriptModel(cst.parse_module(text))
    monkeypatch.setattr(amp_mod, "_FULL_SCOPES", True)
    whole = _summary(DeprecatedAmp(model))
    monkeypatch.setattr(amp_mod, "_FULL_SCOPES", False)
    pruned = _summary(DeprecatedAmp(model))
    assert pruned == whole


def test_deprecated_scope_statements_kept():
    import gpulint.analysis.amp as amp_mod

    text = textwrap.dedent(_SCOPE_CASES[0])
    model = ScriptModel(cst.parse_module(text))
    kept = amp_mod._scope_relevant_module(model, {"autocast", "GradScaler"})
    heads = [model.module.code_for_node(s).split("\n", 1)[0] for s in kept.body]
    assert heads == [
        "def early():",
        "x = [autocast() for _ in range(2)]",
        "from torch.cuda.amp import autocast, GradScaler",
        "class T:",
        "def g():",
    ]


def test_gl205_same_findings_with_many_unrelated_statements():
    head = "from torch.cuda.amp import GradScaler, autocast\nscaler = GradScaler()\n"
    tail = "with autocast():\n    pass\n"
    filler = "".join(f"v{i} = {i}\ndef f{i}(a):\n    return a + {i}\n" for i in range(2000))
    small = check(head + tail, {"GL205"})
    large = check(head + filler + tail, {"GL205"})
    shift = filler.count("\n")
    assert [(d.line, d.message, d.fix is None) for d in small] == [
        (d.line - (shift if d.line > 2 else 0), d.message, d.fix is None) for d in large
    ]
    assert len(small) == 3


def test_deprecated_scope_statements_pruned_inside_bodies():
    import gpulint.analysis.amp as amp_mod

    text = textwrap.dedent(_SCOPE_CASES[-1])
    model = ScriptModel(cst.parse_module(text))
    kept = amp_mod._scope_relevant_module(model, {"autocast", "GradScaler"})
    code = cst.Module(body=kept.body).code
    # the statements that never mention the names are gone from the kept bodies...
    for gone in ("total = 0", "total += i", "a = 1", "e = 3", "k = j", "k -= 1", "return total"):
        assert gone not in code
    # ...the ones that do stay, with the compound statements around them
    for there in ("autocast = None", "with autocast():", "s = GradScaler()", "with autocast(enabled=k > 1):"):
        assert there in code
    # a body left with nothing gets `pass`; `else` and `except` parts are kept whole
    assert "total -= 1" in code and "GradScaler = int" in code
    # the statements kept are the file's own nodes (the scopes found must map them)
    from gpulint.model import walk

    ids = {id(n) for n in model.nodes}
    kept_names = [n for n in walk(kept) if isinstance(n, cst.Name) and n.value in ("autocast", "GradScaler")]
    file_names = [n for n in model.nodes if isinstance(n, cst.Name) and n.value in ("autocast", "GradScaler")]
    assert len(kept_names) == len(file_names) and all(id(n) in ids for n in kept_names)



# dtype tables (nanoGPT's `ptdtype = {...}[dtype]`, karpathy/nanoGPT#84) --------------------------

_TABLE = '{"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}'


@pytest.mark.parametrize(
    "key_setup, expected",
    [
        ('dtype = "float16"', {"float16"}),
        ('dtype = "bfloat16"', {"bfloat16"}),
        ('dtype = "bfloat16" if torch.cuda.is_bf16_supported() else "float16"', {"bfloat16", "float16"}),
        ("dtype = args.dtype", None),  # a command-line value: cannot tell
        ('dtype = "float8"', None),  # a key the table does not have
    ],
)
def test_dtype_table_lookup(key_setup, expected):
    f = facts(
        f"""
        import torch
        {key_setup}
        ptdtype = {_TABLE}[dtype]
        x = ptdtype
        """
    )
    m = f.m
    target = [n for n in m.parents if isinstance(n, cst.Name) and n.value == "ptdtype"][-1]
    got = f.possible_dtypes(target)
    assert (set(got) if got is not None else None) == expected


def test_dtype_table_bound_to_a_name_rebound_is_unknown():
    f = facts(
        f"""
        import torch
        table = {_TABLE}
        table = {{}}
        dtype = "float16"
        x = table[dtype]
        """
    )
    sub = [n for n in f.m.parents if isinstance(n, cst.Subscript)][-1]
    assert f.possible_dtypes(sub) is None
