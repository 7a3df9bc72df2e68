"""Node positions: what LibCST's `PositionProvider` computes, at a fraction of its cost.

`positions(module)` runs LibCST's own code generation once, with a code-generation state that
records each node's start and end as character offsets (LibCST's provider splits every token on
newlines and builds two `CodePosition` objects per node through a generator-based context
manager). Line and column are worked out only for the nodes asked for, from the offsets, the way
LibCST counts them (lines end at "\\r\\n", "\\r" or "\\n"; columns count characters). The result
maps a node to the same `CodeRange` `MetadataWrapper(module).resolve(PositionProvider)` gives.
"""

from __future__ import annotations

import bisect
import re
from typing import Iterator, Mapping

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
            start, end = divmod(self._offsets[node], _SHIFT)
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
        return divmod(self._offsets[node], _SHIFT)


def positions(module: cst.Module) -> Positions:
    return Positions(module)
