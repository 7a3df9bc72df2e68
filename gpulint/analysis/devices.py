"""Device facts shared by the GL108-GL115 rules: statement order, reaching bindings, which model
built an optimizer, where a tensor lives, which device expression is visible where.

Everything here is static: it reads the LibCST tree through the ScriptModel and never imports
torch. Answers are conservative: `None` / `False` / empty when the analysis cannot tell.

Candidates for the ScriptModel (general capabilities, not device-specific):
- `order(node)`, `runs_before(a, b)`, `follows_in_block(a, b)`: execution order of statements
- `reaching_bindings(name)`: the bindings that can reach one use of a name (straight-line code)
- `references(bindings)`: the Name nodes that read a binding list
- `lookup(name, at)` / `visible_at(expr, at)`: is an expression's name defined where code is inserted
- `optimizer_models(O)`: the modules whose `.parameters()` built an optimizer
"""

from __future__ import annotations

import re

import libcst as cst

from gpulint.model import (
    NON_TENSOR_METHODS,
    TENSOR_FACTORIES,
    TENSOR_FUNCTIONS,
    Binding,
    Kind,
    Move,
    ScriptModel,
)

_BLOCK_OWNERS = (cst.IndentedBlock, cst.Module, cst.SimpleStatementSuite)
_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
_LOOPS = (cst.For, cst.While)

ACCELERATOR_PREFIXES = ("cuda", "mps", "xpu", "hpu", "npu", "xla")


