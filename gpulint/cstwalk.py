"""Walking a LibCST tree without LibCST's visitor machinery.

LibCST's `node.visit(visitor)` (and `node.children`, which uses it) rebuilds every node it passes
(each `_visit_and_replace_children` constructs and validates a copy), which makes a read-only walk
cost several times a parse. `children(node)` here reads the child fields directly, in the order
LibCST's `_visit_and_replace_children` visits them, so that `traverse` calls its hooks on exactly
the nodes, in exactly the order, of `node.visit(visitor)` for a visitor whose `on_visit` always
returns True.

The field order per node class comes from LibCST's own source (`visit_*(self, "field", ...)`
calls in each `_visit_and_replace_children`), read once when gpulint is developed and kept in
gpulint/_cst_fields.py (`python -m gpulint.cstwalk` writes it again; a test compares it with the
installed LibCST). Each class is also checked once per process against LibCST itself (the fields
one real node's `_visit_and_replace_children` announces must appear in that order); a class that
is not in the table or fails the check is walked with LibCST's `node.children`.
"""

from __future__ import annotations

import ast
import os
import sys
from typing import Callable, Sequence

import libcst as cst

_FIELDS: dict[type, tuple[str, ...] | None] | None = None  # class -> field order; None: use .children
_SOURCE_ORDER: dict[str, tuple[str, ...]] | None = None
_IS_NODE: dict[type, bool] = {}


def fields_from_source() -> dict[str, tuple[str, ...]]:
    """Class name -> the fields its `_visit_and_replace_children` visits, in order, read from the
    installed LibCST's source."""
    out: dict[str, tuple[str, ...]] = {}
    folder = os.path.join(os.path.dirname(cst.__file__), "_nodes")
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(folder, name), encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        for cls in ast.walk(tree):
            if not isinstance(cls, ast.ClassDef):
                continue
            for fn in cls.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "_visit_and_replace_children":
                    calls = [
                        n
                        for n in ast.walk(fn)
                        if isinstance(n, ast.Call)
                        and isinstance(n.func, ast.Name)
                        and n.func.id.startswith("visit_")
                        and len(n.args) >= 2
                        and isinstance(n.args[1], ast.Constant)
                        and isinstance(n.args[1].value, str)
                    ]
                    calls.sort(key=lambda n: (n.lineno, n.col_offset))
                    order: list[str] = []
                    for c in calls:
                        if c.args[1].value not in order:  # `x if c else y` names one field twice
                            order.append(c.args[1].value)
                    out[cls.name] = tuple(order)
    return out


