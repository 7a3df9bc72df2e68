"""The rule API.

A rule is a class with its documentation and a `check(ctx)` generator that yields findings made
with `ctx.finding(...)`. It asks the shared `ctx.model` (the ScriptModel) about the script, builds
fixes from text edits with the helpers on the context, and never reads or writes files.

    class OptimizerMovedLikeModule(Rule):
        code = "GL103"
        name = "optimizer-moved-like-module"
        ...
        def check(self, ctx):
            for call, recv, _ in ctx.model.method_calls("to"):
                if ctx.model.kind_of(recv) is Kind.OPTIMIZER:
                    yield ctx.finding(call, fix=ctx.fix(ctx.replace(call, recv)))
"""

from __future__ import annotations

import bisect
import re
from typing import ClassVar, Iterable, Iterator

import libcst as cst

from gpulint.diagnostics import SAFE, UNSAFE, Diagnostic, Edit, Fix
from gpulint.model import Kind, ScriptModel  # noqa: F401  (re-exported for rules)

__all__ = ["Rule", "Context", "Finding", "Kind", "SAFE", "UNSAFE", "Edit", "Fix", "split_lines"]


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """Lines of source text split on "\n", "\r\n" and "\r" only, which is what Python's
    tokenizer calls a line end. `str.splitlines()` also splits on U+2028, U+2029, "\x0b",
    "\x0c", "\x1c"-"\x1e" and "\x85", which may sit inside string literals: re-indenting its
    "lines" would change the string. Use this for every re-indentation in a fix."""
    lines = _LINE.findall(text)
    if keepends:
        return lines
    return [ln.rstrip("\r\n") for ln in lines]


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]  # one line for `gpulint rules`
    message: ClassVar[str]  # default diagnostic message: what is wrong and what to do
    # "safe", "unsafe", "mixed" (each fix says: `ctx.fix(..., safe=...)`; a fix that does not say
    # is unsafe) or "none"
    fix_safety: ClassVar[str] = "none"
    fix_partial: ClassVar[bool] = False  # some findings come without a fix (the rule only reports)
    default: ClassVar[bool] = True
    kind: ClassVar[str] = "crash"  # crash / silent / slow / future
    explanation: ClassVar[str] = ""  # markdown with a bad and a good example
    # A regular expression that every file this rule can fire on matches. Files that match no
    # enabled rule's prefilter are never parsed. None means "always run".
    prefilter: ClassVar[str | None] = None
    # A necessary condition checked on Python's own syntax tree, before LibCST parses the file:
    # a regular expression, or a tuple of them that must all match, searched (re.MULTILINE) in
    # the file's facts (gpulint.engine.ast_facts: one line per identifier, `.attr(` method call,
    # `name(` call, `kw=` keyword, `import a.b`, `def f`, `class C`, `base B`, `'string`, `loop`,
    # `script`...; comments and docstrings give none). It must hold on every file the rule can
    # report on: where it does not, the rule is not run there (it counts as run, with no
    # finding). A file where no selected rule's condition holds is never parsed by LibCST. "(?!)"
    # (never) for a rule whose check() itself finds nothing. None: no condition.
    ast_prefilter: ClassVar[str | tuple[str, ...] | None] = None

    def check(self, ctx: "Context") -> Iterable["Finding"]:  # pragma: no cover - interface
        raise NotImplementedError


class Finding:
    __slots__ = ("rule", "node", "message", "fix")

    def __init__(self, rule: Rule, node: cst.CSTNode, message: str, fix: Fix | None) -> None:
        self.rule = rule
        self.node = node
        self.message = message
        self.fix = fix


