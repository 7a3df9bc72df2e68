"""A file CPython accepts but LibCST's tokenizer rejects for its mix of tabs and spaces in the
indentation (jalola/improved-wgan-pytorch train.py, benchmarks/PRECISION15.md P1) is analysed on
its tab-expanded text instead of being reported as a syntax error (GL000)."""

from __future__ import annotations

import ast

import libcst
import pytest

from gpulint.engine import BadInput, Options, expand_indent_tabs, run_text
from gpulint.registry import Registry

# 7 spaces + a tab (column 8) beside lines of 8 spaces; 4 spaces + a tab + 4 spaces (column 12)
_MIXED = (
    "import torch\n"
    "\n"
    "\n"
    "def step(xs):\n"
    "    for x in xs:\n"
    "        y = x\n"
    "       \tz = y\n"
    "        if x:\n"
    "    \t    w = torch.ones(3).cuda()\n"
    "        v = 2\n"
    "\n"
    "\n"
    "step([1, 2])\n"
)


def _diags(text: str, fix: bool = False):
    reg = Registry.load()
    rules = [reg.by_code("GL102")()]
    return run_text("train.py", text, rules, Options(fix=fix))


def test_the_shape_is_the_reported_one():
    ast.parse(_MIXED)  # CPython accepts it
    with pytest.raises(libcst.ParserSyntaxError):
        libcst.parse_module(_MIXED)  # LibCST's tokenizer does not
    libcst.parse_module(expand_indent_tabs(_MIXED))


def test_findings_on_the_original_lines_and_columns_without_fixes():
    res = _diags(_MIXED)
    got = [(d.code, d.line, d.col) for d in res.diagnostics]
    lines = _MIXED.splitlines()
    # the call on line 9 at its columns in the original text (a tab is one column; the line's
    # indentation is 9 characters, 12 columns once expanded)
    assert got == [("GL102", 9, lines[8].index("torch") + 1)]
    assert [d.end_col for d in res.diagnostics] == [len(lines[8]) + 1]
    assert all(d.fix is None for d in res.diagnostics)


def test_fix_leaves_the_text_as_it_is():
    res = _diags(_MIXED, fix=True)
    assert res.text == _MIXED and res.applied == 0


def test_expansion_touches_only_indentation():
    text = "x = 1\n\tif x:\tpass\n  \t y = '\\t'\n"
    assert expand_indent_tabs(text) == "x = 1\n        if x:\tpass\n         y = '\\t'\n"


def test_a_real_syntax_error_with_tabs_is_still_reported():
    bad = "def f():\n\tx = (\n"
    with pytest.raises(BadInput):  # run_text raises BadInput (a GL000) for an unparseable text
        _diags(bad)