class _Announced(cst.CSTVisitor):
    """Records the fields a node's `_visit_and_replace_children` announces, without descending."""

    def __init__(self) -> None:
        self.fields: list[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False

    def on_leave(self, original_node: cst.CSTNode) -> None:
        pass

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.fields.append(attribute)

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        pass


def _fields_for(node: cst.CSTNode) -> tuple[str, ...] | None:
    global _SOURCE_ORDER, _FIELDS
    if _SOURCE_ORDER is None:
        from gpulint._cst_fields import FIELDS

        _SOURCE_ORDER = FIELDS
    if _FIELDS is None:
        _FIELDS = {}
    t = type(node)
    owner = next((k for k in t.__mro__ if "_visit_and_replace_children" in vars(k)), None)
    order = None
    if owner is not None and owner.__module__.startswith("libcst."):
        order = _SOURCE_ORDER.get(owner.__name__)
    if order is not None:
        probe = _Announced()
        try:
            node._visit_and_replace_children(probe)
        except Exception:  # pragma: no cover - defensive: never worse than LibCST's own walk
            order = None
        else:
            it = iter(order)
            if not all(f in it for f in probe.fields):  # announced fields must follow `order`
                order = None
    _FIELDS[t] = order
    return order


def children(node: cst.CSTNode) -> Sequence[cst.CSTNode]:
    """`node.children`, without rebuilding `node`."""
    fields = _FIELDS.get(type(node), False) if _FIELDS is not None else False
    if fields is False:
        fields = _fields_for(node)
    if fields is None:
        return node.children
    out: list[cst.CSTNode] = []
    is_node = _IS_NODE
    for f in fields:
        v = getattr(node, f)
        t = type(v)
        flag = is_node.get(t)
        if flag is None:
            flag = is_node[t] = isinstance(v, cst.CSTNode)
        if flag:
            out.append(v)
        elif t is tuple or t is list:
            out.extend(v)
    return out


# skip set -> node class -> its generated `push(node, append, extend)` (see _pusher), or None
_PUSHERS: dict[frozenset, dict[type, Callable | None]] = {}


def traverse(root: cst.CSTNode, on_visit: Callable[[cst.CSTNode], object], on_leave: Callable[[cst.CSTNode], object],
             skip: frozenset = frozenset()) -> None:
    """Call on_visit on every node of the tree in pre-order and on_leave after its subtree, as
    `root.visit(visitor)` does for a visitor whose on_visit returns True; nodes whose class is in
    `skip` are left out with their subtrees. Iterative: no recursion however deep the tree.

    A node's children are read from its child fields in LibCST's order; with `skip` the fields
    whose declared type holds only classes in `skip` (`whitespace_*`, `leading_lines`...: about
    half of a node's fields) are not read at all (`_kept_fields`). Once a class has been met
    _GENERATE_AFTER times in the process, its children are pushed by a function generated for it
    (`_pusher`: attribute loads instead of a loop over field names; generating one costs about
    what it saves on a thousand nodes, so a small file does not pay for the rare classes)."""
    pushers = _PUSHERS.setdefault(skip, {})
    seen = _SEEN.setdefault(skip, {})
    kept = _KEPT.setdefault(skip, {})
    is_node = _IS_NODE
    Node = cst.CSTNode
    leave = object()
    stack: list = [root]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        node = pop()
        if node is leave:
            on_leave(pop())
            continue
        on_visit(node)
        push(node)
        push(leave)
        t = type(node)
        pusher = pushers.get(t)
        if pusher is not None:
            pusher(node, push, extend)
            continue
        fields = kept.get(t, False)
        if fields is False:
            fields = kept[t] = _fields_to_read(node, skip)
        if fields is None:
            kids = [k for k in node.children if type(k) not in skip] if skip else list(node.children)
        else:
            n = seen.get(t, 0) + 1
            seen[t] = n
            if n >= _GENERATE_AFTER:
                pushers[t] = _pusher(t, fields, skip)
            kids = []
            for f in fields:
                v = getattr(node, f)
                tv = type(v)
                flag = is_node.get(tv)
                if flag is None:
                    flag = is_node[tv] = isinstance(v, Node)
                if flag:
                    if tv not in skip:
                        kids.append(v)
                elif tv is tuple or tv is list:
                    if skip:
                        kids.extend([k for k in v if type(k) not in skip])
                    else:
                        kids.extend(v)
        if kids:
            kids.reverse()
            extend(kids)


# skip set -> node class -> the fields `traverse` reads (None: the class is walked with `.children`)
_KEPT: dict[frozenset, dict[type, tuple[str, ...] | None]] = {}
# skip set -> node class -> its generated `push(node, append, extend)` (see _pusher)
_PUSHERS: dict[frozenset, dict[type, Callable]] = {}
# skip set -> node class -> how many of its nodes `traverse` has met (until it has a pusher)
_SEEN: dict[frozenset, dict[type, int]] = {}
_GENERATE_AFTER = 1000


def _fields_to_read(node: cst.CSTNode, skip: frozenset) -> tuple[str, ...] | None:
    global _FIELDS
    if _FIELDS is None:
        _FIELDS = {}
    t = type(node)
    fields = _FIELDS.get(t, False)
    if fields is False:
        fields = _fields_for(node)
    if fields is not None and skip:
        fields = _kept_fields(t, fields, skip)
    if fields is not None and not all(f.isidentifier() for f in fields):
        return None  # pragma: no cover - LibCST's fields are identifiers
    return fields


def _pusher(t: type, fields: tuple[str, ...], skip: frozenset) -> Callable:
    """A function that pushes the children of a node of class `t` (its `fields`, read in
    LibCST's order), last first, onto a stack: what `traverse`'s loop over the fields does."""
    lines = ["def push(node, push, extend):"]
    for f in reversed(fields):
        lines += [
            f"    v = node.{f}",
            "    tv = type(v)",
            "    if tv is tuple or tv is list:",
            "        if v:",
            ("            extend([k for k in reversed(v) if type(k) not in skip])" if skip else "            extend(reversed(v))"),
            "    else:",
            "        flag = is_node.get(tv)",
            "        if flag is None:",
            "            flag = is_node[tv] = isinstance(v, Node)",
            ("        if flag and tv not in skip:" if skip else "        if flag:"),
            "            push(v)",
        ]
    if not fields:
        lines.append("    pass")
    env = {"skip": skip, "is_node": _IS_NODE, "Node": cst.CSTNode}
    exec("\n".join(lines), env)
    return env["push"]


# (annotation, skip set) -> _only_skipped's answer: many fields share an annotation
# (`BaseExpression`, `Sequence[LeftParen]`...), and a base class's answer walks its subclasses
_ONLY_SKIPPED: dict = {}


def _only_skipped(tp, skip: frozenset) -> bool:
    """Whether every node a field annotated `tp` can hold is of a class in `skip` (or not a node):
    `SimpleWhitespace`, `Sequence[EmptyLine]`, `Union[BaseParenthesizableWhitespace, MaybeSentinel]`
    (every subclass of an abstract base counted)... Anything not understood: False."""
    try:
        return _ONLY_SKIPPED[tp, skip]
    except KeyError:
        found = _ONLY_SKIPPED[tp, skip] = _only_skipped_now(tp, skip)
        return found
    except TypeError:  # pragma: no cover - an annotation that cannot be a key
        return _only_skipped_now(tp, skip)


def _only_skipped_now(tp, skip: frozenset) -> bool:
    import typing

    origin = typing.get_origin(tp)
    if origin is typing.Union:
        return all(_only_skipped(a, skip) for a in typing.get_args(tp))
    if origin is not None:
        import collections.abc

        if origin in (collections.abc.Sequence, list, tuple):
            args = [a for a in typing.get_args(tp) if a is not Ellipsis]
            return bool(args) and all(_only_skipped(a, skip) for a in args)
        return False
    if tp is type(None):
        return True
    if not isinstance(tp, type):
        return False  # a forward reference or a type variable: not understood
    if not issubclass(tp, cst.CSTNode):
        from libcst._maybe_sentinel import MaybeSentinel

        return tp is MaybeSentinel
    todo, seen = [tp], set()
    while todo:  # the class and every subclass that exists must be skipped or abstract
        c = todo.pop()
        if c in seen:
            continue
        seen.add(c)
        mod = sys.modules.get(c.__module__)
        live = getattr(mod, c.__name__, c) if mod is not None else c
        if live is not c and isinstance(live, type):
            continue  # the class LibCST's `add_slots` replaced (no node is of it; it lingers until collected)
        if c not in skip and not getattr(c, "__abstractmethods__", None):
            return False
        todo.extend(c.__subclasses__())
    return True


def _kept_fields(t: type, fields: tuple[str, ...], skip: frozenset) -> tuple[str, ...]:
    """The fields of node class `t` that can hold a node not in `skip` (see traverse)."""
    declared = getattr(t, "__dataclass_fields__", None) or {}
    out = []
    for f in fields:
        d = declared.get(f)
        try:
            drop = d is not None and _only_skipped(d.type, skip)
        except Exception:  # noqa: BLE001 - an annotation not understood: the field is read
            drop = False
        if not drop:
            out.append(f)
    return tuple(out)


def _write_table() -> None:  # pragma: no cover - a developer's tool
    """Write gpulint/_cst_fields.py from the installed LibCST's source."""
    import importlib.metadata

    table = fields_from_source()
    version = importlib.metadata.version("libcst")
    lines = [
        '"""The child fields of each LibCST node class, in the order its `_visit_and_replace_children`',
        f"visits them (generated from LibCST {version} by `python -m gpulint.cstwalk`; tests/test_cstwalk.py",
        'checks it against the installed LibCST). Used by gpulint/cstwalk.py."""',
        "",
        "FIELDS: dict[str, tuple[str, ...]] = {",
    ]
    lines += [f"    {name!r}: {table[name]!r}," for name in sorted(table)]
    lines.append("}")
    path = os.path.join(os.path.dirname(__file__), "_cst_fields.py")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":  # pragma: no cover
    _write_table()


def fast_node_identity() -> None:
    """LibCST nodes are equal only to themselves and hash by identity: `CSTNode.__eq__` is
    `self is other` and `CSTNode.__hash__` is `id(self)`, written in Python and copied into every
    node class. The model and the flow engine key dictionaries and sets by nodes (millions of
    lookups per run), and each lookup called that Python `__hash__`. `object`'s own slots mean the
    same (identity), in C: every node class whose methods are LibCST's gets them. A class that
    defines its own is left alone.

    The node classes are ABCs (`CSTNode`'s metaclass is `abc.ABCMeta`): `isinstance(n, cst.If)`
    for a node that is not exactly an `If` calls ABCMeta's `__instancecheck__`, a Python function,
    and the model, the flow engine and the rules make millions of such tests (`enclosing`,
    `_nested_in`: ~4 % of a check run's CPU). No node class has virtual subclasses (`register`)
    or a `__subclasshook__`, so the ABC answer is the class hierarchy's: the node classes get a
    metaclass whose `__instancecheck__`/`__subclasscheck__` are `type`'s own, in C (see
    `_FastNodeMeta`). A class with a registry, a hook or another metaclass is left as it is."""
    try:
        from libcst._nodes.base import CSTNode
    except ImportError:  # pragma: no cover - another LibCST layout: nothing to do
        return
    own_hash, own_eq = CSTNode.__dict__.get("__hash__"), CSTNode.__dict__.get("__eq__")
    if own_hash is None or own_eq is None:
        return
    meta = _fast_node_meta()
    todo = [CSTNode]
    seen = set()
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        todo.extend(cls.__subclasses__())
        if cls.__dict__.get("__hash__") is own_hash:
            cls.__hash__ = object.__hash__
        if cls.__dict__.get("__eq__") is own_eq:
            cls.__eq__ = object.__eq__
        if meta is not None and _plain_abc(cls):
            try:
                cls.__class__ = meta
            except TypeError:  # pragma: no cover - a layout the assignment refuses: leave it
                pass


_FAST_META: list = []


def _fast_node_meta():
    """`abc.ABCMeta` with `type`'s own (C) instance and subclass checks (see fast_node_identity);
    None when `type` has no such methods to borrow."""
    if not _FAST_META:
        import abc

        inst, sub = type.__dict__.get("__instancecheck__"), type.__dict__.get("__subclasscheck__")
        if inst is None or sub is None:  # pragma: no cover - another Python
            _FAST_META.append(None)
        else:
            _FAST_META.append(
                type("_FastNodeMeta", (abc.ABCMeta,), {"__module__": __name__, "__instancecheck__": inst, "__subclasscheck__": sub})
            )
    return _FAST_META[0]


def _plain_abc(cls: type) -> bool:
    """An ABC whose isinstance/issubclass answers are its class hierarchy's: metaclass exactly
    ABCMeta, no virtual subclass registered, no `__subclasshook__` of its own or inherited."""
    import abc

    if type(cls) is not abc.ABCMeta:
        return False
    if any("__subclasshook__" in c.__dict__ for c in cls.__mro__ if c is not object):
        return False
    try:
        registry = abc._get_dump(cls)[0]  # type: ignore[attr-defined]
    except (AttributeError, TypeError):  # pragma: no cover - the pure-Python abc
        return False
    return not registry