class Context:
    """What a rule sees of one file: the source, the tree, the model and edit helpers."""

    def __init__(self, path: str, source: str, module: cst.Module, model: ScriptModel) -> None:
        self.path = path
        self.source = source
        self.module = module
        self.model = model
        self.newline = module.default_newline
        self._positions = None
        self._line_starts: list[int] | None = None
        self.rule: Rule | None = None  # set by the engine before each rule runs
        self.suppressed = lambda line, code: False  # replaced by the engine
        from gpulint.config import RuleSettings

        self.settings = RuleSettings()  # the project's settings rules may read (torch_version); set by the engine

    # positions --------------------------------------------------------------------------------
    @property
    def positions(self):
        if self._positions is None:
            # LibCST's PositionProvider's ranges, computed without its per-token overhead
            from gpulint.positions import positions

            model = self.model
            locate = None
            if model is not None and getattr(model, "module", None) is self.module:
                locate = _top_statement_locator(model)
            # only the top-level statements that hold a node asked for are measured node by node
            self._positions = positions(self.module, locate, self.source if locate is not None else None)
        return self._positions

    def line_starts(self) -> list[int]:
        if self._line_starts is None:
            starts = [0]
            for m in re.finditer(r"\r\n|\r|\n", self.source):
                starts.append(m.end())
            self._line_starts = starts
        return self._line_starts

    def offset(self, line: int, col: int) -> int:
        return self.line_starts()[line - 1] + col

    def span(self, node: cst.CSTNode) -> tuple[int, int]:
        rng = self.positions[node]
        return self.offset(rng.start.line, rng.start.column), self.offset(rng.end.line, rng.end.column)

    def line_of(self, node: cst.CSTNode) -> int:
        return self.positions[node].start.line

    def code(self, node: cst.CSTNode) -> str:
        start, end = self.span(node)
        return self.source[start:end]

    def render(self, node: cst.CSTNode) -> str:
        """Source text for a (possibly new) node."""
        return self.module.code_for_node(node)

    def indent_of(self, stmt: cst.CSTNode) -> str:
        start, _ = self.span(stmt)
        line_start = self.line_starts()[bisect.bisect_right(self.line_starts(), start) - 1]
        return self.source[line_start:start]

    # findings ---------------------------------------------------------------------------------
    def finding(self, node: cst.CSTNode, message: str | None = None, fix: Fix | None = None) -> Finding:
        assert self.rule is not None
        return Finding(self.rule, node, message or self.rule.message, fix)

    # edits ------------------------------------------------------------------------------------
    def fix(self, *edits: Edit, safe: bool | None = None, message: str = "") -> Fix:
        """A fix from edits; its safety defaults to the rule's declared safety (unsafe for a
        rule whose fixes are "mixed")."""
        if safe is None:
            safe = self.rule is None or self.rule.fix_safety == SAFE
        # stable: insertions at the same offset keep the order the rule gave them
        ordered = tuple(sorted(edits, key=lambda e: (e.start, e.end)))
        return Fix(ordered, SAFE if safe else UNSAFE, message)

    def location(self, offset: int) -> tuple[int, int]:
        starts = self.line_starts()
        row = bisect.bisect_right(starts, offset)
        return row, offset - starts[row - 1] + 1

    def edit(self, start: int, end: int, text: str) -> Edit:
        return Edit(start, end, text, self.location(start), self.location(end))

    def replace(self, node: cst.CSTNode, new: str | cst.CSTNode) -> Edit:
        start, end = self.span(node)
        text = new if isinstance(new, str) else self.render(new)
        return self.edit(start, end, text)

    def insert_text(self, offset: int, text: str) -> Edit:
        return self.edit(offset, offset, text)

    def _line_bounds(self, stmt: cst.CSTNode) -> tuple[int, int]:
        """Offsets of the start of stmt's first line and the end of its last line (after the newline)."""
        start, end = self.span(stmt)
        starts = self.line_starts()
        first = starts[bisect.bisect_right(starts, start) - 1]
        idx = bisect.bisect_right(starts, end)
        last = starts[idx] if idx < len(starts) else len(self.source)
        return first, last

    def insert_before(self, stmt: cst.CSTNode, code: str) -> Edit:
        """Insert lines of code before a statement, at its indentation."""
        first, _ = self._line_bounds(stmt)
        indent = self.indent_of(stmt)
        text = "".join(indent + line + self.newline for line in split_lines(code))
        return self.edit(first, first, text)

    def insert_after(self, stmt: cst.CSTNode, code: str) -> Edit:
        _, last = self._line_bounds(stmt)
        indent = self.indent_of(stmt)
        prefix = ""
        if last == len(self.source) and not self.source.endswith(("\n", "\r")):
            prefix = self.newline
        text = prefix + "".join(indent + line + self.newline for line in split_lines(code))
        return self.edit(last, last, text)

    def remove_statement(self, stmt: cst.SimpleStatementLine) -> Edit:
        """Delete a whole statement line; a lone statement in a block becomes `pass`."""
        parent = self.model.parent(stmt)
        body = getattr(parent, "body", None)
        if isinstance(body, (list, tuple)) and len(body) == 1 and not isinstance(parent, cst.Module):
            start, end = self.span(stmt)
            return self.edit(start, end, "pass")
        first, last = self._line_bounds(stmt)
        return self.edit(first, last, "")


def _top_statement_locator(model: ScriptModel):
    """node -> the statements of the model's module that hold it, innermost first, each with the
    indentation of the indented blocks around it (outermost first); only statements that are a
    block's or the module's own (not the parts of a one-line suite), the last one the top-level
    statement (from the model's parent map); None for the module itself or a layout node the
    model does not record."""
    parents = model.parents
    module = model.module
    default = module.default_indent
    Block = cst.IndentedBlock

    def locate(node: cst.CSTNode):
        path = []  # from the node up to the top-level statement
        cur = node
        while True:
            parent = parents.get(cur)
            if parent is None:
                return None
            path.append(cur)
            if parent is module:
                break
            cur = parent
        chain = [(cur, ())]
        indents: tuple[str, ...] = ()
        # down from the top-level statement: a statement whose parent is an indented block
        for i in range(len(path) - 2, -1, -1):
            parent = path[i + 1]
            if type(parent) is Block:
                indents = indents + (default if parent.indent is None else parent.indent,)
                child = path[i]
                if isinstance(child, _STATEMENTS):
                    chain.append((child, indents))
        chain.reverse()
        return chain

    return locate


_STATEMENTS = (cst.SimpleStatementLine, cst.BaseCompoundStatement)


def make_diagnostic(ctx: Context, finding: Finding) -> Diagnostic:
    rng = ctx.positions[finding.node]
    rule = finding.rule
    return Diagnostic(
        code=rule.code,
        name=rule.name,
        message=finding.message,
        path=ctx.path,
        line=rng.start.line,
        col=rng.start.column + 1,
        end_line=rng.end.line,
        end_col=rng.end.column + 1,
        fix=finding.fix,
    )


def iter_rules(objs: Iterable[object]) -> Iterator[type[Rule]]:
    for obj in objs:
        if isinstance(obj, type) and issubclass(obj, Rule) and obj is not Rule and getattr(obj, "code", None):
            yield obj
