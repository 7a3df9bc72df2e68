"""The syntax-tree prefilter (`ast_prefilter` on rules, gpulint.engine.ast_facts / ast_select).

Its conditions must be necessary: on every fixture, with every rule selected, the diagnostics are
the same with the prefilter on and off.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gpulint import engine
from gpulint.engine import Options, ast_facts, ast_select, run_text
from gpulint.registry import Registry

TESTS = Path(__file__).resolve().parent
FIXTURE_DIRS = sorted(p for root in ("fixtures", "fixtures_pending") for p in (TESTS / root).glob("*")
               if p.is_dir() and any(p.glob("*.py")))


def _all_rules():
    reg = Registry.load()
    return [r() for r in reg.rules]


RULES = _all_rules()


def _diags(path: str, text: str, on: bool, monkeypatch, fix: bool = False, rules=None):
    monkeypatch.setattr(engine, "AST_PREFILTER", on)
    try:
        out = run_text(path, text, RULES if rules is None else rules, Options(fix=fix, unsafe_fixes=fix, write=False))
    except engine.BadInput as exc:
        return [("BadInput", str(exc), exc.line, exc.col)], None
    diags = [
        (d.code, d.line, d.col, d.end_line, d.end_col, d.message,
         None if d.fix is None else (d.fix.applicability, tuple((e.start, e.end, e.content) for e in d.fix.edits)))
        for d in out.diagnostics
    ]
    return diags, out.text


def _facts(src: str) -> set[str]:
    return set(ast_facts(ast.parse(src), src).split("\n"))


@pytest.mark.parametrize("folder", FIXTURE_DIRS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_same_results_with_and_without_the_ast_prefilter(folder, monkeypatch):
    files = sorted(folder.glob("*.py"))
    assert files
    for f in files:
        if f.name.endswith(".fixed.py"):
            continue
        text = f.read_text(encoding="utf-8")
        off = _diags(str(f), text, False, monkeypatch)
        on = _diags(str(f), text, True, monkeypatch)
        assert on == off, f.name
        own = [r for r in RULES if r.code == folder.name]  # the folder's rule alone
        if own:
            assert _diags(str(f), text, True, monkeypatch, rules=own) == _diags(str(f), text, False, monkeypatch, rules=own), f.name


def test_fixes_are_the_same_with_and_without_the_ast_prefilter(monkeypatch):
    # the fix loop re-analyses the fixed text: a few fixture folders, with unsafe fixes, with
    # every rule and with the folder's rule alone (GL002 alone: no rule to run, a fix to apply)
    for code in ("GL102", "GL103", "GL110", "GL501", "GL001", "GL002"):
        for f in sorted((TESTS / "fixtures" / code).glob("*.py")):
            if f.name.endswith(".fixed.py"):
                continue
            text = f.read_text(encoding="utf-8")
            for rules in (RULES, [r for r in RULES if r.code == code]):
                on = _diags(str(f), text, True, monkeypatch, fix=True, rules=rules)
                assert on == _diags(str(f), text, False, monkeypatch, fix=True, rules=rules), f.name


def test_the_prefilter_skips_fixtures():
    # not vacuous: it leaves rules out on most fixtures (every fixture is a training script, so
    # some rule stays on each; test_no_libcst_when_no_rule_can_fire covers a file left out whole)
    fewer = 0
    files = [f for d in FIXTURE_DIRS for f in d.glob("*.py") if not f.name.endswith(".fixed.py")]
    for f in files:
        text = f.read_text(encoding="utf-8")
        selected = engine.Prefilter(RULES).select(text)
        live = ast_select(selected, ast_facts(ast.parse(text), text))
        fewer += len(live) < len(selected)
    assert fewer > len(files) // 2


def test_no_libcst_when_no_rule_can_fire(monkeypatch):
    src = (
        "import torch\n"
        "def helper(x):\n"
        '    """Call .cuda() on a DataLoader batch and torch.load() it; model.to(device)."""\n'
        "    # x.cuda(); torch.load(path); for batch in DataLoader(ds): loss.backward()\n"
        "    return torch.relu(x)  # noqa: GL13\n"
    )

    def boom(*a, **k):
        raise AssertionError("LibCST was asked to parse")

    monkeypatch.setattr(engine, "analyse", boom)
    monkeypatch.setattr(engine, "AST_PREFILTER", True)
    out = run_text("x.py", src, RULES, Options())
    # the suppression step still runs: GL001 for the malformed code, as with the prefilter off
    assert [(d.code, d.line) for d in out.diagnostics] == [("GL001", 5)]
    monkeypatch.undo()
    monkeypatch.setattr(engine, "AST_PREFILTER", False)
    off = run_text("x.py", src, RULES, Options())
    assert [(d.code, d.line, d.message) for d in off.diagnostics] == [(d.code, d.line, d.message) for d in out.diagnostics]


def test_unused_noqa_counts_skipped_rules_as_run(monkeypatch):
    # GL002 reports a code of a rule that ran and found nothing; a rule left out by the
    # prefilter ran (it cannot fire), so its unused code is reported exactly as without it
    src = "import torch\nx = torch.relu(torch.ones(2))  # noqa: GL110\n"
    got = {}
    for on in (True, False):
        monkeypatch.setattr(engine, "AST_PREFILTER", on)
        got[on] = [(d.code, d.line, d.message) for d in run_text("x.py", src, RULES, Options()).diagnostics]
    assert got[True] == got[False]
    assert [c for c, _, _ in got[True]] == ["GL002"]


def test_facts_leave_out_comments_and_docstrings():
    facts = _facts(
        '"""torch.load(path) in a docstring."""\n'
        "import numpy as np  # DataLoader in a comment\n"
        "def f(a, *, device=None):\n"
        '    "docstring .cuda()"\n'
        '    s = "cuda:0"\n'
        "    return np.asarray(a).cuda(device=s)\n"
    )
    assert {"'cuda:0", ".cuda(", ".asarray(", "device=", "device", "def f", "import numpy", "numpy", "np"} <= facts
    assert "load" not in facts and "DataLoader" not in facts
    assert not any("docstring" in x for x in facts)
    assert "script" not in facts and "loop" not in facts


def test_facts_bases_imports_and_scripts():
    facts = _facts(
        "from torch.nn import Module as M\n"
        "import torch.nn as nn\n"
        "from . import sibling\n"
        "from ..pkg.mod import thing as t\n"
        "class A(M):\n    pass\n"
        "class B(nn.Sequential):\n    pass\n"
        "def main():\n    x.cuda()\n"
        "main()\n"
    )
    assert {"base M", "base Module", "base Sequential", "class A", "import torch.nn.Module", "import torch.nn",
            "import .sibling", "import ..pkg.mod.thing", "expr .cuda(", "main(", "script"} <= facts
    for src in ("for i in range(3):\n    pass\n", "with open(p) as f:\n    pass\n",
                "if (\n    __name__\n    == '__main__'\n):\n    pass\n"):
        assert "script" in _facts(src), src
    assert "script" not in _facts("register(thing)\nif DEBUG:\n    pass\n")


ALIASED = {
    # names imported under another name: the conditions read the imported name, not the call
    "GL117": (
        "import torch\n"
        "from torch.nn import Module as Base, Parameter as P\n"
        "class Net(Base):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        # the text prefilter needs the words nn.Parameter( in the file: this comment\n"
        "        self.w = P(torch.randn(3)).cuda()\n"
    ),
    "GL107": (
        "import torch\n"
        "from torch.nn import Module as Base, Linear as L\n"
        "class Net(Base):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.layers = [L(2, 2), L(2, 2)]\n"
        "    def forward(self, x):\n"
        "        for layer in self.layers:\n"
        "            x = layer(x)\n"
        "        return x\n"
    ),
}


@pytest.mark.parametrize("code", sorted(ALIASED))
def test_renamed_imports_keep_rules_alive(code, monkeypatch):
    src = ALIASED[code]
    on, _ = _diags("x.py", src, True, monkeypatch)
    off, _ = _diags("x.py", src, False, monkeypatch)
    assert on == off
    assert code in {d[0] for d in on}


def _regex_select(rules, facts):
    import re

    out = []
    for r in rules:
        cond = getattr(r, "ast_prefilter", None)
        pats = () if cond is None else (cond,) if isinstance(cond, str) else cond
        if all(re.search(p, facts, re.MULTILINE) for p in pats):
            out.append(r.code)
    return out


@pytest.mark.parametrize(
    "facts",
    [
        "",
        "script\nloop\n.to(\ndevice",
        "x.to(\n.to(x\n .to(",  # `^\.to\($` is a whole fact only
        "Loss\nMETRIC\ndef compute\nbase Module\nbase Modules\nexpr .cuda(",
        "'cuda:0\n'cudax\n x'cuda\nLightningModule\nbase LightningModule",
        "loſs\nmetriK\n'ümlaut\nLOSS",  # not ASCII: case-insensitive conditions fall back to `re`
        "Scheduler\nscheduler\nSCHEDULER\noptim\nclip_grad\n.scale(\n.step(\namp\nAdagrad",
    ],
)
def test_literal_conditions_match_like_the_expressions(facts):
    """Conditions that are fixed texts are answered by substring tests on the framed facts: the
    same rules as searching every expression with `re`."""
    assert [r.code for r in ast_select(RULES, facts)] == _regex_select(RULES, facts)
    lines = set(facts.split("\n")) if facts else set()
    # the facts as their set of lines (what the engine passes): whole-line texts are set lookups
    assert [r.code for r in ast_select(RULES, lines)] == _regex_select(RULES, "\n".join(lines))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "import torch\nmodel.to(device)\nx = y.cuda()\n",
        "def forward(self):\n  opt.step()\n# noqa: GL101\nloss.backward()\n",
        "from torch.cuda.amp import autocast\nscaler.scale(loss)\nDataLoader(ds)\n",
        "x.to (d)\n.to(\nCUDA_VISIBLE_DEVICES\nPARAMETER(\nParameter(\nmetric\nMetric\n",
        "ümlaut = 'cuda'\nnon_blocking = True\ntorch.load(f)\n\tw.half()\n",
    ],
)
def test_text_prefilters_match_like_the_expressions(text):
    """select_live and TextMatches answer fixed-text prefilters by substring tests: the same rules
    as searching every expression with `re`."""
    import re

    pre = engine.Prefilter(RULES)
    want = [r.code for r in RULES if not r.prefilter or re.search(r.prefilter, text, re.MULTILINE)]
    assert [r.code for r in pre.select_live(text, {id(r) for r in RULES})] == sorted(want, key=[r.code for r in pre.always + [x for x, _ in pre.filtered]].index)
    matches = engine.TextMatches(pre, text)
    assert [r.code for r in RULES if r.code in matches] == want
    assert any(type(c) is engine._Literals for c in pre.conditions.values())  # really used


def test_literal_conditions():
    lit = engine._literals
    assert lit(r"^\.(?:to|cuda)\($|device").texts == ("\n.to(\n", "\n.cuda(\n", "device")
    assert lit(r"optim|[Ss]cheduler").texts == ("optim", "Scheduler", "scheduler")
    assert lit(r"(?i)loss").lower
    for pattern in (r"(?!)", r"^$", r"a.b", r"a\nb", r"x+", r"(?i)Loss", r"\Aab", r"a(?i:b)"):
        assert lit(pattern) is None, pattern


def test_plain_expressions_read_without_re_parser_same_texts(monkeypatch):
    """Plain alternatives (`cuda`, `^\\.to\\($|device`) are read by a cheap pattern; every rule
    expression that takes that path gets the texts re's parser would give."""
    pats = set()
    for r in RULES:
        if r.prefilter:
            pats.add(r.prefilter)
        cond = getattr(r, "ast_prefilter", None)
        if cond:
            pats.update([cond] if isinstance(cond, str) else cond)
    pats.update([r"a\$", r"^x\.y\($|z", r"'CUDA_VISIBLE_DEVICES$"])
    fast = {p: engine._plain_literals(p) for p in sorted(pats)}
    assert sum(v is not None for v in fast.values()) > 20
    monkeypatch.setattr(engine, "_plain_literals", lambda p: None)
    for p, texts in fast.items():
        if texts is not None:
            slow = engine._literals(p)
            assert slow is not None and slow.texts == texts, p
    for p in (r"a.b", r"a+", r"(?i)loss", r"^$", r"a\\b", r"\bload\("):
        assert engine._plain_literals(p) is None or engine._literals(p) is not None, p
