"""gpulint.cstwalk walks a LibCST tree exactly as LibCST's own visitor does, without rebuilding it."""

from __future__ import annotations

import os
import random
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from gpulint import cstwalk

FIXTURES = Path(__file__).resolve().parent / "fixtures"


class _Recorder(cst.CSTVisitor):
    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.events.append(("visit", id(node)))
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.events.append(("leave", id(original_node)))


def _both(module: cst.Module) -> tuple[list, list]:
    rec = _Recorder()
    module.visit(rec)
    fast: list[tuple[str, int]] = []
    cstwalk.traverse(module, lambda n: fast.append(("visit", id(n))), lambda n: fast.append(("leave", id(n))))
    return rec.events, fast


SAMPLE = textwrap.dedent(
    '''
    from __future__ import annotations
    from . import a
    from .b import (c as d, e)
    from f import *
    import g.h as i, j
    @dec(1)
    async def k(l, /, m: int = 2, *n, o, p=3, **q) -> "r":
        global s
        async with t as (u, v), w:
            x = [y async for y in z if y] or {1: 2, **aa} or {bb for bb in cc}
            yield from dd
        async for ee in ff:
            await gg
        return f"{hh!r:>{ii}} {jj=}" f'{kk:{ll}.{mm}}' 'nn' r"oo"
    class P[T: int, *Ts, **Ps](Q, metaclass=R):
        s: int = 1; t = u if v else w
        def __init__(self): self.x = lambda a, *b, c=1: a[1:2, ::3, ...]
    match pp:
        case [1, *rest] | {"k": v, **kw} | Point(x=0, y=_) if v > 0:
            pass
        case str() as s:
            del qq[0], rr.ss
    try:
        raise X from Y
    except* (A, B) as e:
        pass
    else:
        pass
    finally:
        assert not -~+z, "msg"
    while (zz := 1) is not None and zz not in ()  :  # comment
        continue
    else:
        break
    type Alias[T] = list[T]
    x @= y ** 2 // 3 << 4
    print(*a, **b); lambda: (yield)
    '''
)


def test_field_table_matches_the_installed_libcst():
    from gpulint._cst_fields import FIELDS

    assert FIELDS == cstwalk.fields_from_source(), "run `python -m gpulint.cstwalk` to regenerate gpulint/_cst_fields.py"


def test_same_walk_as_libcst_on_a_sample_of_every_construct():
    module = cst.parse_module(SAMPLE)
    libcst_events, fast = _both(module)
    assert len(libcst_events) > 500
    assert fast == libcst_events


def test_children_match_libcst_for_every_node():
    module = cst.parse_module(SAMPLE)
    seen = 0
    for node in _all_nodes(module):
        assert list(cstwalk.children(node)) == list(node.children), type(node).__name__
        seen += 1
    assert seen > 500


def test_optional_fields_absent_and_present():
    # FormattedStringExpression visits format_spec only when there is one
    for src in ('f"{a}"\n', 'f"{a:{b}>3}"\n', "from a import b\n", "from a import (b)\n", "from a import *\n"):
        libcst_events, fast = _both(cst.parse_module(src))
        assert fast == libcst_events, src


def _all_nodes(module: cst.Module) -> list[cst.CSTNode]:
    out: list[cst.CSTNode] = []
    cstwalk.traverse(module, out.append, lambda n: None)
    return out


