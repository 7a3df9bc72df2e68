"""Node positions: what LibCST's `PositionProvider` computes, at a fraction of its cost.

`positions(module)` runs LibCST's own code generation once, with a code-generation state that
records each node's start and end as character offsets (LibCST's provider splits every token on
newlines and builds two `CodePosition` objects per node through a generator-based context
manager). Line and column are worked out only for the nodes asked for, from the offsets, the way
LibCST counts them (lines end at "\\r\\n", "\\r" or "\\n"; columns count characters). The result
maps a node to the same `CodeRange` `MetadataWrapper(module).resolve(PositionProvider)` gives.

`node_positions(module, model, source)` gives the same ranges without generating the whole
module: a rule asks for the positions of the few nodes it reports, so only the statement around
each such node is generated (see `NodePositions`).
"""

from __future__ import annotations

import bisect
import re
from typing import Iterator, Mapping

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst._position import CodePosition, CodeRange

_NEWLINE = re.compile(r"\r\n?|\n")
# the node classes whose text (`value`) may hold a line break: whitespace (a line continuation),
# strings, and newlines (a None value is the module's default newline); comments cannot
_TEXT_TYPES = frozenset(
    t
    for t in (
        cst.SimpleWhitespace,
        cst.SimpleString,
        cst.FormattedStringText,
        getattr(cst, "TemplatedStringText", None),
        cst.Newline,
    )
    if t is not None
)


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
        start = computed[self.start_node][0] if self.start_node is not None else self.start
        end = computed[self.end_node][1] if self.end_node is not None else state.offset
        computed[self.node] = (start, end)


class _OffsetState(CodegenState):
    def __init__(self, module: cst.Module) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.offset = 0
        self.computed: dict[cst.CSTNode, tuple[int, int]] = {}
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
            self.computed[node] = (start, self.offset)

    def pop_trailing_newline(self) -> None:
        # LibCST's provider keeps counting the popped newline: so do the offsets
        if len(self.tokens) > 0:
            self.popped = self.tokens.pop()

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):  # type: ignore[override]
        return _Syntactic(self, node, start_node, end_node)


class Positions(Mapping):
    """node -> CodeRange, like the mapping LibCST's PositionProvider resolves to."""

    def __init__(self, module: cst.Module) -> None:
        state = _OffsetState(module)
        module._codegen(state)
        self._offsets = state.computed
        self._text = "".join(state.tokens) + state.popped
        self._starts: list[int] | None = None
        self._cache: dict[cst.CSTNode, CodeRange] = {}

    def _position(self, offset: int) -> CodePosition:
        starts = self._starts
        if starts is None:
            starts = self._starts = [0] + [m.end() for m in _NEWLINE.finditer(self._text)]
        row = bisect.bisect_right(starts, offset)
        return CodePosition(row, offset - starts[row - 1])

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        found = self._cache.get(node)
        if found is None:
            start, end = self._offsets[node]
            found = self._cache[node] = CodeRange(self._position(start), self._position(end))
        return found

    def __contains__(self, node: object) -> bool:
        return node in self._offsets

    def __iter__(self) -> Iterator[cst.CSTNode]:
        return iter(self._offsets)

    def __len__(self) -> int:
        return len(self._offsets)

    def offsets(self, node: cst.CSTNode) -> tuple[int, int]:
        """A node's start and end as character offsets into the module's code."""
        return self._offsets[node]


def positions(module: cst.Module) -> Positions:
    return Positions(module)


