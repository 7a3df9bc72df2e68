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
    (gpulint/notebook.py), each line is given in its cell, numbered as the reporter numbers cells
    (`cell 4, line 3 and cell 6, line 7`; see `line_ref`)."""
    own = ctx.line_of(first)
    lines = sorted({ctx.line_of(n) for n in nodes} - {own})
    if not lines:
        return ""
    if not _is_notebook(ctx):
        shown = ", ".join(str(x) for x in lines[:SHOWN]) + (", ..." if len(lines) > SHOWN else "")
        return f"line{'s' if len(lines) > 1 else ''} {shown}"
    groups: dict[int, list[int]] = {}
    for ln in lines[:SHOWN]:
        k, at = _code_cell(ctx, ln)
        groups.setdefault(k, []).append(at)
    parts = [f"{CODE_CELL}{k}, line{'s' if len(ats) > 1 else ''} {', '.join(map(str, ats))}" for k, ats in sorted(groups.items())]
    return " and ".join(parts) + (" (and more)" if len(lines) > SHOWN else "")


# In a notebook's script a rule knows its code cells (the boundary lines), not their numbers in the
# notebook (markdown cells are not in the script): a reference names the code cell as
# `code cell #K`, and the notebook layer (gpulint.notebook.cell_numbers) rewrites it to the cell's
# number in the notebook, `cell 15`, the numbering of the reported locations (`x.ipynb:cell 15:3:1`).
# Where nothing rewrites it (the editor server), `code cell #K` still names the right cell.
CODE_CELL = "code cell #"


def _is_notebook(ctx) -> bool:
    return str(ctx.path or "").endswith(".ipynb")


def _code_cell(ctx, line: int) -> tuple[int, int]:
    """(1-based code cell ordinal, 1-based line in that cell) of a line of a notebook's script."""
    from gpulint.notebook import starts_of

    starts = starts_of(ctx.source)
    i = max(bisect.bisect_right(starts, line) - 1, 0)
    return i + 1, line - starts[i] + 1


def line_ref(ctx, node) -> str:
    """`line 12` for a node (or a 1-based line) of a `.py` file; in a notebook, checked as one script
    of its code cells, its cell and the line in that cell, `cell 15, line 3` (as the reporter
    writes locations, `cell 15:3`)."""
    line = node if isinstance(node, int) else ctx.line_of(node)
    if not _is_notebook(ctx):
        return f"line {line}"
    k, at = _code_cell(ctx, line)
    return f"{CODE_CELL}{k}, line {at}"


def line_refs(ctx, nodes: Sequence) -> str:
    """`line 3, 7` for nodes (or lines) of a `.py` file, in their order (the form messages used
    before notebooks: kept as it was); in a notebook, `cell 15, lines 3, 7 and cell 17, line 2`."""
    lines = [n if isinstance(n, int) else ctx.line_of(n) for n in nodes]
    if not _is_notebook(ctx):
        return "line " + ", ".join(str(x) for x in lines)
    groups: dict[int, list[int]] = {}
    for ln in lines:
        k, at = _code_cell(ctx, ln)
        groups.setdefault(k, []).append(at)
    return " and ".join(
        f"{CODE_CELL}{k}, line{'s' if len(ats) > 1 else ''} {', '.join(map(str, ats))}" for k, ats in groups.items()
    )


def within(ctx, inner: cst.CSTNode, outer: cst.CSTNode) -> bool:
    """`inner`'s text lies inside `outer`'s (and is not the same range)."""
    a, b = ctx.span(inner)
    c, d = ctx.span(outer)
    return c <= a and b <= d and (a, b) != (c, d)


def outermost(ctx, nodes: Sequence[cst.CSTNode]) -> list[cst.CSTNode]:
    """The nodes not nested in another of them: edits of one fix must not overlap (a nested site
    is rewritten by the next round of fixes)."""
    return [n for n in nodes if not any(o is not n and within(ctx, n, o) for o in nodes)]