class DeviceFacts:
    def __init__(self, model: ScriptModel) -> None:
        self.m = model
        self._order: dict[cst.CSTNode, int] = {}
        self._names: dict[str, list[cst.Name]] = {}
        self.strings: list[cst.SimpleString] = []
        self._order = model.order  # the model's one walk, not a second one
        for node in model.nodes:
            t = type(node)
            if t is cst.Name:
                self._names.setdefault(node.value, []).append(node)
            elif t is cst.SimpleString:
                self.strings.append(node)
        self._targets = {id(b.node) for bs in model.bindings.values() for b in bs}
        self._acc_cache: dict[cst.CSTNode, bool] = {}
        self._acc_busy: set = set()

    # order and blocks --------------------------------------------------------------------------
    def order(self, node: cst.CSTNode) -> int:
        return self._order.get(node, -1)

    def block_and_index(self, stmt: cst.CSTNode) -> tuple[cst.CSTNode | None, int]:
        """The block (IndentedBlock / Module / one-line suite) holding `stmt`, and its index there."""
        parent = self.m.parent(stmt)
        if isinstance(parent, _BLOCK_OWNERS):
            for i, s in enumerate(parent.body):
                if s is stmt:
                    return parent, i
        return None, -1

    def _statement_in(self, node: cst.CSTNode, block: cst.CSTNode) -> cst.CSTNode | None:
        """The ancestor-or-self of `node` that is a statement directly in `block`."""
        cur = node
        while cur is not None:
            parent = self.m.parent(cur)
            if parent is block:
                return cur
            if isinstance(cur, _SCOPES) and cur is not node:
                return None
            cur = parent
        return None

    def _header_part(self, node: cst.CSTNode, stmt: cst.BaseCompoundStatement) -> bool:
        """Is `node` in the part of a compound statement that always runs when it runs
        (an `if`/`while` test, a `for` iterable and target, `with` items, a `with`/`try` body)?"""
        cur = node
        while cur is not None:
            parent = self.m.parent(cur)
            if parent is stmt:
                if isinstance(stmt, cst.If):
                    return cur is stmt.test
                if isinstance(stmt, cst.While):
                    return cur is stmt.test
                if isinstance(stmt, (cst.For,)):
                    return cur is stmt.iter or cur is stmt.target
                if isinstance(stmt, cst.With):
                    return True  # items and body
                if isinstance(stmt, cst.Try):
                    return cur is stmt.body or cur is stmt.finalbody
                return False
            cur = parent
        return False

    def always_reaches(self, node: cst.CSTNode, upto: cst.CSTNode) -> bool:
        """Does `node` run whenever the statement `upto` (an ancestor) runs? (no `if`/loop body,
        no handler, no nested function in between)."""
        cur = node
        while cur is not None and cur is not upto:
            parent = self.m.parent(cur)
            if isinstance(parent, _SCOPES):
                return False
            if isinstance(parent, cst.BaseCompoundStatement) and not self._header_part(cur, parent):
                return False
            if isinstance(parent, cst.Else) or isinstance(parent, cst.ExceptHandler):
                return False
            cur = parent
        return cur is upto

    def runs_before(self, a: cst.CSTNode, b: cst.CSTNode, *, a_always: bool = True, b_always: bool = False) -> bool:
        """`a` runs before `b` in the same scope: their statements share a block and `a`'s comes
        first (or `a` is in the header of a compound statement whose body holds `b`).
        With `a_always`, `a` must run whenever that block's statement runs (dominance); with
        `b_always`, `b` must (`b` post-dominates `a`)."""
        if self.m.scope_of(a) is not self.m.scope_of(b):
            return False
        sa = self.m.statement_of(a)
        if sa is None:
            return False
        # header of a compound statement that contains b
        if isinstance(sa, cst.BaseCompoundStatement) and self._header_part(a, sa):
            if self._inside(b, sa) and not self._header_part(b, sa):
                return True
        cur = sa
        while cur is not None:
            block, idx = self.block_and_index(cur)
            if block is None:
                return False
            other = self._statement_in(b, block)
            if other is not None and other is not cur:
                j = block.body.index(other)
                if j <= idx:
                    return False
                if a_always and not self.always_reaches(a, cur):
                    return False
                if b_always and not self.always_reaches(b, other):
                    return False
                return True
            # go up one statement
            owner = self.m.parent(block)
            if isinstance(owner, (cst.Else, cst.ExceptHandler, cst.Finally)):
                owner = self.m.parent(owner)
            if owner is None or isinstance(owner, _SCOPES) or isinstance(block, cst.Module):
                return False
            if not isinstance(owner, cst.BaseCompoundStatement):
                return False
            if self._inside(b, owner):
                return False  # same compound statement, other branch or earlier part
            cur = owner
        return False

    def _inside(self, node: cst.CSTNode, anc: cst.CSTNode) -> bool:
        if node is anc:
            return True
        return any(a is anc for a in self.m.ancestors(node))

    def in_loop_with(self, a: cst.CSTNode, b: cst.CSTNode) -> cst.CSTNode | None:
        """The innermost loop of the same scope that contains both nodes."""
        for anc in self.m.ancestors(a):
            if isinstance(anc, _SCOPES):
                return None
            if isinstance(anc, _LOOPS) and self._inside(b, anc):
                return anc
        return None

    # names --------------------------------------------------------------------------------------
    def _is_read(self, n: cst.Name) -> bool:
        parent = self.m.parent(n)
        if id(n) in self._targets:
            return False
        if isinstance(parent, cst.Attribute) and parent.attr is n:
            return False
        if isinstance(parent, cst.Arg) and parent.keyword is n:
            return False
        if isinstance(parent, (cst.ImportAlias, cst.AsName, cst.FunctionDef, cst.ClassDef, cst.Param)):
            return False
        if isinstance(parent, (cst.Global, cst.Nonlocal, cst.NameItem)):
            return False
        return True

    def references(self, name: str, bindings: list[Binding]) -> list[cst.Name]:
        """Name nodes that read `name` and resolve to this very list of bindings."""
        out = []
        for n in self._names.get(name, []):
            if not self._is_read(n):
                continue
            if self.m.bindings_of(n) is bindings:
                out.append(n)
        return out

    def lookup(self, name: str, at: cst.CSTNode) -> list[Binding]:
        scope = self.m.scope_of(at)
        found = self.m.bindings.get((scope, name))
        if found:
            return found
        if scope is not self.m.module:
            for anc in self.m.ancestors(scope):
                if isinstance(anc, (cst.FunctionDef, cst.Lambda)):
                    found = self.m.bindings.get((anc, name))
                    if found:
                        return found
        return self.m.bindings.get((self.m.module, name), [])

    def visible_at(self, expr: cst.BaseExpression, at: cst.CSTNode) -> bool:
        """Can `expr` (written elsewhere) be evaluated at `at`: every name it reads is imported, or
        bound in an enclosing scope, or bound earlier in `at`'s own scope."""
        names: list[cst.Name] = []

        class V(cst.CSTVisitor):
            def visit_Attribute(self, node: cst.Attribute) -> bool:
                node.value.visit(self)
                return False

            def visit_Arg(self, node: cst.Arg) -> bool:
                node.value.visit(self)
                return False

            def visit_Name(self, node: cst.Name) -> None:
                names.append(node)

            def visit_Lambda(self, node: cst.Lambda) -> bool:
                return False

            def visit_comprehension(self, node) -> bool:  # pragma: no cover - rare in devices
                return False

        expr.visit(V())
        scope = self.m.scope_of(at)
        for n in names:
            if n.value in ("True", "False", "None"):
                continue
            if n.value in self.m.aliases:
                continue
            bs = self.lookup(n.value, at)
            if not bs:
                return False
            same_scope = [b for b in bs if self.m.scope_of(b.node) is scope]
            if same_scope and not any(self._binding_precedes(b, at) for b in same_scope):
                return False
            if not same_scope and scope is self.m.module:
                return False
            if not same_scope and all(self._under_main_guard(b.node, at) for b in bs):
                return False  # a global only the `__main__` block binds: undefined when the file is imported
        return True

    def _under_main_guard(self, node: cst.CSTNode, at: cst.CSTNode) -> bool:
        """`node` is inside a module-level `if __name__ == "__main__":` block that does not hold
        `at` (TorchSemiSeg's hrnet.py binds `device` only in its smoke test; a method of the file
        that reads it raises NameError when a training script imports the module)."""
        for anc in self.m.ancestors(node):
            if isinstance(anc, cst.If) and self.m.parent(anc) is self.m.module:
                test = self.m.module.code_for_node(anc.test)
                return "__name__" in test and "__main__" in test and not self._inside(at, anc)
        return False

    def _binding_precedes(self, b: Binding, at: cst.CSTNode) -> bool:
        if b.how == "param":
            return True
        stmt = self.m.statement_of(b.node)
        if stmt is None:
            return False
        if b.how == "for" and self._inside(at, stmt):
            return True
        if self._inside(at, stmt):
            return False
        return self.order(stmt) < self.order(at)

    def reaching_bindings(self, use: cst.Name) -> list[Binding]:
        """The bindings of `use`'s name that may reach it. In straight-line code this is the last
        binding before it (plus loop-carried ones); otherwise every binding of the name."""
        bindings = self.m.bindings_of(use)
        if not bindings:
            return []
        scope = self.m.scope_of(use)
        local = [b for b in bindings if self.m.scope_of(b.node) is scope]
        if not local or len(local) != len(bindings):
            return list(bindings)
        before = [b for b in local if self._binding_precedes(b, use)]
        if not before:
            return list(bindings)
        last = max(before, key=lambda b: self.order(self.m.statement_of(b.node)))
        last_stmt = self.m.statement_of(last.node)
        if last.how == "for":
            dominates = self._inside(use, last_stmt)
        else:
            dominates = self.runs_before(last.node, use)
        if not dominates:
            return list(bindings)
        out = [last]
        for b in local:
            if b is last or b in before:
                continue
            loop = self.in_loop_with(use, b.node)
            if loop is not None and not self._inside(last.node, loop):
                out.append(b)
        return out

    # optimizers ---------------------------------------------------------------------------------
    def optimizer_models(self, opt: cst.BaseExpression) -> list[cst.Name]:
        """The module names whose `.parameters()` (or `.named_parameters()`) built optimizer `opt`."""
        bindings = self.m.bindings_of(opt) if isinstance(opt, (cst.Name, cst.Attribute)) else []
        if len(bindings) > 1 and isinstance(opt, cst.Name):
            reaching = self._straight_line_reaching(opt, bindings)
            bindings = [reaching] if reaching is not None else bindings
        ctors = [b.value for b in bindings if b.how == "assign" and isinstance(b.value, cst.Call)]
        if len(ctors) != 1 or len(bindings) != 1:
            return []
        found: list[cst.Name] = []
        self._param_roots(ctors[0], found, 0)
        if not found:
            self._returned_param_roots(ctors[0], found)
        return found

    def _straight_line_reaching(self, use: cst.Name, bindings):
        """The binding of `use` that reaches it when every binding is a plain assignment written
        as a statement of the scope's own body or of `with` blocks in it (none under an `if`, a loop,
        a `try` or a `with contextlib.suppress(...)`)
        and one of them runs before the use: the last such one (a notebook that trains, then
        rebuilds `model`/`optimizer` under the same names to resume). None otherwise."""
        m = self.m
        scope = m.scope_of(use)
        for b in bindings:
            if b.how != "assign" or m.scope_of(b.node) is not scope:
                return None
            block, _ = self.block_and_index(m.statement_of(b.node))
            if block is None:
                return None
            cur = block
            while cur is not scope and m.parent(cur) is not scope:
                owner = m.parent(cur)
                if not isinstance(owner, cst.With) or any(
                        "suppress" in (m.qualname(it.item.func) or "") for it in owner.items
                        if isinstance(it.item, cst.Call)):
                    return None
                cur = m.parent(owner)
                if cur is None:
                    return None
        before = [b for b in bindings if self.runs_before(b.node, use, a_always=True)]
        if not before:
            return None
        return max(before, key=lambda b: self.order(m.statement_of(b.node)))

    def _returned_param_roots(self, call: cst.Call, found: list) -> None:
        """`optimizer = make_optimizer(model)` where the file's `make_optimizer(model, ...)` returns
        `torch.optim.Adam(model.parameters(), ...)`: the arguments given for the parameters whose
        `.parameters()` built what it returns."""
        m = self.m
        if not isinstance(call.func, cst.Name):
            return
        fn = m.module_function(call.func.value)
        if fn is None:
            return
        for ret in m.walk(fn.body, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            if not isinstance(ret, cst.Return) or not isinstance(ret.value, cst.Call):
                continue
            if (m.qualname(ret.value.func) or "").rsplit(".", 1)[0] not in ("torch.optim", "torch.optim.adam",
                                                                              "torch.optim.sgd", "torch.optim.adamw"):
                continue
            for inner in [ret.value, *m.calls_in(ret.value)]:
                f = inner.func
                if not (isinstance(f, cst.Attribute) and f.attr.value in ("parameters", "named_parameters")
                        and isinstance(f.value, cst.Name)):
                    continue
                root = f.value
                if not any(b.how == "param" for b in m.bindings_of(root)):
                    continue
                arg = _argument_for(fn, root.value, call)
                if not isinstance(arg, cst.Name) or any(isinstance(x, cst.Name) and x.value == arg.value for x in found):
                    continue
                if m.kind_of(arg) is Kind.MODULE or m.value_of(arg).kind == "module":
                    found.append(arg)

    def callee_moves(self, expr: cst.BaseExpression, depth: int = 0) -> list[Move]:
        """Calls in the scope of the module name `expr` that hand it to a function of this file
        which moves that parameter in place (`do_train(model, ...)` whose
        `create_supervised_trainer(model, ...)` runs `model.to(device)`), each as a move made at
        the call (reid-strong-baseline#114)."""
        m = self.m
        if not isinstance(expr, cst.Name) or depth > 2:
            return []
        scope = m.scope_of(expr)
        calls = m.calls if scope is m.module else m.calls_in(scope, (cst.FunctionDef, cst.ClassDef, cst.Lambda))
        out: list[Move] = []
        for call in calls:
            if not isinstance(call.func, cst.Name) or m.scope_of(call) is not scope:
                continue
            fn = m.module_function(call.func.value)
            if fn is None:
                continue
            for i, a in enumerate(call.args):
                if a.star or not isinstance(a.value, cst.Name) or a.value.value != expr.value:
                    continue
                name = _parameter_named(fn, i, a)
                inner = self._moves_parameter(fn, name, depth) if name is not None else None
                if inner is not None:
                    out.append(Move(call, inner.device, inner.method))
                    break
        return out

    def _moves_parameter(self, fn: cst.FunctionDef, name: str, depth: int) -> Move | None:
        """The in-place move of the parameter `name` that `fn` makes (`name.to(device)`,
        `name.cuda()`, or through another function of the file it hands `name` to); None when
        there is none, or when one moves it to the CPU."""
        m = self.m
        found = None
        for call in m.calls_in(fn, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            f = call.func
            if (isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == name
                    and f.attr.value in ("to", "cuda", "cpu")):
                if call.args and call.args[0].keyword is not None and call.args[0].keyword.value != "device":
                    continue  # `.to(dtype=...)`
                mv = Move(call, call.args[0].value if call.args and f.attr.value != "cpu" else None, f.attr.value)
                if mv.to_cpu or self.device_is_cpu(mv.device):
                    return None
                found = found or mv
            elif isinstance(f, cst.Name) and depth < 2:
                callee = m.module_function(f.value)
                if callee is None or callee is fn:
                    continue
                for i, a in enumerate(call.args):
                    if not a.star and isinstance(a.value, cst.Name) and a.value.value == name:
                        pname = _parameter_named(callee, i, a)
                        mv = self._moves_parameter(callee, pname, depth + 1) if pname is not None else None
                        if mv is not None:
                            found = found or mv
        return found

    def _method_of_own_params(self, recv: cst.BaseExpression, meth: str) -> bool:
        """`recv` is an instance of a module class of the file whose method `meth` returns the
        instance's own parameters (a `return` holding `self.parameters()` or
        `self.<part>.parameters()`)."""
        m = self.m
        v = m.value_of(recv)
        if v.kind != "module" or v.cls is None or v.cls not in m.classes or meth in ("parameters", "named_parameters"):
            return False
        found = m.method_of_class(v.cls, meth)
        if found is None:
            return False
        for c in m.calls_in(found[0]):
            f = c.func
            if not (isinstance(f, cst.Attribute) and f.attr.value in ("parameters", "named_parameters")):
                continue
            root = f.value
            while isinstance(root, cst.Attribute):
                root = root.value
            if not (isinstance(root, cst.Name) and root.value == "self"):
                continue
            if any(isinstance(a, cst.Return) for a in m.ancestors(c)):
                return True
        return False

    def _param_roots(self, node: cst.CSTNode, found: list, depth: int) -> None:
        m = self.m
        if depth > 2:
            return

        facts = self

        class V(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                f = call.func
                if isinstance(f, cst.Attribute) and f.attr.value in ("parameters", "named_parameters"):
                    root = f.value
                    while isinstance(root, cst.Attribute) and not (
                        isinstance(root.value, cst.Name) and root.value.value == "self"
                    ):
                        root = root.value
                    if isinstance(root, (cst.Name, cst.Attribute)) and (
                            m.kind_of(root) is Kind.MODULE or _host_module(m, root)):
                        # (`self.model` a constructor argument: the engine knows it is a module on
                        # the host there, E46-2; not one an imported builder returned, which may
                        # have placed it: BIT_CD's `define_G(args, gpu_ids)`)
                        if not any(m.module.code_for_node(root) == m.module.code_for_node(x) for x in found):
                            found.append(root)
                elif (isinstance(f, cst.Attribute) and isinstance(f.value, (cst.Name, cst.Attribute))
                      and facts._method_of_own_params(f.value, f.attr.value)
                      and not any(m.module.code_for_node(f.value) == m.module.code_for_node(x) for x in found)):
                    # `Adam(model.set_train_params(lrs))`: a method of the model's class returning
                    # parameter groups of `self.encoder.parameters()`, ... (mrs, E52-1)
                    found.append(f.value)

            def visit_Name(self, name: cst.Name) -> None:
                if name is node:
                    return
                bs = m.bindings_of(name)
                if len(bs) == 1 and bs[0].how == "assign" and bs[0].value is not None:
                    facts._param_roots(bs[0].value, found, depth + 1)

        if isinstance(node, cst.Call):
            for a in node.args:
                a.value.visit(V())
        else:
            node.visit(V())

    # devices ------------------------------------------------------------------------------------
    def device_is_cpu(self, d: cst.BaseExpression | None, depth: int = 0) -> bool:
        """The device expression is known to be the CPU."""
        if d is None or depth > 4:
            return False
        if isinstance(d, cst.SimpleString):
            v = d.evaluated_value
            return isinstance(v, str) and v.split(":", 1)[0] == "cpu"
        if isinstance(d, cst.Call) and self.m.qualname(d.func) == "torch.device" and d.args:
            return self.device_is_cpu(d.args[0].value, depth + 1)
        if isinstance(d, (cst.Name, cst.Attribute)):
            bs = self.m.bindings_of(d)
            vals = [b.value for b in bs if b.how == "assign"]
            return bool(bs) and len(vals) == len(bs) and all(self.device_is_cpu(v, depth + 1) for v in vals)
        return False

    def device_may_be_accelerator(self, d: cst.BaseExpression | None, depth: int = 0) -> bool:
        """The device expression can be shown to name an accelerator on some machine:
        `"cuda"`, `torch.device("cuda" if ... else "cpu")`, an index, a name bound to one of those
        (through parameters and call sites)."""
        m = self.m
        if d is None or depth > 5:
            return False
        if isinstance(d, cst.SimpleString):
            v = d.evaluated_value
            return isinstance(v, str) and v.split(":", 1)[0] in ACCELERATOR_PREFIXES
        if isinstance(d, (cst.FormattedString, cst.ConcatenatedString)):
            return "cuda" in m.module.code_for_node(d)
        if isinstance(d, cst.Integer):
            return True
        if isinstance(d, cst.IfExp):
            return self.device_may_be_accelerator(d.body, depth + 1) or self.device_may_be_accelerator(d.orelse, depth + 1)
        if isinstance(d, cst.Call):
            q = m.qualname(d.func)
            if q == "torch.device" and d.args:
                return self.device_may_be_accelerator(d.args[0].value, depth + 1)
            if q in ("torch.cuda.current_device", "torch.accelerator.current_accelerator"):
                return True
            if isinstance(d.func, cst.Name) and d.func.value in m.functions and len(m.functions[d.func.value]) == 1:
                return self._returns_accelerator(m.functions[d.func.value][0], depth + 1)
            return False
        if isinstance(d, (cst.Name, cst.Attribute)):
            if isinstance(d, cst.Attribute) and d.attr.value == "device" and m.kind_of(d.value) in (Kind.MODULE, Kind.TENSOR):
                return False  # x.device: wherever x is; not a hard-coded choice
            if isinstance(d, cst.Attribute) and isinstance(d.value, cst.Name):
                from gpulint.flow import argparse_default, is_parsed_namespace

                if is_parsed_namespace(m, d.value):
                    # `args.device` of `parser.add_argument("--device", default="cuda" if ... else
                    # "cpu")`: what the option's default names (probe69 E69-5)
                    default = argparse_default(m, d.attr.value)
                    return default is not None and self.device_may_be_accelerator(default, depth + 1)
            for b in m.bindings_of(d):
                if b.how == "param":
                    vals = list(m.param_arguments(b))
                    if isinstance(b.value, cst.BaseExpression):
                        vals.append(b.value)
                    vals.extend(self._class_init_arguments(b))
                    if any(self.device_may_be_accelerator(v, depth + 1) for v in vals):
                        return True
                elif b.how == "assign" and self.device_may_be_accelerator(b.value, depth + 1):
                    return True
        return False

    def _returns_accelerator(self, fn: cst.FunctionDef, depth: int) -> bool:
        found = []

        class V(cst.CSTVisitor):
            def visit_Return(self, node: cst.Return) -> None:
                if node.value is not None:
                    found.append(node.value)

        fn.body.visit(V())
        return any(self.device_may_be_accelerator(v, depth) for v in found)

    def _class_init_arguments(self, b: Binding) -> list[cst.BaseExpression]:
        """Arguments passed for an `__init__` parameter at the class's constructor calls."""
        fn = self.m.enclosing(b.node, cst.FunctionDef)
        if not isinstance(fn, cst.FunctionDef) or fn.name.value != "__init__":
            return []
        cls = self.m.class_of(fn)
        if cls is None:
            return []
        params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)][1:]
        out = []
        for call in self.m.calls:
            if not (isinstance(call.func, cst.Name) and call.func.value == cls.name.value):
                continue
            pos = 0
            for a in call.args:
                if a.star:
                    break
                if a.keyword is None:
                    if pos < len(params) and params[pos] == b.name:
                        out.append(a.value)
                    pos += 1
                elif a.keyword.value == b.name:
                    out.append(a.value)
        return out

    def accelerator_moves(self, expr: cst.BaseExpression) -> list[Move]:
        """Moves of a module/tensor name to a non-CPU device, or [] when it is also moved back to
        the CPU somewhere (then where it is at a given line is not known)."""
        moves = self.m.moves_of(expr)
        if any(mv.to_cpu or self.device_is_cpu(mv.device) for mv in moves):
            return []
        return [mv for mv in moves if not (mv.method == "device=" and self.device_is_cpu(mv.device))]

    def on_accelerator(self, e: cst.BaseExpression | None, depth: int = 0) -> bool:
        """Is the tensor `e` known to live on an accelerator (model output of a moved model,
        moved with `.to(device)` / `.cuda()`, or computed from such tensors)?"""
        if e is None or depth > 12:
            return False
        cached = self._acc_cache.get(e)
        if cached is not None:
            return cached
        if e in self._acc_busy:
            return False
        self._acc_busy.add(e)
        try:
            r = self._on_accelerator(e, depth)
        finally:
            self._acc_busy.discard(e)
        self._acc_cache[e] = r
        return r

    def _on_accelerator(self, e: cst.BaseExpression, depth: int) -> bool:
        m = self.m
        acc = lambda x: self.on_accelerator(x, depth + 1)  # noqa: E731
        if isinstance(e, cst.Name):
            if m.kind_of(e) is Kind.MODULE:
                return False
            bs = self.reaching_bindings(e)
            return bool(bs) and all(self._binding_on_accelerator(b, depth) for b in bs)
        if isinstance(e, cst.Attribute):
            if isinstance(e.value, cst.Name) and e.value.value == "self":
                bs = m.bindings_of(e)
                return bool(bs) and all(self._binding_on_accelerator(b, depth) for b in bs)
            if e.attr.value in ("device", "shape", "dtype", "is_cuda", "ndim"):
                return False
            return acc(e.value)
        if isinstance(e, cst.Subscript):
            return acc(e.value)
        if isinstance(e, cst.BinaryOperation):
            return acc(e.left) or acc(e.right)
        if isinstance(e, cst.UnaryOperation):
            return acc(e.expression)
        if isinstance(e, cst.Comparison):
            return acc(e.left) or any(acc(c.comparator) for c in e.comparisons)
        if isinstance(e, cst.Call):
            return self._call_on_accelerator(e, depth)
        return False

    def _call_on_accelerator(self, call: cst.Call, depth: int) -> bool:
        m = self.m
        acc = lambda x: self.on_accelerator(x, depth + 1)  # noqa: E731
        f = call.func
        q = m.qualname(f)
        mv = m.move_of_call(call)
        if mv is not None:
            if mv.to_cpu or self.device_is_cpu(mv.device):
                return False
            d = mv.device
            if mv.method == "device=":
                if not (q and q.startswith("torch.") and q[6:] in TENSOR_FACTORIES):
                    return False
                if isinstance(d, cst.Attribute) and d.attr.value == "device":
                    return acc(d.value)  # torch.zeros(n, device=x.device): wherever x is
                return self.device_may_be_accelerator(d)
            if isinstance(d, cst.Attribute) and d.attr.value == "device":
                return acc(d.value)  # y.to(x.device): wherever x is
            if isinstance(d, cst.Name):
                # `dev = x.device; y.to(dev)`: wherever x is (every binding that reaches is one)
                bs = self.reaching_bindings(d)
                if bs and all(
                    b.how == "assign" and isinstance(b.value, cst.Attribute) and b.value.attr.value == "device"
                    for b in bs
                ):
                    return all(acc(b.value.value) for b in bs)
            if mv.method == "to" and d is not None and not m.is_device_expr(d):
                return acc(d)  # x.to(other_tensor)
            return isinstance(f, cst.Attribute) and m.kind_of(f.value) is not Kind.MODULE
        if q is not None and q.startswith("torch."):
            tail = q[6:]
            if tail in TENSOR_FUNCTIONS or tail.startswith("nn.functional."):
                return any(acc(a.value) for a in call.args if a.keyword is None)
            return False
        if isinstance(f, cst.Attribute):
            meth = f.attr.value
            if meth in NON_TENSOR_METHODS or meth in ("cpu", "numpy", "to"):
                if meth == "to":  # a dtype-only .to(torch.float16): same device
                    return acc(f.value)
                return False
            if m.kind_of(f.value) is Kind.MODULE:
                return False
            return acc(f.value)
        if m.kind_of(f) is Kind.MODULE:
            if self.accelerator_moves(f):
                return True
            return any(acc(a.value) for a in call.args)
        return False

    def _binding_on_accelerator(self, b: Binding, depth: int) -> bool:
        m = self.m
        if b.how == "assign":
            return self.on_accelerator(b.value, depth + 1)
        if b.how == "unpack":
            v = b.value
            if isinstance(v, (cst.Tuple, cst.List)):
                if len(b.index) == 1 and b.index[0] < len(v.elements):
                    return self.on_accelerator(v.elements[b.index[0]].value, depth + 1)
                return False
            # `values, idx = out.max(1)`, `logits, aux = model(x)`
            if isinstance(v, cst.Call):
                return self.on_accelerator(v, depth + 1)
            return False
        if b.how == "param":
            args = m.param_arguments(b)
            return bool(args) and all(self.on_accelerator(a, depth + 1) for a in args)
        if b.how == "augassign" and isinstance(b.value, cst.AugAssign):
            # `x -= y` keeps x where it was: what reaches x before it decides (or y, if on a device)
            return self.on_accelerator(b.value.target, depth + 1) or self.on_accelerator(b.value.value, depth + 1)
        return False


def _parameter_named(fn: cst.FunctionDef, i: int, arg: cst.Arg) -> str | None:
    """The parameter of `fn` that the call's argument `arg` (the i-th) binds."""
    if arg.keyword is not None:
        return arg.keyword.value
    ordered = [*fn.params.posonly_params, *fn.params.params]
    return ordered[i].name.value if i < len(ordered) else None


def _argument_for(fn: cst.FunctionDef, name: str, call: cst.Call) -> cst.BaseExpression | None:
    """The argument `call` gives for `fn`'s parameter `name`."""
    ordered = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
    for i, a in enumerate(call.args):
        if a.star:
            return None
        if a.keyword is not None:
            if a.keyword.value == name:
                return a.value
        elif i < len(ordered) and ordered[i] == name:
            return a.value
    return None


_PLACING_FRAMEWORKS = frozenset({"lightning", "accelerate", "deepspeed", "hf-trainer", "composer"})


def uses_accelerator(m, source: str) -> bool:
    """Does anything in the file put a value on an accelerator or ask for one (`.cuda()`, a move
    to a device that is not the CPU, a device expression, an availability check, a "cuda"
    string)? A script with none of these runs its modules on the CPU only."""
    if m.checks_availability:
        return True
    if m.frameworks & _PLACING_FRAMEWORKS:
        return True  # Lightning's Trainer, accelerate, DeepSpeed, HF's Trainer put the model on the GPU there is
    if re.search(r"\bcuda\b|\bmps\b|\bxpu\b", source) and any(
        isinstance(n, cst.SimpleString) and re.search(r"\b(?:cuda|mps|xpu)\b", n.value) for n in m.nodes
    ):
        return True  # a device string
    for call in m.calls:
        mv = m.move_of_call(call)
        if mv is None or mv.to_cpu:
            continue
        if mv.method == "cuda" or mv.device is None or m.is_device_expr(mv.device):
            return True
        if not (isinstance(mv.device, cst.SimpleString) and "cpu" in mv.device.value):
            return True  # a move to something that may be an accelerator
    return False


def runs_on_cpu_only(m, source: str, path: str, scripts: bool = True) -> bool:
    """A notebook (never imported: what its cells define runs only there) or, with `scripts`, a
    script (a `__main__` guard, top-level loops, ...) that never asks for an accelerator: its
    modules run on the CPU only, so a CPU tensor in their `forward` meets nothing on a device. A
    library file's modules are moved by the scripts that import them, and are not covered; nor,
    without `scripts`, is a module file with a `__main__` smoke test (diffusers' anytext
    `RecSVTR.py`: its classes are imported and moved by the pipeline)."""
    if not (str(path).endswith(".ipynb") or (scripts and m.is_script)):
        return False
    return not uses_accelerator(m, source)


def _host_module(m, expr) -> bool:
    """The flow engine knows `expr` holds a module built by a torch class or a class of the file
    (not one an imported builder returned, which may have placed it), not known on an accelerator."""
    v = m.value_of(expr)
    if v.kind != "module" or (v.dev is not None and v.dev.is_acc) or not isinstance(v.origin, cst.Call):
        return False
    f = v.origin.func
    return (m.qualname(f) or "").startswith("torch.nn.") or (isinstance(f, cst.Name) and f.value in m.classes)
