"""Rules that report the sites of one file once (GL102, GL501): the first site carries the
finding, the message lists the lines of the others, and one fix rewrites them together."""

from __future__ import annotations

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
    own = ctx.line_of(first)
    lines = sorted({ctx.line_of(n) for n in others} - {own})
    if not lines:
        return ""
    shown = ", ".join(str(x) for x in lines[:SHOWN]) + (", ..." if len(lines) > SHOWN else "")
    return f"; {what} on line{'s' if len(lines) > 1 else ''} {shown}"


def within(ctx, inner: cst.CSTNode, outer: cst.CSTNode) -> bool:
    """`inner`'s text lies inside `outer`'s (and is not the same range)."""
    a, b = ctx.span(inner)
    c, d = ctx.span(outer)
    return c <= a and b <= d and (a, b) != (c, d)


def outermost(ctx, nodes: Sequence[cst.CSTNode]) -> list[cst.CSTNode]:
    """The nodes not nested in another of them: edits of one fix must not overlap (a nested site
    is rewritten by the next round of fixes)."""
    return [n for n in nodes if not any(o is not n and within(ctx, n, o) for o in nodes)]
