"""Plain tensor attributes a module caches lazily, built while the module is still on the host.

A module class of the file keeps a tensor as a plain attribute (not a parameter, not a buffer)
that one of its methods computes on first use (`if self.mask is None: self.mask = ...` in
`forward`, or a helper `forward` calls), or that its `train()` override computes when the module
is put in eval mode (`self.ab = self.attention_biases[:, idx]`). The script runs the module once
on the host (a shape check, a sanity forward, `model.eval()` in a builder), then moves it with
`model.to(device)`: `Module.to` moves parameters and buffers, never plain attributes, so the
cache stays on the host and meets the accelerator tensors of every later call
(darts#3052, DCLS's `ConstructKernel`, MobileSAM's TinyViT attention: E61-1).

The analysis is narrow on purpose (precision first):
- the attribute is `None` (or absent) in `__init__` and written elsewhere only by its cache
  guard: a test made of `self.X is None` / `not hasattr(self, "X")` parts (a guard that also
  compares shapes or devices rebuilds the cache and is not this bug), or in `train()`;
- the class registers no buffers dynamically and overrides none of `_apply`, `to`, `cuda`;
- the module (or a module of the file that holds it) is called, or put in eval mode for a
  `train()` cache, while the flow engine knows it is on the host, then moved in place to an
  accelerator, and called again after that.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from gpulint.analysis.modules import ModuleFacts, self_attr

_OVERRIDES = frozenset({"_apply", "to", "cuda", "_load_from_state_dict"})


@dataclass(frozen=True)
class CachedBeforeMove:
    use: cst.CSTNode  # the first operation of a method `forward` reaches that reads `self.X`
    read: cst.Attribute  # that read
    attr: str
    cls: str
    built: cst.CSTNode  # the call (or `.eval()`) that builds the cache on the host
    move: cst.Call  # the in-place move that leaves it there
    how: str  # "lazy" (built on first use) or "eval" (built by a `train()` override)


def _guard_parts(test) -> set[str] | None:
    """The attributes a cache guard tests, when it is made only of `self.X is None` and
    `not hasattr(self, "X")` joined by `or`; None otherwise."""
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.Or:
        left, right = _guard_parts(test.left), _guard_parts(test.right)
        return None if left is None or right is None else left | right
    if type(test) is cst.Comparison and len(test.comparisons) == 1:
        c = test.comparisons[0]
        a = self_attr(test.left)
        if a is not None and type(c.operator) is cst.Is and type(c.comparator) is cst.Name and c.comparator.value == "None":
            return {a}
        return None
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not and type(test.expression) is cst.Call:
        call = test.expression
        if (type(call.func) is cst.Name and call.func.value == "hasattr" and len(call.args) == 2
                and type(call.args[0].value) is cst.Name and call.args[0].value.value == "self"
                and type(call.args[1].value) is cst.SimpleString):
            return {call.args[1].value.evaluated_value}
    return None


class CacheFacts:
    def __init__(self, model) -> None:
        self.m = model
        self.found: list[CachedBeforeMove] = []
        try:
            self._build()
        except RecursionError:  # pragma: no cover - pathological nesting: say nothing
            self.found = []

    # candidates ---------------------------------------------------------------------------------
    def _candidates(self, facts: ModuleFacts) -> dict[str, dict[str, str]]:
        """class name -> {attr: "lazy" | "eval"}."""
        m = self.m
        out: dict[str, dict[str, str]] = {}
        for mc in facts.classes:
            if mc.registers_dynamically or _OVERRIDES & set(mc.methods) or mc.forward is None:
                continue
            reach = set(mc.reachable)
            train = mc.methods.get("train")
            mine: dict[str, str] = {}
            for attr in set(mc.forward_reads):
                if attr in mc.buffers or attr in mc.parameters or attr in mc.submodules:
                    continue
                binds = m.bindings.get((mc.node, "self." + attr), [])
                how = None
                for b in binds:
                    fn = m.enclosing(b.node, cst.FunctionDef)
                    if fn is None or b.how != "assign":
                        how = None
                        break
                    if fn is mc.init:
                        if not (type(b.value) is cst.Name and b.value.value == "None"):
                            how = None
                            break
                        continue
                    if fn is train and train is not None:
                        kind = "eval"
                    elif fn in reach:
                        guard = m.enclosing(b.node, cst.If)
                        parts = _guard_parts(guard.test) if guard is not None and m.contains(guard.body, b.node) else None
                        if not parts or attr not in parts:
                            how = None
                            break
                        kind = "lazy"
                    else:
                        how = None
                        break
                    if m.value_of(b.value).kind != "tensor" or (how is not None and how != kind):
                        how = None
                        break
                    how = kind
                if how is not None:
                    mine[attr] = how
            if mine:
                out[mc.name] = mine
        return out

    def _holders(self, name: str, depth: int = 0) -> set[str]:
        """`name` and the module classes of the file whose `__init__` keeps an instance of it."""
        out = {name}
        if depth > 3:
            return out
        m = self.m
        info = m.classes.get(name)
        if info is None:
            return out
        for site in m.construction_sites(info.node):
            fn = m.enclosing(site, cst.FunctionDef)
            owner = m.class_of(fn) if fn is not None else None
            if fn is not None and fn.name.value == "__init__" and owner is not None:
                out |= self._holders(owner.name.value, depth + 1)
        return out

    # the host use, the move, the later call ------------------------------------------------------
    def _build(self) -> None:
        m = self.m
        cands = self._candidates(m.facts(ModuleFacts))
        if not cands:
            return
        for cls, attrs in cands.items():
            holders = self._holders(cls)
            for attr, how in sorted(attrs.items()):
                hit = self._built_then_moved(holders, how)
                if hit is None:
                    continue
                use = self._use(cls, attr)
                if use is not None:
                    self.found.append(CachedBeforeMove(use[1], use[0], attr, cls, hit[0], hit[1], how))

    def _module(self, expr):
        v = self.m.value_of(expr)
        return v if v.kind == "module" and v.cls is not None and v.origin is not None else None

    def _built_then_moved(self, holders: set[str], how: str):
        m = self.m
        built = []  # (node, origin) run while the instance is on the host
        for call in m.calls:
            f = call.func
            if how == "lazy":
                v = self._module(f)
            elif type(f) is cst.Attribute and (f.attr.value == "eval" or (
                    f.attr.value == "train" and call.args and type(call.args[0].value) is cst.Name
                    and call.args[0].value.value == "False")):
                v = self._module(f.value)
            else:
                continue
            if v is not None and v.cls in holders and v.dev is not None and v.dev.where == "host":
                built.append((call, v.origin))
        if not built:
            return None
        for node, recv, _ in m.method_calls("to", "cuda"):
            parent = m.parent(node)
            if not (type(parent) is cst.Expr or (
                    type(parent) is cst.Assign and len(parent.targets) == 1
                    and m.module.code_for_node(parent.targets[0].target) == m.module.code_for_node(recv))):
                continue  # the instance itself moved: `model.to(device)`, `model = model.to(device)`
            after = m.value_of(node)
            if not (after.kind == "module" and after.dev is not None and after.dev.where == "acc"):
                continue
            rv = self._module(recv)
            if rv is None:
                continue
            for b, origin in built:
                if rv.origin is origin and self._runs_before(b, node) and self._called_after(origin, node):
                    return b, node
        return None

    def _runs_before(self, a, b) -> bool:
        """`a` runs before `b`: in the same function, earlier; or in a function of the file that
        `b`'s function calls earlier (a builder that returns the model, `model.eval()` inside)."""
        m = self.m
        sa, sb = m.scope_of(a), m.scope_of(b)
        if sa is sb:
            return m.precedes(a, b)
        if type(sa) is cst.FunctionDef:
            return any(m.scope_of(c) is sb and m.precedes(c, b) for c in m.call_sites(sa))
        return False

    def _called_after(self, origin, move) -> bool:
        m = self.m
        for call in m.calls:
            v = self._module(call.func)
            if v is None or v.origin is not origin or v.dev is None or v.dev.where != "acc":
                continue
            if m.scope_of(call) is not m.scope_of(move) or m.precedes(move, call):
                return True
        return False

    def _use(self, cls: str, attr: str):
        """(read, operation) for the first read of `self.<attr>` in the class's methods `forward`
        reaches that is an operand (of an arithmetic operation or a call), not a test."""
        m = self.m
        mc = m.facts(ModuleFacts).by_name.get(cls)
        if mc is None:
            return None
        best = None
        for fn in mc.reachable:
            for node in m.walk(fn.body, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                if self_attr(node) != attr:
                    continue
                op = self._operation(node)
                if op is not None and (best is None or m.precedes(op, best[1])):
                    best = (node, op)
        return best

    def _operation(self, node):
        """The arithmetic operation or call `node` is an operand of (through an argument or a
        branch of a conditional expression); None for a test, a target or a plain statement."""
        m = self.m
        cur = node
        for anc in m.ancestors(node):
            t = type(anc)
            if t in (cst.If, cst.While, cst.Comparison, cst.Assign, cst.AugAssign, cst.AnnAssign):
                return None  # a test, a target, or the whole value of an assignment (an alias)
            if t is cst.IfExp and anc.test is cur:
                return None
            if t is cst.BinaryOperation:
                return anc
            if t is cst.Call:
                return anc if cur is not anc.func else None
            if isinstance(anc, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                return None
            cur = anc
        return None


def cached_before_move(m) -> list[CachedBeforeMove]:
    return m.facts(CacheFacts).found
