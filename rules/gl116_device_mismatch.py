"""GL116 device-mismatch: the flow engine's general device-mismatch query."""

from __future__ import annotations

import libcst as cst

from gpulint.analysis.caches import cached_before_move
from gpulint.analysis.devices import DeviceFacts, runs_on_cpu_only
from gpulint.analysis.mismatch import (
    placed_on_host,
    file_function_call,
    attribute_root,
    inner_factory,
    moved_after_factory,
    joined_forward_factories,
    construction_state,
    legacy_host_constructor,
    returned_from_forward,
    reachable_from_forward,
    NO_DEVICE_ARG,
    accelerator_named_cpu,
    batch_source,
    moved_back,
    ctc_host_argument,
    device_edit,
    device_text_at,
    given_host_tensors,
    factory_device_fix,
    factory_takes_device,
    name_under,
    representative,
)
from gpulint.analysis.paths import is_test_path
from gpulint.diagnostics import UNSAFE
from gpulint.flow import runs_on_gpu
from gpulint.flowkb import LEGACY_TENSOR_TYPES
from gpulint.model import MODULE_BASES
from gpulint.rule import Context, Rule
from gpulint.sites import line_ref, lines_of

_FRAMEWORKS = {"lightning", "accelerate", "hf-trainer", "deepspeed"}


