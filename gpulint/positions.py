"""Node positions: what LibCST's `PositionProvider` computes, at a fraction of its cost.

`positions(module)` runs LibCST's own code generation once, with a code-generation state that
records each node's start and end as character offsets (LibCST's provider splits every token on
newlines and builds two `CodePosition` objects per node through a generator-based context
manager). Line and column are worked out only for the nodes asked for, from the offsets, the way
LibCST counts them (lines end at "\\r\\n", "\\r" or "\\n"; columns count characters). The result
maps a node to the same `CodeRange` `MetadataWrapper(module).resolve(PositionProvider)` gives.

Given `locate` (node -> the statements that hold it, innermost first, each with the indentation
of the blocks around it, the last one a top-level statement; or None), only statements that hold
a node asked for are measured node by node, by generating that statement's code alone: the
innermost statement of an indented block whose code the module's code holds at one place only
(then that is its place), else the top-level statement. Where a top-level statement starts: given the module's code (`source`), the one place where the code
holds the statement's code, when there is only one; else (no `source`, or a statement whose code
is repeated) one code generation of the module records where each top-level statement starts. A top-level statement's code does not
depend on what comes before it (no indentation, nothing read back from the tokens), so the
offsets are the same as in one pass over the module. Every other node (the module, its header
and footer lines, a node `locate` does not place) is looked up in the whole module's map,
computed once when first needed.
"""

from __future__ import annotations

import bisect
import re
from typing import Callable, Iterator, Mapping, Sequence

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst._position import CodePosition, CodeRange

_NEWLINE = re.compile(r"\r\n?|\n")
# A node's start and end offsets kept as one int, start * _SHIFT + end (a tuple of two ints costs
# ~120 bytes per node, one int ~36: the map holds every node of the module)
_SHIFT = 1 << 32


class _Syntactic:
    """The context manager `record_syntactic_position` returns (a class: cheaper than a generator)."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state: "_OffsetState", node, start_node, end_node) -> None:
        self.state = state
        self.node = node
        self.start_node = start_node
        self.end_node = end_node

    def __enter__(self) -> None:
        self.start = self.state.offset

    def __exit__(self, *exc) -> None:
        state = self.state
        computed = state.computed
        start = computed[self.start_node] // _SHIFT if self.start_node is not None else self.start
        end = computed[self.end_node] % _SHIFT if self.end_node is not None else state.offset
        computed[self.node] = start * _SHIFT + end


class _OffsetState(CodegenState):
    def __init__(self, module: cst.Module) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.offset = 0
        self.computed: dict[cst.CSTNode, int] = {}  # node -> start * _SHIFT + end
        self.stack: list[int] = []
        self.popped = ""

    def add_indent_tokens(self) -> None:
        tokens = self.indent_tokens
        self.tokens.extend(tokens)
        for t in tokens:
            self.offset += len(t)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self.offset += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.stack.append(self.offset)

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self.stack.pop()
        if node not in self.computed:  # a syntactic position recorded already wins
            self.computed[node] = start * _SHIFT + self.offset

    def pop_trailing_newline(self) -> None:
        # LibCST's provider keeps counting the popped newline: so do the offsets
        if len(self.tokens) > 0:
            self.popped = self.tokens.pop()

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):  # type: ignore[override]
        return _Syntactic(self, node, start_node, end_node)


class _NoPosition:
    """`record_syntactic_position` while only the top-level statements' starts are recorded."""

    __slots__ = ()

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        pass


_NO_POSITION = _NoPosition()


class _StartsState(CodegenState):
    """Code generation that records nothing per node (the top-level statements' starts are
    taken between them)."""

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):  # type: ignore[override]
        return _NO_POSITION


