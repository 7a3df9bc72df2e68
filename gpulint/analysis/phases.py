"""A shared train/val phase loop: `for phase in ("train", "val"):` whose body trains only under a
training-phase test (GL403 and GL404 read it; rules47, G47-1)."""

from __future__ import annotations

import libcst as cst

_TRAIN_PHASES = frozenset({"train", "training"})
_EVAL_PHASES = frozenset({"val", "valid", "validation", "eval", "evaluation", "test", "testing", "dev"})


class PhaseLoop:
    """`for P in <the phase names>:` whose names are all known, at least one of them a training
    phase ("train") and one an evaluation phase ("val", "valid", "test", ...): a tuple or list
    display (also `["train", "valid"] + (["test"] if a else [])`), a name bound once to one, the
    keys of a dict display or comprehension over one (`dataloaders = {x: ... for x in ["train",
    "val"]}`, `for phase in dataloaders:`, `.keys()`, `for phase, loader in loaders.items():`)."""

    def __init__(self, node: cst.For, var: str, phases: frozenset, literal: cst.SimpleString | None):
        self.node = node
        self.var = var
        self.phases = phases
        self.literal = literal  # the train phase's string as the file writes it (for a message or fix)
        self.aliases: dict[str, cst.BaseExpression] = {}  # `is_train = phase == "train"` in the body

    @property
    def train(self) -> frozenset:
        return self.phases & _TRAIN_PHASES

    @property
    def evals(self) -> frozenset:
        return self.phases & _EVAL_PHASES


def phase_loops(m) -> list:
    found = []
    for node in m.fors:
        if not isinstance(node, cst.For) or node.asynchronous is not None:
            continue
        it, target = node.iter, node.target
        if isinstance(target, cst.Name):
            var, strings = target.value, _phase_strings(m, it, 0)
        elif (isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2
              and isinstance(target.elements[0].value, cst.Name) and isinstance(it, cst.Call)
              and isinstance(it.func, cst.Attribute) and it.func.attr.value == "items" and not it.args):
            var, strings = target.elements[0].value.value, _dict_keys(m, it.func.value, 0)
        else:
            continue
        if not strings:
            continue
        phases = frozenset(s.evaluated_value for s in strings)
        if not phases <= (_TRAIN_PHASES | _EVAL_PHASES) or not (phases & _TRAIN_PHASES) or not (phases & _EVAL_PHASES):
            continue
        train = [s for s in strings if s.evaluated_value in _TRAIN_PHASES]
        loop = PhaseLoop(node, var, phases, train[0] if len({s.evaluated_value for s in train}) == 1 else None)
        _collect_aliases(m, loop)
        found.append(loop)
    return found


def _strings(expr) -> list | None:
    if isinstance(expr, (cst.List, cst.Tuple)):
        out = []
        for el in expr.elements:
            if not isinstance(el, cst.Element) or not isinstance(el.value, cst.SimpleString):
                return None
            if not isinstance(el.value.evaluated_value, str):
                return None
            out.append(el.value)
        return out
    return None


def _phase_strings(m, expr, depth: int) -> list | None:
    """The string elements `expr` (the iterable of a `for`) may hold, or None when unknown."""
    if depth > 3:
        return None
    found = _strings(expr)
    if found is not None:
        return found
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        left, right = _phase_strings(m, expr.left, depth + 1), _phase_strings(m, expr.right, depth + 1)
        return None if left is None or right is None else left + right
    if isinstance(expr, cst.IfExp):  # `(["test"] if args.test else [])`: either arm
        body, orelse = _phase_strings(m, expr.body, depth + 1), _phase_strings(m, expr.orelse, depth + 1)
        return None if body is None or orelse is None else body + orelse
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "keys" and not expr.args:
        return _dict_keys(m, expr.func.value, depth + 1)
    if isinstance(expr, cst.Name):
        bindings = m.bindings_of(expr)
        if len(bindings) != 1 or bindings[0].how != "assign" or bindings[0].value is None:
            return None
        value = bindings[0].value
        if isinstance(value, (cst.Dict, cst.DictComp)):
            return _dict_keys(m, expr, depth + 1)
        if _stored_into(m, expr):
            return None  # `phases.append(...)`, `phases[i] = ...`: not the display any more
        return _phase_strings(m, value, depth + 1)
    return None


def _dict_keys(m, expr, depth: int) -> list | None:
    """The string keys of a dict display (or a comprehension over a list of strings) a name is
    bound to once, with no other key stored into it; None when unknown."""
    if not isinstance(expr, cst.Name) or depth > 3:
        return None
    bindings = m.bindings_of(expr)
    if len(bindings) != 1 or bindings[0].how != "assign":
        return None
    value = bindings[0].value
    keys = []
    if isinstance(value, cst.Dict):
        for el in value.elements:
            if not isinstance(el, cst.DictElement) or not isinstance(el.key, cst.SimpleString):
                return None
            if not isinstance(el.key.evaluated_value, str):
                return None
            keys.append(el.key)
    elif (isinstance(value, cst.DictComp) and isinstance(value.key, cst.Name)
          and isinstance(value.for_in.target, cst.Name) and value.for_in.target.value == value.key.value
          and value.for_in.inner_for_in is None and not value.for_in.ifs):
        found = _phase_strings(m, value.for_in.iter, depth + 1)
        if found is None:
            return None
        keys = list(found)
    else:
        return None
    if _stored_into(m, expr, keys):
        return None
    return keys


