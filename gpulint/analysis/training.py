"""Training-loop facts shared by the GL4/GL5/GL6 rules.

    facts = ctx.model.facts(TrainingFacts)

What it knows about a script, computed once per file from the ScriptModel:

- **loops** (`for` and `while`) and what their bodies do, nested blocks included: `.backward()`
  calls, optimizer steps (`O.step()`, `S.step(O)`), gradient clearing (`zero_grad`, `p.grad = None`,
  helpers of the file that do it), gradient use (`backward`, `torch.autograd.grad`,
  `requires_grad_`, `enable_grad`, `.grad`);
- **training loops** (a body that calls `.backward()` and steps an optimizer), **step loops** (the
  innermost training loops), **epoch loops** (loops around a training loop);
- **no-grad regions**: `with torch.no_grad()/inference_mode()/set_grad_enabled(False)`, the
  matching decorators, a `torch.set_grad_enabled(False)` statement, and functions only called from
  such regions;
- **evaluation contexts**: functions named like `validate`/`evaluate`/`test`, and the train/eval
  mode a statement runs in (walking back to the nearest `M.eval()`, `M.train()` or training loop);
- which values are models and optimizers, also through function parameters whose call sites in the
  file pass one.

Everything is a conservative "known" answer: where the file does not show it, the answer is
`None`/False and rules stay silent. Nothing here imports torch.
"""

from __future__ import annotations

import bisect
import re
from itertools import compress
from dataclasses import dataclass, field
from typing import Iterable, Iterator

import libcst as cst

from gpulint.model import dotted  # noqa: F401  (re-exported for the rules)

from gpulint.model import walk as _model_walk

from gpulint.model import WRAPPER_CLASSES, Kind, ScriptModel

GRAD_OFF = frozenset(
    {
        "torch.no_grad",
        "torch.inference_mode",
        "torch.autograd.no_grad",
        "torch.autograd.grad_mode.no_grad",
        "torch.autograd.inference_mode",
        "torch.autograd.grad_mode.inference_mode",
    }
)
SET_GRAD = frozenset(
    {"torch.set_grad_enabled", "torch.autograd.set_grad_enabled", "torch.autograd.grad_mode.set_grad_enabled"}
)
ENABLE_GRAD = frozenset({"torch.enable_grad", "torch.autograd.enable_grad", "torch.autograd.grad_mode.enable_grad"})
GRAD_FUNCTIONS = frozenset(
    {
        "torch.autograd.grad",
        "torch.autograd.backward",
        "torch.autograd.functional.jacobian",
        "torch.autograd.functional.hessian",
        "torch.autograd.functional.vjp",
        "torch.autograd.functional.jvp",
        "torch.func.grad",
        "torch.func.vjp",
        "torch.func.jacrev",
        "torch.func.grad_and_value",
    }
)
# frameworks that own the training/evaluation loop
LOOP_FRAMEWORKS = frozenset({"lightning", "hf-trainer", "ignite", "composer"})

EVAL_FUNCTION = re.compile(
    r"(?:^|_)(?:val|valid|validate|validation|eval|evaluate|evaluation|test|testing|predict|inference)(?:_|$)",
    re.IGNORECASE,
)
OPTIMIZER_NAME = re.compile(r"(?:^|_)(?:opt|optim|optimizer|optimiser)s?(?:_|$)|optimi[sz]er", re.IGNORECASE)
SCALER_NAME = re.compile(r"scaler", re.IGNORECASE)
LOSS_NAME = re.compile(r"loss|criterion", re.IGNORECASE)
MODE_SENSITIVE = re.compile(
    r"Dropout|BatchNorm|dropout|DropPath|drop_path|\.training\b|SyncBatchNorm|LayerDrop|Transformer|RReLU"
)
MODULE_ARGS_ONLY = re.compile(r"^[\s\w.,()=+\-*/\[\]]*$")

_LOOPS = (cst.For, cst.While)
_DEFS = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
_DEF_TYPES = frozenset(_DEFS)  # none of them has a subclass: a type test is isinstance's answer


def walk(node: cst.CSTNode, into_defs: bool = True) -> Iterator[cst.CSTNode]:
    """Every node below `node` (not `node` itself), in source order."""
    return _model_walk(node, () if into_defs else _DEFS)




def last_name(node: cst.CSTNode | None) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return None


def method_of(call: cst.Call) -> tuple[cst.BaseExpression, str] | None:
    f = call.func
    if isinstance(f, cst.Attribute):
        return f.value, f.attr.value
    return None


def is_bool(expr: cst.BaseExpression | None, value: bool) -> bool:
    return isinstance(expr, cst.Name) and expr.value == ("True" if value else "False")


@dataclass
class Step:
    call: cst.Call
    optimizer: cst.BaseExpression  # the optimizer expression (the argument of `scaler.step(O)`)
    closure: bool  # `O.step(closure)`
    via_scaler: bool


@dataclass
class LoopInfo:
    node: cst.For | cst.While
    backward: list[cst.Call] = field(default_factory=list)
    # calls of the file's functions/methods that run `.backward()` once per call (a trainer's
    # `loss = self.training_step(model, inputs)`): the loop's backward runs inside them
    backward_via: list[cst.Call] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    # calls of the file's functions/methods that are one training step themselves (backward and an
    # optimizer step in their own body, `self.train_step(batch)`): the loop steps inside them
    steps_via: list[cst.Call] = field(default_factory=list)
    # calls of the file's functions/methods that make an optimizer step and no backward
    # (`solver.optimize_all_params()` after the loop's own `loss.backward()`, E66-1)
    step_helpers: list[cst.Call] = field(default_factory=list)
    clears: list[cst.CSTNode] = field(default_factory=list)  # zero_grad calls, `.grad = None`, helper calls
    cleared_optimizers: set[str] = field(default_factory=set)  # code of O in `O.zero_grad()`
    clears_all: bool = False  # `model.zero_grad()`, `p.grad = None` loops, helpers
    nested: list["LoopInfo"] = field(default_factory=list)  # loops directly or deeper inside
    parent: "LoopInfo | None" = None

    @property
    def is_training(self) -> bool:
        return bool(self.backward or self.backward_via) and bool(self.steps or self.steps_via or self.step_helpers)

    @property
    def is_step_loop(self) -> bool:
        """A training loop with no training loop inside it: it runs once per optimizer step."""
        return self.is_training and not any(n.is_training for n in self.nested)

    @property
    def is_epoch_loop(self) -> bool:
        return any(n.is_training for n in self.nested)


