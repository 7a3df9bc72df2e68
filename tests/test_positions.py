"""gpulint.positions gives exactly LibCST's PositionProvider ranges."""

from __future__ import annotations

import os
import random
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from gpulint.positions import positions
from test_cstwalk import SAMPLE

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _same(module: cst.Module) -> None:
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    got = positions(module)
    assert set(got) == set(expected)
    for node, rng in expected.items():
        assert got[node] == rng, (type(node).__name__, rng, got[node])


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


def _same_per_node(module: cst.Module, source: str) -> None:
    """NodePositions (statement by statement, in a random order) gives LibCST's ranges."""
    from gpulint.model import ScriptModel
    from gpulint.positions import NodePositions

    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    model = ScriptModel(module, source)
    nodes = list(model.nodes)
    random.Random(len(nodes)).shuffle(nodes)
    got = NodePositions(module, model, source)
    for node in nodes:
        assert got[node] == expected[node], (type(node).__name__, expected[node], got[node])
    # each node alone, on a fresh mapping: its statement generated first
    for node in nodes[:50]:
        assert NodePositions(module, model, source)[node] == expected[node]


PER_NODE = [
    SAMPLE,
    "x = 1",  # no trailing newline: the last statement falls back to the whole module
    "x = 1\r\ny = 2\r\n",
    "x = 1\ry = (2,\r 3)\r",
    "def f():\n    return '''a\nb'''  # c\n\n\n# tail",
    "if x:\n\tpass\nelse:  \\\n  pass\n",
    "s = 'é\U0001f600' + f'{x!r:{y}}'\n",
    "# head\n\nclass A:\n  def f(self):\n      if a:\n          x = (1,\n   2)\n      # own line\n  # dedented\n  y = 2\nz = 3\n",
    "x = f'''{a}\n{b}'''\ny = 1\n",
    "if a: b = 1; c = 2\nelif d:\n    pass\nelse: e\nw = 1\n",
]


@pytest.mark.parametrize("src", PER_NODE)
def test_node_positions_same_ranges_as_libcst(src: str):
    _same_per_node(cst.parse_module(src), src)


@pytest.mark.parametrize("path", sorted(FIXTURES.rglob("*.py"))[::7], ids=lambda p: str(p.relative_to(FIXTURES)))
def test_node_positions_same_ranges_as_libcst_on_fixtures(path: Path):
    try:
        src = path.read_bytes().decode("utf-8")
        module = cst.parse_module(src)
    except (cst.ParserSyntaxError, UnicodeDecodeError):
        pytest.skip("not parseable (a bad-input fixture)")
    _same_per_node(module, src)


def test_node_positions_generate_only_the_statement_asked_for():
    from gpulint.model import ScriptModel
    from gpulint.positions import NodePositions

    src = "import torch\n\n\ndef f(x):\n    # a comment\n    y = x + 1\n    return y\n\n\nz = f(2)\n"
    module = cst.parse_module(src)
    model = ScriptModel(module, src)
    got = NodePositions(module, model, src)
    ret = module.body[1].body.body[1]
    assert got[ret].start.line == 7 and got[ret].start.column == 4
    assert got[ret.body[0].value].start.column == 11
    assert got._whole is None  # located without generating the whole module
    assert set(got._offsets) <= set(model.nodes[model.order[ret]:model.end[ret]])
    last = module.body[-1]
    assert got[last].start.line == 10 and got._whole is None
    # the module node itself is in no statement: the whole module is generated
    assert got[module].start.line == 1 and got._whole is not None