class Positions(Mapping):
    """node -> CodeRange, like the mapping LibCST's PositionProvider resolves to."""

    def __init__(
        self,
        module: cst.Module,
        locate: Callable[[cst.CSTNode], Sequence[tuple[cst.CSTNode, tuple[str, ...]]] | None] | None = None,
        source: str | None = None,
    ) -> None:
        self._module = module
        self._locate = locate
        self._offsets: dict[cst.CSTNode, int] | None = None  # every node: computed when needed
        self._stmt_start: dict[cst.CSTNode, int] = {}  # top-level statement -> where its code starts
        self._starts_known = False  # _stmt_start holds every top-level statement
        self._stmt_offsets: dict[cst.CSTNode, dict[cst.CSTNode, int]] = {}
        self._ambiguous: set[cst.CSTNode] = set()  # nested statements whose code is not unique
        if locate is None:
            self._offsets, self._text = self._measure_all()
        elif source is not None and module.body:
            # `source` is the module's code: only the newline a module without one at its end
            # pops is added (its offsets count it)
            self._text = source + self._popped()
        else:
            self._text = self._measure_starts()
        self._starts: list[int] | None = None
        self._cache: dict[cst.CSTNode, CodeRange] = {}

    def _popped(self) -> str:
        """The token `Module._codegen_impl` pops at the end of a module without a trailing newline
        (the last token of its last line: a footer line, else its last statement)."""
        module = self._module
        if module.has_trailing_newline:
            return ""
        last = module.footer[-1] if module.footer else module.body[-1]
        state = _StartsState(default_indent=module.default_indent, default_newline=module.default_newline)
        last._codegen(state)
        return state.tokens[-1] if state.tokens else ""

    def _measure_all(self) -> tuple[dict[cst.CSTNode, int], str]:
        state = _OffsetState(self._module)
        self._module._codegen(state)
        return state.computed, "".join(state.tokens) + state.popped

    def _measure_starts(self) -> str:
        """The module's code (with a popped trailing newline, as `_measure_all`), recording where
        each top-level statement's code starts; the steps of `Module._codegen_impl`."""
        module = self._module
        state = _StartsState(default_indent=module.default_indent, default_newline=module.default_newline)
        tokens = state.tokens
        for h in module.header:
            h._codegen(state)
        offset, done = 0, 0
        starts = self._stmt_start
        self._starts_known = True
        for stmt in module.body:
            offset += sum(map(len, tokens[done:]))
            done = len(tokens)
            if stmt not in starts:  # the first place wins, as in `_OffsetState.after_codegen`
                starts[stmt] = offset
            stmt._codegen(state)
        for f in module.footer:
            f._codegen(state)
        popped = ""
        if module.has_trailing_newline:
            if len(tokens) == 0:
                tokens.append(state.default_newline)
        elif len(tokens) > 0:
            popped = tokens.pop()
        return "".join(tokens) + popped

    def _all(self) -> dict[cst.CSTNode, int]:
        if self._offsets is None:
            self._offsets, _text = self._measure_all()
        return self._offsets

    def _packed(self, node: cst.CSTNode) -> int:
        """start * _SHIFT + end of a node (KeyError when the module does not hold it)."""
        if self._offsets is None:
            chain = self._locate(node)
            if chain:
                measured = self._stmt_offsets
                for stmt, _indents in chain:  # a statement holding it measured already
                    found = measured.get(stmt)
                    if found is not None:
                        packed = found.get(node)
                        if packed is not None:
                            return packed
                for stmt, indents in chain[:-1]:  # the innermost statement whose code is unique
                    found = self._measure_nested(stmt, indents)
                    if found is not None:
                        packed = found.get(node)
                        if packed is not None:
                            return packed
                found = self._measure_statement(chain[-1][0])
                if found is not None:
                    packed = found.get(node)
                    if packed is not None:
                        return packed
        return self._all()[node]

    def _measure_nested(self, stmt: cst.CSTNode, indents: tuple[str, ...]) -> dict[cst.CSTNode, int] | None:
        """The offsets of a statement of an indented block (`indents`: the indentation of the
        blocks around it, outermost first), when the module's code holds its code at one place
        only (then that is its place: its code is what the module's code generation gives at that
        point, as nothing in a statement's code generation depends on what came before it but
        the indentation); None otherwise."""
        if stmt in self._ambiguous:
            return None
        state = _OffsetState(self._module)
        state.indent_tokens = list(indents)
        stmt._codegen(state)
        code = "".join(state.tokens)
        text = self._text
        at = text.find(code) if code else -1
        if at < 0 or text.find(code, at + 1) >= 0:
            self._ambiguous.add(stmt)
            return None
        shift = at * (_SHIFT + 1)  # start and end both move by `at`
        found = self._stmt_offsets[stmt] = {n: p + shift for n, p in state.computed.items()}
        return found

    def _measure_statement(self, stmt: cst.CSTNode) -> dict[cst.CSTNode, int] | None:
        """The offsets of a top-level statement's nodes (None: not a statement of the module)."""
        if not self._starts_known:
            # where its code starts: found in the module's code when that code holds it at one
            # place only (then that is its place); else every statement's start is measured
            state = _OffsetState(self._module)
            stmt._codegen(state)
            code = "".join(state.tokens)
            text = self._text
            at = text.find(code) if code else -1
            if at >= 0 and text.find(code, at + 1) < 0:
                shift = at * (_SHIFT + 1)  # start and end both move by `at`
                found = self._stmt_offsets[stmt] = {n: p + shift for n, p in state.computed.items()}
                return found
            self._measure_starts()
        start = self._stmt_start.get(stmt)
        if start is None:
            return None
        state = _OffsetState(self._module)
        state.offset = start
        stmt._codegen(state)
        found = self._stmt_offsets[stmt] = state.computed
        return found

    def _position(self, offset: int) -> CodePosition:
        starts = self._starts
        if starts is None:
            starts = self._starts = [0] + [m.end() for m in _NEWLINE.finditer(self._text)]
        row = bisect.bisect_right(starts, offset)
        return CodePosition(row, offset - starts[row - 1])

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        found = self._cache.get(node)
        if found is None:
            start, end = divmod(self._packed(node), _SHIFT)
            found = self._cache[node] = CodeRange(self._position(start), self._position(end))
        return found

    def __contains__(self, node: object) -> bool:
        return node in self._all()

    def __iter__(self) -> Iterator[cst.CSTNode]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def offsets(self, node: cst.CSTNode) -> tuple[int, int]:
        """A node's start and end as character offsets into the module's code."""
        return divmod(self._packed(node), _SHIFT)


def positions(
    module: cst.Module,
    locate: Callable[[cst.CSTNode], Sequence[tuple[cst.CSTNode, tuple[str, ...]]] | None] | None = None,
    source: str | None = None,
) -> Positions:
    """The positions of the module's nodes; `locate` and `source` (the module's code, when the
    caller has it): see the module's docstring."""
    return Positions(module, locate, source)