class NodePositions(Mapping):
    """node -> CodeRange like `Positions`, generating only the innermost statement (of a block or
    the module) around each node asked for.

    A statement of a block or of the module starts at the start of a line (its leading blank and
    comment lines are its own). Its line is one more than the line breaks of everything before it
    in the source, which are those in the text fields of the nodes before it in source order (the
    ScriptModel's `nodes`): whitespace (a line continuation), strings, comments and newline nodes.
    From that line's offset, the statement is generated with the indentation of its blocks, as the
    module's code generation would; the generated text is checked against the source there. Any
    surprise (a node outside any statement, a tree that shares a node object, a text that does
    not match: the last statement of a file without a final newline) falls back to `Positions`
    of the whole module, so the ranges are always LibCST's."""

    def __init__(self, module: cst.Module, model, source: str) -> None:
        self.module = module
        self.model = model
        self.source = source
        self._offsets: dict[cst.CSTNode, tuple[int, int]] = {}
        self._cache: dict[cst.CSTNode, CodeRange] = {}
        self._breaks: list[int] | None = None  # line breaks before each of the model's first nodes
        self._starts: list[int] | None = None  # offsets of the source's lines
        self._whole: Positions | None = None

    def whole(self) -> Positions:
        if self._whole is None:
            self._whole = Positions(self.module)
        return self._whole

    def _line_starts(self) -> list[int]:
        starts = self._starts
        if starts is None:
            starts = self._starts = [0] + [m.end() for m in _NEWLINE.finditer(self.source)]
        return starts

    def _position(self, offset: int) -> CodePosition:
        starts = self._line_starts()
        row = bisect.bisect_right(starts, offset)
        return CodePosition(row, offset - starts[row - 1])

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        found = self._cache.get(node)
        if found is None:
            if self._whole is not None:
                return self._whole[node]
            off = self._offsets.get(node)
            if off is None:
                off = self._locate(node)
                if off is None:
                    return self.whole()[node]
            found = self._cache[node] = CodeRange(self._position(off[0]), self._position(off[1]))
        return found

    def offsets(self, node: cst.CSTNode) -> tuple[int, int]:
        """A node's start and end as character offsets into the module's code."""
        if self._whole is None:
            off = self._offsets.get(node) or self._locate(node)
            if off is not None:
                return off
        return self.whole().offsets(node)

    def __contains__(self, node: object) -> bool:
        return node in self.whole()

    def __iter__(self) -> Iterator[cst.CSTNode]:
        return iter(self.whole())

    def __len__(self) -> int:
        return len(self.whole())

    def _line_breaks(self, upto: int) -> list[int] | None:
        """Line breaks before each of the model's nodes, counted as far as node `upto` (the rest is
        counted when a later node is asked for)."""
        nodes = self.model.nodes
        breaks = self._breaks
        if breaks is None:
            if len(self.model.order) != len(nodes):
                return None  # a node object at two places: its first one is its position
            breaks = self._breaks = [0]
        done = len(breaks) - 1  # breaks[k] is known for k <= done
        if upto > done:
            count = breaks[done]
            text_types = _TEXT_TYPES
            newline = _NEWLINE
            append = breaks.append
            for n in nodes[done:upto]:
                if type(n) in text_types:
                    v = n.value
                    if v is None:
                        count += 1  # a Newline: the module's default newline
                    elif "\n" in v or "\r" in v:
                        count += len(newline.findall(v))
                append(count)
        return breaks

    def _locate(self, node: cst.CSTNode) -> tuple[int, int] | None:
        m = self.model
        parents = m.parents
        stmt, cur = None, node
        while cur is not None:
            parent = parents.get(cur)
            if parent is None:
                return None  # the module itself, or a node not in the model's tree
            if isinstance(parent, (cst.IndentedBlock, cst.Module)) and isinstance(
                cur, (cst.SimpleStatementLine, cst.BaseCompoundStatement)
            ):
                stmt = cur
                break
            cur = parent
        if stmt is None:
            return None
        i = m.order.get(stmt)
        if i is None or m.nodes[i] is not stmt:
            return None
        breaks = self._line_breaks(i)
        if breaks is None:
            return None
        starts = self._line_starts()
        line = breaks[i]
        if line >= len(starts):
            return None
        state = _OffsetState(self.module)
        state.offset = start = starts[line]
        indents = []
        for anc in m.ancestors(stmt):
            if isinstance(anc, cst.IndentedBlock):
                indents.append(state.default_indent if anc.indent is None else anc.indent)
        indents.reverse()
        state.indent_tokens = indents
        stmt._codegen(state)
        text = "".join(state.tokens)
        if self.source[start:start + len(text)] != text:
            return None
        computed = state.computed
        for k, v in computed.items():
            self._offsets.setdefault(k, v)
        return computed.get(node)


def node_positions(module: cst.Module, model, source: str):
    """Positions for a module, computed per statement on demand when the ScriptModel built from
    that module is at hand (`NodePositions`), else for the whole module at once."""
    if model is None or getattr(model, "module", None) is not module:
        return Positions(module)
    return NodePositions(module, model, source)
