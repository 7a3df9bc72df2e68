"""Where the batches of DataLoader loops go: which tensors reach which module calls, moved or not.

Used by GL101 (model moved, inputs not) and GL112 (inputs moved, model not).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from gpulint.model import Kind, Move, ScriptModel

LOSS_FUNCTIONS = frozenset(
    "cross_entropy nll_loss mse_loss l1_loss binary_cross_entropy binary_cross_entropy_with_logits "
    "smooth_l1_loss huber_loss kl_div cosine_embedding_loss margin_ranking_loss".split()
)


@dataclass
class Use:
    """A batch-derived value passed to a module (or loss) call inside a loader loop."""

    call: cst.Call  # the module / loss call
    arg: cst.BaseExpression  # the argument expression (Name, Subscript, or the `**batch` value)
    origin: str  # the loop-target name the value comes from
    move: Move | None  # the move on the way (inline `.to()` or a re-binding), None when unmoved
    starred: bool = False

    @property
    def moved(self) -> bool:
        return self.move is not None


@dataclass
class LoaderLoop:
    """Where batches come from: a `for` loop over a DataLoader, or (with `source` set) a statement
    that binds one batch outside a loop: `x, y = next(iter(loader))`,
    `inputs = tokenizer(..., return_tensors="pt")`. Uses are then the calls after it in its scope."""

    loop: cst.For | cst.SimpleStatementLine
    loader: cst.BaseExpression
    source: str | None = None  # None for loops; "next" or "tokenizer"
    targets: dict[str, cst.Name] = field(default_factory=dict)  # loop-target names
    uses: list[Use] = field(default_factory=list)
    module_calls: list[cst.Call] = field(default_factory=list)  # calls of Module-kind callees
    origin_moves: dict[str, list[Move]] = field(default_factory=dict)  # moves re-binding a target
    origin_touched: set[str] = field(default_factory=set)  # re-bound or moved in any other way


def _names_in_target(node: cst.BaseExpression) -> list[cst.Name]:
    if isinstance(node, cst.Name):
        return [node]
    if isinstance(node, (cst.Tuple, cst.List)):
        out = []
        for el in node.elements:
            out.extend(_names_in_target(el.value))
        return out
    return []


class PlacementFacts:
    def __init__(self, model: ScriptModel) -> None:
        self.m = model
        self.loops: list[LoaderLoop] = []
        for loop in model.fors:
            loader = model.loader_of_loop(loop)
            if loader is None or self._loader_places_batches(loader):
                continue
            self.loops.append(self._analyse(loop, loader))
        for stmt, value, source in self._single_batches():
            self.loops.append(self._analyse(stmt, value, source))

    def _single_batches(self):
        """Statements binding one batch outside a loop (see LoaderLoop)."""
        m = self.m
        for bindings in m.bindings.values():
            for b in bindings:
                if b.how not in ("assign", "unpack") or not isinstance(b.value, cst.Call):
                    continue
                stmt = m.statement_of(b.node)
                if (
                    not isinstance(stmt, cst.SimpleStatementLine)
                    or len(stmt.body) != 1
                    or not isinstance(stmt.body[0], cst.Assign)
                    or len(stmt.body[0].targets) != 1
                ):
                    continue
                call = b.value
                if m.enclosing(stmt, cst.For, cst.While) is not None:
                    continue  # inside a loop: the loop analysis (or nothing) covers it
                if any(
                    a.keyword is not None and a.keyword.value == "return_tensors"
                    and isinstance(a.value, cst.SimpleString) and a.value.evaluated_value == "pt"
                    for a in call.args
                ):
                    yield stmt, call, "tokenizer"
                elif (
                    isinstance(call.func, cst.Name) and call.func.value == "next"
                    and m.kind_of(call) is Kind.BATCH
                ):
                    inner = call.args[0].value if call.args else None
                    if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Name) and inner.func.value == "iter" and inner.args:
                        inner = inner.args[0].value
                    if not self._loader_places_batches(inner):
                        yield stmt, call, "next"

    # a DataLoader whose collate_fn / dataset may already put batches on a device: unknown
    def _loader_places_batches(self, loader: cst.BaseExpression, depth: int = 0) -> bool:
        m = self.m
        ctor = None
        if isinstance(loader, cst.Call):
            ctor = loader
        else:
            for b in m.bindings_of(loader):
                if b.how == "param":
                    args = m.param_arguments(b)
                    if not args or depth > 3:
                        return True
                    return any(self._loader_places_batches(a, depth + 1) for a in args)
                if isinstance(b.value, cst.Call):
                    ctor = b.value
        if ctor is None:
            return True  # a parameter typed from its call sites, etc.: we cannot see its options
        for a in ctor.args:
            if a.keyword is not None and a.keyword.value == "collate_fn":
                return True
        ds = ctor.args[0].value if ctor.args and ctor.args[0].keyword is None else None
        for a in ctor.args:
            if a.keyword is not None and a.keyword.value == "dataset":
                ds = a.value
        if ds is not None:
            cls_name = None
            if isinstance(ds, cst.Call) and isinstance(ds.func, cst.Name):
                cls_name = ds.func.value
            elif isinstance(ds, cst.Name):
                for b in m.bindings_of(ds):
                    if isinstance(b.value, cst.Call) and isinstance(b.value.func, cst.Name):
                        cls_name = b.value.func.value
            info = m.classes.get(cls_name) if cls_name else None
            if info is not None:
                for call, _recv, _meth in m.method_calls("to", "cuda"):
                    if m.enclosing(call, cst.ClassDef) is info.node:
                        return True
        return False

    def _analyse(self, loop, loader: cst.BaseExpression, source: str | None = None) -> LoaderLoop:
        m = self.m
        ll = LoaderLoop(loop, loader, source)
        if source is None:
            target = loop.target
        else:
            target = loop.body[0].targets[0].target
        seen = set()
        for n in _names_in_target(target):
            if n.value in seen:
                continue  # `x, x = ...`
            seen.add(n.value)
            ll.targets[n.value] = n
        scope = m.scope_of(loop)
        for name, node in ll.targets.items():
            for b in m.bindings.get((scope, name), []):
                if b.node is node:
                    continue
                ll.origin_touched.add(name)
                if b.value is not None and isinstance(b.value, cst.BaseExpression):
                    moves = [mv for mv in m.moves_in_chain(b.value) if not mv.to_cpu]
                    if not moves:
                        moves = _moves_inside(m, b.value)
                    if moves:
                        ll.origin_moves.setdefault(name, []).extend(moves)
        # `x.to(d)` statements whose result is dropped: GL104's business, not ours
        for call, recv, _meth in m.method_calls("to", "cuda"):
            if (
                isinstance(recv, cst.Name)
                and recv.value in ll.targets
                and isinstance(m.parent(call), cst.Expr)
                and _inside(m, call, ll)
            ):
                ll.origin_touched.add(recv.value)
        for call in m.calls:
            if not _inside(m, call, ll):
                continue
            if not self._is_module_or_loss_call(call):
                continue
            ll.module_calls.append(call)
            for arg in call.args:
                origin = self._origin(arg.value, ll, loop)
                if origin is None:
                    continue
                ll.uses.append(Use(call, arg.value, origin[0], origin[1], arg.star == "**"))
        return ll

    def _is_module_or_loss_call(self, call: cst.Call) -> bool:
        m = self.m
        if m.kind_of(call.func) is Kind.MODULE:
            return True
        q = m.qualname(call.func)
        return bool(q and q.startswith("torch.nn.functional.") and q.rsplit(".", 1)[-1] in LOSS_FUNCTIONS)

    def _origin(self, e: cst.BaseExpression, ll: LoaderLoop, loop: cst.For, depth: int = 0):
        """(loop-target name, moved?) when `e` carries a batch value; None when it does not or we
        cannot tell."""
        m = self.m
        if depth > 4:
            return None
        if isinstance(e, cst.Call):
            mv = m.move_of_call(e)
            if mv is not None and isinstance(e.func, cst.Attribute):
                inner = self._origin(e.func.value, ll, loop, depth + 1)
                return (inner[0], mv) if inner else None
            return None
        if isinstance(e, cst.Subscript) or (isinstance(e, cst.Attribute) and ll.source == "tokenizer"):
            inner = self._origin(e.value, ll, loop, depth + 1)
            return inner
        if isinstance(e, cst.Name):
            if e.value in ll.targets:
                bs = m.bindings_of(e)
                if not any(b.node is ll.targets[e.value] for b in bs):
                    return None
                if e.value in ll.origin_moves:
                    return (e.value, ll.origin_moves[e.value][0])
                if e.value in ll.origin_touched:
                    return None
                return (e.value, None)
            bs = m.bindings_of(e)
            if len(bs) != 1:
                return None
            b = bs[0]
            if b.how not in ("assign", "unpack") or not _inside(m, b.node, ll):
                return None
            if b.how == "unpack":
                if isinstance(b.value, cst.Name):
                    inner = self._origin(b.value, ll, loop, depth + 1)
                    return inner
                return None
            return self._origin(b.value, ll, loop, depth + 1)
        return None

    # questions ---------------------------------------------------------------------------------
    def model_moves(self, ll: LoaderLoop) -> list[tuple[cst.Call, list[Move]]]:
        """Module calls in the loop whose callee is known to be on a non-CPU device."""
        out = []
        for call in ll.module_calls:
            if self.m.kind_of(call.func) is not Kind.MODULE or self.m.is_stateless_module(call.func):
                continue
            moves = self.m.device_moves(call.func)
            if moves:
                out.append((call, moves))
        return out


def _inside(m: ScriptModel, node: cst.CSTNode, ll: "LoaderLoop | cst.For") -> bool:
    """In the loop's body; for a single batch, after its statement in the same scope."""
    if isinstance(ll, LoaderLoop):
        if ll.source is not None:
            stmt = ll.loop
            return m.scope_of(node) is m.scope_of(stmt) and m.precedes(stmt, node) and not _within(m, node, stmt)
        loop = ll.loop
    else:
        loop = ll
    for anc in m.ancestors(node):
        if anc is loop.body:
            return True
        if anc is loop:
            return False
    return False


def _within(m: ScriptModel, node: cst.CSTNode, container: cst.CSTNode) -> bool:
    return any(anc is container for anc in m.ancestors(node))


def _moves_inside(m: ScriptModel, value: cst.CSTNode) -> list[Move]:
    """Moves anywhere in an expression: `{k: v.to(d) for ...}`, `tuple(t.to(d) for t in b)`."""
    found: list[Move] = []

    class V(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            mv = m.move_of_call(node)
            if mv is not None and not mv.to_cpu:
                found.append(mv)

    value.visit(V())
    return found
