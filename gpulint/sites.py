"""Rules that report the sites of one file once (GL102, GL501): the first site carries the
finding, the message lists the lines of the others, and one fix rewrites them together."""

from __future__ import annotations

import bisect
from typing import Callable, Sequence, TypeVar

import libcst as cst

S = TypeVar("S")

SHOWN = 12  # lines listed in a message; more end in ", ..."


def unsuppressed(ctx, sites: Sequence[S], node: Callable[[S], cst.CSTNode] = lambda s: s[0]) -> list[S]:
    """The sites in source order, without those a `# noqa` / `# gpulint: ignore` on their own line
    silences (a suppressed site is neither reported nor rewritten; the others still are)."""
    code = ctx.rule.code
    out = [s for s in sites if not ctx.suppressed(ctx.line_of(node(s)), code)]
    out.sort(key=lambda s: ctx.span(node(s))[0])
    return out


def other_lines(ctx, first: cst.CSTNode, others: Sequence[cst.CSTNode], what: str = "also") -> str:
    """`"; also on lines 12, 40"` for the sites after the reported one (its own line left out),
    or "" when there are none."""
    text = lines_of(ctx, first, others)
    return f"; {what} on {text}" if text else ""


def lines_of(ctx, first: cst.CSTNode, nodes: Sequence[cst.CSTNode]) -> str:
    """`line 12` / `lines 12, 40` (at most SHOWN) of the nodes, the reported node's line left out
    ("" when nothing is left). In a notebook, checked as one script of its code cells
    (gpulint/notebook.py), only the reported line is moved to its cell: the others are given in
    their cells' own numbering, counted from the reported cell (`line 3 of this cell and line 7
    of the 2nd code cell below`)."""
    own = ctx.line_of(first)
    lines = sorted({ctx.line_of(n) for n in nodes} - {own})
    if not lines:
        return ""
    if not str(ctx.path or "").endswith(".ipynb"):
        shown = ", ".join(str(x) for x in lines[:SHOWN]) + (", ..." if len(lines) > SHOWN else "")
        return f"line{'s' if len(lines) > 1 else ''} {shown}"
    from gpulint.notebook import starts_of

    starts = starts_of(ctx.source)

    def cell(line: int) -> tuple[int, int]:
        i = max(bisect.bisect_right(starts, line) - 1, 0)
        return i, line - starts[i] + 1

    here = cell(own)[0]
    groups: dict[int, list[int]] = {}
    for ln in lines[:SHOWN]:
        i, at = cell(ln)
        groups.setdefault(i - here, []).append(at)
    parts = []
    for k, ats in sorted(groups.items()):
        if k == 0:
            where = "this cell"
        elif k == 1:
            where = "the next code cell"
        else:
            where = f"the {_ordinal(abs(k))} code cell {'below' if k > 0 else 'above'}"
        parts.append(f"line{'s' if len(ats) > 1 else ''} {', '.join(map(str, ats))} of {where}")
    return " and ".join(parts) + (" (and more)" if len(lines) > SHOWN else "")


def _ordinal(n: int) -> str:
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def within(ctx, inner: cst.CSTNode, outer: cst.CSTNode) -> bool:
    """`inner`'s text lies inside `outer`'s (and is not the same range)."""
    a, b = ctx.span(inner)
    c, d = ctx.span(outer)
    return c <= a and b <= d and (a, b) != (c, d)


def outermost(ctx, nodes: Sequence[cst.CSTNode]) -> list[cst.CSTNode]:
    """The nodes not nested in another of them: edits of one fix must not overlap (a nested site
    is rewritten by the next round of fixes)."""
    return [n for n in nodes if not any(o is not n and within(ctx, n, o) for o in nodes)]