@pytest.mark.parametrize("path", sorted(FIXTURES.rglob("*.py")), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_same_walk_as_libcst_on_fixtures(path: Path):
    try:
        module = cst.parse_module(path.read_text(encoding="utf-8"))
    except (cst.ParserSyntaxError, UnicodeDecodeError):
        pytest.skip("not parseable (a bad-input fixture)")
    libcst_events, fast = _both(module)
    assert fast == libcst_events


@pytest.mark.skipif(not os.environ.get("GPULINT_FIX_CORPUS"), reason="set GPULINT_FIX_CORPUS=DIR (and N files) to run")
def test_same_walk_as_libcst_on_a_corpus():
    root = Path(os.environ["GPULINT_FIX_CORPUS"])
    files = sorted(root.rglob("*.py"))
    random.Random(0).shuffle(files)
    checked = 0
    for path in files[: int(os.environ.get("GPULINT_FIX_CORPUS_FILES", "300"))]:
        try:
            module = cst.parse_module(path.read_text(encoding="utf-8"))
        except Exception:
            continue
        libcst_events, fast = _both(module)
        assert fast == libcst_events, str(path)
        checked += 1
    assert checked > 0


class _SkipRecorder(cst.CSTVisitor):
    """LibCST's own walk, leaving out the nodes of some classes with their subtrees."""

    def __init__(self, skip: frozenset) -> None:
        self.skip = skip
        self.events: list[tuple[str, int]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if type(node) in self.skip:
            return False
        self.events.append(("visit", id(node)))
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if type(original_node) not in self.skip:
            self.events.append(("leave", id(original_node)))


def _both_skipping(module: cst.Module, skip: frozenset) -> tuple[list, list]:
    rec = _SkipRecorder(skip)
    module.visit(rec)
    fast: list[tuple[str, int]] = []
    cstwalk.traverse(module, lambda n: fast.append(("visit", id(n))), lambda n: fast.append(("leave", id(n))), skip)
    return rec.events, fast


def test_layout_fields_are_found_from_the_annotations():
    from gpulint.model import _LAYOUT

    kept = cstwalk._kept_fields(cst.Call, cstwalk._fields_for(cst.parse_expression("f(x)")), _LAYOUT)
    assert kept == ("lpar", "func", "args", "rpar")  # whitespace_after_func/_before_args: layout only
    # a field that may hold a Comma (not layout) is read
    assert "comma" in cstwalk._kept_fields(cst.Arg, ("keyword", "equal", "comma", "whitespace_after_arg", "value"), _LAYOUT)
    # a skip set without ParenthesizedWhitespace keeps the parenthesizable whitespace fields
    assert "whitespace_after_func" in cstwalk._kept_fields(
        cst.Call, ("lpar", "func", "whitespace_after_func", "args"), frozenset({cst.SimpleWhitespace})
    )


def test_skipping_walk_same_as_libcst_on_a_sample_of_every_construct():
    from gpulint.model import _LAYOUT

    module = cst.parse_module(SAMPLE)
    for skip in (_LAYOUT, frozenset({cst.SimpleWhitespace}), frozenset({cst.Name, cst.EmptyLine})):
        libcst_events, fast = _both_skipping(module, skip)
        assert fast == libcst_events


@pytest.mark.parametrize("path", sorted(FIXTURES.rglob("*.py")), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_skipping_walk_same_as_libcst_on_fixtures(path: Path):
    from gpulint.model import _LAYOUT

    try:
        module = cst.parse_module(path.read_text(encoding="utf-8"))
    except (cst.ParserSyntaxError, UnicodeDecodeError):
        pytest.skip("not parseable (a bad-input fixture)")
    libcst_events, fast = _both_skipping(module, _LAYOUT)
    assert fast == libcst_events


def test_generated_pushers_walk_like_libcst(monkeypatch):
    """The per-class functions `traverse` generates for frequent classes (here: from the first
    node of a class on) give LibCST's own order, with and without a skip set."""
    from gpulint.model import _LAYOUT

    monkeypatch.setattr(cstwalk, "_GENERATE_AFTER", 1)
    monkeypatch.setattr(cstwalk, "_PUSHERS", {})
    monkeypatch.setattr(cstwalk, "_SEEN", {})
    sources = [SAMPLE] + [p.read_text(encoding="utf-8") for p in sorted(FIXTURES.rglob("*.py"))]
    walked = 0
    for src in sources:
        try:
            module = cst.parse_module(src)
        except (cst.ParserSyntaxError, UnicodeDecodeError):
            continue
        libcst_events, fast = _both(module)
        assert fast == libcst_events
        libcst_events, fast = _both_skipping(module, _LAYOUT)
        assert fast == libcst_events
        walked += 1
    assert walked > 100
    assert len(cstwalk._PUSHERS[frozenset()]) > 50 and len(cstwalk._PUSHERS[_LAYOUT]) > 50
