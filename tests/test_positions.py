"""gpulint.positions gives exactly LibCST's PositionProvider ranges."""

from __future__ import annotations

import os
import random
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from gpulint.model import ScriptModel
from gpulint.positions import positions
from gpulint.rule import _top_statement_locator
from test_cstwalk import SAMPLE

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _same(module: cst.Module) -> None:
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    got = positions(module)
    assert set(got) == set(expected)
    for node, rng in expected.items():
        assert got[node] == rng, (type(node).__name__, rng, got[node])
    _same_by_statement(module, expected)
    _same_by_statement(module, expected, module.code)


def _same_by_statement(module: cst.Module, expected, source: str | None = None) -> None:
    """With a locator (what `Context.positions` uses), the nodes in statements are measured one
    statement at a time (the innermost block statement whose code is unique, else the top-level
    statement): the same ranges, in any order of asking; then every other node (the module,
    layout nodes the model does not record) from the whole module's map. With `source` (the
    module's code), a top-level statement is placed where the code holds its code once."""
    model = ScriptModel(module)
    got = positions(module, _top_statement_locator(model), source)
    placed = [n for n in model.nodes if n is not module]
    random.Random(len(placed)).shuffle(placed)
    for node in placed:
        assert got[node] == expected[node], (type(node).__name__, expected[node], got[node])
    assert got._offsets is None  # not one of them needed the whole module's map
    statements = {n for n in model.nodes if isinstance(n, (cst.SimpleStatementLine, cst.BaseCompoundStatement))}
    assert set(got._stmt_offsets) <= statements
    for node, rng in expected.items():
        assert got[node] == rng, (type(node).__name__, rng, got[node])
    assert set(got) == set(expected)


@pytest.mark.parametrize(
    "src",
    [
        SAMPLE,
        "",
        "\n",
        "x = 1",  # no trailing newline
        "x = 1\r\ny = 2\r\n",
        "x = 1\ry = (2,\r 3)\r",
        "def f():\n    return '''a\nb'''  # c\n\n\n# tail",
        "if x:\n\tpass\nelse:  \\\n  pass\n",
        "s = 'é\U0001f600' + f'{x!r:{y}}'\n",
        # statements whose code is repeated (placed by measuring every statement's start), one
        # whose code is also the tail of another line, one that is unique
        "x = 1\nx = 1\nif y:\n    x = 1\nz = (x,\n  2)\n",
        "# head\n\nx = 1\n\n\nx = 1  # c\ndef f():\n    pass\n# tail",
        # nested statements: repeated in two functions (placed through their top-level
        # statement), unique, with their own comments, in a one-line suite, mixed indentation,
        # the last one without a trailing newline
        "def f():\n    x = 1\n    if x:\n        y = 2\n\n\ndef g():\n    x = 1\n    # c\n    for i in x:  pass\n",
        "class A:\n  def f(self):\n  \tif a:\n  \t    return 1\n  \telse:\n  \t    return 2\n  x = 1",
        "if a:\n    if b:\n        pass\n    if b:\n        pass\nwhile c:\n    if b:\n        pass\n        z = 1",
    ],
)
def test_same_ranges_as_libcst(src: str):
    _same(cst.parse_module(src))


@pytest.mark.parametrize("path", sorted(FIXTURES.rglob("*.py")), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_same_ranges_as_libcst_on_fixtures(path: Path):
    try:
        module = cst.parse_module(path.read_bytes().decode("utf-8"))
    except (cst.ParserSyntaxError, UnicodeDecodeError):
        pytest.skip("not parseable (a bad-input fixture)")
    _same(module)


@pytest.mark.skipif(not os.environ.get("GPULINT_FIX_CORPUS"), reason="set GPULINT_FIX_CORPUS=DIR (and N files) to run")
def test_same_ranges_as_libcst_on_a_corpus():
    files = sorted(Path(os.environ["GPULINT_FIX_CORPUS"]).rglob("*.py"))
    random.Random(0).shuffle(files)
    checked = 0
    for path in files[: int(os.environ.get("GPULINT_FIX_CORPUS_FILES", "300"))]:
        try:
            module = cst.parse_module(path.read_bytes().decode("utf-8"))
        except Exception:
            continue
        _same(module)
        checked += 1
    assert checked > 0