class DeviceMismatch(Rule):
    code = "GL116"
    name = "device-mismatch"
    summary = "An operation combines a tensor on the CPU with a tensor the analysis knows to be on the GPU."
    message = "`{host}` is on the CPU ({where}) but `{acc}` is on the accelerator; {what}"
    fix_safety = "mixed"  # safe or unsafe per fix (see the explanation)
    default = True
    kind = "crash"
    prefilter = r"\.to\(|\.cuda\(|device"
    ast_prefilter = r"^\.(?:to|cuda)\($|device"
    explanation = '''
An operation whose tensor operands live on different devices raises
`RuntimeError: Expected all tensors to be on the same device` (for an index operation: `indices
should be either on cpu or on the same device as the indexed tensor`). gpulint's flow engine
follows where every tensor lives through the file (statement order, branches, loops, the file's
own functions and methods, `self` attributes) and reports an operation whose operands it knows to
be on the host and on an accelerator, when no more specific GL1 rule describes the shape:

- a lookup table kept as a plain CPU tensor (a noise schedule, class weights, an embedding matrix)
  indexed with indices on the GPU;
- a tensor made without `device=` in a loss, a metric or a helper function, combined with model
  outputs on the GPU;
- a layer built on the CPU and put into a model after the model was moved (`model.fc =
  nn.Linear(...)` after `model.to(device)`: the fine-tuning recipe's steps in the wrong order),
  reported where the model is called; the unsafe fix moves the new layer with the model's device;
- `nn.utils.rnn.pack_padded_sequence(x, lengths)` with `lengths` moved to the GPU: the lengths
  must be a CPU tensor whatever the input's device (`'lengths' argument should be a 1D CPU int64
  tensor`); the safe fix passes `lengths.cpu()`.

A 0-dimensional CPU tensor may meet GPU tensors (PyTorch allows it), so the rule only reports CPU
tensors it knows to have at least one dimension. Likewise a CPU table indexed by single elements of
GPU tensors (`confusion[pred[j], gold[j]] += 1` in `for j in range(...)`) is not reported: a 0-dim
index is read as an integer whatever its device. Where the analysis cannot tell (a value that is
on the GPU on one branch only, a tensor of unknown origin), it stays silent; so it does for a tuple
or list of integer tensors made from host numbers (`torch.from_numpy(boxes.astype(int))`,
`torch.LongTensor(...)`) handed to a model whose class is in another file: such coordinates are
often slice bounds or indices there, which take CPU tensors (BasicSR's DFDNet face-part locations).

The safe fix adds `device=<other operand>.device` to the CPU tensor's factory when that factory
is a deterministic `torch.*` call in the same function. Otherwise, with `--unsafe-fixes`, the CPU
operands are copied at the operation: every host input of a module call becomes
`x.to(device)` (the module-level device name the model was moved with, else
`next(model.parameters()).device`), and a host argument of a loss or function call becomes
`target.to(out.device)`; neither is offered when the host value is read again later (moving one
use would leave the others failing). Otherwise the message names both operands and where the CPU
one was made (for a value computed by arithmetic, the operand it was computed from rather than a
module-level constant it was normalised with). When the CPU operand also feeds, in the same function,
a model the analysis places on the CPU (`model(cur_ids)` with a model never moved, then
`torch.cat([cur_ids, tok.to(device)])`), moving it would move the crash to the model call: the
message suggests moving the other operand (`.to(cur_ids.device)`) or both the model and the input,
and no fix is offered. The message suggests a device expression that exists where the model is
called: for a model that moves itself in its constructor (`self.to(dev)`), the argument the
construction gave (`StaticEncoder(device)`: `device`), and for `self.device`, the instance's own
attribute (`enc.device`).

A random factory drawn on an accelerator with a CPU generator (`generator = torch.manual_seed(0)`,
which returns the default CPU generator, or `torch.Generator()`), `torch.randn(shape,
generator=generator, device=torch_device)`, raises "Expected a 'cuda' device type for generator but
found 'cpu'" (diffusers#6501): reported at the factory, with no fix (the numbers drawn depend on the
generator's device). For noise drawn without `device=` with a generator on the accelerator, only
`device=` helps (`.to()` after the draw is too late).

Bad:

```python
betas = torch.linspace(1e-4, 0.02, 1000)          # on the CPU
t = torch.randint(0, 1000, (x.size(0),), device=device)
noise_scale = betas[t]                             # CPU table, GPU indices
```

Good:

```python
betas = torch.linspace(1e-4, 0.02, 1000).to(device)
t = torch.randint(0, 1000, (x.size(0),), device=device)
noise_scale = betas[t]
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        if m.frameworks & _FRAMEWORKS:
            return
        found = []  # (host factory, its safe `device=` fix is offered here, finding, mismatch)
        said = set()  # (host value's origin, statement): one finding per host value and statement
        for mm in m.mismatches():
            if accelerator_named_cpu(m, mm):
                continue  # `device = "cpu"`: both operands are on the host
            if mm.op == "module-host":
                placed = placed_on_host(m, mm.node.func, mm.site)
                if placed is not None:
                    # `rnn = nn.GRU(...).to("cpu")` on purpose, then an input made on the GPU
                    # (esrnn_torch#14, E34-4): the input is on the wrong device, not the module
                    found.append((None, False, ctx.finding(mm.node, (
                        f"`{ctx.code(mm.node.func)}` was put on the CPU on purpose (line "
                        f"{ctx.line_of(placed)}) but its input `{ctx.code(mm.acc)}` is on the "
                        f"accelerator; make the input on the module's device")), None))
                elif (mv := _moved_back_in_loop(m, mm)) is not None:
                    # `torch.save(model.cpu().state_dict(), p)` in the training loop (pix2pix#253,
                    # E62-3): `Module.cpu()` moves the module itself, for every later pass
                    found.append((None, False, ctx.finding(mm.node, (
                        f"`{ctx.code(mm.node.func)}` is moved to the CPU in place by `{ctx.code(mv)}` on "
                        f"{_line(ctx, mm.node, mv)} (`Module.{mv.func.attr.value}()` moves the module itself), so on "
                        f"every pass but the first of the loop on {_line(ctx, mm.node, mm.loop)} it meets its input "
                        f"`{ctx.code(mm.acc)}` on the accelerator; save a host copy of the state instead "
                        f"(`{{k: v.cpu() for k, v in {ctx.code(mv.func.value)}.state_dict().items()}}`) or move it back")), None))
                continue  # a module left on the host: GL112 (models) and GL108 (losses with a weight)
            if mm.op == "module-part":
                found.append((None, False, self._part_finding(ctx, mm), None))
                continue
            if mm.op == "cpu-arg":
                found.append((None, False, self._cpu_argument_finding(ctx, mm), None))
                continue
            if mm.op == "module-call" and _stateless_callee(m, mm.acc):
                continue  # `nn.L1Loss().cuda()` has no tensors of its own: it runs where its inputs are
            if mm.op == "module-call" and _integer_items_to_unseen_module(m, mm):
                continue  # `net(face, part_locations)`: integer coordinates for a forward the file does not show
            if mm.op == "index" and _element_indices(m, mm.node):
                continue  # `confusion[pred[j], gold[j]] += 1`: 0-dim indices are read as integers
            origin = mm.host_value.origin
            if self._gl105_owns(m, mm, origin) or (mm.op in ("module-call", "call") and self._gl101_owns(m, origin)
                                                   and not moved_back(mm.host_value)):
                continue
            if self._gl106_owns(ctx, mm):
                continue
            if self._discarded_move(m, mm.host):
                continue  # `x.to(device)` without assigning it: GL104 says so, and its fix fixes this
            if ctc_host_argument(m, mm.node, mm.host):
                continue  # CTC loss copies its targets and lengths where it needs them: they may live anywhere
            stmt = m.statement_of(mm.node)
            made = self._operand_origin(m, origin)
            if made is not None and stmt is not None:
                # `(points - center) / axis_lengths`, both halves of one host tensor
                # (neural_bounding#2), `real * alpha + fake * (1 - alpha)` (WGAN-GP's weights):
                # the statement's first operation says it
                if (id(made), id(stmt)) in said:
                    continue
                said.add((id(made), id(stmt)))
            acc_node = self._representative(m, mm.acc)
            host, acc = ctx.code(mm.host), ctx.code(acc_node)
            mixed = host == acc  # two items of one list (`torch.stack(parts)`), G62-1
            if not isinstance(acc_node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
                accd = f"({acc})"  # `(0.01 * w).device`, not `0.01 * w.device`
            else:
                accd = acc
            placed = mm.host_value.placed
            source = batch_source(m, origin)
            if isinstance(placed, cst.Call) and placed is not origin:
                args = "(...)" if placed.args else "()"
                where = f"moved there by `{ctx.code(placed.func)}{args}` on {_line(ctx, mm.node, placed)}"
            elif source is not None:
                where = f"a batch from {source} on {_line(ctx, mm.node, origin)}, never moved"
            elif _normalised_by_constant(m, origin):
                # `image = (image - MEAN) / STD` (MODEST, G64-3): the operand it was computed from,
                # not a module-level constant it was normalised with
                src = _arithmetic_source(m, origin)
                if src is None:
                    where = f"computed from host values on {_line(ctx, mm.node, origin)}"
                else:
                    where = (f"computed on {_line(ctx, mm.node, origin)} from `{ctx.code(src[0])}`, "
                             f"{self._where(ctx, src[1], mm.node)}")
            else:
                where = self._where(ctx, self._operand_origin(m, origin), mm.node)
            path_test = _path_host_test(m, mm.host_value)
            if path_test is not None:
                # `fast_dca(msa, w) if nrow > 1 else torch.zeros(...)` (E64-1): on one path only
                test, on_else = path_test
                where += f", when `{ctx.code(test)}` is false" if on_else else f", when `{ctx.code(test)}` holds"
            if mm.site is not None:
                # found only with the arguments of one call of the function (the others pass it placed)
                where += f"; with the arguments of the call on {_line(ctx, mm.node, mm.site)}"
            if mm.loop is not None:
                # the first pass is fine; the end of the loop's body hands the next pass other places
                where += f"; on every pass but the first of the loop on {_line(ctx, mm.node, mm.loop)}"
            feeds = _feeds_host_module(m, mm) if mm.op not in ("module-call", "index") else None
            # (a fix that puts the host operand on the other's device would break the model call it feeds)
            fix = self._fix(ctx, mm, origin, acc_node) if feeds is None else None
            factory_fix = fix is not None and fix.applicability != UNSAFE and mm.op not in ("module-call", "index")
            if mm.op == "module-call" and m.value_of(mm.host).kind == "tuple":
                what = (f"move each of its tensors to the model's device (`.to({self._model_device(ctx, mm)})`),"
                        " or register them as buffers of the module that keeps them")
            elif mm.op == "module-call":
                what = f"move the input to the model's device (`.to({self._model_device(ctx, mm)})`)"
            elif mm.op == "index":
                what = f"move the table to its device: `{host}.to({accd}.device)` (or make it with `device=`)"
            elif isinstance(origin, cst.Call) and (
                    (fix is not None and m.qualname(origin.func) in LEGACY_TENSOR_TYPES)
                    or (m.qualname(origin.func) or "").rsplit(".", 1)[-1] in NO_DEVICE_ARG):
                what = f"copy it there: `.to({accd}.device)`"
            elif source is not None:
                what = f"move it: `.to({accd}.device)`"
            elif fix is not None and fix.applicability == UNSAFE:  # the argument copy (the factory fix is safe)
                what = f"copy it there: `.to({accd}.device)`"
            elif fix is not None:
                # the fix may name the tensor the device operand is computed from (`enc`, F:G69-4)
                on = fix.message[len("Make it on `"):-len(".device`")] if (
                    fix.message.startswith("Make it on `") and fix.message.endswith(".device`")) else accd
                what = f"make it on the same device: `device={on}.device`"
            elif isinstance(origin, cst.Call) and (m.qualname(origin.func) or "").startswith("torch.") and not (
                    factory_takes_device(m.qualname(origin.func), like=True)):
                # `torch.meshgrid(...)`, `torch.stack(...)`: no `device=` to pass
                what = f"copy it there: `.to({accd}.device)` (or make its inputs there)"
            else:
                what = f"make it on the same device (`device={accd}.device` or `.to({accd}.device)`)"
            drawn = self._operand_origin(m, origin)
            if (isinstance(drawn, cst.Call) and m.qualname(drawn.func) in _DRAWING_FACTORIES
                    and _generator_arg(drawn) is not None and fix is None and feeds is None):
                # `torch.randn(shape, generator=g)` with `g` on the accelerator (stable-worldmodel
                # PR#162, G65-3): the draw itself fails, so a `.to(...)` after it does not help
                gen = ctx.code(_generator_arg(drawn))
                if _host_generator(m, _generator_arg(drawn)) is not None:
                    what = (f"copy it there: `.to({accd}.device)` (it is drawn with `generator={gen}`, a CPU "
                            f"generator, so `device=` would not do)")
                else:
                    what = (f"make it on the same device (`device={accd}.device`): it is drawn with "
                            f"`generator={gen}`, which must be on the device it draws on, so `.to(...)` after "
                            f"the draw does not help")
            if not isinstance(acc_node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) and what.count(accd) > 1:
                # `(torch.ones((1, 1)).long().to(device) * tok).device` written twice (G64-2): say it once
                what = f"make it on the same device as that operand (`.to({accd}.device)`)"
            if feeds is not None:
                # `cur_ids` also feeds a model the engine places on the host (G64-2, TextAugmentation-
                # GPT2#8): moving it to the other operand's device moves the crash to that call
                module_call, fed = feeds
                what = (f"`{ctx.code(fed)}` also feeds `{ctx.code(module_call.func)}` on "
                        f"{_line(ctx, mm.node, module_call)}, which is on the CPU: put the other operand on the "
                        f"CPU (`.to({ctx.code(fed)}.device)`), or move `{ctx.code(module_call.func)}` and "
                        f"`{ctx.code(fed)}` to the accelerator")
            if mixed:
                text = (f"`{host}` holds tensors on the CPU ({where}) and tensors on the accelerator; "
                        f"make every item on the same device")
            else:
                text = self.message.format(host=host, where=where, acc=acc, what=what)
            found.append((_factory_with_constant(origin), factory_fix, ctx.finding(mm.node, text, fix), mm))
        found = _merge_handed_in(ctx, found)
        # a host factory with a safe `device=` fix at one of its uses is placed by that fix for every
        # use: the others (without a fix) say the same thing again (timbmg/VAE-CVAE-MNIST#4:
        # idx2onehot's zeros, scattered into, then concatenated in both the encoder and the decoder)
        placed = {id(f) for f, factory_fix, _, _mm in found if factory_fix and f is not None}
        for f, factory_fix, finding, _mm in found:
            if factory_fix or f is None or id(f) not in placed or finding.fix is not None:
                yield finding
        yield from _generator_findings(ctx)
        reported = {mm.node for mm in m.mismatches()}
        first = {}  # the first operation on a stale cache fails: one report per class
        for c in cached_before_move(m):
            if c.use not in reported and (c.cls not in first or m.precedes(c.use, first[c.cls].use)):
                first[c.cls] = c
        for c in first.values():
            yield self._cache_finding(ctx, c)
        for mm in m.gpu_mismatches():
            a, b = ctx.code(mm.host), ctx.code(self._representative(m, mm.acc))
            da, db = self._gpu_name(mm.host_value), self._gpu_name(mm.acc_value)
            if mm.op == "module-call":
                what = f"move the input to the model's device (`.to({self._model_device(ctx, mm)})`)"
            else:
                what = f"put both on one device (`.to({b}.device)`)"
            yield ctx.finding(mm.node, f"`{a}` is on {da} but `{b}` is on {db}: two different GPUs; {what}")

    @staticmethod
    def _cache_finding(ctx: Context, c):
        """A plain tensor attribute the module caches lazily, built by a call while the module
        was on the host, left there by the move (E61-1). The fix (unsafe: the attribute becomes a
        buffer, which `.half()`/`.to(dtype)` convert too) registers the attribute `__init__` sets
        to None as a non-persistent buffer, so `Module.to` moves the cache with the module."""
        m = ctx.model
        read = ctx.code(c.read)
        mover = ctx.code(c.move.func.value)
        text = (f"`{read}` is cached on the CPU by the call on {line_ref(ctx, c.built)} (the module is still there) "
                f"and `{mover}.{c.move.func.attr.value}(...)` on {line_ref(ctx, c.move)} moves parameters and "
                f"buffers, not plain attributes: from then on it meets the module's tensors on the accelerator; "
                f"register it as a buffer (`self.register_buffer(\"{c.attr}\", None, persistent=False)`) or rebuild it "
                f"when the device changes")
        fix = None
        info = m.classes.get(c.cls)
        init = info.methods.get("__init__") if info is not None else None
        if init is not None and c.how == "lazy":
            for b in m.bindings.get((info.node, "self." + c.attr), []):
                if m.enclosing(b.node, cst.FunctionDef) is not init:
                    continue
                stmt = m.parent(m.parent(b.node))
                if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(m.parent(stmt), cst.SimpleStatementLine):
                    fix = ctx.fix(ctx.replace(stmt, f'self.register_buffer("{c.attr}", None, persistent=False)'),
                                  safe=False, message=f"Register `{read}` as a non-persistent buffer")
                break
        return ctx.finding(c.use, text, fix)

    @staticmethod
    def _gpu_name(v) -> str:
        key = v.dev.key if v.dev is not None else ""
        return "`cuda` (the current device, GPU 0)" if key == "cuda" else f"`{key}`"

    @staticmethod
    def _model_device(ctx: Context, mm) -> str:
        """The device expression the model was moved with, written so that it means something
        where the model is called (G65-6), else the model's own device."""
        d = mm.acc_value.dev
        expr = d.expr if d is not None else None
        callee = mm.acc if mm.op == "module-call" else None  # the model (the callee, or what a trace runs)
        if isinstance(expr, (cst.Name, cst.Attribute)):
            text = device_text_at(ctx, expr, callee, mm.node)
            if text is not None:
                return text
        if isinstance(callee, (cst.Name, cst.Attribute)):
            return f"next({ctx.code(callee)}.parameters()).device"
        return "device"

    @staticmethod
    def _input_move_fix(ctx: Context, mm):
        """`<input>.to(<device>)` at the module call, for every host input of the call: the device
        the model was moved with when it is a module-level name bound before the call, else the
        model's own parameters' device. None when one of them cannot be moved there."""
        m = ctx.model
        callee = mm.acc  # the model: the call's callee, or the module `torch.jit.trace(M, x)` runs
        if not isinstance(callee, (cst.Name, cst.Attribute)):
            return None
        d = mm.acc_value.dev
        expr = d.expr if d is not None else None
        dev = f"next({ctx.code(callee)}.parameters()).device"
        if isinstance(expr, cst.Name):
            bound = m.bindings_of(expr)
            if bound and all(b.how == "assign" and m.scope_of(b.node) is m.module for b in bound) and (
                    m.scope_of(mm.node) is not m.module or all(m.precedes(b.node, mm.node) for b in bound)):
                dev = expr.value
        edits = DeviceMismatch._host_moves(ctx, mm, dev, any_expression=True)
        return ctx.fix(*edits, safe=False, message=f"Move the input to `{dev}`") if edits else None

    @staticmethod
    def _host_moves(ctx: Context, mm, dev: str, any_expression: bool) -> list | None:
        """`<host>.to(<dev>)` for every host operand of the mismatch, each an argument of the call
        itself; None when one is not, or is a name read again later (moving one use would leave
        the others failing). `any_expression`: also `(a + b).to(...)`, else names, attributes,
        calls and subscripts only."""
        m = ctx.model
        edits = []
        seen = set()
        for host in (mm.host, *(x for x, _ in mm.more_hosts)):
            if id(host) in seen:
                continue  # the same operand reported for several of its elements
            seen.add(id(host))
            if m.value_of(host).kind == "tuple":
                return None  # a tuple or list of tensors (an LSTM's `(h0, c0)`) has no `.to()`
            arg = m.parents.get(host)
            if not isinstance(arg, cst.Arg) or arg.star or m.parents.get(arg) is not mm.node:
                return None
            atom = isinstance(host, (cst.Name, cst.Attribute, cst.Call, cst.Subscript))
            if not atom and not any_expression:
                return None
            if isinstance(host, cst.Name) and _none_default_parameter(m, host):
                # `def inference(self, n=1, c=None)`: `c.to(...)` raises on the calls that leave
                # it out (timbmg/VAE-CVAE-MNIST#4's unconditional `vae.inference(n=10)`)
                return None
            base = name_under(host, subscripts=False)
            if base is not None and DeviceMismatch._used_again(m, base, mm.node, mm.op == "module-call"):
                # `label.reshape(-1)` moved at the loss, `label` read again on the host right after
                # (asahi417/lmppl#13's `(label != PAD).sum(-1)`): moving one use leaves the others
                return None
            code = ctx.code(host)
            if not atom and not host.lpar:
                code = f"({code})"  # `(a + b).to(...)`
            edits.append(ctx.replace(host, f"{code}.to({dev})"))
        return edits

    @staticmethod
    def _used_again(m, name: cst.Name, call, module_call: bool = False) -> bool:
        """The name is read again after `call` in its scope, or anywhere in a loop around the call.
        For a model call (`module_call`), a read that is the host input of another reported model
        call does not count (that finding moves it there the same way), nor one earlier in the same
        pass of the loop, after the pass bound the name anew."""
        parent = m.parents.get(call)
        assign = parent if isinstance(parent, cst.Assign) else m.parents.get(parent)
        if isinstance(assign, cst.Assign) and any(
                type(n) is cst.Name and n.value == name.value for t in assign.targets for n in m.walk(t)):
            return False  # `h = rnn(x, h)`: the call's result replaces it for every later use
        scope = m.scope_of(name)
        stores = {id(b.node) for b in m.bindings_of(name)}
        loop = m.enclosing(call, cst.For, cst.While)
        if loop is not None and not m.contains(scope, loop):
            loop = None
        after = m.order[call]
        others = None
        for n in m.walk(scope):
            if type(n) is not cst.Name or n is name or n.value != name.value or id(n) in stores:
                continue
            if m.scope_of(n) is not scope:
                continue
            if m.order[n] > after or (loop is not None and m.contains(loop, n)):
                if not module_call:
                    return True
                if others is None:
                    others = {id(x.host) for x in m.mismatches() if x.op == "module-call" and x.node is not call
                              and isinstance(x.host, cst.Name) and m.scope_of(x.node) is scope}
                if id(n) in others:
                    continue  # the host input of another model call: that finding moves it there (SAN, G65-6)
                if loop is not None and m.order[n] < after and _fresh_in_loop(m, loop, name, n):
                    continue  # read earlier in the same pass, after the pass bound it anew: the move does not reach it
                return True
        return False

    @staticmethod
    def _representative(m, acc):
        return representative(m, acc)

    @staticmethod
    def _discarded_move(m, host) -> bool:
        if not isinstance(host, cst.Name):
            return False
        scope = m.scope_of(host)
        for call, recv, _meth in m.method_calls("to", "cuda"):
            if (isinstance(recv, cst.Name) and recv.value == host.value and m.scope_of(call) is scope
                    and isinstance(m.parents.get(call), cst.Expr) and m.precedes(call, host)):
                return True
        return False

    @staticmethod
    def _gl101_owns(m, origin) -> bool:
        """GL101 reports batches (a DataLoader's, a tokenizer's) that reach the model (or a loss)
        unmoved; a batch meeting a device tensor in an operation (`(pred == labels).sum()`) is ours."""
        return batch_source(m, origin) is not None

    @staticmethod
    def _cpu_argument_finding(ctx: Context, mm):
        """`pack_padded_sequence(x, lengths)` with `lengths` moved to the accelerator: the lengths
        must be a CPU tensor whatever the input's device. The fix (safe: `.cpu()` of a CPU tensor is
        the tensor itself) passes `lengths.cpu()`."""
        arg = mm.acc
        code = ctx.code(arg)
        moved = f"{code}.cpu()" if isinstance(arg, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) else f"({code}).cpu()"
        fix = ctx.fix(ctx.replace(arg, moved), safe=True, message=f"Pass `{moved}`")
        where = ""
        if mm.site is not None:
            where = f" (with the arguments of the call on {_line(ctx, mm.node, mm.site)})"
        text = (f"`{code}` is on the accelerator{where}, but `{ctx.code(mm.node.func)}` needs its lengths on the "
                f"CPU (a 1D CPU int64 tensor) whatever the input's device; pass `{moved}`")
        return ctx.finding(mm.node, text, fix)

    @staticmethod
    def _part_finding(ctx: Context, mm):
        """`model.fc = nn.Linear(...)` after `model.to(device)`, then `model(x)`: the new layer's
        weights are on the CPU. The fix (unsafe: the layer's placement changes) moves the new layer
        with the device expression the model was moved with, when that name is visible there."""
        m = ctx.model
        ctor = mm.host_value.origin
        part, model = ctx.code(mm.host), ctx.code(mm.acc)
        made = f"{ctx.code(ctor.func)}(...)"
        dev = mm.acc_value.dev
        expr = dev.expr if dev is not None else None
        device = None
        if isinstance(expr, cst.Name) and ((m.scope_of(ctor), expr.value) in m.bindings
                                           or (m.module, expr.value) in m.bindings):
            device = expr.value
        elif (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"
              and m.class_of(expr) is not None and m.class_of(expr) is m.class_of(ctor)):
            device = ctx.code(expr)
        fix = None
        if device is not None:
            fix = ctx.fix(ctx.replace(ctor, f"{ctx.code(ctor)}.to({device})"), safe=False,
                          message="Move the new layer to the model's device")
        what = f"`{made}.to({device})`" if device is not None else f"`{made}.to(...)` with the model's device"
        text = (f"`{part}` is replaced by `{made}` on {_line(ctx, mm.node, ctor)} after `{model}` was moved to "
                f"the accelerator: the new layer's weights stay on the CPU and this call mixes the two; "
                f"move it: {what} (or move `{model}` after replacing the layer)")
        return ctx.finding(mm.node, text, fix)

    @staticmethod
    def _gl106_owns(ctx: Context, mm) -> bool:
        """GL106 reports `self.<attr>` of a module class when `__init__` assigned it a host tensor
        returned by a function of this file (`self.attn_bias = get_2dalibi(...)`); the tensors
        `__init__` builds itself are left to it through `_gl105_owns`. Not where GL106 stays
        silent (a test suite, a notebook that never asks for an accelerator)."""
        m = ctx.model
        if is_test_path(ctx.path) or runs_on_cpu_only(m, ctx.source, ctx.path, scripts=False):
            return False
        # `self.pe[:, : x.size(1)]`, `torch.cos(self.phase_advance * rate)`: the table is `self.pe`
        host = attribute_root(m, mm.host)
        if host is None:
            return False
        cls = _module_class(m, mm.node)
        if cls is None:
            return False
        for fn in cls.body.body:
            if not isinstance(fn, cst.FunctionDef):
                continue
            init = fn.name.value == "__init__"
            for node in m.walk(fn):
                if not isinstance(node, cst.Assign) or len(node.targets) != 1:
                    continue
                t = node.targets[0].target
                if not (isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self"
                        and t.attr.value == host.attr.value):
                    continue
                if not init and not construction_state(m, cls, node):
                    continue  # set by a method `__init__` does not call: not GL106's construction state
                if _host_tensor_from_file_function(m, node.value) or _built_in(m, node.value, fn):
                    return True  # (in a helper `__init__` calls: `self._init_table(n)` sets `self.pe`)
                if init and given_host_tensors(m, fn, node.value):
                    return True  # `self.w = w`, every construction passing a tensor, one on the host
        return False

    @staticmethod
    def _gl105_owns(m, mm, origin) -> bool:
        """GL105 reports factories in nn.Module methods that meet forward inputs."""
        if origin is None:
            return False
        if moved_after_factory(m, mm, origin) is not None:
            return False  # `torch.arange(n).to(self.device)`: the move put it there, not the factory (G63-1)
        if returned_from_forward(m, mm, origin) is not None:
            return True  # a host tensor forward made and returned (GL105 at the factory)
        if joined_forward_factories(m, mm, origin):
            return True  # `torch.cat([past_error, forecast])` of such tensors (GL105 at each factory)
        cls = _module_class(m, mm.node)
        if cls is None:
            return False
        if not m.contains(cls, origin):
            return False
        # a module's own factories (GL105) and tensor attributes set in `__init__` (GL106); a table
        # another method computes (`self.top_index = torch.argsort(...)`) is neither's shape
        top = origin  # up a method chain: `self.mean = torch.Tensor([...]).view(1, 3, 1, 1)`
        while True:
            up = m.parents.get(top)
            if (isinstance(up, cst.Attribute) and up.value is top) or (isinstance(up, cst.Call) and up.func is top):
                top = up
            else:
                break
        parent = m.parents.get(top)
        on_self = isinstance(parent, cst.Assign) and any(
            isinstance(t.target, cst.Attribute) and isinstance(t.target.value, cst.Name)
            and t.target.value.value == "self" for t in parent.targets)
        if on_self:
            fn = m.enclosing(origin, cst.FunctionDef)
            if fn is not None and fn.name.value == "__init__":
                return True
            # a helper `__init__` calls (`self._build_mask(n)`): GL106's construction state too
            if construction_state(m, cls, parent):
                return True
            # set in forward (`self.pos_index = torch.LongTensor(...)`): forward's factory below
        made_in = m.enclosing(origin, cst.FunctionDef)
        if made_in is not None and made_in.name.value == "__init__":
            return False  # made in `__init__` and kept otherwise (in a list on `self`): this rule's
        if not reachable_from_forward(m, made_in):
            return False  # a method forward does not reach (an epoch-end hook): this rule's
        if isinstance(origin, cst.Call):
            q = m.qualname(origin.func)
            like = _like_source(m, origin, q)
            if like is not None:
                # `torch.ones_like(layer_mask)` where `layer_mask` is a module's device-less factory
                # (GL105 reports that factory; its fix places this one too; EasyTemporalPointProcess#40)
                return DeviceMismatch._gl105_owns(m, mm, like)
            if not (factory_takes_device(q) or legacy_host_constructor(q)) and (q or "").startswith("torch."):
                inner = inner_factory(m, origin)  # `torch.triu(torch.full(...))`: GL105 reports the factory
                q = m.qualname(inner.func) if inner is not origin else q
            return factory_takes_device(q) or legacy_host_constructor(q)
        if isinstance(origin, cst.BinaryOperation):
            # `torch.ones(n) * 2` is GL105's factory; `self.decay * e` (an EMA update's operands)
            # is no factory's
            return any(isinstance(n, cst.Call) and (factory_takes_device(m.qualname(n.func))
                                                    or legacy_host_constructor(m.qualname(n.func)))
                       for n in (origin, *m.walk(origin)))
        return True

    @staticmethod
    def _operand_origin(m, origin):
        """For a host value computed by arithmetic (`self.decay * e`), where its host tensor
        operand came from (`e`: an EMA copy's `state_dict()` values), when one operand says so."""
        if not isinstance(origin, cst.BinaryOperation):
            return origin
        for part in (origin.left, origin.right):
            v = m.value_of(part)
            if (v.kind == "tensor" and v.dev is not None and v.dev.is_host and isinstance(v.origin, cst.Call)
                    and v.origin is not origin):
                return v.origin
        return origin

    @staticmethod
    def _where(ctx: Context, origin, reported) -> str:
        if isinstance(origin, cst.Call):
            return f"made by `{ctx.code(origin.func)}(...)` on {_line(ctx, reported, origin)}"
        if origin is not None:
            return f"from {_line(ctx, reported, origin)}"
        return "made without a device"

    @staticmethod
    def _fix(ctx: Context, mm, origin, acc):
        if mm.op == "module-call":
            return DeviceMismatch._input_move_fix(ctx, mm)
        if mm.op == "index":
            return None
        made = factory_device_fix(ctx, mm, _factory_with_constant(origin), acc)
        if made is None:
            made = _self_attribute_factory_fix(ctx, mm, _factory_with_constant(origin), acc)
            if made is not None:
                return ctx.fix(made[0], safe=True, message=f"Make it on `{ctx.code(acc)}.device`")
            src = _source_operand(ctx, mm, _factory_with_constant(origin), acc)
            if src is not None:
                made = factory_device_fix(ctx, mm, _factory_with_constant(origin), src)
                if made is not None:
                    return ctx.fix(made[0], safe=True, message=f"Make it on `{src.value}.device`")
            return DeviceMismatch._argument_move_fix(ctx, mm, acc)
        return ctx.fix(made[0], safe=True, message=f"Make it on `{acc.value}.device`")

    @staticmethod
    def _argument_move_fix(ctx: Context, mm, acc):
        """`criterion(out, target[i].to(out.device))`: a host argument of a call (a loss, a torch
        function) copied to its device operand's device at the call, when the device operand is a
        name and the host one is not a name read again (moving one use would leave the others)."""
        if mm.op != "call" or not isinstance(acc, cst.Name) or ctx.model.value_of(acc).kind not in (None, "tensor"):
            return None
        edits = DeviceMismatch._host_moves(ctx, mm, f"{acc.value}.device", any_expression=False)
        return ctx.fix(*edits, safe=False, message=f"Copy it to `{acc.value}.device`") if edits else None


def _source_operand(ctx, mm, origin, acc):
    """When the device operand `acc` (a name) is bound only after the host factory runs (the usual
    order in loss code: `pos_mask = torch.eye(n)`, then `res = torch.mm(enc, enc2.t())`; deepchem
    PR#3301, F:G69-4), a name its one binding is computed from that holds a tensor on the same
    device and is bound before the factory (a parameter of the function: `enc`); None otherwise.
    `factory_device_fix` then checks that name as it checks `acc`."""
    m = ctx.model
    if not isinstance(origin, cst.Call) or not isinstance(acc, cst.Name):
        return None
    bound = m.bindings_of(acc)
    if len(bound) != 1 or bound[0].how != "assign" or bound[0].value is None:
        return None
    b = bound[0]
    if m.scope_of(b.node) is not m.scope_of(origin) or not m.precedes(origin, b.node):
        return None
    dev = m.value_of(acc).dev
    if dev is None or not dev.is_acc:
        return None
    for n in m.walk(b.value):
        if not isinstance(n, cst.Name) or n.value == acc.value:
            continue
        v = m.value_of(n)
        if v.kind != "tensor" or v.dev != dev:
            continue
        srcs = m.bindings_of(n)
        if srcs and all(x.how == "param" for x in srcs):
            return n
    return None


def _self_attribute_factory_fix(ctx, mm, origin, acc):
    """`device=self.<attr>...<tensor>.device` added to the host operand's `torch.*` factory when the
    accelerator operand is a tensor attribute of the method's own instance (a parameter of a layer
    `__init__` built: `self.ar_net.weight`), neural_prophet#1023's `reg_loss = torch.zeros(1)` then
    `reg_loss += self.reg_lambda * self.ar_net.weight.abs().mean()` (G62-3). The catalog's safe
    case, as `factory_device_fix` for a name: the factory runs before the operation in the same
    function (not in a loop the operation is outside of), and the attribute reads the same tensor
    there: every `self.<first attr>` of the class is written only in `__init__`, and the method
    neither rebinds `self` nor writes `self.<first attr>`. Returns (edit, random) or None."""
    m = ctx.model
    if not isinstance(origin, cst.Call) or not isinstance(acc, cst.Attribute):
        return None
    if m.scope_of(origin) is not m.scope_of(mm.node) or not (
            m.precedes(origin, mm.node) or m.contains(mm.node, origin)):
        return None
    chain = []
    node = acc
    while isinstance(node, cst.Attribute):
        chain.append(node.attr.value)
        node = node.value
    if not (isinstance(node, cst.Name) and node.value == "self") or not chain:
        return None
    first = chain[-1]
    v = m.value_of(acc)
    if v.kind != "tensor" or v.dev is None or not v.dev.is_acc:
        return None  # a module has no `.device`; a value placed on one path only is not known
    fn = m.enclosing(origin, cst.FunctionDef)
    cls = m.class_of(fn) if fn is not None else None
    if fn is None or cls is None or m.enclosing(mm.node, cst.FunctionDef) is not fn:
        return None
    params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
    if not params or params[0] != "self":
        return None
    if any(isinstance(d.decorator, cst.Name) and d.decorator.value in ("staticmethod", "classmethod")
           for d in fn.decorators):
        return None
    if [b for b in m.bindings_of(node) if b.how != "param"]:
        return None  # `self` rebound in the method
    info = m.classes.get(cls.name.value)
    init = info.methods.get("__init__") if info is not None else None
    if init is None:
        return None
    writes = m.bindings.get((info.node, "self." + first), [])
    if not writes or any(m.enclosing(b.node, cst.FunctionDef) is not init for b in writes):
        return None  # set (also) outside `__init__`: which tensor it holds at the factory is not known
    for n in m.walk(fn):
        # `self.ar_net = ...` / `del self.ar_net` / `setattr(self, ...)` in the method itself
        if isinstance(n, (cst.AssignTarget, cst.Del)) and any(
                isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self"
                and t.attr.value == first for t in m.walk(n)):
            return None
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value in ("setattr", "delattr"):
            return None
    loop = m.enclosing(origin, cst.For, cst.While)
    if loop is not None and not m.contains(loop, mm.node):
        return None
    made = device_edit(ctx, origin, ctx.code(acc))
    if made is None or made[1]:
        return None  # a random factory draws other numbers with `device=`: not safe
    return made


def _merge_handed_in(ctx, found):
    """One report per host tensor handed into a method of the file (G62-3, neural_prophet#1023):
    `predicted = self.forward(inputs, meta_name_tensor)` with host ids, reported as a module call,
    while inside (`forward` -> `trend`) the engine reports each operation where the ids (one-hot
    encoded) meet the module's parameters. The call itself does not fail: the operations inside
    do. The call's finding and those of the operations it reaches whose host operand derives from
    the call's host input (and that offer no fix of their own) become one finding, at the first
    such operation (the first that fails), naming the call, the other operations, and carrying
    the call's fix (moving the input at the call places it for all of them)."""
    m = ctx.model
    out = list(found)
    for i, (_f, _ff, call_finding, cm) in enumerate(found):
        if cm is None or cm.op != "module-call" or cm.more_hosts or cm.host_value.origin is None:
            continue
        reached = _functions_reached(m, cm.node)
        if not reached:
            continue
        inner = []
        for j, (_f2, _ff2, finding, im) in enumerate(found):
            if im is None or im.op == "module-call" or finding.fix is not None or j == i:
                continue
            if m.enclosing(im.node, cst.FunctionDef) not in reached:
                continue
            if not _derives_from(m, im.host_value.origin, cm.host_value.origin):
                continue
            inner.append(j)
        if not inner:
            continue
        inner.sort(key=lambda j: m.order.get(found[j][3].node, 0))
        first = inner[0]
        f0, ff0, finding0, im0 = found[first]
        text = finding0.message
        host = cm.host_value.origin
        text += (f"; it comes from `{ctx.code(cm.host)}`, made on the CPU on {_line(ctx, im0.node, host)} and passed to "
                 f"`{ctx.code(cm.node.func)}` on {_line(ctx, im0.node, cm.node)}")
        others = [found[j][3].node for j in inner[1:]]
        if others:
            text += f", and meets the accelerator again on {lines_of(ctx, im0.node, others)}"
        out[first] = (f0, ff0, ctx.finding(im0.node, text, call_finding.fix), im0)
        out[i] = None
        for j in inner[1:]:
            out[j] = None
    return [e for e in out if e is not None]


def _functions_reached(m, call, depth: int = 4) -> set:
    """The functions of the file the call runs (the engine resolved the call to them), and those
    their bodies call in turn, `depth` calls deep."""
    sites = {fn: m.resolved_sites(fn) for fn in m.flow.site_values}
    reached = {fn for fn, calls in sites.items() if call in calls}
    for _ in range(depth):
        more = {fn for fn, calls in sites.items() if fn not in reached
                and any(m.enclosing(c, cst.FunctionDef) in reached for c in calls)}
        if not more:
            break
        reached |= more
    return reached


def _derives_from(m, node, origin, depth: int = 0) -> bool:
    """`node` (a host value's origin) is `origin`, or is computed from it: an argument, receiver or
    operand whose value was made there (`F.one_hot(meta, ...)` of the ids `meta` holds)."""
    if node is origin:
        return True
    if node is None or depth > 3:
        return False
    parts = []
    if isinstance(node, cst.Call):
        parts = [a.value for a in node.args]
        if isinstance(node.func, cst.Attribute):
            parts.append(node.func.value)
    elif isinstance(node, cst.BinaryOperation):
        parts = [node.left, node.right]
    for p in parts:
        v = m.value_of(p)
        if v.kind != "tensor" or v.dev is None or not v.dev.is_host:
            continue
        if v.origin is origin or (v.origin is not node and _derives_from(m, v.origin, origin, depth + 1)):
            return True
    return False


def _arithmetic_source(m, origin, depth: int = 0):
    """(operand, its origin) for a host value computed by arithmetic: the first host tensor operand
    (through nested arithmetic) whose value a call made. Module-level constants read in a function
    (`MEAN = torch.tensor([...])` in `(image - MEAN) / STD`, G64-3) are passed over while another
    host tensor operand takes part: the value is the other one, normalised. None when no operand
    says where it came from."""
    if not isinstance(origin, cst.BinaryOperation) or depth > 4:
        return None
    parts = [p for p in (origin.left, origin.right) if _host_value(m, p)]
    own = [p for p in parts if not _module_constant(m, p, origin)]
    for part in own or parts:
        v = m.value_of(part)
        if isinstance(v.origin, cst.Call) and v.origin is not origin:
            return part, v.origin
    for part in own or parts:
        inner = part if isinstance(part, cst.BinaryOperation) else m.value_of(part).origin
        if inner is not origin:
            found = _arithmetic_source(m, inner, depth + 1)
            if found is not None:
                return found
    return None


def _normalised_by_constant(m, origin) -> bool:
    """A host value computed by arithmetic where the operand `_operand_origin` would name is a
    module-level constant (or none names one) while another host tensor operand takes part: the
    constant is what the value was normalised with, not where it came from (G64-3)."""
    if not isinstance(origin, cst.BinaryOperation):
        return False
    parts = [p for p in (origin.left, origin.right) if _host_value(m, p)]
    pick = next((p for p in parts if isinstance(m.value_of(p).origin, cst.Call)
                 and m.value_of(p).origin is not origin), None)
    if pick is not None and not _module_constant(m, pick, origin):
        return False
    return any(_module_constant(m, p, origin) for p in parts) and any(
        not _module_constant(m, p, origin) for p in parts)


def _host_value(m, e) -> bool:
    v = m.value_of(e)
    return v.kind == "tensor" and v.dev is not None and v.dev.is_host


def _module_constant(m, e, at) -> bool:
    """`e` is a name every binding of which is a module-level assignment, read inside a function."""
    if not isinstance(e, cst.Name) or m.scope_of(at) is m.module:
        return False
    bs = m.bindings_of(e)
    return bool(bs) and all(b.how == "assign" and m.scope_of(b.node) is m.module for b in bs)


_INT_DTYPES = frozenset({"int", "long", "int8", "int16", "int32", "int64", "intp", "uint8", "short"})
_INT_TENSOR_TYPES = frozenset({"torch.LongTensor", "torch.IntTensor", "torch.ShortTensor", "torch.ByteTensor",
                               "torch.CharTensor"})
_FLOAT_CASTS = frozenset({"float", "half", "double", "bfloat16", "to", "type", "type_as"})


def _integer_items_to_unseen_module(m, mm) -> bool:
    """A tuple or list of host tensors handed to a module whose class the file does not show (an
    imported network, not a `torch.nn` class), every item of which is an integer tensor made from
    numbers on the host: `torch.from_numpy(np.hstack(...).astype(int))`, `torch.LongTensor(...)`,
    `torch.tensor(..., dtype=torch.long)` (BasicSR inference_dfdnet.py, P50-9: face-part boxes the
    callee reads as slice bounds, `feat[:, :, loc[1]:loc[3], loc[0]:loc[2]]`, which take a CPU
    tensor whatever the feature map's device). Without the callee's forward the rule cannot tell
    coordinates from inputs: it stays silent. Float items, one item of unknown make, or a callee of
    the file or of `torch.nn` keep the report."""
    hv = m.value_of(mm.host)
    if hv.kind != "tuple" or not hv.items:
        return False
    callee = mm.acc
    v = m.value_of(callee)
    if v.kind != "module" or v.cls is not None:
        return False
    ctor = v.origin
    if not isinstance(ctor, cst.Call):
        return False
    q = m.qualname(ctor.func)
    if isinstance(ctor.func, cst.Name) and ctor.func.value in m.classes:
        return False  # a class of the file: its forward is there to read
    if q is None or q.startswith("torch."):
        return False  # `nn.LSTM(...)`: torch's own module, whose inputs are known
    for item in hv.items:
        if item is None or item.kind != "tensor" or not _integer_made(m, item.origin):
            return False
    return True


def _integer_made(m, call) -> bool:
    """`call` makes an integer tensor from host numbers, and nothing after it in its own chain of
    method calls converts it (`.float()`, `.to(...)`)."""
    if not isinstance(call, cst.Call):
        return False
    q = m.qualname(call.func) or ""
    node = call
    for _ in range(8):  # `torch.from_numpy(loc).unsqueeze(0)`: shape steps keep the dtype
        up = m.parents.get(node)
        if isinstance(up, cst.Attribute) and up.value is node:
            grand = m.parents.get(up)
            if up.attr.value in _FLOAT_CASTS or not (isinstance(grand, cst.Call) and grand.func is up):
                if up.attr.value in _FLOAT_CASTS:
                    return False
                break
            node = grand
            continue
        break
    if q in _INT_TENSOR_TYPES:
        return True
    kw = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    if "dtype" in kw:
        return _int_dtype(kw["dtype"])
    if q not in ("torch.from_numpy", "torch.tensor", "torch.as_tensor") or not call.args or call.args[0].keyword:
        return False
    arg = call.args[0].value
    if isinstance(arg, cst.Name):
        # the last assignment before the call (`loc = np.hstack(...).astype(int)`, then `loc =
        # torch.from_numpy(loc).unsqueeze(0)` rebinding the name to the tensor)
        stmt = m.statement_of(call)
        bs = [b for b in m.bindings_of(arg) if m.scope_of(b.node) is m.scope_of(call)
              and m.precedes(b.node, call) and not (stmt is not None and m.contains(stmt, b.node))]
        if not bs or any(b.how != "assign" or b.value is None for b in bs):
            return False
        last = max(bs, key=lambda b: m.order.get(b.node, 0))
        if m.enclosing(last.node, cst.If, cst.For, cst.While, cst.Try) is not m.enclosing(
                call, cst.If, cst.For, cst.While, cst.Try):
            return False  # bound in a branch or loop the call is not in: which binding reaches it is not plain
        arg = last.value
    # `np.hstack(...).astype(int)`, `np.array(boxes, dtype=np.int64)`
    if isinstance(arg, cst.Call) and isinstance(arg.func, cst.Attribute) and arg.func.attr.value == "astype":
        return bool(arg.args) and _int_dtype(arg.args[0].value)
    if isinstance(arg, cst.Call):
        akw = {a.keyword.value: a.value for a in arg.args if a.keyword is not None}
        return "dtype" in akw and _int_dtype(akw["dtype"])
    return False


def _int_dtype(e) -> bool:
    """`int`, `np.int64`, `torch.long`, `"int32"`: an integer dtype written out."""
    if isinstance(e, cst.SimpleString):
        text = e.evaluated_value if isinstance(e.evaluated_value, str) else ""
    elif isinstance(e, cst.Name):
        text = e.value
    elif isinstance(e, cst.Attribute):
        text = e.attr.value
    else:
        return False
    return text in _INT_DTYPES


def _feeds_host_module(m, mm):
    """(module call, name) when the host operand of `mm` is a name (under shape-keeping methods and
    subscripts) that the same function also hands to a module the engine places on the host, one
    with parameters (not a loss or an activation): `model(cur_ids, labels=cur_ids)` with `model` a
    never-moved network and, in the same loop, `torch.cat([cur_ids, tok.to(device)])`
    (TextAugmentation-GPT2#8, G64-2). Moving `cur_ids` to the other operand's device would move the
    crash to the model call; the other operand is the one to move. None otherwise."""
    name = name_under(mm.host)
    if name is None:
        return None
    fn = m.enclosing(mm.node, cst.FunctionDef)
    scope = fn if fn is not None else m.module
    bound = {id(b.node) for b in m.bindings_of(name)}
    if not bound:
        return None
    for call in m.calls_in(scope):
        if call is mm.node or m.enclosing(call, cst.FunctionDef) is not fn:
            continue
        callee = call.func
        if not isinstance(callee, (cst.Name, cst.Attribute)):
            continue
        v = m.value_of(callee)
        if v.kind != "module" or v.dev is None or not v.dev.is_host or not v.stateful or m.is_stateless_module(callee):
            continue  # (a loss without weights runs where its inputs are: `self.criterion(pred, labels)`)
        for a in call.args:
            arg = name_under(a.value) if not a.star else None
            if (arg is not None and arg.value == name.value
                    and {id(b.node) for b in m.bindings_of(arg)} & bound):
                return call, name
    return None


def _moved_back_in_loop(m, mm):
    """The in-place move to the host (`model.cpu()`, also inside a statement's call) in the body of
    the loop on whose later passes a module call meets accelerator inputs; None otherwise."""
    if mm.loop is None:
        return None
    name = m.module.code_for_node(mm.node.func)
    for call in m.calls_in(mm.loop):
        f = call.func
        if isinstance(f, cst.Attribute) and f.attr.value in ("cpu", "to") and m.module.code_for_node(f.value) == name:
            v = m.value_of(call)
            if v.kind == "module" and v.dev is not None and v.dev.where == "host":
                return call
    return None


def _element_indices(m, node) -> bool:
    """`confusion[pred[j], gold[j]] += 1` in `for j in range(pred.size(0))` (UER-py's finetune
    `evaluate`): every index that is not on the host is one element taken from a tensor by an
    integer (a literal, or the counter of a `for` over `range(...)`), so most likely a 0-dim
    tensor, which PyTorch indexing reads as a Python integer (`.item()`) whatever its device: no
    device mismatch. Such an element is not known to have a dimension (a 2-D `pred` would give
    rows, which do fail), so the rule cannot tell and stays silent; indices known to have a
    dimension (`betas[t]` of a batch of timesteps) keep it reporting."""
    if not isinstance(node, cst.Subscript):
        return False
    found = False
    for el in node.slice:
        if not isinstance(el.slice, cst.Index):
            return False
        v = el.slice.value
        d = m.device_of(v)
        if d is not None and d.where == "host":
            continue
        if not _integer_pick(m, v) or m.value_of(v).nonscalar:
            return False
        found = True
    return found


def _integer_pick(m, v) -> bool:
    """`t[j]` / `t[0]`: one element of `t` taken by an integer literal or a `range` loop counter."""
    if not (isinstance(v, cst.Subscript) and len(v.slice) == 1 and isinstance(v.slice[0].slice, cst.Index)):
        return False
    i = v.slice[0].slice.value
    if isinstance(i, cst.Integer):
        return True
    if not isinstance(i, cst.Name):
        return False
    bindings = m.bindings_of(i)
    if not bindings:
        return False
    for b in bindings:
        if b.how != "for" or b.index != () or not isinstance(b.value, cst.Call):
            return False
        f = b.value.func
        if not (isinstance(f, cst.Name) and f.value == "range" and m.qualname(f) in (None, "range")):
            return False
    return True


def _none_default_parameter(m, name: cst.Name) -> bool:
    """`name` may be a parameter of its function whose default is `None`."""
    for b in m.bindings_of(name):
        if b.how != "param":
            continue
        param = m.parents.get(b.node)
        if (isinstance(param, cst.Param) and isinstance(param.default, cst.Name)
                and param.default.value == "None"):
            return True
    return False


def _like_source(m, call, q):
    """For `torch.<x>_like(t)` with no `device=`, where `t` is a host tensor made elsewhere: the
    origin of `t` (the `*_like` copy is on the host only because `t` is)."""
    if not (q or "").startswith("torch.") or not q.endswith("_like") or not call.args:
        return None
    if any(a.keyword is not None and a.keyword.value == "device" for a in call.args):
        return None
    v = m.value_of(call.args[0].value)
    if v.kind != "tensor" or v.dev is None or not v.dev.is_host or v.origin is None or v.origin is call:
        return None
    return v.origin


def _factory_with_constant(origin):
    """For a host value that is a factory call combined with a number literal
    (`torch.arange(k) + 1`, NVIDIA-Merlin/Transformers4Rec#509), the factory: giving it `device=`
    places the whole value. Anything else is returned as it is."""
    if not isinstance(origin, cst.BinaryOperation):
        return origin
    for part, other in ((origin.left, origin.right), (origin.right, origin.left)):
        while isinstance(other, cst.UnaryOperation):
            other = other.expression
        if isinstance(part, cst.Call) and isinstance(other, (cst.Integer, cst.Float)):
            return part
    return origin


def _line(ctx: Context, reported, node) -> str:
    """`line 12` for a node of the reported one's message (in a notebook, in its cell's numbering:
    `line 3 of the next code cell`), `this line` on the reported line."""
    return lines_of(ctx, reported, [node]) or "this line"


def _built_in(m, value, init) -> bool:
    """`value` is a host tensor made in `init` itself (`pe = torch.zeros(n, d)` ... `self.pe =
    pe.unsqueeze(0)`): GL106's construction state, like a factory assigned directly."""
    v = m.value_of(value)
    return (v.kind == "tensor" and v.dev is not None and v.dev.is_host and v.origin is not None
            and m.contains(init, v.origin))


def _host_tensor_from_file_function(m, value) -> bool:
    """A call of a function of this file whose result the flow engine knows to be a host tensor
    (the same test as GL106's `host_tensor_from_file_function`)."""
    if not file_function_call(m, value):
        return False
    if any(a.keyword is not None and a.keyword.value == "device" for a in value.args):
        return False  # GL106 leaves a value made with `device=` alone (`_placed`)
    v = m.value_of(value)
    return v.kind == "tensor" and v.dev is not None and v.dev.is_host


def _module_class(m, node) -> cst.ClassDef | None:
    """The class around `node` when it is a module (or a module-based metric) of the file, or one
    whose bases the file cannot resolve."""
    cls = m.class_of(node)
    if cls is None:
        return None
    name = cls.name.value
    if (not m.class_is(name, MODULE_BASES) and not m.flow._unresolved_bases(name)
            and m.flow._class_kind(name) not in ("module", "metric")):
        return None
    return cls


def _stateless_callee(m, expr, depth: int = 0) -> bool:
    """A loss or activation module with no parameters or buffers (`nn.L1Loss()`, `nn.ReLU()`),
    also when it reaches the call as a function parameter whose every call site passes one
    (cure-lab/SCINet exp_pems.py: `forecast_loss = nn.L1Loss().cuda()` handed to `validate`, which
    calls it on tensors rebuilt on the CPU with `torch.from_numpy`). Moving it moved nothing: it
    computes on the device of its inputs."""
    if expr is None or depth > 3:
        return False
    if m.is_stateless_module(expr):
        return True
    if not isinstance(expr, cst.Name):
        return False
    bindings = m.bindings_of(expr)
    if not bindings:
        return False
    for b in bindings:
        if b.how == "param":
            args = m.param_arguments(b) or _method_param_arguments(m, b)
            if not args or not all(_stateless_callee(m, a, depth + 1) for a in args):
                return False
        elif b.how == "assign" and b.value is not None:
            if not _stateless_callee(m, b.value, depth + 1) and not m.is_stateless_module(b.value):
                return False
        else:
            return False
    return True


def _method_param_arguments(m, b) -> list:
    """The arguments passed for parameter `b` of a method at its `self.<method>(...)` calls inside
    its class (empty when there is none, or one cannot be matched: `*args`, `**kwargs`)."""
    fn = m.function_of_param(b)
    cls = m.class_of(fn) if fn is not None else None
    if fn is None or cls is None:
        return []
    params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
    if not params or params[0] != "self" or b.name not in params[1:]:
        return []
    index = params.index(b.name) - 1
    out = []
    for call in m.calls:
        f = call.func
        if not (isinstance(f, cst.Attribute) and f.attr.value == fn.name.value and isinstance(f.value, cst.Name)
                and f.value.value == "self" and m.class_of(call) is cls):
            continue
        if any(a.star for a in call.args):
            return []
        pos = [a.value for a in call.args if a.keyword is None]
        kw = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        found = kw.get(b.name, pos[index] if index < len(pos) else None)
        if found is None:
            return []
        out.append(found)
    return out


def _path_host_test(m, v):
    """For a value on the host on one path of a conditional expression only (the engine's
    PATH_HOST, E64-1): (the expression's test, whether the host branch is its `else`); else None."""
    if v.dev is None or v.dev.where != "either" or v.dev.key != "path" or v.origin is None:
        return None
    child = v.origin
    for anc in m.ancestors(v.origin):
        if isinstance(anc, cst.IfExp) and child is not anc.test:
            return anc.test, child is anc.orelse
        child = anc
    return None


def _fresh_in_loop(m, loop, name: cst.Name, read) -> bool:
    """`name` is bound by a plain statement of `loop`'s own body (not nested in a block of it)
    that comes before `read`: every pass reads the value that pass made."""
    body = loop.body
    if not isinstance(body, cst.IndentedBlock):
        return False
    for stmt in body.body:
        if not m.precedes(stmt, read) or m.contains(stmt, read):
            break
        if isinstance(stmt, cst.SimpleStatementLine) and any(
                m.contains(stmt, b.node) and b.how in ("assign", "unpack") for b in m.bindings_of(name)):
            return True
    return False


# random factories that take `device=` and `generator=` (and draw on the device they make the tensor on)
_DRAWING_FACTORIES = frozenset({"torch.rand", "torch.randn", "torch.randint", "torch.randperm"})


def _generator_arg(call: cst.Call):
    return next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "generator"), None)


def _host_generator(m, g, depth: int = 0):
    """The call that makes the generator `g` a CPU generator (`torch.manual_seed(s)`, which returns
    the default CPU generator; `torch.Generator()` / `torch.Generator("cpu")`; either with
    `.manual_seed(s)` after it), through the one binding of a name or `self.<attr>`; None when not
    known to be on the CPU."""
    if depth > 4:
        return None
    if isinstance(g, (cst.Name, cst.Attribute)) and not (isinstance(g, cst.Attribute) and m.qualname(g)):
        bindings = m.bindings_of(g)
        if len(bindings) != 1 or bindings[0].how != "assign" or bindings[0].value is None:
            return None
        return _host_generator(m, bindings[0].value, depth + 1)
    if not isinstance(g, cst.Call):
        return None
    if isinstance(g.func, cst.Attribute) and g.func.attr.value == "manual_seed" and isinstance(g.func.value, cst.Call):
        return _host_generator(m, g.func.value, depth + 1)
    q = m.qualname(g.func)
    if q == "torch.manual_seed":
        return g
    if q in ("torch.Generator", "torch._C.Generator"):
        dev = next((a.value for a in g.args if a.keyword is None or a.keyword.value == "device"), None)
        if dev is None or (isinstance(dev, cst.SimpleString) and dev.evaluated_value.split(":")[0] == "cpu"):
            return g
        if (isinstance(dev, cst.Call) and m.qualname(dev.func) == "torch.device" and dev.args
                and isinstance(dev.args[0].value, cst.SimpleString) and dev.args[0].value.evaluated_value == "cpu"):
            return g
    return None


def _generator_findings(ctx: Context):
    """`torch.randn(shape, generator=g, device=d)` with `d` an accelerator and `g` a CPU generator
    (diffusers#6501, G65-2: `generator = torch.manual_seed(0)`, the default CPU generator): the draw
    raises "Expected a 'cuda' device type for generator but found 'cpu'". No fix: the numbers drawn
    change with the generator's device."""
    m = ctx.model
    facts = m.facts(DeviceFacts)
    for call in m.calls:
        if m.qualname(call.func) not in _DRAWING_FACTORIES:
            continue
        g = _generator_arg(call)
        dev = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "device"), None)
        if g is None or dev is None:
            continue
        d = m.device_of(call)
        if d is None or d.where != "acc":
            continue
        if isinstance(d.expr, (cst.Name, cst.Attribute)) and facts.device_is_cpu(d.expr):
            continue  # `device = "cpu"` read as an accelerator name
        if not runs_on_gpu(m, call):
            continue
        made = _host_generator(m, g)
        if made is None:
            continue
        what = ("the default CPU generator `torch.manual_seed(...)` returns"
                if m.qualname(made.func) == "torch.manual_seed" else "a CPU generator")
        gen = _short_code(ctx.code(g))
        if made is g:
            gen_text = f"`{gen}` is {what}"
        else:
            gen_text = f"`{gen}` is {what} (on {line_ref(ctx, made)})"
        yield ctx.finding(
            call,
            f"`{ctx.code(call.func)}(...)` draws on `{ctx.code(dev)}` (the accelerator) but {gen_text}: a CUDA draw "
            f"needs a CUDA generator (\"Expected a 'cuda' device type for generator but found 'cpu'\"); make the "
            f"generator there (`torch.Generator(device={ctx.code(dev)}).manual_seed(...)`), or draw on the CPU and "
            f"move the result (`.to({ctx.code(dev)})`)",
        )


def _short_code(code: str) -> str:
    code = " ".join(code.split())
    return code if len(code) <= 60 else code[:57] + "..."
