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