class TrainingFacts:
    def __init__(self, model: ScriptModel) -> None:
        self.m = model
        self.order = model.order  # source order, from the model's walk
        self._sites: dict[cst.FunctionDef, list[cst.Call]] = {}
        self._fn_steps: dict[cst.FunctionDef, list[Step]] = {}
        self._fn_opt_steps: dict[cst.FunctionDef, bool] = {}
        self._fn_backward: dict[tuple[cst.FunctionDef, bool], bool] = {}
        self._calls_by_name: dict[str, list[cst.Call]] | None = None
        self._set_grad_statements: dict[cst.CSTNode, tuple[list[int], list[str]]] = {}
        self._effects_cache: dict[cst.CSTNode, set[str]] = {}
        self._effects_busy: set[cst.CSTNode] = set()
        self._grad_attrs: tuple[list[cst.Attribute], list[int]] | None = None
        self._rg_sets: tuple[list[cst.Assign], list[int]] | None = None
        self._defs: tuple[list[int], list[int]] | None = None  # positions and ends of the definitions
        # mode_before's memos: a statement's mode, a block's statement positions, the answer of
        # the backward scan of a block before position i, and mode_before's own answers
        self._stmt_modes: dict[tuple[cst.CSTNode, bool], str | None] = {}
        self._block_index: dict[cst.CSTNode, dict[int, int]] = {}
        self._block_before: dict[cst.CSTNode, dict[int, str | None]] = {}
        self._mode_before: dict[tuple[cst.CSTNode | None, int], str | None] = {}
        self._grad_modes: dict[tuple[cst.CSTNode, int], str | None] = {}
        self.loops: list[LoopInfo] = []
        self.loop_info: dict[cst.CSTNode, LoopInfo] = {}
        # the model's for and while loops, in source order (as a walk of the tree meets them)
        for node in sorted(dict.fromkeys(model.fors + model.whiles), key=model.order.__getitem__):
            if isinstance(node, _LOOPS):
                info = LoopInfo(node)
                self.loop_info[node] = info
                self.loops.append(info)
        for info in self.loops:
            outer = self.enclosing_loop(info.node)
            if outer is not None:
                info.parent = self.loop_info[outer]
            self._scan_loop(info)
        for info in self.loops:
            p = info.parent
            while p is not None:
                p.nested.append(info)
                p = p.parent

    # ------------------------------------------------------------------------------------------
    # structure helpers
    # ------------------------------------------------------------------------------------------
    def before(self, a: cst.CSTNode, b: cst.CSTNode) -> bool:
        return self.order.get(a, 0) < self.order.get(b, 0)

    def enclosing_loop(self, node: cst.CSTNode, cross_defs: bool = False) -> cst.CSTNode | None:
        for anc in self.m.ancestors(node):
            if isinstance(anc, _LOOPS):
                return anc
            if not cross_defs and isinstance(anc, _DEFS):
                return None
        return None

    def loops_around(self, node: cst.CSTNode) -> list[LoopInfo]:
        """The loops containing `node` in its own function, innermost first."""
        out = []
        for anc in self.m.ancestors(node):
            if isinstance(anc, _DEFS):
                break
            if isinstance(anc, _LOOPS):
                out.append(self.loop_info[anc])
        return out

    def step_loop_of(self, node: cst.CSTNode) -> LoopInfo | None:
        for info in self.loops_around(node):
            if info.is_training:
                return info if info.is_step_loop else None
        return None

    def function_of(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        return self.m.enclosing(node, cst.FunctionDef)  # type: ignore[return-value]

    def calls_in(self, node: cst.CSTNode, into_defs: bool = True) -> Iterator[cst.Call]:
        if into_defs:
            return iter(self.m.calls_in(node))
        return iter(self._calls_outside_defs(node))

    def _calls_outside_defs(self, node: cst.CSTNode) -> list[cst.Call]:
        """`m.calls_in(node, _DEFS)`: the calls below `node` that no function, lambda or class
        below it holds. Those left out lie in the source-order ranges of the outermost
        definitions below `node`: found by bisection in the file's definitions, not by walking
        up from every call."""
        m = self.m
        start, stop = m.order.get(node), m.end.get(node)
        if start is None or stop is None or m.nodes[start] is not node:
            return m.calls_in(node, _DEFS)
        found = m.calls_in(node)
        if not found:
            return found
        defs = self._defs
        if defs is None:
            nodes = m.nodes
            at = list(compress(range(len(nodes)), map(_DEF_TYPES.__contains__, map(type, nodes))))
            defs = self._defs = (at, [m.end[nodes[i]] for i in at])
        at, ends = defs
        lo, hi = bisect.bisect_right(at, start), bisect.bisect_left(at, stop)
        if lo == hi:
            return found
        ranges = []
        last = -1
        for i in range(lo, hi):
            if at[i] >= last:  # not inside the previous outermost definition
                last = ends[i]
                ranges.append((at[i], last))
        order = m.order
        out = []
        j, n = 0, len(ranges)
        for c in found:
            o = order[c]
            while j < n and ranges[j][1] <= o:
                j += 1
            if j < n and ranges[j][0] < o:
                continue  # below a definition below `node`
            out.append(c)
        return out

    def is_conditional_in(self, node: cst.CSTNode, loop: cst.CSTNode) -> bool:
        """`node` sits under an `if`/`try`/`with`-less condition between it and `loop`."""
        for anc in self.m.ancestors(node):
            if anc is loop:
                return False
            if isinstance(anc, (cst.If, cst.Else, cst.IfExp, cst.BooleanOperation, cst.Try, cst.ExceptHandler)):
                return True
            if isinstance(anc, _DEFS):
                return True
        return True

    # ------------------------------------------------------------------------------------------
    # file helpers: what calling a function defined in this file does
    # ------------------------------------------------------------------------------------------
    def file_functions(self, call: cst.Call) -> list[cst.FunctionDef]:
        f = call.func
        if isinstance(f, cst.Name):
            if f.value in self.m.classes:
                return []
            return list(self.m.functions.get(f.value, []))
        if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == "self":
            cls = self.m.class_of(call)
            if cls is not None:
                found = self.method_of_class(cls.name.value, f.attr.value)
                return [found] if found is not None else []
        elif isinstance(f, cst.Attribute):
            # `model.update_learning_rate()`, `trainer.train_epoch()`: an instance of a class of the
            # file, as the flow engine knows it (its own methods, then its bases')
            cls = self.m.value_of(f.value).cls
            if cls is not None:
                found = self.method_of_class(cls, f.attr.value)
                return [found] if found is not None else []
        return []

    def method_of_class(self, cls: str, name: str) -> cst.FunctionDef | None:
        """The method `name` of the file's class `cls`, or of its first base of the file that has it."""
        found = self.m.method_of_class(cls, name)
        return found[0] if found is not None else None

    def effects(self, fn: cst.FunctionDef) -> set[str]:
        """What a file function does, transitively: "zero_grad", "grad" (gradient use),
        "backward", "step", "eval", "train"."""
        if fn in self._effects_cache:
            return self._effects_cache[fn]
        if fn in self._effects_busy:
            return set()
        self._effects_busy.add(fn)
        out = self._direct_effects(fn.body)
        for call in self.calls_in(fn.body):
            for g in self.file_functions(call):
                out |= self.effects(g)
        self._effects_busy.discard(fn)
        self._effects_cache[fn] = out
        return out

    def _direct_effects(self, node: cst.CSTNode) -> set[str]:
        out: set[str] = set()
        m = self.m
        start = m.order.get(node)
        if start is None or m.nodes[start] is not node:  # not a node of the model's tree: walk it
            for n in walk(node):
                if isinstance(n, cst.Call):
                    self._call_effects(n, out)
                elif isinstance(n, cst.Attribute) and n.attr.value == "grad":
                    self._grad_effects(n, out)
                elif isinstance(n, cst.Assign) and _sets_requires_grad(n):
                    out.add("grad")
            return out
        # the calls and `.grad` attributes below `node`, from the model's lists, in source order
        for n in m.calls_in(node):
            self._call_effects(n, out)
        for n in self.grad_attributes_in(node):
            self._grad_effects(n, out)
        if self.requires_grad_sets_in(node):
            out.add("grad")
        return out

    def requires_grad_sets_in(self, node: cst.CSTNode) -> list[cst.Assign]:
        """The `x.requires_grad = <not False>` statements below `node`: the attribute form of
        `x.requires_grad_()` (Knowledge-Distillation-Zoo's evaluation of the Sobolev/LWM losses sets
        `img.requires_grad = True` and differentiates the outputs with respect to the input)."""
        m = self.m
        if self._rg_sets is None:
            found = [(i, n) for i, n in enumerate(m.nodes) if type(n) is cst.Assign and _sets_requires_grad(n)]
            self._rg_sets = ([n for _, n in found], [i for i, _ in found])
        start, stop = m.order.get(node), m.end.get(node)
        if start is None or stop is None or m.nodes[start] is not node:
            return [n for n in walk(node) if isinstance(n, cst.Assign) and _sets_requires_grad(n)]
        sets, orders = self._rg_sets
        return sets[bisect.bisect_right(orders, start):bisect.bisect_left(orders, stop)]

    def _call_effects(self, n: cst.Call, out: set[str]) -> None:
        q = self.m.qualname(n.func)
        mo = method_of(n)
        if q in GRAD_FUNCTIONS or q in ENABLE_GRAD:
            out.add("grad")
        if mo is not None:
            recv, meth = mo
            if meth in ("backward", "manual_backward"):
                out |= {"grad", "backward"}
            elif meth == "requires_grad_" and not (n.args and is_bool(n.args[0].value, False)):
                out.add("grad")
            elif meth == "zero_grad":
                out.add("zero_grad")
            elif meth == "step" and self.is_optimizer(recv):
                out.add("step")
            elif meth == "eval" and not n.args and not score_eval(self.m, n):
                out.add("eval")
            elif meth == "train":
                out.add(self._train_call_mode(n) or "unknown-mode")
        for a in n.args:
            if a.keyword is not None and a.keyword.value == "requires_grad" and not is_bool(a.value, False):
                out.add("grad")

    def _grad_effects(self, n: cst.Attribute, out: set[str]) -> None:
        out.add("grad")
        if self._clears_grad_attr(n):
            out.add("zero_grad")

    def grad_attributes_in(self, node: cst.CSTNode) -> list[cst.Attribute]:
        """The `x.grad` attributes below `node` (not `node` itself), in source order."""
        m = self.m
        if self._grad_attrs is None:
            found = [(i, n) for i, n in enumerate(m.nodes) if type(n) is cst.Attribute and n.attr.value == "grad"]
            self._grad_attrs = ([n for _, n in found], [i for i, _ in found])
        start, stop = m.order.get(node), m.end.get(node)
        if start is None or stop is None or m.nodes[start] is not node:
            return [n for n in walk(node) if isinstance(n, cst.Attribute) and n.attr.value == "grad"]
        attrs, orders = self._grad_attrs
        return attrs[bisect.bisect_right(orders, start):bisect.bisect_left(orders, stop)]

    def _train_call_mode(self, call: cst.Call) -> str | None:
        if not call.args:
            return "train"
        a = call.args[0]
        if a.keyword is None or a.keyword.value == "mode":
            if is_bool(a.value, True):
                return "train"
            if is_bool(a.value, False):
                return "eval"
        return None

    def _clears_grad_attr(self, attr: cst.Attribute) -> bool:
        """`p.grad = None`, `p.grad.zero_()`, `p.grad.data.zero_()`, `p.grad.detach_()`."""
        parent = self.m.parent(attr)
        if isinstance(parent, cst.AssignTarget):
            return True
        cur: cst.CSTNode = attr
        while isinstance(parent, cst.Attribute) and parent.value is cur:
            if parent.attr.value in ("zero_", "detach_", "fill_", "requires_grad_"):
                return parent.attr.value in ("zero_", "fill_")
            cur, parent = parent, self.m.parent(parent)
        return False

    # ------------------------------------------------------------------------------------------
    # kinds, with a little more reach than the ScriptModel: parameters through call sites
    # ------------------------------------------------------------------------------------------
    def steps_of_function(self, fn: cst.FunctionDef) -> list[Step]:
        """The optimizer steps a function makes itself, outside any loop of its own, when it also
        calls `.backward()` there: the function is one training step (a trainer's `train_step`).
        Empty otherwise. The backward may also run one call deep, in a function of the file that
        runs it itself (`loss = self.forward_backward(batch)` then `self.optimizer.step()`)."""
        cached = self._fn_steps.get(fn)
        if cached is not None:
            return cached
        steps, backward = [], False
        for c in self.m.calls_in(fn):
            if self.m.enclosing(c, cst.FunctionDef) is not fn:
                continue
            f = c.func
            if self.enclosing_loop(c) is not None:
                if not backward and isinstance(f, cst.Attribute) and f.attr.value == "backward":
                    backward = self._accumulating_backward(c)
                continue
            if isinstance(f, cst.Attribute) and f.attr.value == "backward":
                backward = True
            elif isinstance(f, cst.Attribute) and f.attr.value == "step":
                st = self.as_step(c, f.value)
                if st is not None:
                    steps.append(st)
            elif not backward and any(g is not fn and self.runs_backward(g, deep=False) for g in self.file_functions(c)):
                backward = True
        out = self._fn_steps[fn] = steps if backward else []
        return out

    def optimizer_steps_of_function(self, fn: cst.FunctionDef) -> bool:
        """`fn` makes an optimizer step, outside any loop of its own but one over its optimizers
        (a solver's `optimize_all_params()` that steps each of its optimizers, E66-1). One that
        also runs the backward is a training step of its own (`steps_of_function`)."""
        cached = self._fn_opt_steps.get(fn)
        if cached is None:
            cached = False
            for c in self.m.calls_in(fn):
                f = c.func
                if not (isinstance(f, cst.Attribute) and f.attr.value == "step" and self.m.enclosing(c, cst.FunctionDef) is fn):
                    continue
                loop = self.enclosing_loop(c)
                if loop is not None and (type(loop) is not cst.For or any(
                        isinstance(d.func, cst.Attribute) and d.func.attr.value == "backward" for d in self.m.calls_in(loop))):
                    continue  # a loop of its own with a backward: training, not one step (`for opt in
                    # self.optimizers: opt.step()` is one step of each)
                if self.as_step(c, f.value) is not None:
                    cached = True
                    break
            self._fn_opt_steps[fn] = cached
        return cached

    def runs_backward(self, fn: cst.FunctionDef, deep: bool = True) -> bool:
        """`fn` calls `.backward()` outside any loop of its own: each call of it runs one backward
        pass (a trainer's `training_step`). With `deep`, also through one call, outside any loop
        of `fn`, of a file function that calls it itself (`train_step` -> `forward_backward`);
        bounded: two levels in all."""
        key = (fn, deep)
        cached = self._fn_backward.get(key)
        if cached is None:
            cached = False
            for c in self.m.calls_in(fn):
                if self.m.enclosing(c, cst.FunctionDef) is not fn:
                    continue
                f = c.func
                if self.enclosing_loop(c) is not None:
                    if (isinstance(f, cst.Attribute) and f.attr.value in ("backward", "manual_backward")
                            and self._accumulating_backward(c)):
                        cached = True
                        break
                    continue
                if isinstance(f, cst.Attribute) and f.attr.value in ("backward", "manual_backward"):
                    cached = True
                    break
                if deep and any(g is not fn and self.runs_backward(g, deep=False) for g in self.file_functions(c)):
                    cached = True
                    break
            self._fn_backward[key] = cached
        return cached

    def _accumulating_backward(self, call: cst.Call) -> bool:
        """A `.backward()` inside loops of its own function none of which makes a `.step()` call:
        gradients accumulated over micro-batches (`for x_mb in x.chunk(n): ... .backward()`), for
        the caller's optimizer step; each call of the function is one training step's backward
        (E58-1). A loop that also steps is a training loop of its own (`train_epoch`)."""
        outer = None
        for anc in self.m.ancestors(call):
            if isinstance(anc, _DEFS):
                break
            if isinstance(anc, _LOOPS):
                outer = anc
        if outer is None:
            return True
        for c in self.m.calls_in(outer):
            f = c.func
            if isinstance(f, cst.Attribute) and f.attr.value == "step":
                return False
        return True

    def call_sites(self, fn: cst.FunctionDef) -> list[cst.Call]:
        cached = self._sites.get(fn)
        if cached is None:
            cached = self._sites[fn] = self._find_call_sites(fn)
        return cached

    def _find_call_sites(self, fn: cst.FunctionDef) -> list[cst.Call]:
        name = fn.name.value
        out = []
        for call in self._calls_named().get(name, ()):
            f = call.func
            if isinstance(f, cst.Name) and f.value == name and fn in self.m.functions.get(name, []):
                out.append(call)
            elif (
                isinstance(f, cst.Attribute)
                and f.attr.value == name
                and isinstance(f.value, cst.Name)
                and f.value.value == "self"
                and self.m.class_of(fn) is not None
                and self.m.class_of(call) is self.m.class_of(fn)
            ):
                out.append(call)
            elif isinstance(f, cst.Attribute) and f.attr.value == name and self.m.class_of(fn) is not None:
                # `self.name()` in a subclass that inherits it, `obj.name()` on an instance
                if isinstance(f.value, cst.Name) and f.value.value == "self":
                    c = self.m.class_of(call)
                    owner = c.name.value if c is not None else None
                else:
                    owner = self.m.value_of(f.value).cls
                if owner is not None and self.method_of_class(owner, name) is fn:
                    out.append(call)
                elif (owner is not None and isinstance(f.value, cst.Name) and f.value.value == "self"
                      and self.m.class_is(self.m.class_of(fn).name.value, frozenset({owner}))):
                    # `self.training_step(x)` in a base's loop, `fn` the override in a subclass of the
                    # file: the instance that runs the loop may be the subclass (HF-Trainer-style
                    # template methods, B70-E2)
                    out.append(call)
        return out

    def _calls_named(self) -> dict[str, list[cst.Call]]:
        """The file's calls of `name(...)` and `self.name(...)` by name, in source order (built
        once: looking through every call for each function made call-site queries quadratic)."""
        index = self._calls_by_name
        if index is None:
            index = self._calls_by_name = {}
            for call in self.m.calls:
                f = call.func
                if isinstance(f, cst.Name):
                    index.setdefault(f.value, []).append(call)
                elif isinstance(f, cst.Attribute):
                    index.setdefault(f.attr.value, []).append(call)
        return index

    def argument_for(self, fn: cst.FunctionDef, call: cst.Call, param: str) -> cst.BaseExpression | None:
        return argument_for(fn, call, param)

    def _param_values(self, expr: cst.BaseExpression) -> list[cst.BaseExpression] | None:
        """For a parameter name: the arguments its function gets at the file's call sites."""
        if not isinstance(expr, cst.Name):
            return None
        bindings = self.m.bindings_of(expr)
        if len(bindings) != 1 or bindings[0].how != "param":
            return None
        fn = self.m.enclosing(bindings[0].node, cst.FunctionDef)
        if not isinstance(fn, cst.FunctionDef):
            return None
        out = []
        for call in self.call_sites(fn):
            v = self.argument_for(fn, call, expr.value)
            if v is not None:
                out.append(v)
        return out

    def kind_of(self, expr: cst.BaseExpression | None, _depth: int = 0) -> Kind:
        k = self.m.kind_of(expr)
        if k is not Kind.UNKNOWN or expr is None or _depth > 3:
            return k
        values = self._param_values(expr)
        if values:
            kinds = {self.kind_of(v, _depth + 1) for v in values}
            if len(kinds) == 1:
                return kinds.pop()
        return Kind.UNKNOWN

    def is_optimizer(self, expr: cst.BaseExpression) -> bool:
        k = self.kind_of(expr)
        if k is Kind.OPTIMIZER:
            return True
        if k is not Kind.UNKNOWN:
            return False
        name = last_name(expr)
        if not (name and OPTIMIZER_NAME.search(name)):
            return False
        return not self._plain_non_optimizer(self.m.value_of(expr).cls)

    def _plain_non_optimizer(self, cls: str | None) -> bool:
        """`cls` is a class of the file with no base from outside it, whose `step` method neither
        reads a `.grad` nor steps another object: an `ema_optimizer = WeightEMA(model, ema_model)`
        that only blends weights (MixMatch-pytorch), named like an optimizer but not one. A wrapper
        whose `step` calls `self.optimizer.step()` (annotated-transformer's NoamOpt) or a
        hand-written optimizer that reads `p.grad` stays an optimizer."""
        if cls is None or cls not in self.m.classes:
            return False
        seen, todo = set(), [cls]
        while todo:
            c = todo.pop()
            if c in seen:
                continue
            seen.add(c)
            info = self.m.classes.get(c)
            if info is None or len(info.bases) != len(info.node.bases):
                return False  # a base the model could not name
            for b in info.bases:
                if b in ("object", "builtins.object"):
                    continue
                if b not in self.m.classes:
                    return False  # an outside base (torch.optim.Optimizer, a library wrapper)
                todo.append(b)
        found = self.m.method_of_class(cls, "step")
        if found is None:
            return False
        for n in _model_walk(found[0].body):
            if isinstance(n, cst.Attribute) and n.attr.value in ("grad", "step", "zero_grad"):
                return False
        return True

    def is_scaler(self, expr: cst.BaseExpression) -> bool:
        k = self.kind_of(expr)
        if k is Kind.SCALER:
            return True
        name = last_name(expr)
        return k is Kind.UNKNOWN and bool(name and SCALER_NAME.search(name))

    def is_loss_module(self, expr: cst.BaseExpression) -> bool:
        name = last_name(expr)
        if name and LOSS_NAME.search(name):
            return True
        for b in self.m.bindings_of(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else ():
            if isinstance(b.value, cst.Call):
                q = self.m.qualname(b.value.func) or ""
                if q.endswith("Loss"):
                    return True
        return False

    def mode_receivers(self) -> set[str]:
        """Code of every receiver of `.eval()` / `.train(...)` in the file (those are models)."""
        out = set()
        for call, recv, meth in self.m.method_calls("eval", "train"):
            if meth == "eval" and (call.args or score_eval(self.m, call)):
                continue
            d = dotted(recv)
            if d is not None and self.m.qualname(recv) is None:
                out.add(d)
        return out

    def is_model(self, expr: cst.BaseExpression) -> bool:
        """A network (not a loss module): known Module, or a name the file calls `.eval()`/`.train()` on;
        an item of a dict of modules the engine knows (`self.model["generator"]`, ParallelWaveGAN's
        trainer) when it is a network."""
        if isinstance(expr, cst.Subscript):
            v = self.m.value_of(expr)
            return v.kind == "module" and v.stateful and not self.is_loss_module(expr)
        if not isinstance(expr, (cst.Name, cst.Attribute)):
            return False
        if self.is_loss_module(expr):
            return False
        k = self.kind_of(expr)
        if k is Kind.MODULE:
            return True
        if k is Kind.UNKNOWN:
            d = dotted(expr)
            return d is not None and d in self._mode_receivers_cached
        return False

    @property
    def _mode_receivers_cached(self) -> set[str]:
        if not hasattr(self, "_mr"):
            self._mr = self.mode_receivers()
        return self._mr

    def model_calls(self, node: cst.CSTNode, into_defs: bool = False) -> list[cst.Call]:
        return [c for c in self.calls_in(node, into_defs) if self.is_model(c.func)]

    def self_methods_called(self, node: cst.CSTNode, depth: int = 2) -> list[cst.FunctionDef]:
        """The methods of the enclosing class that `node` calls as `self.name(...)`, and those they
        call the same way (to `depth` levels): code that runs on the same instance."""
        out: list[cst.FunctionDef] = []
        frontier = [node]
        for _ in range(depth):
            nxt = []
            for n in frontier:
                for call in self.calls_in(n, into_defs=False):
                    f = call.func
                    if not (isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == "self"):
                        continue
                    for fn in self.file_functions(call):
                        if fn not in out:
                            out.append(fn)
                            nxt.append(fn.body)
            frontier = nxt
        return out

    def model_calls_through_self(self, node: cst.CSTNode) -> list[cst.Call]:
        """Model calls in `node` and in the methods it calls on `self` whose model is an attribute of
        `self` (`self.model(x)` inside `self._forward_pass(...)`): the same model as in `node`."""
        out = self.model_calls(node)
        for fn in self.self_methods_called(node):
            for c in self.model_calls(fn.body):
                f = c.func
                if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == "self":
                    out.append(c)
        return out

    def mode_sensitive(self, expr: cst.BaseExpression, _depth: int = 0) -> bool:
        """Can `train()`/`eval()` change what this model computes? False only when the file shows
        a model built from layers without dropout or normalisation statistics."""
        values = []
        for b in self.m.bindings_of(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else ():
            if b.how == "param":
                for v in self._param_values(expr) or []:
                    values.append(v)
                continue
            values.append(b.value)
        if not values:
            return True
        for v in values:
            if isinstance(v, (cst.Name, cst.Attribute)) and v is not expr and _depth < 3:
                # a parameter given a name at its call sites (`test_model(model)`): what that name is
                if self.mode_sensitive(v, _depth + 1):
                    return True
                continue
            # see through `.to(...)`, `.cuda()`, wrappers
            while isinstance(v, cst.Call) and isinstance(v.func, cst.Attribute) and v.func.attr.value in (
                "to", "cuda", "cpu", "float", "double", "half", "train", "eval",
            ):
                v = v.func.value
            if not isinstance(v, cst.Call):
                return True
            if isinstance(v.func, cst.Name) and v.func.value in self.m.classes:
                if self._class_sensitive(v.func.value, set()):
                    return True
                continue
            q = self.m.qualname(v.func) or ""
            while q in WRAPPER_CLASSES and v.args:
                v = v.args[0].value
                if not isinstance(v, cst.Call):
                    return True
                q = self.m.qualname(v.func) or ""
            if isinstance(v.func, cst.Name) and v.func.value in self.m.classes:
                if self._class_sensitive(v.func.value, set()):
                    return True
                continue
            if q.startswith("torch.nn.") and q.rsplit(".", 1)[-1][:1].isupper():
                text = self.m.module.code_for_node(v)
                if MODE_SENSITIVE.search(text):
                    return True
                for n in walk(v):
                    if isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value in self.m.classes:
                        if self._class_sensitive(n.func.value, set()):
                            return True
                    elif isinstance(n, cst.Call) and self.m.qualname(n.func) is None and not isinstance(n.func, cst.Attribute):
                        return True
                continue
            return True
        return False

    def _without_inline_layers(self, node: cst.CSTNode, text: str) -> str:
        """The class's text without the torch layers it builds and calls on the spot
        (`x = nn.Dropout(d)(x)` in `forward`, dataflowr's spectral GNN, PRECISION26 A3): a module
        made at the call is in training mode whatever mode its owner is put in, so `eval()` changes
        nothing for it."""
        for n in walk(node):
            if (isinstance(n, cst.Call) and isinstance(n.func, cst.Call)
                    and (self.m.qualname(n.func.func) or "").startswith("torch.nn.")):
                text = text.replace(self.m.module.code_for_node(n.func), "")
        return text

    def _class_sensitive(self, name: str, seen: set[str]) -> bool:
        if name in seen:
            return False
        seen.add(name)
        info = self.m.classes[name]
        text = self.m.module.code_for_node(info.node)
        if MODE_SENSITIVE.search(text) and MODE_SENSITIVE.search(self._without_inline_layers(info.node, text)):
            return True
        for b in info.bases:
            if b in self.m.classes and self._class_sensitive(b, seen):
                return True
            if b not in self.m.classes and not b.startswith("torch.nn.Module"):
                return True  # an unknown base class
        for n in walk(info.node):
            if isinstance(n, cst.Call):
                if isinstance(n.func, cst.Name) and n.func.value in self.m.classes:
                    if self._class_sensitive(n.func.value, seen):
                        return True
                q = self.m.qualname(n.func) or ""
                if q.startswith(("torchvision.", "timm.", "transformers.")):
                    return True
        return False

    # ------------------------------------------------------------------------------------------
    # per-loop scan
    # ------------------------------------------------------------------------------------------
    def _scan_loop(self, info: LoopInfo) -> None:
        m = self.m
        node = info.node
        start = m.order.get(node)
        if start is None or m.nodes[start] is not node:  # not a node of the model's tree: walk it
            below = walk(node)
        else:
            # the calls and `.grad` attributes below the loop, in source order: the only nodes
            # the scan looks at
            below = m.calls_in(node)
            attrs = self.grad_attributes_in(node)
            if attrs:
                below = sorted(below + attrs, key=m.order.__getitem__)
        for n in below:
            if isinstance(n, cst.Attribute) and n.attr.value == "grad" and self._clears_grad_attr(n):
                info.clears.append(n)
                info.clears_all = True
            if not isinstance(n, cst.Call):
                continue
            mo = method_of(n)
            if mo is not None:
                recv, meth = mo
                if meth == "backward":
                    info.backward.append(n)
                elif meth == "zero_grad":
                    info.clears.append(n)
                    if self.is_optimizer(recv):
                        info.cleared_optimizers.add(self.m.module.code_for_node(recv))
                    else:
                        info.clears_all = True
                elif meth == "step":
                    step = self.as_step(n, recv)
                    if step is not None:
                        info.steps.append(step)
            for fn in self.file_functions(n):
                if "zero_grad" in self.effects(fn):
                    info.clears.append(n)
                    info.clears_all = True
                if self.runs_backward(fn) and n not in info.backward_via:
                    info.backward_via.append(n)
                if self.steps_of_function(fn):
                    if n not in info.steps_via:
                        info.steps_via.append(n)
                elif self.optimizer_steps_of_function(fn) and n not in info.step_helpers:
                    info.step_helpers.append(n)

    def as_step(self, call: cst.Call, recv: cst.BaseExpression) -> Step | None:
        """`recv.step(...)` as an optimizer step: `O.step()` of an optimizer (not a scheduler), or
        `S.step(O)` of a GradScaler; None when it is neither."""
        args = [a for a in call.args]
        if self.is_scaler(recv):
            pos = [a for a in args if a.keyword is None]
            if pos and self.is_optimizer(pos[0].value):
                return Step(call, pos[0].value, False, True)
            return None
        if self.kind_of(recv) is Kind.SCHEDULER:
            return None
        if self.is_optimizer(recv):
            return Step(call, recv, bool(args), False)
        return None

    _as_step = as_step  # the former private name (branches that still call it)

    # ------------------------------------------------------------------------------------------
    # gradient regions
    # ------------------------------------------------------------------------------------------
    def _grad_item(self, call: cst.BaseExpression) -> str | None:
        """"off", "on", "dynamic" for a grad-mode context manager / decorator expression."""
        if type(call) is cst.IfExp:
            # `with torch.no_grad() if not requires_grad else nullcontext():` (StudioGAN, P44-1):
            # the same mode on both branches is that mode; gradients off on one branch only is
            # "dynamic", as `set_grad_enabled(<expr>)` is
            a, b = self._grad_item(call.body), self._grad_item(call.orelse)
            if a == b:
                return a
            return "dynamic" if "off" in (a, b) or "dynamic" in (a, b) else None
        target = call.func if isinstance(call, cst.Call) else call
        q = self.m.qualname(target)
        if q in GRAD_OFF:
            if isinstance(call, cst.Call) and q.endswith("inference_mode") and call.args and is_bool(call.args[0].value, False):
                return "on"
            return "off"
        if q in ENABLE_GRAD:
            return "on"
        if q in SET_GRAD and isinstance(call, cst.Call) and call.args:
            v = call.args[0].value
            if is_bool(v, False):
                return "off"
            if is_bool(v, True):
                return "on"
            return "dynamic"
        if q is None or not q.startswith("torch."):
            # a project's own wrapper, e.g. yolov5's `@smart_inference_mode()` (inference_mode or
            # no_grad depending on the torch version), imported from a module of the project
            last = (dotted(target) or "").rsplit(".", 1)[-1]
            if "inference_mode" in last or "no_grad" in last:
                return "off"
        return None

    def grad_mode_at(self, node: cst.CSTNode, _depth: int = 0) -> str | None:
        """"off" when `node` runs with gradients disabled for sure, "dynamic" under
        `set_grad_enabled(<expr>)` (or called from such places), "on" under enable_grad, None when
        nothing says."""
        key = (node, _depth)
        try:
            return self._grad_modes[key]
        except KeyError:
            pass
        found = self._grad_modes[key] = self._grad_mode_at(node, _depth)
        return found

    def local_grad_mode(self, node: cst.CSTNode) -> str | None:
        """The grad mode `node` has inside its own function (its `with` blocks, decorators and
        `set_grad_enabled` statements), without asking the function's call sites: what a call
        made with gradients on meets there."""
        return self.grad_mode_at(node, 3)

    def _grad_mode_at(self, node: cst.CSTNode, _depth: int) -> str | None:
        # memoised by grad_mode_at: the call sites of a function are asked about once per depth,
        # not once per node inside it (a query fans out through up to three levels of call sites)
        v = self.m.flow.values.get(node)
        if v is not None and v.nograd and v.kind == "tensor":
            return "off"  # the flow engine saw no_grad around it (also `stack.enter_context(no_grad())`)
        for anc in self.m.ancestors(node):
            if isinstance(anc, cst.With):
                for item in anc.items:
                    g = self._grad_item(item.item)
                    if g is not None:
                        return g
                g = self._entered_before(anc, node)
                if g is not None:
                    return g
            if isinstance(anc, cst.FunctionDef):
                for dec in anc.decorators:
                    g = self._grad_item(dec.decorator)
                    if g is not None:
                        return g
                g = self._set_grad_statement_before(anc.body, node)
                if g is not None:
                    return g
                if _depth >= 3:
                    return None
                modes = {self.grad_mode_at(c, _depth + 1) for c in self.call_sites(anc)}
                if modes == {"off"}:
                    return "off"
                if "off" in modes or "dynamic" in modes:
                    return "dynamic"  # called with and without gradients: cannot tell
                return None
            if isinstance(anc, (cst.ClassDef, cst.Lambda)):
                return None
        return self._set_grad_statement_before(self.m.module, node)

    def _entered_before(self, with_node: cst.With, node: cst.CSTNode) -> str | None:
        """`stack.enter_context(torch.no_grad())` in the body of `with ExitStack() as stack:`
        before `node` (detectron2's inference_on_dataset): "dynamic" when entered conditionally."""
        found = None
        for call in self.calls_in(with_node.body, into_defs=False):
            if not self.before(call, node):
                break
            f = call.func
            if not (isinstance(f, cst.Attribute) and f.attr.value == "enter_context" and call.args):
                continue
            g = self._grad_item(call.args[0].value)
            if g is None:
                continue
            stmt = self.m.statement_of(call)
            direct = isinstance(with_node.body, cst.IndentedBlock) and any(st is stmt for st in with_node.body.body)
            found = g if direct else "dynamic"
        return found

    def _set_grad_statement_before(self, scope: cst.CSTNode, node: cst.CSTNode) -> str | None:
        """The mode the last `set_grad_enabled(...)` statement of `scope` (not inside nested
        definitions) before `node` sets, if any."""
        found = self._set_grad_statements.get(scope)
        if found is None:
            orders, modes = [], []
            for call in self.calls_in(scope, into_defs=False):
                if self.m.qualname(call.func) in SET_GRAD and isinstance(self.m.parent(call), cst.Expr) and call.args:
                    v = call.args[0].value
                    orders.append(self.order.get(call, 0))
                    modes.append("off" if is_bool(v, False) else ("on" if is_bool(v, True) else "dynamic"))
            found = self._set_grad_statements[scope] = (orders, modes)
        orders, modes = found
        # calls_in gives source order: the statements before `node` are a prefix of the list
        i = bisect.bisect_left(orders, self.order.get(node, 0))
        return modes[i - 1] if i else None

    def in_no_grad(self, node: cst.CSTNode) -> bool:
        return self.grad_mode_at(node) == "off"

    def grad_use(self, node: cst.CSTNode) -> bool:
        """Does running `node` use gradients (backward, autograd.grad, requires_grad_, enable_grad,
        `.grad`), itself or through functions of the file it calls?"""
        if "grad" in self._direct_effects(node):
            return True
        for call in self.calls_in(node):
            for fn in self.file_functions(call):
                if "grad" in self.effects(fn):
                    return True
        return False

    def grad_use_besides_training(self, fn: cst.FunctionDef, node: cst.CSTNode) -> bool:
        """Does `fn` use gradients (as `grad_use(fn.body)`) anywhere but in its training loops that
        do not contain `node`? A trainer method that runs the training batches and then an
        evaluation loop uses gradients in the first only: that says nothing about the second."""
        m = self.m
        training = [
            info.node
            for info in self.loops
            if info.is_training and not m.contains(info.node, node) and self.function_of(info.node) is fn
        ]
        # the backward passes of a training loop the evaluation loop sits in (`if (i + 1) % 50 ==
        # 0: self.eval(); for x, y in val_iterator: ...` inside the batch loop: AnubhavGupta3377's
        # text classifiers, PRECISION23 M2) are its training, not a use of gradients by the
        # evaluation; anything else in that loop still counts
        own = set()
        for info in self.loops:
            if (info.is_training and info.node is not node and m.contains(info.node, node)
                    and self.function_of(info.node) is fn):
                own.update(info.backward)
        trainer_calls = any(
            (gs := self.file_functions(c)) and not m.contains(node, c) and all(self._trains(g) for g in gs)
            for c in self.calls_in(fn.body))
        if not training and not own and not trainer_calls:
            return self.grad_use(fn.body)

        def outside(n: cst.CSTNode) -> bool:
            return not any(m.contains(t, n) for t in training)

        out: set[str] = set()
        for call in self.calls_in(fn.body):
            if not outside(call) or call in own:
                continue
            gs = self.file_functions(call)
            if gs and not m.contains(node, call) and all(self._trains(g) for g in gs):
                # `train(net)` then an evaluation loop in `main()`: a call of a training function of
                # the file is that training, not a use of gradients by the evaluation (probe69 G69-2)
                continue
            self._call_effects(call, out)
            if "grad" in out:
                return True
            for g in self.file_functions(call):
                if "grad" in self.effects(g):
                    return True
        return any(outside(a) for a in self.grad_attributes_in(fn.body))

    def _trains(self, g: cst.FunctionDef) -> bool:
        """A function of the file that holds a training loop (backward and optimizer step)."""
        return any(info.is_training and self.function_of(info.node) is g for info in self.loops)

    # ------------------------------------------------------------------------------------------
    # evaluation contexts and train/eval mode
    # ------------------------------------------------------------------------------------------
    def is_eval_function(self, fn: cst.FunctionDef | None) -> bool:
        if fn is None:
            return False
        if not EVAL_FUNCTION.search(fn.name.value):
            return False
        if fn.name.value.lower().startswith("test") and (
            self.m.uses_module("pytest") or self.m.uses_module("unittest")
        ):
            return False  # unit tests, not evaluation code
        return True

    def statement_mode(self, stmt: cst.CSTNode, training_loops: bool = True) -> str | None:
        """The train/eval mode a statement leaves models in: "train", "eval", "mixed" or None. With
        `training_loops`, a training loop counts as leaving models in training mode."""
        key = (stmt, training_loops)
        try:
            return self._stmt_modes[key]
        except KeyError:
            pass
        found = self._stmt_modes[key] = self._statement_mode(stmt, training_loops)
        return found

    def _statement_mode(self, stmt: cst.CSTNode, training_loops: bool) -> str | None:
        modes: set[str] = set()
        if training_loops and isinstance(stmt, _LOOPS) and self.loop_info[stmt].is_training:
            modes.add("train")
        for call in self.calls_in(stmt, into_defs=False):
            mo = method_of(call)
            if (mo is not None and mo[1] == "eval" and not call.args and self.m.qualname(mo[0]) is None
                    and not score_eval(self.m, call)):
                modes.add("eval")
            elif mo is not None and mo[1] == "train" and self.m.qualname(mo[0]) is None:
                modes.add(self._train_call_mode(call) or "unknown")
            for fn in self.file_functions(call):
                eff = self.effects(fn)
                if "eval" in eff:
                    modes.add("eval")
                if "train" in eff:
                    modes.add("train")
                if "step" in eff and "backward" in eff:
                    modes.add("train")
        if not modes:
            return None
        if len(modes) == 1 and "unknown" not in modes:
            return next(iter(modes))
        # a compound statement whose last mode call decides is too fine for this analysis
        return "mixed"

    def mode_before(self, node: cst.CSTNode, _depth: int = 0) -> str | None:
        """The train/eval mode models are in when `node` (a statement) starts: found walking back
        through the preceding statements of its blocks to the nearest mode call or training loop,
        and through the call sites of its function. None when the file does not say."""
        key = (node, _depth)
        try:
            return self._mode_before[key]
        except KeyError:
            pass
        found = self._mode_before[key] = self._find_mode_before(node, _depth)
        return found

    def _last_mode_in_block(self, block: cst.CSTNode, i: int) -> str | None:
        """The mode of the last statement before position `i` of a block's body whose mode is not
        None (None when there is none). The scan back stops at a position already answered, and
        every position it passes gets the same answer: each statement's mode is computed once."""
        answers = self._block_before.setdefault(block, {})
        body = block.body
        j = i
        found = None
        while j > 0:
            if j in answers:
                found = answers[j]
                break
            mode = self.statement_mode(body[j - 1])
            if mode is not None:
                found = mode
                break
            j -= 1
        for k in range(j, i + 1):
            answers[k] = found
        return found

    def _find_mode_before(self, node: cst.CSTNode, _depth: int) -> str | None:
        cur = node
        while True:
            parent = self.m.parent(cur)
            if parent is None:
                return None
            if isinstance(parent, (cst.IndentedBlock, cst.Module)):
                index = self._block_index.get(parent)
                if index is None:
                    index = self._block_index[parent] = {id(s): k for k, s in enumerate(parent.body)}
                k = index.get(id(cur))
                if k is not None:
                    mode = self._last_mode_in_block(parent, k)
                    if mode is not None:
                        return None if mode == "mixed" else mode
            if isinstance(parent, cst.FunctionDef):
                if _depth > 2:
                    return None
                sites = self.call_sites(parent)
                if not sites:
                    return None
                modes = {self.mode_before(self.m.statement_of(s), _depth + 1) for s in sites}
                return modes.pop() if len(modes) == 1 else None
            if isinstance(parent, (cst.ClassDef, cst.Lambda)):
                return None
            if isinstance(parent, _LOOPS) and self.statement_mode(parent, training_loops=False) is not None:
                # the loop sets modes around `node`: what runs before the next iteration decides
                return None
            cur = parent

    def passes_to_unknown(self, node: cst.CSTNode, exprs: Iterable[str]) -> bool:
        """Does `node` pass one of these expressions (by code) to a function the file does not
        define (which might do anything with it)?"""
        wanted = set(exprs)
        for call in self.calls_in(node, into_defs=False):
            if self.file_functions(call):
                continue
            q = self.m.qualname(call.func) or ""
            if isinstance(call.func, cst.Name) and call.func.value in ("print", "len", "isinstance", "getattr", "hasattr", "callable", "type", "id", "str", "repr"):
                continue
            if q.startswith("torch.") and not q.startswith("torch.func"):
                continue
            for a in call.args:
                d = dotted(a.value)
                if d is not None and d in wanted:
                    return True
        return False

    def frameworks_drive_loop(self) -> bool:
        return bool(self.m.frameworks & LOOP_FRAMEWORKS)


def argument_for(fn: cst.FunctionDef, call: cst.Call, param: str) -> cst.BaseExpression | None:
    """The argument a call of `fn` passes for its parameter `param` (None when it passes none, or
    the call unpacks `*args`/`**kwargs`). The receiver is not passed: `obj.method(x)` binds `x` to
    the parameter after `self`, and so does a constructor call `Trainer(x)` of `__init__(self, x)`
    (whatever the call's form: `Trainer(x)`, `mod.Trainer(x)`, `super().__init__(x)`); an explicit
    `Base.__init__(self, x)` passes it."""
    params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
    f = call.func
    unbound_init = isinstance(f, cst.Attribute) and f.attr.value == "__init__" and not isinstance(f.value, cst.Call)
    if params and not unbound_init and (
        fn.name.value == "__init__" or (params[0] in ("self", "cls") and isinstance(f, cst.Attribute))
    ):
        params = params[1:]
    pos = 0
    for a in call.args:
        if a.star:
            return None
        if a.keyword is not None:
            if a.keyword.value == param:
                return a.value
            continue
        if pos < len(params) and params[pos] == param:
            return a.value
        pos += 1
    return None


# ---------------------------------------------------------------------------------------------
# DataLoaders and keyword-argument edits (used by the GL5 rules)
# ---------------------------------------------------------------------------------------------

DATALOADER_QUALNAMES = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})


def loader_call_of(model: ScriptModel, expr: cst.BaseExpression | None, _depth: int = 0) -> cst.Call | None:
    """The `DataLoader(...)` call a batch value comes from: `for x, y in loader`, `for batch in
    tqdm(loader)` with `x, y = batch`, `enumerate(loader)`. None when it cannot tell."""
    if expr is None or _depth > 4:
        return None
    if isinstance(expr, cst.Call):
        return expr if model.qualname(expr.func) in DATALOADER_QUALNAMES else None
    if isinstance(expr, cst.Subscript):
        return loader_call_of(model, expr.value, _depth + 1)
    if not isinstance(expr, (cst.Name, cst.Attribute)):
        return None
    found = None
    name = dotted(expr)
    for b in _bindings_in_own_loop(model, expr, model.bindings_of(expr)):
        value = b.value
        if b.how == "unpack" and isinstance(value, (cst.Tuple, cst.List)) and len(b.index) == 1 and b.index[0] < len(value.elements):
            value = value.elements[b.index[0]].value
        if b.how in ("assign", "unpack") and _moves_itself(value, name):
            continue  # `x = x.to(device)`, `x, y = x.to(d), y.to(d)`: says nothing new
        if b.how == "for":
            source, _ = model.unwrap_iterable(b.value, b.index)
            call = loader_source(model, source, _depth + 1)
        elif b.how == "unpack" and isinstance(b.value, (cst.Name, cst.Attribute)):
            call = loader_call_of(model, b.value, _depth + 1)
        elif b.how == "assign" and isinstance(b.value, cst.Call) and model.qualname(b.value.func) in DATALOADER_QUALNAMES:
            call = b.value
        else:
            return None
        if call is None or (found is not None and call is not found):
            return None
        found = call
    return found


def _bindings_in_own_loop(model: ScriptModel, expr: cst.CSTNode, bindings: list) -> list:
    """The bindings of `expr`'s name that can reach it when it lies in a loop that re-binds the
    name on every iteration before `expr` runs: its own `for` target (`for x, y in loader:`) or a
    statement of the loop's body before `expr` (`x, y = batch`). Bindings outside that loop (a
    train loop and a val loop that unpack the same names) cannot reach `expr` then. Otherwise all
    of them."""
    if len(bindings) < 2 or expr not in model.order:
        return bindings
    for loop in model.ancestors(expr):
        if not isinstance(loop, (cst.For, cst.While)):
            continue
        inside = [b for b in bindings if b.node in model.order and model.contains(loop, b.node)]
        if not inside or len(inside) == len(bindings):
            continue
        for b in inside:
            if b.how == "for" and isinstance(loop, cst.For) and model.contains(loop.target, b.node):
                if model.contains(loop.body, expr):
                    return inside
                continue
            stmt = model.statement_of(b.node)
            block = model.parent(stmt) if stmt is not None else None
            if (
                block is loop.body
                and model.precedes(stmt, expr)
                and not model.contains(stmt, expr)
            ):
                return inside
    return bindings


def _moves_itself(value: cst.BaseExpression | None, name: str | None) -> bool:
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        value = value.func.value
        if dotted(value) == name:
            return True
    return False


def loader_source(model: ScriptModel, source: cst.BaseExpression | None, _depth: int = 0) -> cst.Call | None:
    """The DataLoader call behind an iterated expression (`loader`, `DataLoader(...)`); else the
    one the flow engine knows the expression holds (a loader returned by a file function, kept in
    a `self` attribute from a constructor argument)."""
    if isinstance(source, cst.Call):
        return source if model.qualname(source.func) in DATALOADER_QUALNAMES else None
    if isinstance(source, (cst.Name, cst.Attribute)):
        calls = [b.value for b in model.bindings_of(source) if b.how == "assign"]
        if len(calls) == 1 and isinstance(calls[0], cst.Call) and model.qualname(calls[0].func) in DATALOADER_QUALNAMES:
            return calls[0]
        v = model.value_of(source)
        o = v.origin
        if v.kind == "loader" and isinstance(o, cst.Call) and model.qualname(o.func) in DATALOADER_QUALNAMES:
            return o
    return None


_COMPREHENSIONS = (cst.DictComp, cst.ListComp, cst.SetComp, cst.GeneratorExp)


def batch_loader_call(m: ScriptModel, recv: cst.BaseExpression | None) -> cst.Call | None:
    """The DataLoader call a moved value comes from (`loader_call_of`), also when the value is the
    variable of a comprehension over a batch: `{k: v.to(d) for k, v in batch.items()}`,
    `[t.to(d) for t in batch]` with `batch` a loop variable over a loader. None when it cannot
    tell."""
    loader = loader_call_of(m, recv)
    if loader is not None or not isinstance(recv, cst.Name):
        return loader
    for anc in m.ancestors(recv):
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return None
        if not isinstance(anc, _COMPREHENSIONS):
            continue
        comp = anc.for_in
        while comp is not None:
            if recv.value in _target_names(comp.target):
                return _iterated_batch_loader(m, comp.iter, anc)
            comp = comp.inner_for_in
    return None


def _target_names(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        names: set[str] = set()
        for el in target.elements:
            names |= _target_names(el.value)
        return names
    return set()


def _iterated_batch_loader(m: ScriptModel, it: cst.BaseExpression, comp: cst.CSTNode) -> cst.Call | None:
    """`batch.items()` / `batch.values()` / `batch` iterated by a comprehension: the loader `batch`
    is a loop variable of, when exactly one binding of `batch` outside the comprehension's own
    statement reaches it (`batch = {k: v.to(d) for k, v in batch.items()}` rebinds the name with
    the comprehension itself) and that binding is a `for` over a loader."""
    if (
        isinstance(it, cst.Call)
        and isinstance(it.func, cst.Attribute)
        and it.func.attr.value in ("items", "values")
        and not it.args
    ):
        it = it.func.value
    if not isinstance(it, (cst.Name, cst.Attribute)):
        return None
    stmt = m.statement_of(comp)
    reaching = [b for b in m.bindings_of(it) if stmt is None or not m.contains(stmt, b.node)]
    if len(reaching) != 1 or reaching[0].how != "for":
        return loader_call_of(m, it)
    source, _ = m.unwrap_iterable(reaching[0].value, reaching[0].index)
    return loader_source(m, source)



def forwarded_keywords(model: ScriptModel, call: cst.Call) -> set[str] | None:
    """The keyword names that reach `call` through its `*args` / `**kwargs`, when each star argument
    is the enclosing (module-level) function's own star parameter and every call of that function in
    the file is plain (no star argument, no positional beyond the named parameters): the keywords
    the call sites pass that name no parameter (`get_data_loader(ds, batch_size=8, shuffle=True)`
    into `DataLoader(dataset, batch_size=batch_size, **loader_kwargs)` gives {"shuffle"}). None when
    it cannot tell; the empty set for a call without star arguments."""
    stars = [a for a in call.args if a.star]
    if not stars:
        return set()
    fn = model.enclosing(call, cst.FunctionDef)
    if fn is None or model.class_of(fn) is not None:
        return None
    p = fn.params
    star_arg = p.star_arg.name.value if isinstance(p.star_arg, cst.Param) else None
    star_kw = p.star_kwarg.name.value if p.star_kwarg is not None else None
    for a in stars:
        if not isinstance(a.value, cst.Name):
            return None
        if not ((a.star == "*" and a.value.value == star_arg) or (a.star == "**" and a.value.value == star_kw)):
            return None
    sites = model.call_sites(fn)
    if not sites:
        return None
    positional = [q.name.value for q in (*p.posonly_params, *p.params)]
    named = set(positional) | {q.name.value for q in p.kwonly_params}
    out: set[str] = set()
    for site in sites:
        if any(a.star for a in site.args):
            return None
        if sum(1 for a in site.args if a.keyword is None) > len(positional):
            return None
        out |= {a.keyword.value for a in site.args if a.keyword is not None and a.keyword.value not in named}
    return out


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a
    return None


def set_keyword_edit(ctx, call: cst.Call, name: str, value: str):
    """An edit that makes `call` pass `name=value`: replaces an existing value or appends the
    argument (after a trailing comma when there is one)."""
    existing = keyword(call, name)
    if existing is not None:
        return ctx.replace(existing.value, value)
    if not call.args:
        _, end = ctx.span(call)
        return ctx.insert_text(end - 1, f"{name}={value}")
    last = call.args[-1]
    if isinstance(last.comma, cst.Comma):
        _, comma_end = ctx.span(last.comma)
        _, call_end = ctx.span(call)
        indent = ctx.indent_of(last)
        if "\n" in ctx.source[comma_end:call_end] and not indent.strip():
            # one argument per line: add ours on its own line
            line_end = ctx.source.index("\n", comma_end) if "\n" in ctx.source[comma_end:] else comma_end
            if not ctx.source[comma_end:line_end].strip():
                return ctx.insert_text(line_end + 1, f"{indent}{name}={value},{ctx.newline}")
        return ctx.insert_text(comma_end, f" {name}={value},")
    arg_start, value_end = ctx.span(last)
    src = ctx.source
    indent = src[src.rfind("\n", 0, arg_start) + 1 : arg_start]
    _, call_end = ctx.span(call)
    if not indent.strip() and "\n" in src[value_end:call_end]:
        # one argument per line, no trailing comma: ours goes on a line of its own after the last
        eol = src.find("\n", value_end)
        if not src[value_end:eol].strip():
            return ctx.insert_text(value_end, f",{ctx.newline}{indent}{name}={value}")
    return ctx.insert_text(value_end, f", {name}={value}")


def _sets_requires_grad(a: cst.Assign) -> bool:
    """`x.requires_grad = True` (any value but the literal False)."""
    return any(
        isinstance(t.target, cst.Attribute) and t.target.attr.value == "requires_grad" for t in a.targets
    ) and not is_bool(a.value, False)


_SCORE_PARENTS = (cst.UnaryOperation, cst.BinaryOperation, cst.Comparison, cst.ComparisonTarget, cst.Element,
                  cst.AugAssign)


def score_eval(m, call: cst.Call) -> bool:
    """`x.eval()` whose result is used as a number, not a module: an operand (`-node.eval()`), a
    comparison, an item of a display (`queue.put((node.eval(), node))`), the argument of a numeric
    builtin (`float(h.eval())`). `Module.eval()` returns the module; a beam-search hypothesis's
    `eval()` returns its score (eval-historical-texts' BeamSearchNode, precision51 P51-4), and
    taking it for eval mode put the model's own training step under `no_grad`."""
    parent = m.parent(call)
    if isinstance(parent, _SCORE_PARENTS):
        return True
    if isinstance(parent, cst.Arg):
        outer = m.parent(parent)
        return (isinstance(outer, cst.Call) and isinstance(outer.func, cst.Name)
                and outer.func.value in ("float", "int", "round", "abs", "max", "min", "sum", "sorted", "heappush"))
    return False


def torch_loss_value(m, func) -> bool:
    """A loss module of torch known by the engine's value, whatever its name (`crit = criterion`
    with `criterion = nn.MSELoss()`: the name says nothing; probe69 alias, Q:G69-6)."""
    from gpulint import kb

    v = m.value_of(func)
    if v.kind != "module" or not isinstance(v.origin, cst.Call):
        return False
    q = m.qualname(v.origin.func) or ""
    if not q.startswith("torch.nn."):
        return False
    last = q.rsplit(".", 1)[-1]
    if last.endswith("WithLoss"):
        return False  # `AdaptiveLogSoftmaxWithLoss` has weights of its own: a network's head
    return last.endswith("Loss") or "loss" in kb.class_tags(q)