def _stored_into(m, name: cst.Name, keys: list | None = None) -> bool:
    """Code of the name's scope stores into it: `name[k] = v` with k not one of `keys`, or a
    mutating method (`append`, `update`, `setdefault`, ...)."""
    known = {k.evaluated_value for k in keys} if keys else set()
    scope = m.scope_of(m.bindings_of(name)[0].node)
    for n in m.walk(scope):
        if isinstance(n, cst.Subscript) and isinstance(n.value, cst.Name) and n.value.value == name.value:
            parent = m.parent(n)
            if isinstance(parent, (cst.AssignTarget, cst.AugAssign, cst.Del)):
                sl = n.slice[0].slice if len(n.slice) == 1 else None
                key = sl.value if isinstance(sl, cst.Index) else None
                if not (isinstance(key, cst.SimpleString) and key.evaluated_value in known):
                    return True
        elif (isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) and n.value.value == name.value
              and n.attr.value in ("append", "extend", "insert", "update", "setdefault", "__setitem__", "pop", "remove")):
            return True
    return False


def _collect_aliases(m, loop: PhaseLoop) -> None:
    """`is_train = phase == "train"` (a name bound once, in the loop body, to a phase test)."""
    body = loop.node.body
    if not isinstance(body, cst.IndentedBlock):
        return
    for st in body.body:
        if not isinstance(st, cst.SimpleStatementLine):
            continue
        for small in st.body:
            if (isinstance(small, cst.Assign) and len(small.targets) == 1
                    and isinstance(small.targets[0].target, cst.Name)
                    and _test_phases(loop, small.value) is not None):
                name = small.targets[0].target
                if len(m.bindings_of(name)) == 1:
                    loop.aliases[name.value] = small.value


def _test_phases(loop: PhaseLoop, test, depth: int = 0):
    """(phases where `test` holds, phases where it fails) for a test on the phase variable, or None
    when `test` does not depend on it alone. An `and`/`or` with other conditions narrows: a
    branch that may not run in a phase is kept in it."""
    every = loop.phases
    if depth > 4:
        return None
    if isinstance(test, cst.Name) and test.value in loop.aliases:
        return _test_phases(loop, loop.aliases[test.value], depth + 1)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _test_phases(loop, test.expression, depth + 1)
        return None if inner is None else (inner[1], inner[0])
    if isinstance(test, cst.BooleanOperation):
        left, right = _test_phases(loop, test.left, depth + 1), _test_phases(loop, test.right, depth + 1)
        if left is None and right is None:
            return None
        if isinstance(test.operator, cst.And):
            # holds only where both may hold; fails wherever either may fail
            lh = left[0] if left else every
            rh = right[0] if right else every
            lf = left[1] if left else every
            rf = right[1] if right else every
            return (lh & rh, lf | rf)
        lh = left[0] if left else every
        rh = right[0] if right else every
        lf = left[1] if left else every
        rf = right[1] if right else every
        return (lh | rh, lf & rf)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comp = test.comparisons[0]
        left, right = test.left, comp.comparator
        if isinstance(left, (cst.SimpleString, cst.List, cst.Tuple, cst.Set)):
            if not isinstance(comp.operator, (cst.Equal, cst.NotEqual)):
                return None
            left, right = right, left
        if not (isinstance(left, cst.Name) and left.value == loop.var):
            return None
        if isinstance(comp.operator, (cst.Equal, cst.NotEqual, cst.Is, cst.IsNot)) and isinstance(right, cst.SimpleString):
            holds = frozenset({right.evaluated_value}) & every
        elif isinstance(comp.operator, (cst.In, cst.NotIn)) and isinstance(right, (cst.List, cst.Tuple, cst.Set)):
            vals = set()
            for el in right.elements:
                if not isinstance(el, cst.Element) or not isinstance(el.value, cst.SimpleString):
                    return None
                vals.add(el.value.evaluated_value)
            holds = frozenset(vals) & every
        else:
            return None
        fails = every - holds
        if isinstance(comp.operator, (cst.NotEqual, cst.IsNot, cst.NotIn)):
            holds, fails = fails, holds
        return (holds, fails)
    return None


def phases_at(m, loop: PhaseLoop, node) -> frozenset | None:
    """The phases in which `node` (inside the loop's body) may run: narrowed by the `if`s on the
    phase variable around it. None when it sits in a nested definition (runs who knows when)."""
    cur = loop.phases
    child = node
    for anc in m.ancestors(node):
        if anc is loop.node:
            return cur
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return None
        if isinstance(anc, (cst.If, cst.IfExp)) and child is not anc.test:
            split = _test_phases(loop, anc.test)
            if split is not None:
                cur = cur & (split[0] if child is anc.body else split[1])
        child = anc
    return None


def mentions_phase(m, loop: PhaseLoop, node) -> bool:
    names = {loop.var, *loop.aliases}
    return any(isinstance(n, cst.Name) and n.value in names for n in (node, *m.walk(node)))


def trains_only_in_train_phase(m, loop: PhaseLoop, info) -> bool:
    """Every backward pass and optimizer step of the phase loop (its own, and the calls of the
    file's functions that run them) sits under a test that keeps it to the training phase."""
    sites = [*info.backward, *info.backward_via, *(s.call for s in info.steps), *info.steps_via, *info.step_helpers]
    if not sites:
        return False
    for c in sites:
        at = phases_at(m, loop, c)
        if at is None or not at or not at <= loop.train:
            return False
    return True
