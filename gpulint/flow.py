"""The flow engine: abstract values (kind, device, dtype facts) for the expressions of one file.

An abstract interpreter over the tree the ScriptModel recorded. Each function body is interpreted
once, in statement order ("recording" pass: the value of every expression it meets is kept for
`value_of`). Branches are joined (a value moved on one branch only is "host or device"), loops run
to a fixed point (at most `LOOP_ROUNDS` rounds), names re-bound take their new value. Across the
file: calls of the file's own functions and methods are answered by summaries (the callee's body
interpreted, without recording, with the caller's argument values; memoised; depth and total work
bounded), `self.attr` values are kept per class across its methods, module-level code runs first
and what it calls (`main()`) sees its values.

Values never come from guessing by names of variables, with one exception kept from the model: an
expression used as a device (`x.to(dev)`) whose value is not known is read by its name (`device`,
`args.device`, `local_rank` -> an accelerator; `self._cpu_device` -> the host).

Unknown (None) is a first-class answer: rules stay silent on it.

What torch's functions, classes and methods do comes from `gpulint.kb` (generated from torch).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Optional

import libcst as cst

from gpulint import flowkb as kb
from gpulint.model import STATELESS_MODULES, dotted, literal_bool, requires_other_path, string_value

LOOP_ROUNDS = 3  # rounds of a loop body before its entry values are given up on (fixed point)
MAX_DEPTH = 4  # nested summaries
WORK_FACTOR = 3  # summaries may evaluate at most this many times the file's nodes in all

# kinds (strings; `Kind` in model.py maps the ones the old API knows)
TENSOR, MODULE, OPTIMIZER, SCHEDULER, LOADER, DATASET, BATCH = (
    "tensor", "module", "optimizer", "scheduler", "loader", "dataset", "batch")
SCALER, DEVICE, METRIC, TUPLE, ITER, PARAMS, HOSTVAL, DTYPE, OBJECT = (
    "scaler", "device", "metric", "tuple", "iter", "params", "hostval", "dtype", "object")
FUNC = "function"  # a function of this file used as a value (`fn`: its definition)
CLASS = "class"  # a class of this file used as a value (`cls`: its name): `NeuralNet(database, GINet)`
TOKENIZER = "tokenizer"  # a Hugging Face tokenizer or processor: its tensors are made on the host
TRANSFORM = "transform"  # a torchvision transform: host data in, host data out (a tensor keeps its device)
_HOST_READERS = frozenset({"PIL.Image.open", "cv2.imread", "imageio.imread", "imageio.v2.imread",
                           "skimage.io.imread", "numpy.load", "numpy.array", "numpy.asarray",
                           "numpy.fromfile", "numpy.frombuffer", "torchvision.io.read_image",
                           "torchvision.io.decode_image"})
MAPPING = "mapping"  # a dict display of values of one kind (`elem`): indexing gives it, iterating keys


def _moved_to_host(v: "Value") -> bool:
    """A module the engine places on the host because a `.cpu()` / `.to(<host>)` call put it there
    (not one merely built there and maybe moved later by code the engine does not follow)."""
    p = v.placed
    return (v.dev is not None and v.dev.is_host and type(p) is cst.Call and type(p.func) is cst.Attribute
            and p.func.attr.value in ("to", "cpu"))


def _reads_into_host(q: str | None) -> bool:
    """A call that reads an image or array into host memory (PIL, cv2, NumPy's random functions)."""
    return q is not None and (q in _HOST_READERS or q in _NUMPY_ARRAY_MAKERS or (
        q.startswith("numpy.random.") and q.rsplit(".", 1)[-1][:1].islower()))


@dataclass(frozen=True)
class Dev:
    """Where a value lives: `host`, `acc` (an accelerator: `expr` is the device expression when
    there is one, `key` its text for comparisons), `either` (host on one path, accelerator on
    another), `model` (a forward input: wherever the module is)."""

    where: str
    key: str = ""
    expr: Optional[cst.BaseExpression] = None
    # the expression the device had where it came from, before a `self.<attr>` holding it renamed
    # it (`self.device` set from the script's `device`): for fixes written outside that class
    outer: Optional[cst.BaseExpression] = None

    def __eq__(self, other):
        return isinstance(other, Dev) and self.where == other.where and self.key == other.key

    def __hash__(self):
        return hash((self.where, self.key))

    @property
    def is_host(self) -> bool:
        return self.where == "host"

    @property
    def is_acc(self) -> bool:
        return self.where in ("acc", "model")

    def __repr__(self) -> str:
        return f"Dev({self.where}{':' + self.key if self.key else ''})"


HOST = Dev("host")
EITHER = Dev("either")
# a module moved to the accelerator on one branch of an `if` whose test has nothing to do with
# devices (`if weights is None:`), and left on the host on the other: host on a path a GPU run takes
BRANCH_HOST = Dev("either", "branch")
# a tensor made on the host (a factory without `device=`) on one branch of a conditional expression
# whose test has nothing to do with devices, and on the accelerator on the other: on the host on a
# path a GPU run can take (E64-1); counted as a host operand where it meets an accelerator tensor
PATH_HOST = Dev("either", "path")
MODEL_DEV = Dev("model")  # a module's own tensors and submodules: wherever the module is
INPUT_DEV = Dev("model", "input")  # a forward input: on the module's device (GL105's premise)


_DEVICE_WORDS = re.compile(
    r"cuda|gpu|cpu|device|dev\b|accel|mps|xpu|tpu|npu|rank|dist|parallel|ddp|fsdp|fp16|half|amp|precision|"
    r"world|node|host|local|multi|single|deepspeed|horovod|cluster|slurm|mesh|shard",
    re.IGNORECASE,
)


def _chain_root(e) -> str | None:
    """`model` for `model.decoder.proj` (attributes and subscripts over a name); None otherwise."""
    while type(e) in (cst.Attribute, cst.Subscript):
        e = e.value
    return e.value if type(e) is cst.Name else None


def _record_keys(fields, pos, kw) -> tuple:
    """What each field of a record (a dataclass, a NamedTuple, a `namedtuple`) was given by a
    construction's positional and keyword arguments, in field order."""
    keys = {}
    for i, (_x, v, st) in enumerate(pos):
        if st or i >= len(fields):
            break
        keys[fields[i]] = v
    for k0, (_x, v) in kw.items():
        if k0 in fields:
            keys[k0] = v
    return tuple((f, keys[f]) for f in fields if f in keys)


def join_dev(a: Dev | None, b: Dev | None) -> Dev | None:
    if a is None or b is None:
        return None
    if a == b:
        return a
    if a.is_acc and b.is_acc:
        if a.where == "acc" and b.where == "acc" and a.key and b.key and a.key != b.key:
            return Dev("acc", "", a.expr)  # two accelerator expressions: an accelerator
        return a if a.where == "acc" else b
    return EITHER


@dataclass(frozen=True)
class Value:
    kind: str | None = None
    dev: Dev | None = None
    half: bool = False  # a module or tensor converted to float16
    nonscalar: bool = False  # a tensor known to have at least one dimension
    nograd: bool = False  # a tensor computed under torch.no_grad() / inference_mode()
    items: tuple | None = None  # TUPLE: element values
    elem: "Value | None" = None  # ITER/LOADER/PARAMS: what iterating gives
    cls: str | None = None  # an instance of a class of this file
    origin: cst.CSTNode | None = field(default=None, repr=False)  # where made (not compared)
    placed: cst.CSTNode | None = field(default=None, repr=False)  # the call that placed it (not compared)
    half_at: cst.CSTNode | None = field(default=None, repr=False)  # the call that made it float16
    stateful: bool = field(default=False, repr=False)  # a module with parameters or buffers
    scatters: bool = field(default=False, repr=False)  # DataParallel/DDP: moves its inputs itself
    source: cst.CSTNode | None = field(default=None, repr=False)  # PARAMS/OPTIMIZER: the module's origin
    fn: cst.FunctionDef | None = field(default=None, repr=False)  # FUNC: the function (compared by identity)
    deep: bool = False  # a tensor known to have at least two dimensions (`t[i]` still has one)
    wrap: object = field(default=None, repr=False)  # the DataParallel/DDP call it is on some path, or UNWRAPPED
    keys: tuple | None = None  # MAPPING: ((key, value), ...) of a dict display with constant string keys
    nullable: bool = False  # None on some path (joined with `None`: the join keeps the other value)
    truth: bool | None = None  # `True` / `False` on every path (a flag the calls set), else None
    py: str | None = None  # HOSTVAL: its builtin type on every path ('int', 'float', 'str', 'bool')
    const: str | None = None  # HOSTVAL: the same string literal on every path (`return_tensors="pt"`)
    # MODULE moved to an accelerator, then given a new submodule built on the host (`model.fc =
    # nn.Linear(...)` after `model.to(device)`): (the assigned attribute, the constructor call)
    host_part: object = field(default=None, repr=False)
    # a tensor that holds an autograd graph on every path: the output of a module with parameters
    # called with gradients on, and what differentiable operations make of it (not `.detach()`,
    # `.item()`, comparisons, `argmax`, integer casts, or anything computed under no_grad)
    graph: bool = False
    # OBJECT: attributes code outside the class's methods set on this instance (`inst.model =
    # CNN(...)` in a `load` classmethod, `trainer.model = net`): ((name, value), ...), read first
    attrs: tuple | None = None
    # OBJECT of no one class: the classes of the file it is an instance of on some path (`for loss
    # in [GeneratorLoss(), DiscriminatorLoss()]`), sorted; a method call runs each class's method
    alts: tuple | None = None
    # HOSTVAL: the device string (`"cuda:0"`, `"cpu"`) it is on every path; kept through calls, so a
    # parameter not named like a device that receives one still names that device (`def
    # __init__(self, where): self.to(where)`, `WDL(..., where="cuda:0" if ... else "cpu")`)
    devtext: str | None = None

    def __eq__(self, o):
        return (
            isinstance(o, Value)
            and self.kind == o.kind
            and self.fn is o.fn
            and self.dev == o.dev
            and self.half == o.half
            and self.nonscalar == o.nonscalar
            and self.nograd == o.nograd
            and self.deep == o.deep
            and self.items == o.items
            and self.elem == o.elem
            and self.cls == o.cls
            and self.scatters == o.scatters
            and self.wrap is o.wrap
            and self.stateful == o.stateful
            and self.keys == o.keys
            and self.nullable == o.nullable
            and self.truth == o.truth
            and self.py == o.py
            and self.const == o.const
            and self.host_part is o.host_part
            and self.graph == o.graph
            and self.attrs == o.attrs
            and self.alts == o.alts
            and self.devtext == o.devtext
        )

    def __hash__(self):
        return hash((self.kind, self.dev, self.half, self.items, self.cls))


UNKNOWN = Value()
# Value.wrap of `W.module`: joined with the wrapper (`W.module if hasattr(W, "module") else W`), the
# code has unwrapped it on the paths where it was wrapped
UNWRAPPED = object()
TRUE_VALUE = Value(HOSTVAL, HOST, truth=True, py="bool")
FALSE_VALUE = Value(HOSTVAL, HOST, truth=False, py="bool")
_LITERAL_TYPES = {cst.Integer: "int", cst.Float: "float", cst.SimpleString: "str", cst.Imaginary: "complex"}
NONE_VALUE = Value("none", HOST)  # `None`: joined with a value, the value (using None would fail anyway)


_DEVICE_TEXT = re.compile(r"\s*(cuda|cpu|mps|xpu|meta|hpu|npu|xla|gpu|tpu|ipu|mtia|privateuseone)(:\d+)?\s*$", re.I)
_TORCH_DEVICE_TEXT = re.compile(r"(cuda|cpu|mps|xpu|meta|hpu|npu|xla)(:\d+)?")
_LEAVES = "leaves"  # `_if`: the branch its test decides always leaves the block
_NON_CUDA_ACCELERATORS = ("mps", "xpu", "xla", "hpu", "npu")


def _grown_from_empty(v: Value) -> bool:
    """A dict that began as `d = {}` and got its keys by `d[k] = v`: the keys it reads back are
    known, but not that it has no other (an alias may have set more: `cfg = d; cfg["device"] =
    ...`), so no conclusion rests on a key being absent."""
    return type(v.origin) is cst.Dict and not v.origin.elements


def _list_repeat(x) -> bool:
    """`[[1.0, 0.0]] * 3` / `3 * [0]`: a list display repeated, a list with elements."""
    if type(x) is not cst.BinaryOperation or type(x.operator) is not cst.Multiply:
        return False
    return any(type(s) is cst.List and len(s.elements) > 0 for s in (x.left, x.right))


def join(a: Value | None, b: Value | None) -> Value:
    if a is None:
        return b if b is not None else UNKNOWN
    if b is None or a is b or a == b:
        return a
    if a.kind == "none" and b.kind not in (None, "none"):
        return b if b.nullable and b.truth is None else replace(b, nullable=True, truth=None)
    if b.kind == "none" and a.kind not in (None, "none"):
        return a if a.nullable and a.truth is None else replace(a, nullable=True, truth=None)
    if a.kind == TUPLE and b.kind == TUPLE:
        # an empty list joined with a filled one: iterating gives the filled one's elements
        if a.items == () and b.items is None and b.elem is not None:
            return b
        if b.items == () and a.items is None and a.elem is not None:
            return a
    if a.kind == MAPPING and b.kind == MAPPING:
        # an empty dict joined with one filled under computed keys: indexing gives the filled
        # one's values (`out = {}` then `out[f"stage_{s}"] = ...` in a loop, E62-2)
        if a.keys == () and b.keys is None and b.elem is not None:
            return b
        if b.keys == () and a.keys is None and a.elem is not None:
            return a
    if a.kind == FUNC == b.kind and type(a.fn) is _TorchFn and type(b.fn) is _TorchFn:
        if a.fn.q.startswith("torch.cuda.") != b.fn.q.startswith("torch.cuda."):
            # `torch.cuda.FloatTensor if use_gpu else torch.FloatTensor`: the configured accelerator,
            # as `"cuda" if ... else "cpu"` is
            return a if a.fn.q.startswith("torch.cuda.") else b
        return a  # `torch.randn if normal else torch.rand`: either makes its tensor on the host
    if a.kind != b.kind or a.fn is not b.fn:
        if _number_or_tensor(a) and _number_or_tensor(b) and (a.kind != HOSTVAL or b.kind != HOSTVAL):
            # `adv_loss = 0.0`, then on some path `adv_loss = criterion(d(fake), ones)`; `best =
            # float("inf")`, then `best = val_loss`: a Python number on some paths, a tensor on the
            # others (where it is a tensor, it lives where the tensors do and holds a graph if all do)
            ts = [v for v in (a, b) if v.kind != HOSTVAL]
            return Value(None, ts[0].dev if len(ts) == 1 else join_dev(ts[0].dev, ts[1].dev), py=NUMBER,
                         graph=all(v.graph for v in ts))
        if a.kind in (None, TENSOR) and b.kind in (None, TENSOR):
            # a tensor on one path, a value of unknown kind on the other: where it lives may still be known
            return Value(None, join_dev(a.dev, b.dev))
        return UNKNOWN
    items = None
    if a.items is not None and b.items is not None and len(a.items) == len(b.items):
        items = tuple(join(x, y) for x, y in zip(a.items, b.items))
    elem = join(a.elem, b.elem) if (a.elem is not None and b.elem is not None) else None
    if a.kind == TUPLE and items is None and elem is None:
        ea, eb = _elem_of(a), _elem_of(b)
        if ea is not None and eb is not None:
            elem = join(ea, eb)  # `[x]` then `.append(y)` in a loop: its elements are x or y
    keys = None
    if a.keys is not None and b.keys is not None and len(a.keys) == len(b.keys):
        bk = dict(b.keys)
        if all(k in bk for k, _ in a.keys):
            keys = tuple((k, join(v, bk[k])) for k, v in a.keys)
    if keys is None and a.kind == MAPPING and a.keys is not None and b.keys is not None:
        # a dict that gains keys on some paths (`state = {}`, then `state["y_pred"] = model(x)` in
        # the loop): a key read back exists only on the paths that set it, so it has their value
        bk = dict(b.keys)
        ak = dict(a.keys)
        keys = tuple((k, join(v, bk[k]) if k in bk else v) for k, v in a.keys) + tuple(
            (k, v) for k, v in b.keys if k not in ak)
    return Value(
        a.kind,
        join_dev(a.dev, b.dev),
        a.half and b.half,
        a.nonscalar and b.nonscalar,
        a.nograd and b.nograd,
        items,
        elem,
        a.cls if a.cls == b.cls else None,
        a.origin,
        a.placed if a.dev == join_dev(a.dev, b.dev) else b.placed,
        stateful=a.stateful or b.stateful,
        scatters=a.scatters and b.scatters,
        half_at=a.half_at if (a.half and b.half) else None,
        source=a.source if a.source is b.source else None,
        fn=a.fn,  # the same function on both paths (a different one gives UNKNOWN above)
        deep=a.deep and b.deep,
        wrap=UNWRAPPED if UNWRAPPED in (a.wrap, b.wrap) else (a.wrap or b.wrap),
        keys=keys,
        nullable=a.nullable or b.nullable,
        truth=a.truth if a.truth == b.truth else None,
        py=a.py if a.py == b.py else None,
        const=a.const if a.const == b.const else None,
        graph=a.graph and b.graph,
        host_part=a.host_part if a.host_part is b.host_part else None,
        attrs=_join_attrs(a.attrs, b.attrs, a.kind == OBJECT and a.cls is not None and a.cls == b.cls),
        alts=_join_alts(a, b),
        devtext=a.devtext if a.devtext == b.devtext else None,
    )


def _join_alts(a: Value, b: Value):
    """The classes an OBJECT joined from instances of different classes of the file is one of."""
    if a.kind != OBJECT or a.cls == b.cls and a.alts == b.alts:
        return a.alts if a.cls == b.cls else None
    ca = a.alts or ((a.cls,) if a.cls is not None else None)
    cb = b.alts or ((b.cls,) if b.cls is not None else None)
    if ca is None or cb is None:
        return None
    out = tuple(sorted(set(ca) | set(cb)))
    return out if len(out) <= 4 else None


def _exits_in(fn) -> list:
    """The `return` statements of a function (not of the functions and classes it defines); a
    `raise` leaves no environment for the caller to read."""
    out = []
    stack = list(fn.body.body) if isinstance(fn.body, cst.IndentedBlock) else [fn.body]
    while stack:
        n = stack.pop()
        t = type(n)
        if t in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        if t is cst.Return:
            out.append(n)
            continue
        stack.extend(n.children)
    return out


def _size_of_tensor(x) -> bool:
    """`t.size()` / `t.shape`: a shape read from a value."""
    if type(x) is cst.Call and type(x.func) is cst.Attribute and x.func.attr.value == "size" and not x.args:
        return True
    return type(x) is cst.Attribute and x.attr.value == "shape"


def _put_on_host(v: Value) -> bool:
    """A value that a `.cpu()` (or `.to("cpu")`) call put on the host."""
    p = v.placed
    return (v.dev == HOST and type(p) is cst.Call and type(p.func) is cst.Attribute
            and p.func.attr.value in ("cpu", "to"))


def _join_attrs(a, b, partial: bool = False):
    """Per-instance attributes on both paths (joined where both set one; one set on one path only
    may or may not be there: dropped, the class's own value is read). With `partial` (two paths of
    one instance of a class of the file), one set on one path only is kept under `attr?`: whoever
    reads it joins it with the class's own value (`if args.parallel: model.parallelize()`)."""
    if not partial:
        if not a or not b:
            return None
        bd = dict(b)
        out = tuple((k, join(v, bd[k])) for k, v in a if k in bd)
        return out or None
    if not a and not b:
        return None
    sides = []
    for side in (a or (), b or ()):
        d = {}
        for k, v in side:
            some = k[-1:] if k.endswith(("?", "!")) else ""
            d[k[:-1] if some else k] = (v, some)
        sides.append(d)
    da, db = sides
    out = []
    for k in sorted(set(da) | set(db)):
        if k in da and k in db:
            (va, pa), (vb, pb) = da[k], db[k]
            mark = "!" if pa == pb == "!" else ("?" if pa or pb else "")
            out.append((k + mark, join(va, vb)))
        else:
            v, some = da.get(k) or db.get(k)
            out.append((k + ("!" if some == "!" else "?"), v))
    return tuple(out) or None


def instance_attr(attrs, attr: str):
    """(value, on every path) of `attr` in an instance's per-instance attributes, or None."""
    for k0, v0 in attrs or ():
        if k0 == attr:
            return v0, True
        if k0 == attr + "?" or k0 == attr + "!":
            return v0, False
    return None


def set_on_one_branch(attrs, attr: str) -> bool:
    """`attr` was set on this instance on one branch of an `if` whose test has nothing to do with
    devices (`if args.stage1: h.proto = ...`), and not on the other: a GPU run may take either."""
    return any(k0 == attr + "!" for k0, _ in attrs or ())


def _set_attrs(attrs, new: dict) -> tuple:
    """The per-instance attributes with `new` set on every path (sorted by name)."""
    out = {k: v for k, v in attrs or () if k not in new and not (k.endswith(("?", "!")) and k[:-1] in new)}
    out.update(new)
    return tuple(sorted(out.items(), key=lambda kv: kv[0]))


# Value.py of a value of no known kind that is a Python number on some paths and a tensor on the
# others (see join): its `dev` and `graph` are the tensor's
NUMBER = "number"
# Value.py of a NumPy array (of kind None from a NumPy constructor, HOSTVAL from `.numpy()`)
NDARRAY = "ndarray"
DISTRIBUTION = "distribution"  # a torch.distributions object (Value.py of an OBJECT)


def number_or_tensor(v: Value) -> bool:
    """A Python number on some paths, a tensor on the others."""
    return v.kind is None and v.py == NUMBER


def _number_or_tensor(v: Value) -> bool:
    return ((v.kind == HOSTVAL and v.py in ("int", "float") and not v.nullable)
            or (v.kind == TENSOR and not v.nullable) or number_or_tensor(v))


def _moved_unknown(v: Value) -> bool:
    """A value of unknown kind moved on purpose (`x.cpu()`, `x.to(device)`): where it is is known."""
    return v.kind is None and v.placed is not None and v.dev is not None and v.dev.where in ("host", "acc")


def _as_tensor(v: Value) -> Value:
    """An element of a sequence torch takes tensors from, as an operand: a tensor where it is;
    one of unknown kind, moved on purpose, where it was moved (of at least one dimension: `cat`
    needs them); any other, a tensor of unknown device."""
    if v.kind == TENSOR:
        return v
    if _moved_unknown(v):
        return replace(v, kind=TENSOR, nonscalar=True)
    return Value(TENSOR, None)


def _known_accelerator(meth: str, pos, kw) -> bool:
    """`.cuda()`, or `.to(d)` / `.to(device=d)` whose target the engine takes for an accelerator
    the way it does for tensors (a device it knows, a name it cannot see: `device`), but not a
    device read from a tensor of unknown placement (`dev = x.device`: maybe the host)."""
    if meth == "cuda":
        return True
    given = pos[0][:2] if pos and not pos[0][2] else kw.get("device")
    if given is None:
        return False
    x, v = given
    if type(x) is cst.SimpleString:
        return x.evaluated_value.startswith("cuda") if isinstance(x.evaluated_value, str) else False
    if v.kind == DEVICE:
        return v.dev is not None and v.dev.where == "acc"
    return v.kind is None


def _called_moved(v: Value | None) -> Value | None:
    """A value of unknown kind that was moved to an accelerator (`model.to(device)` of a parameter)
    and is now called: a tensor is not callable, so it is a module there."""
    if v is not None and _moved_unknown(v) and v.dev.where == "acc":
        return replace(v, kind=MODULE, stateful=True)
    return v


def _quantized(kw) -> bool:
    """`from_pretrained(..., load_in_8bit=True)` / `load_in_4bit=` / a `quantization_config=` that is
    not None: transformers places the quantized weights on the GPU as it loads them (TinyLlama's
    assisted decoding: ENGINE_FP ninth pass #1)."""
    for k in ("load_in_8bit", "load_in_4bit", "quantization_config"):
        if k in kw:
            x = kw[k][0]
            if not (type(x) is cst.Name and x.value in ("None", "False")):
                return True
    return False


def param_name(fn: cst.FunctionDef, i: int, arg: cst.Arg) -> str | None:
    """The parameter of `fn` that the call's argument `arg` (the i-th) binds; None for one past
    its positional parameters (`*args`)."""
    if arg.keyword is not None:
        return arg.keyword.value
    p = fn.params
    ordered = [*p.posonly_params, *p.params]
    return ordered[i].name.value if i < len(ordered) else None


def _mapping(keys: tuple | None, elem: Value | None, origin=None) -> Value:
    """A dict: per-key values where its keys are known, and `elem`, what any value is (joined; kept
    only where that is a tensor, as for a display)."""
    if keys is not None and elem is None and keys:
        out = None
        for _, v in keys:
            out = v if out is None else join(out, v)
        elem = out if out is not None and out.kind == TENSOR else None
    return Value(MAPPING, None, elem=elem, keys=keys, origin=origin)


def _comprehension_keys(e: cst.DictComp) -> tuple[str, ...] | None:
    """The keys of `{k: ... for k in ["train", "val"]}` (one `for` over a literal of constant
    strings, the loop variable as the key, no condition); None for any other comprehension."""
    f = e.for_in
    if f.inner_for_in is not None or f.ifs or type(f.target) is not cst.Name or type(e.key) is not cst.Name:
        return None
    if e.key.value != f.target.value or type(f.iter) not in (cst.List, cst.Tuple):
        return None
    keys = []
    for el in f.iter.elements:
        k = _const_key(el.value) if type(el) is cst.Element else None
        if k is None or k in keys:
            return None
        keys.append(k)
    return tuple(keys) if keys else None


def _const_key(x) -> str | None:
    if type(x) is cst.SimpleString:
        v = x.evaluated_value
        return v if isinstance(v, str) else None
    return None


# calls that run their first argument (a module) on their second: the keyword that may give it
_TRACING_CALLS = {
    "torch.jit.trace": ("example_inputs",),
    "torch.onnx.export": ("args",),
    "torch.export.export": ("args",),
}

# calls that compile their first argument: a module stays the module, anything else is a callable
_COMPILING_CALLS = frozenset({"torch.jit.script", "torch.compile", "torch.jit.trace_module"})

_REDUCTIONS = frozenset(
    "argmax argmin sum mean max min prod std var logsumexp amax amin all any count_nonzero median "
    "nanmean nansum".split()
)


def _is_static(fn) -> bool:
    return any(isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in fn.decorators)


def _is_classmethod(fn) -> bool:
    return type(fn) is cst.FunctionDef and any(
        isinstance(d.decorator, cst.Name) and d.decorator.value == "classmethod" for d in fn.decorators)


class _TorchFn:
    """A `torch.*` factory named as a value (`rand_func = torch.randn if normal else torch.rand`):
    Value.fn of a FUNC value; interned per qualified name, so that identity compares them."""

    __slots__ = ("q",)
    _interned: dict = {}

    def __init__(self, q: str) -> None:
        self.q = q

    @classmethod
    def of(cls, q: str) -> "_TorchFn":
        found = cls._interned.get(q)
        if found is None:
            found = cls._interned[q] = cls(q)
        return found


def _is_property(fn) -> bool:
    """`@property` / `@functools.cached_property` (a getter: reading the attribute runs it)."""
    for d in getattr(fn, "decorators", ()):
        x = d.decorator
        name = x.value if isinstance(x, cst.Name) else x.attr.value if isinstance(x, cst.Attribute) else None
        if name in ("property", "cached_property"):
            return True
    return False


def _hub_model(e: cst.Call) -> bool:
    """`torch.hub.load(repo, entry, ...)` whose entry point names no tokenizer, config or other
    non-model object (the hub's entry points return whatever their `hubconf.py` builds)."""
    args = [a for a in e.args if a.keyword is None and not a.star]
    entry = args[1].value if len(args) >= 2 else next(
        (a.value for a in e.args if a.keyword is not None and a.keyword.value == "model"), None)
    if not isinstance(entry, cst.SimpleString):
        return False
    name = entry.evaluated_value
    if not isinstance(name, str):
        return False
    low = name.lower()
    return not any(w in low for w in ("tokenizer", "config", "transform", "processor", "vocab", "dataset", "utils"))


def _reshaped_deep(meth: str, args, kw, rv) -> bool:
    """`.view(-1, 1)`, `.reshape(b, n)`, `.unsqueeze(0)` of a tensor with a dimension: at least two
    dimensions; a shape-keeping method of such a tensor keeps them."""
    if meth in ("view", "reshape", "expand", "repeat"):
        plain = [a for a in args if not a[2]]
        if len(plain) == 1 and type(plain[0][0]) in (cst.Tuple, cst.List):
            return len(plain[0][0].elements) >= 2
        return len(plain) >= 2
    if meth in ("unsqueeze", "unsqueeze_"):
        return rv.nonscalar
    return rv.deep and meth in kb.SHAPE_KEEPING


def _reduced_keeps_a_dim(args, kw, deep: bool = False) -> bool:
    """A reduction over `dim=k` with k >= 1 needed an input of at least k + 1 dimensions, so its
    result keeps at least k (`t.argmax(dim=1)`); `keepdim=True` keeps them all (at least one); over
    one dimension of an input of at least two (`deep`), one is left whatever `k` is
    (`targets.std(0)` of a (64, 3) table, E40-3)."""
    k = kw.get("keepdim")
    if k is not None and type(k[0]) is cst.Name and k[0].value == "True" and ("dim" in kw or args):
        return True
    d = kw.get("dim")
    x = d[0] if d is not None else (args[0][0] if args and not args[0][2] else None)
    if deep and (type(x) is cst.Integer or (type(x) is cst.UnaryOperation and type(x.operator) is cst.Minus
                                             and type(x.expression) is cst.Integer)):
        return True
    return type(x) is cst.Integer and int(x.value, 0) >= 1


def _leaf_dev(v: Value, depth: int = 0) -> Dev | None:
    """Where every tensor of a sample lives (a tensor, a tuple or dict of tensors); None unknown."""
    if v.kind == TENSOR:
        return v.dev
    if depth > 3:
        return None
    if v.kind == TUPLE and v.items:
        parts = v.items
    elif v.kind in (TUPLE, MAPPING) and v.elem is not None:
        return _leaf_dev(v.elem, depth + 1)
    elif v.kind == OBJECT and v.cls is not None and v.attrs:
        # an instance of a class of the file (a graph sample: `Graph(x, edge_index, y)`): its
        # attributes, tensors or plain numbers, all known
        parts = [it for _, it in v.attrs]
    else:
        return None
    out = None
    for i, it in enumerate(parts):
        d = _leaf_dev(it, depth + 1) if it.kind in (TENSOR, TUPLE, MAPPING) else (HOST if it.kind == HOSTVAL else None)
        if d is None:
            return None
        out = d if i == 0 else join_dev(out, d)
    return out


def _keys_known(keys: tuple, depth: int = 0) -> bool:
    """Every value of a dict display's keys has a known kind (nested dicts alike): a dict whose
    entries are filled in later (`out = {"losses": {}}` then `out["losses"]["loss"] = ...`) is not
    known well enough to stand for the module's output."""
    for _, it in keys:
        if it.kind is None or (it.kind == MAPPING and not (it.keys and depth < 3 and _keys_known(it.keys, depth + 1))):
            return False
    return True


def _input_keys(keys: tuple, depth: int = 0) -> tuple:
    """A forward input's dict keys: tensors where the module runs, nested dicts alike, the rest
    unknown."""
    out = []
    for k, it in keys:
        if it.kind == TENSOR:
            out.append((k, Value(TENSOR, INPUT_DEV, nonscalar=it.nonscalar, deep=it.deep)))
        elif it.kind == MAPPING and it.keys and depth < 3:
            out.append((k, Value(MAPPING, None, keys=_input_keys(it.keys, depth + 1))))
        else:
            out.append((k, UNKNOWN))
    return tuple(out)


def _from_loader(v: Value, loader: cst.Call, depth: int = 0) -> Value:
    """What a loader's `collate_fn` returns, with the tensors in it (in a tuple, a dict display, the
    attributes of an instance of a file class) made by the loader call: they are its batches."""
    if v.kind == TENSOR:
        # batched: at least one dimension (`torch.tensor(labels)` of the samples' labels, dgl#486)
        return replace(v, origin=loader, nonscalar=True)
    if depth > 3:
        return v
    if v.kind == TUPLE and (v.items or v.elem is not None):
        return replace(v, items=tuple(_from_loader(x, loader, depth + 1) for x in v.items) if v.items else v.items,
                       elem=_from_loader(v.elem, loader, depth + 1) if v.elem is not None else None)
    if v.kind == MAPPING and v.keys:
        return replace(v, keys=tuple((k, _from_loader(x, loader, depth + 1)) for k, x in v.keys))
    if v.kind == OBJECT and v.attrs:
        return replace(v, attrs=tuple((k, _from_loader(x, loader, depth + 1)) for k, x in v.attrs))
    return v


def _elem_of(v: Value) -> Value | None:
    if v.elem is not None:
        return v.elem
    if v.items:
        out = v.items[0]
        for x in v.items[1:]:
            out = join(out, x)
        return out
    return None


# torch functions that build a tensor from their first argument (`torch.tensor(x).to(dev)` moves
# what `x` holds), and tensor methods that keep their receiver's values and device
_INPUT_COPIES = frozenset({"torch.tensor", "torch.as_tensor", "torch.from_numpy", "torch.Tensor", "torch.FloatTensor",
                           "torch.LongTensor"})
_SAME_PLACE_CASTS = frozenset({"float", "long", "int", "double", "half", "bool", "type", "contiguous", "clone",
                               "detach"})


def copy_of_name(m, expr, name: str) -> bool:
    """`expr` is the name `name` itself, a cast or copy of it (`x.float()`, `x.detach()`), or a tensor
    built from it (`torch.tensor(x)`, `torch.from_numpy(x).float()`): what a forward moves when it
    writes `x = <expr>.to(self.device)` (precision50 P50-10; GL101's forward check asks the same)."""
    cur = expr
    for _ in range(8):
        if type(cur) is cst.Name:
            return cur.value == name
        if type(cur) is not cst.Call:
            return False
        f = cur.func
        q = m.qualname(f) or ""
        if q in _INPUT_COPIES and cur.args and cur.args[0].keyword is None and not cur.args[0].star:
            cur = cur.args[0].value
        elif type(f) is cst.Attribute and f.attr.value in _SAME_PLACE_CASTS and not q.startswith("torch."):
            cur = f.value
        else:
            return False
    return False


# module methods that return the module itself
_SELF_RETURNING = frozenset("to cuda cpu eval train float half double bfloat16 requires_grad_ xpu mps".split())


_LIGHTNING_STEPS = frozenset({"training_step", "validation_step", "test_step", "predict_step"})
_LIGHTNING_BASES = frozenset({"lightning.LightningModule", "lightning.pytorch.LightningModule",
                              "pytorch_lightning.LightningModule", "pytorch_lightning.core.LightningModule",
                              "lightning.pytorch.core.LightningModule", "lightning.pytorch.core.module.LightningModule",
                              "pytorch_lightning.core.module.LightningModule",
                              "pytorch_lightning.core.lightning.LightningModule"})


def _sliced(e) -> bool:
    """`a[i:j]`, `a[:, 0]`: a subscript with a slice keeps at least one dimension (the data of
    `torch.LongTensor(labels[i:i + bs])` is not a scalar)."""
    return type(e) is cst.Subscript and any(type(el.slice) is cst.Slice for el in e.slice)


def _like_device(call) -> bool:
    """A factory told to follow another tensor (`torch.zeros(n, device=x.device)`): on the host
    only because `x` is, not by choice (xLSTM-pytorch#2's states, made on the example input's
    device in `__init__`)."""
    if type(call) is not cst.Call:
        return False
    for a in call.args:
        if a.keyword is not None and a.keyword.value == "device":
            return type(a.value) is cst.Attribute and a.value.attr.value == "device"
    return False


def _conjuncts(test) -> list:
    """The operands of an `and` chain (the test itself otherwise): each must hold for the body."""
    out, todo = [], [test]
    while todo:
        t = todo.pop()
        if type(t) is cst.BooleanOperation and type(t.operator) is cst.And:
            todo += [t.right, t.left]
        else:
            out.append(t)
    return out


def _is_super_call(recv) -> bool:
    """`super()` or `super(Cls, self)`."""
    return type(recv) is cst.Call and type(recv.func) is cst.Name and recv.func.value == "super"


def _placed_anew(a: Value | None, b: Value, depth: int = 2) -> bool:
    """`b` (or an attribute code outside its class set on it) is definitely on the host or
    definitely on the accelerator, and `a` is not known to be there too."""
    db = b.dev
    if db is not None and db.where in ("host", "acc"):
        if a is None or a.dev is None or a.dev.where != db.where:
            return True
    if depth and b.attrs and (a is None or a.attrs is not b.attrs):
        mine = dict(a.attrs) if a is not None and a.attrs else {}
        for name, vb in b.attrs:
            va = mine.get(name)
            if va is not vb and _placed_anew(va, vb, depth - 1):
                return True
    return False


def _crosses_back_edge(entry: dict, end: dict) -> bool:
    """A value bound before a loop that its body leaves definitely placed where it was not known
    to be before the loop (a table a method moves, a state moved to the device at the end)."""
    for k, b in end.items():
        a = entry.get(k)
        if a is not None and a is not b and _placed_anew(a, b):
            return True
    return False


def _join_env(a: dict, b: dict) -> dict:
    if a is b:
        return a
    out = {}
    for k in a.keys() | b.keys():
        va, vb = a.get(k), b.get(k)
        if (va is None or vb is None) and k.startswith("self."):
            v = va if va is not None else vb
            if v.kind == TUPLE and v.items is None and v.elem is not None:
                out[k] = v  # `self.xs.append(...)` in a loop over a list the class set up elsewhere
                continue
        out[k] = va if va is vb else join(va if va is not None else UNKNOWN, vb if vb is not None else UNKNOWN)
    return out


@dataclass
class Mismatch:
    """An operation whose tensor operands the engine knows to live on different devices."""

    node: cst.CSTNode  # the operation (BinaryOperation, Call, Subscript)
    op: str  # "binary", "call", "index", "module-call"
    host: cst.BaseExpression  # the operand on the host
    host_value: Value
    acc: cst.BaseExpression  # the operand on the accelerator
    acc_value: Value
    function: cst.CSTNode | None  # the function (or module) it is in
    more_hosts: tuple = ()  # the operation's other host operands (expression, value), in order
    # found only with the arguments of one call (a helper the training loop calls with moved
    # tensors and the evaluation loop with unmoved ones): that call, in a recorded function
    site: cst.Call | None = None
    # found only on a later pass of this loop, from the values the end of its body hands round
    # (a table a later call moves to the accelerator, E60-1)
    loop: cst.CSTNode | None = None


def _names_in(m, node) -> list:
    """The Name nodes of `node`, itself included (an assignment target)."""
    if type(node) is cst.Name:
        return [node]
    return [n for n in m.walk(node) if type(n) is cst.Name]


def _is_none(e) -> bool:
    return type(e) is cst.Name and e.value == "None"


# Command-line flags that say "use the GPU" (`--cuda`, `--use_gpu`) or "stay on the CPU"
# (`--no-cuda`, `--cpu`), by their destination name
_GPU_FLAGS = frozenset({"cuda", "gpu", "use_cuda", "use_gpu", "with_cuda", "enable_cuda", "cuda_enabled"})
_CPU_FLAGS = frozenset({"no_cuda", "no_gpu", "cpu", "use_cpu", "disable_cuda", "force_cpu", "cpu_only"})


def _argparse_dest(call: cst.Call, kw: dict) -> str | None:
    """The attribute an `add_argument(...)` call sets on the parsed namespace: `dest=`, else its
    first long option (`--use-cuda` -> `use_cuda`), else its first option."""
    if "dest" in kw:
        return string_value(kw["dest"])
    opts = [o for o in (string_value(a.value) for a in call.args if a.keyword is None) if o is not None]
    if not opts:
        return None
    long = [o for o in opts if o.startswith("--")]
    return (long[0] if long else opts[0]).lstrip("-").replace("-", "_")


def _flag_guards(m) -> dict:
    """attribute name -> what `<obj>.<name>` holds when the script runs on a GPU (True/False), for
    the file's argparse flags and attributes assigned from GPU tests; absent when unknown. Computed
    once per file."""
    found = m.__dict__.get("_gpu_flag_guards")
    if found is not None:
        return found
    out: dict = {}
    m._gpu_flag_guards = out  # an attribute under computation is unknown to itself
    flags: dict[str, set] = {}
    for call, _recv, _ in m.method_calls("add_argument"):
        kw = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        dest = _argparse_dest(call, kw)
        if not dest:
            continue
        action = string_value(kw.get("action"))
        default = kw.get("default")
        lit = literal_bool(default)
        if default is not None and lit is None and not (type(default) is cst.Name and default.value == "None"):
            g = gpu_guard(m, default)  # `default=torch.cuda.is_available()`
        elif dest in _GPU_FLAGS and (action in ("store_true", "store_false") or lit is not None):
            g = True  # the user asks for the GPU on a GPU machine (store_false: on unless turned off)
        elif dest in _CPU_FLAGS and action == "store_true" and lit is not True:
            g = False
        else:
            g = None
        flags.setdefault(dest, set()).add(g)
    for dest, gs in flags.items():
        if len(gs) == 1 and None not in gs:
            out[dest] = next(iter(gs))
    assigned: dict[str, set] = {}
    for node in m.nodes:
        if type(node) is cst.Assign:
            for tgt in node.targets:
                t = tgt.target
                if type(t) is cst.Attribute and type(t.value) is cst.Name:
                    assigned.setdefault(t.attr.value, set()).add(gpu_guard(m, node.value))
    for name, gs in assigned.items():
        if len(gs) == 1 and None not in gs:
            out[name] = next(iter(gs))
        else:
            out.pop(name, None)
    return out


def is_parsed_namespace(m, name: cst.Name) -> bool:
    """`name` holds the result of an argparse parser's `parse_args()` (or `parse_known_args()[0]`)
    on every binding that reaches it, whatever it is called (`args`, `opt_`, `ns`) and in whatever
    scope (a worker function's own parser)."""
    has = m.__dict__.get("_has_parse_args")
    if has is None:
        has = m._has_parse_args = "parse_args" in m.source or "parse_known_args" in m.source
    if not has:
        return False
    bs = m.bindings_of(name)
    if not bs:
        return False
    for b in bs:
        v = b.value
        if b.how != "assign" or v is None:
            return False
        if type(v) is cst.Subscript and type(v.value) is cst.Call:
            v = v.value  # `parser.parse_known_args()[0]`
        if not (type(v) is cst.Call and type(v.func) is cst.Attribute
                and v.func.attr.value in ("parse_args", "parse_known_args")):
            return False
    return True


def argparse_default(m, dest: str):
    """The `default=` expression of the file's one `add_argument` whose destination is `dest`
    (`--device` -> `device`); None when there is none, several, or no default."""
    table = m.__dict__.get("_argparse_defaults")
    if table is None:
        table = {}
        for call, _recv, _ in m.method_calls("add_argument"):
            kw = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
            d = _argparse_dest(call, kw)
            if d:
                table[d] = kw.get("default") if d not in table else None
        m._argparse_defaults = table
    return table.get(dest)


def _int_literal(e) -> int | None:
    if type(e) is cst.UnaryOperation and type(e.operator) is cst.Minus and type(e.expression) is cst.Integer:
        return -int(e.expression.value, 0)
    if type(e) is cst.Integer:
        return int(e.value, 0)
    return None


def _bound_values(m, name: cst.Name) -> list | None:
    """What a name holds: the values of its assignments when every binding is one, or what every
    call of its function passes when it is a parameter; None otherwise."""
    bindings = m.bindings_of(name)
    if bindings and all(b.how == "assign" and b.value is not None for b in bindings):
        return [b.value for b in bindings]
    if len(bindings) == 1 and bindings[0].how == "param":
        return m.param_arguments(bindings[0], constructors=True)
    return None


_DEVICE_TYPE_LITERALS = ("cuda", "cpu", "mps", "xpu")


def _gpu_device_type(m, e, _depth: int) -> str | None:
    """The device type ("cuda", "cpu", ...) an expression names on a machine with a GPU: a device
    literal, `"cuda" if <GPU test> else "cpu"`, `torch.device(...)`, `str(...)` or `.type` of one, or
    a name every assignment (or every call's argument, for a parameter) of which names the same type;
    None otherwise."""
    if _depth > 6:
        return None
    t = type(e)
    if t is cst.SimpleString:
        text = string_value(e)
        found = _DEVICE_TEXT.match(text) if text is not None else None
        return found.group(1).lower() if found else None
    if t is cst.IfExp:
        g = gpu_guard(m, e.test, _depth + 1)
        return None if g is None else _gpu_device_type(m, e.body if g else e.orelse, _depth + 1)
    if t is cst.Call and len(e.args) == 1 and e.args[0].keyword is None and not e.args[0].star:
        q = m.qualname(e.func)
        if q == "torch.device" or (type(e.func) is cst.Name and e.func.value == "str" and not m.bindings_of(e.func)):
            return _gpu_device_type(m, e.args[0].value, _depth + 1)
        return None
    if t is cst.Attribute and e.attr.value == "type":
        return _gpu_device_type(m, e.value, _depth + 1)
    if t is cst.Name:
        values = _bound_values(m, e)
        if values is None:
            return None
        types = {_gpu_device_type(m, v, _depth + 1) for v in values}
        return next(iter(types)) if len(types) == 1 else None
    return None


def _main_test(test) -> bool:
    """`__name__ == "__main__"` (either way round)."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return False
    if type(test.comparisons[0].operator) is not cst.Equal:
        return False
    sides = (test.left, test.comparisons[0].comparator)
    return any(type(a) is cst.Name and a.value == "__name__" and string_value(b) == "__main__"
               for a, b in (sides, sides[::-1]))


def _device_keyword(call: cst.Call) -> bool:
    """`device=<an expression>` among the call's arguments, other than `None` or a written-out
    `"cpu"`."""
    for a in call.args:
        if a.keyword is not None and a.keyword.value == "device":
            v = a.value
            if type(v) is cst.Name and v.value == "None":
                return False
            return string_value(v) not in ("cpu",)
    return False


def _takes_no_device(fn: cst.FunctionDef) -> bool:
    """A function with no `device`/`device_map` parameter and no `**kwargs`: a `**mapping`
    argument cannot hand it a device."""
    ps = fn.params
    if type(ps.star_kwarg) is cst.Param:
        return False
    return not any(p.name.value in ("device", "device_map")
                   for p in (*ps.posonly_params, *ps.params, *ps.kwonly_params))


def _device_type_test(m, test, _depth: int) -> bool | None:
    """`"cuda" in device`, `device.type == "cuda"`, `device != "cpu"`, `device.startswith("cuda")`
    of a device the script chooses on the machine it runs on: whether the test holds on a GPU run
    (E42-9)."""
    if type(test) is cst.Call and type(test.func) is cst.Attribute and test.func.attr.value == "startswith" \
            and len(test.args) == 1 and test.args[0].keyword is None:
        prefix = string_value(test.args[0].value)
        kind = _gpu_device_type(m, test.func.value, _depth + 1)
        if prefix is None or kind is None or prefix.rstrip(":") not in _DEVICE_TYPE_LITERALS:
            return None
        return kind == prefix.rstrip(":")
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return None
    c = test.comparisons[0]
    op = type(c.operator)
    if op in (cst.In, cst.NotIn):
        lit = string_value(test.left)
        if lit not in _DEVICE_TYPE_LITERALS:
            return None
        kind = _gpu_device_type(m, c.comparator, _depth + 1)
        return None if kind is None else (kind == lit) is (op is cst.In)
    if op not in (cst.Equal, cst.NotEqual):
        return None
    for side, lit_side in ((test.left, c.comparator), (c.comparator, test.left)):
        lit = string_value(lit_side)
        if lit in _DEVICE_TYPE_LITERALS and type(side) is not cst.SimpleString:
            exact = not (type(side) is cst.Attribute and side.attr.value == "type")
            kind = _gpu_device_type(m, side, _depth + 1)
            if kind is None or (exact and lit != "cpu" and kind == lit):
                return None  # `device == "cuda"` of "cuda:0": not decided by the type alone
            return (kind == lit) is (op is cst.Equal)
    return None


def _gpu_int(m, e, _depth: int) -> int | None:
    """The integer an expression holds on a machine with a GPU: a literal, `0 if <GPU test> else
    -1`, or a name every assignment of which gives the same such number; None otherwise. Memoised
    per node (gpu_guard asks it for every comparison with a number: without it, names whose
    bindings hold other comparisons fan out exponentially; torch's collate.py took 60 s)."""
    n = _int_literal(e)
    if n is not None:
        return n
    if type(e) not in (cst.IfExp, cst.Name, cst.Attribute) or _depth > 6:
        return None
    memo = m.__dict__.setdefault("_gl_gpu_int", {})
    if e in memo:
        return memo[e]
    memo[e] = None  # in progress: a cycle answers None
    out = _gpu_int_uncached(m, e, _depth)
    memo[e] = out
    return out


def _gpu_int_uncached(m, e, _depth: int) -> int | None:
    if type(e) is cst.IfExp:
        g = gpu_guard(m, e.test, _depth + 1)
        if g is None:
            return None
        return _gpu_int(m, e.body if g else e.orelse, _depth + 1)
    if type(e) is cst.Attribute:
        # `self._cuda_device` of a class whose every assignment of it gives the same number on a
        # GPU machine (AllenNLP's trainer: `self._cuda_device = cuda_device`, the driver passing
        # `0 if torch.cuda.is_available() else -1`, E50-5)
        cls = m.class_of(e) if type(e.value) is cst.Name and e.value.value == "self" else None
        if cls is None:
            return None
        bindings = m.bindings.get((cls, "self." + e.attr.value), [])
        if not bindings or not all(b.how == "assign" and b.value is not None for b in bindings):
            return None
        values = [b.value for b in bindings]
    elif type(e) is cst.Name:
        values = _bound_values(m, e)
        if values is None:
            return None
    if type(e) in (cst.Name, cst.Attribute):
        out = None
        for v in values:
            n = _gpu_int(m, v, _depth + 1)
            if n is None or (out is not None and n != out):
                return None
            out = n
        return out
    return None


_AUTOGRAD_FUNCTION = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})

# availability queries that a test may name without calling them (always true then)
_AVAILABILITY_FUNCTIONS = frozenset({"torch.cuda.is_available", "torch.backends.mps.is_available",
                                     "torch.xpu.is_available", "torch.cuda.is_initialized"})


def gpu_guard(m, test, _depth: int = 0) -> bool | None:
    """True for a test that holds on a machine with a GPU when the user runs the script there:
    `torch.cuda.is_available()`, a name or attribute bound only to such tests, a flag like
    `--cuda` (or `default=torch.cuda.is_available()`), several of them and-ed; False for its
    negation (or a `--no-cuda`/`--cpu` flag); None for anything else. The rules ask what happens
    when the script runs on a GPU, so such a branch is taken there."""
    if _depth > 8:
        return None
    t = type(test)
    if t is cst.UnaryOperation and type(test.operator) is cst.Not:
        inner = gpu_guard(m, test.expression, _depth + 1)
        return None if inner is None else not inner
    if t is cst.BooleanOperation and type(test.operator) is cst.And:
        return True if (gpu_guard(m, test.left, _depth + 1) is True
                        and gpu_guard(m, test.right, _depth + 1) is True) else None
    if t is cst.Call and not test.args:
        q = m.qualname(test.func)
        return True if q in ("torch.cuda.is_available", "torch.cuda.is_initialized") else None
    if t is cst.Call:
        return _device_type_test(m, test, _depth + 1)
    if t is cst.Attribute and m.qualname(test) in _AVAILABILITY_FUNCTIONS:
        # `if torch.cuda.is_available:` (the call forgotten): a function object is always true,
        # the branch runs on every machine (Comprehensive-Transformer-TTS's coordconv, PRECISION27 A1)
        return True
    if t is cst.Comparison and len(test.comparisons) == 1:
        # `use_cuda is True`, `args.cuda == True`, `flag is False`
        c = test.comparisons[0]
        op = type(c.operator)
        if type(c.comparator) is cst.Name and c.comparator.value in ("True", "False") and op in (
                cst.Is, cst.Equal, cst.IsNot, cst.NotEqual):
            inner = gpu_guard(m, test.left, _depth + 1)
            if inner is None:
                return None
            same = (c.comparator.value == "True") == (op in (cst.Is, cst.Equal))
            return inner if same else not inner
        typed = _device_type_test(m, test, _depth + 1)
        if typed is not None:
            return typed
        # `cuda_device >= 0` with `cuda_device = 0 if torch.cuda.is_available() else -1` (AllenNLP's
        # convention): the device index a GPU machine gets, compared with a number
        left, right = _gpu_int(m, test.left, _depth + 1), _int_literal(c.comparator)
        if left is not None and right is not None:
            compare = {cst.GreaterThanEqual: left >= right, cst.GreaterThan: left > right,
                       cst.LessThan: left < right, cst.LessThanEqual: left <= right,
                       cst.Equal: left == right, cst.NotEqual: left != right}
            return compare.get(op)
        return None
    if t is cst.Name:
        # a name bound only to such tests, or a parameter every call of the file's function gives
        # one (`def cuda(x, cuda_available): if cuda_available: ...`, `cuda(x, torch.cuda.is_available())`)
        values = _bound_values(m, test)
        gs = {gpu_guard(m, v, _depth + 1) for v in values} if values is not None else set()
        return next(iter(gs)) if len(gs) == 1 and None not in gs else None
    if t is cst.Attribute and type(test.value) is cst.Name and test.value.value not in m.aliases:
        return _flag_guards(m).get(test.attr.value)
    return None


def _and_with_availability(m, test) -> bool:
    """`flag and torch.cuda.is_available()` (an `and` of tests one of which holds only on a machine
    with a GPU): the branch it guards is the one a GPU run asked for takes."""
    if type(test) is not cst.BooleanOperation or type(test.operator) is not cst.And:
        return False
    parts, todo = [], [test]
    while todo:
        t = todo.pop()
        if type(t) is cst.BooleanOperation and type(t.operator) is cst.And:
            todo += [t.left, t.right]
        else:
            parts.append(t)
    return len(parts) <= 4 and any(gpu_guard(m, p) is True for p in parts)


def runs_on_gpu(m, node) -> bool:
    """False when `node` sits on a branch that a GPU run does not take (the body of
    `if not torch.cuda.is_available():`, the `else:` of `if args.cuda:`); True otherwise."""
    child = node
    for anc in m.ancestors(node):
        if type(anc) in (cst.If, cst.IfExp) and child is not anc.test:
            g = gpu_guard(m, anc.test)
            if g is not None and (child is anc.body) is not g:
                return False
        child = anc
    return True


class NoFlow:
    """The engine's answer when it could not run (every value unknown)."""

    values: dict = {}
    mismatches: list = []


class _Frame:
    __slots__ = ("env", "fn", "cls", "returns", "nograd", "outer", "assigned_self", "record", "devctx", "yields", "cpu_only",
                 "reset_from", "quiet", "moved_globals")

    def __init__(self, fn, cls, outer, record):
        self.env: dict[str, Value] = {}
        self.fn = fn
        self.cls = cls  # class name for methods
        self.returns: Value | None = None
        self.nograd = 0
        self.outer = outer  # enclosing frame (closures, module)
        self.assigned_self: set[str] = set()
        self.record = record
        self.devctx = 0  # inside `with torch.device(...)`: things are made on that device
        self.yields: Value | None = None  # a generator function: what it yields (joined)
        self.cpu_only = 0  # inside a branch that does not run on a GPU (`if not torch.cuda.is_available():`)
        # `self.learn = learn ... self.learn = None` (a runner dropping what it held when `fit`
        # ends): the values a `self` attribute held before it was set to None
        self.reset_from: dict[str, Value] | None = None
        # a summary run for a module's self-check (`self.forward(sample)` from its `test()`, see
        # Flow._self_check_call): what it meets is not reported, and its calls are no call sites
        self.quiet = False
        # module-level names (a model) this function moved in place, or its caller had moved
        # when it called it (`model.to(device)` in `train()`, then `test_accuracy()` reading `model`)
        self.moved_globals: set | None = None


# Tensor methods no other common type has (numpy arrays, lists, dicts, modules): a receiver of
# unknown kind that answers one is a tensor
_TENSOR_ONLY_METHODS = frozenset(
    "unsqueeze unsqueeze_ permute contiguous masked_fill masked_fill_ expand_as type_as new_zeros new_ones "
    "new_full new_empty new_tensor unflatten index_select masked_select is_contiguous".split()
)
# Tensor methods that take an operand on another device by design
_CROSS_DEVICE_METHODS = frozenset({"copy_", "set_", "to", "type_as", "new_tensor", "pin_memory",
                                   # the operand gives only its shape: `target.view_as(pred)`
                                   "view_as", "expand_as", "reshape_as",
                                   # the operands are sizes, a 0-dim tensor on any device read as an
                                   # int: `seq_range.expand(b, max_len)`, `max_len = torch.max(lengths)`
                                   # (ppg-vc, P44-2)
                                   "expand", "view", "reshape", "repeat", "tile", "new_zeros", "new_ones",
                                   "new_empty", "narrow", "unflatten", "resize_", "permute"})
_WEIGHT_FIRST = frozenset(
    {"CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "MultiLabelSoftMarginLoss", "NLLLoss2d"}
)
_ELEMENTWISE_CMP = (cst.Equal, cst.NotEqual, cst.LessThan, cst.LessThanEqual, cst.GreaterThan,
                    cst.GreaterThanEqual)
_NOGRAD = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
                     "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.inference_mode"})
_DEVICE_NAME_HINTS = ("device", "rank", "gpu", "dev", "cuda")
_NAMED_RESULTS = frozenset("values indices Q R U S V Vh L eigenvalues eigenvectors solution".split())
_PAIR_ALWAYS = frozenset({"topk", "sort", "kthvalue", "cummax", "cummin", "aminmax", "std_mean", "var_mean"})
_PAIR_WITH_DIM = frozenset({"max", "min", "median", "nanmedian", "mode"})
_RECEIVER = " self"
_GLOBAL = " global"  # site-argument keys (_GLOBAL, name): a module-level name the caller had moved
_UNSET = object()
_DEVICE_STRING = re.compile(r"""(['"])(?:cpu|cuda|mps|xpu)(?::\d+)?\1""")
# operations whose tensor operands must all be on one device whatever their dimension (no CPU
# scalar exemption): concatenations, and clamp's tensor bounds (Swin V2's `torch.clamp(scale,
# max=torch.log(torch.tensor(100.0)))` needs the bound on the scale's device)
_STRICT_OPERANDS = frozenset({"stack", "cat", "concat", "concatenate", "hstack", "vstack", "dstack",
                              "column_stack", "row_stack", "clamp", "clip", "clamp_", "clip_"})
_DOUBLE_STAR = "**"  # key in a call's keyword values: the value of its `**mapping` argument
_STAR = "*"  # the same for its (last) `*iterable` argument
CONTAINERS = frozenset({"torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict",
                         "torch.nn.modules.container.Sequential", "torch.nn.modules.container.ModuleList",
                         "torch.nn.modules.container.ModuleDict"})
_PRETRAINED = frozenset({"from_pretrained", "from_config", "from_single_file"})
_TOKENIZE = frozenset({"__call__", "encode", "encode_plus", "batch_encode_plus", "apply_chat_template",
                       "pad", "prepare_seq2seq_batch"})
_NUMPY_ARRAY_MAKERS = frozenset("numpy." + n for n in (
    "eye identity zeros ones empty full arange linspace logspace stack concatenate vstack hstack "
    "zeros_like ones_like diag tril triu meshgrid").split())
# NumPy calls whose result is always an array
_NUMPY_ARRAYS = _NUMPY_ARRAY_MAKERS | frozenset({"numpy.array", "numpy.asarray", "numpy.fromfile", "numpy.frombuffer"})
_NUMPY_GENERATORS = frozenset({"numpy.random.RandomState", "numpy.random.default_rng", "numpy.random.Generator"})
# array methods whose result is an array again
_NDARRAY_TO_NDARRAY = frozenset("astype copy reshape transpose squeeze flatten ravel clip swapaxes".split())
# NumPy functions that give an array of arrays and numbers (elementwise or joining)
_NUMPY_ELEMENTWISE = frozenset("maximum minimum exp log log1p sqrt abs absolute square power clip where dot matmul "
                               "concatenate stack vstack hstack outer tanh sin cos floor ceil round".split())
# Value.py of a NumPy random generator (`np.random.RandomState(0)`, `np.random.default_rng()`)
NP_RNG = "numpy-rng"


def _np_random_array(meth: str, pos, kw) -> bool:
    """Whether NumPy's random `meth` (of `np.random` or of a generator) draws an array, not one
    number: `randn(800)`, `rand(2, 3)`, `normal(0, 1, 800)`, `standard_normal(size=(2, 3))`."""
    if "size" in kw:
        return True
    n = len(pos)
    if meth in ("randn", "rand"):
        return n > 0
    if meth in ("standard_normal", "random", "random_sample", "sample", "permutation"):
        return n > 0
    if meth in ("normal", "uniform", "randint", "integers", "binomial", "poisson", "beta", "gamma",
                "laplace", "logistic", "lognormal", "choice"):
        sizes = {"poisson": 2, "choice": 2}
        return n >= sizes.get(meth, 3)
    return False


# what a builtin's result always is
_BUILTIN_TYPES = {"len": "int", "int": "int", "float": "float", "str": "str", "bool": "bool", "repr": "str",
                  "format": "str", "isinstance": "bool", "hasattr": "bool"}
# `isinstance(x, T)` with a builtin T: the `py` types of Value whose instances pass (bool is an int)
_ISINSTANCE_OF = {"int": ("int", "bool"), "float": ("float",), "str": ("str",), "bool": ("bool",),
                  "complex": ("complex",)}
# kinds of value that are an object (never None) unless joined with None on some path
def _optimizer_over(p: "Value", e: cst.Call, cls: str | None = None) -> "Value":
    """An optimizer built by `e` over the parameters `p` of a module (torch's own, or an Optimizer
    subclass of the file, `cls`): float16 parameters have float16 gradients; state made at
    construction (Adagrad) is where the parameters are then (`dev`)."""
    return Value(OPTIMIZER, p.dev, p.half, origin=e, cls=cls, placed=p.origin, source=p.source,
                 half_at=p.half_at if p.half else None)


_NEVER_NONE = frozenset({DEVICE, MODULE, TENSOR, OPTIMIZER, SCHEDULER, SCALER, LOADER, DATASET, METRIC})
# methods of a module that read it without keeping a reference to it or moving it
_READ_ONLY_MODULE_METHODS = frozenset({"parameters", "named_parameters", "state_dict", "buffers", "named_buffers"})
_COPIES = frozenset({"copy.deepcopy", "copy.copy"})  # make a new object: never move the one they copy
_NON_MOVING_BUILTINS = frozenset({"print", "len", "isinstance", "str", "repr", "id", "type"})  # never move a module
_PURE_BUILTINS = frozenset("print len isinstance str repr id type sorted list tuple dict set enumerate zip "
                           "max min sum any all iter next hash format float int bool range reversed".split())
# roots of qualified names whose functions do not change a dict or list passed to them
_NON_MUTATING_ROOTS = frozenset("torch numpy math json copy os sys logging pickle random time itertools "
                                "functools collections pprint wandb builtins operator warnings re "
                                "statistics pandas yaml tqdm".split())
# Tensor methods whose result broadcasts the receiver with the operands (never fewer dimensions)
_ELEMENTWISE = frozenset("add sub mul div true_divide lerp addcmul addcdiv maximum minimum".split())
# What keeps an autograd graph (Value.graph): arithmetic operators (not `//`, `%`, bitwise ones),
# floating casts, and differentiable tensor methods and torch functions. Anything else (`argmax`,
# comparisons, `round`, integer casts, `detach`) is taken to hold none: the flag must be sure.
_DIFFERENTIABLE_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power, cst.MatrixMultiply)
_DIFFERENTIABLE_AUG_OPERATORS = (cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign, cst.DivideAssign)
_FLOAT_CASTS = frozenset("float half double bfloat16".split())
_DIFFERENTIABLE_METHODS = frozenset(
    "add sub mul div true_divide neg pow exp log log1p sqrt rsqrt abs sigmoid tanh relu softmax log_softmax "
    "sum mean std var norm prod logsumexp clamp clip view reshape view_as reshape_as squeeze unsqueeze permute "
    "transpose t contiguous flatten expand expand_as repeat narrow clone index_select gather masked_fill "
    "add_ sub_ mul_ div_ pow_ clamp_ masked_fill_ unsqueeze_ squeeze_ matmul mm bmm".split()
)
_DIFFERENTIABLE_FUNCTIONS = frozenset(
    "add sub mul div true_divide neg pow exp log log1p sqrt rsqrt abs sigmoid tanh relu softmax log_softmax "
    "sum mean std var norm prod logsumexp clamp clip reshape squeeze unsqueeze permute transpose flatten cat "
    "concat stack matmul mm bmm einsum gelu silu leaky_relu elu softplus dropout normalize cosine_similarity "
    "mse_loss l1_loss smooth_l1_loss huber_loss cross_entropy nll_loss binary_cross_entropy "
    "binary_cross_entropy_with_logits kl_div".split()
)


_PLACES = re.compile(r"\.(?:cuda|to|xpu|npu|mps)\(|device\s*=|torch\.device|set_default_device|\baccelerate\b|Accelerator\(|deepspeed"
                     r"|lightning|\bxm\.|device_map")
_FREEZES = re.compile(r"requires_grad\s*=\s*False|requires_grad_\(\s*False|freeze")


def _without_grad(v: Value, depth: int = 0) -> Value:
    """`v` computed under no_grad: its tensors, and those of its items, fields and elements,
    hold no graph."""
    if v.kind == TENSOR:
        return v if (v.nograd and not v.graph) else replace(v, nograd=True, graph=False)
    if depth > 3:
        return v
    items = tuple(_without_grad(x, depth + 1) for x in v.items) if v.items else v.items
    keys = tuple((k, _without_grad(x, depth + 1)) for k, x in v.keys) if v.keys else v.keys
    elem = _without_grad(v.elem, depth + 1) if v.elem is not None else None
    if items == v.items and keys == v.keys and elem == v.elem:
        return v
    return replace(v, items=items, keys=keys, elem=elem)


def _float_cast(pos) -> bool:
    """`.to(torch.float32)`-style casts that keep gradients (a floating dtype named as written)."""
    if not pos:
        return False
    x = pos[0][0]
    name = x.attr.value if type(x) is cst.Attribute else (x.value if type(x) is cst.Name else "")
    return name in ("float", "float32", "float16", "half", "float64", "double", "bfloat16")
# in-place methods that may change the receiver's shape
_RESHAPING_INPLACE = frozenset("squeeze_ resize_ resize_as_ set_ as_strided_".split())
_CUDA_INDEX = re.compile(r"cuda:(\d+)")
_MAPPING_MUTATORS = frozenset({"update", "setdefault", "__setitem__", "pop", "popitem", "clear"})
# roots of a configured device (`self.device`, `args.device`, `cfg.device`), as opposed to the
# device of some tensor or module (`logits.device`), which is wherever that value is
_CONFIG_ROOTS = frozenset(
    "self args opt opts option options config cfg conf hparams hp params training_args train_args flags FLAGS "
    "trainer accelerator state settings".split()
)  # call sites' receiver of a method (not a valid parameter name)


class Flow:
    def __init__(self, model) -> None:
        self.m = model
        self.values: dict[cst.CSTNode, Value] = {}
        self._self_called_cache: dict[str, frozenset] = {}
        self._back_loops: list = []  # the loops whose back-edge pass is running (innermost last)
        self.mismatches: list[Mismatch] = []
        # operations whose operands are on two different GPUs named by index (`cuda:2`, `.cuda()`)
        self.gpu_mismatches: list[Mismatch] = []
        self._mismatch_seen: set = set()
        self._sets_device: bool | None = None
        self.class_attrs: dict[str, dict[str, Value]] = {}  # class -> attr -> joined value
        self._attr_by_method: dict[tuple[str, str], dict[str, Value]] = {}
        # (class, method, attribute) -> {summary key of a construction: the value it left}
        self._attr_by_construction: dict = {}
        self._missed_reads: set[tuple[str, str]] = set()
        # (class, attribute) -> the value the class's methods first read from its joined attributes
        # while it is recorded (a later method may set it otherwise: `forward` re-binding a mask)
        self._class_reads: dict[tuple[str, str], Value] = {}
        self.site_values: dict[cst.FunctionDef, dict[cst.Call, list]] = {}
        self._site_count: dict[str, int] = {}
        self._heirs_cache: dict = {}
        self._outside_init_cache: dict[str, frozenset] = {}
        self._namedtuple_cache: dict[str, tuple | None] = {}
        # `register_buffer(name, t)` / `nn.Parameter(t)` made in an `__init__` from a host tensor: read
        # back in that `__init__` (before any move), the tensor is still on the host (E44-1a)
        self._made_on_host: set = set()
        self._setter_runs: set = set()
        self._branchy_cache: dict = {}  # (class, method) run for a placeholder attribute (E46-4)
        self._init_move_cache: dict = {}
        self._calls_by_attr: dict[str, list] = {}
        self._attr_setters: dict[tuple[str, str], dict[str, Value]] = {}
        self._stateful_cache: dict[str, bool] = {}
        # module constructions registered with `self.add_module(name, m)` / `register_module`: also
        # kept in a plain list, they still move with their module
        self._registered: set = set()
        self._closure_frames: dict = {}  # enclosing function -> the frame its closures read
        self._active: dict = {}  # function -> the frames of it being run now (innermost last)
        self._opaque_outputs: set = set()  # calls of modules the file cannot see into
        self._host_instances = 0  # summaries being run for a module instance known to be on the host
        self._scope_names: dict | None = None
        self._param_made: set = set()  # nn.Parameter(...) / register_buffer(...) calls: a module's own tensors
        self._fwd_cache: dict = {}
        self._moves_param: dict = {}
        # constructor call of a module class of the file -> origins of the modules it registers as
        # its own submodules (`Seq2seq(encoder, decoder)` with `self.decoder = decoder`): moving
        # the instance in place moves them
        self._parts: dict = {}
        self._instance_sites: dict = {}
        self._half_cache: dict = {}
        self._half_unsure = False  # a `self` part a conversion check read was not known yet
        self._summaries: dict = {}
        self._summary_keys: list = []  # the keys of the summaries being computed (innermost last)
        self._missed_summaries: set = set()  # summaries that read a `self` attribute not known then
        self._in_summary: list = []
        self._cut_short = False  # a summary under way met the depth bound (its result is not cached)
        self._host_only_cache: dict = {}
        # mismatches found while summarising a call with its arguments: the current summary's list
        # of (mismatch, chain of calls inside it), each summary's own, and those under the calls of
        # recorded functions (turned into per-call-site mismatches when the run ends)
        self._init_self: dict = {}  # __init__ summaries -> the value of `self` at their end
        # summaries of a plain class's methods -> the `self` attributes they set, as they leave them
        self._exit_self: dict = {}
        self._never_passed_cache: dict = {}
        self._exit_globals: dict = {}  # summaries -> the module-level names they left moved
        self._free_names: dict = {}  # nested functions -> the names they read and do not bind
        self._last_exit_globals = None
        self._name_calls = None
        self._last_exit_self = None
        self._device_fns: set = set()  # functions whose returned device is being read (_device_value)
        # a tuple display with a starred element (`*x.shape, x.device`): its element values, a
        # starred one as None, for the targets of an unpacking around a starred target (P44-3)
        self._starred_displays: dict = {}
        self._ends_plainly: dict = {}
        self._name_index: dict | None = None  # identifier -> its Name nodes (built on first use)
        self._attr_index: dict | None = None  # attribute name -> its Attribute nodes
        self._last_init_self: Value | None = None
        self._collect: list | None = None
        self._summary_found: dict = {}
        self._summary_args: dict = {}  # summary keys -> the arguments the summary was run with
        self._site_found: list = []
        # per-site mismatches at an operation already reported through another call, with another
        # host operand (see _site_mismatches)
        self.site_alternatives: list = []
        self._apply_calls: set = set()  # `Fn.apply(...)` calls of the file's autograd Functions
        self._work = 0
        self._budget = WORK_FACTOR * max(len(model.nodes), 1000)
        self.module_frame: _Frame | None = None
        self.recorded: set[cst.CSTNode] = set()
        self._name_counts: dict | None = None
        self._override_moves: dict = {}
        self._external_attr_names: frozenset | None = None
        self._external_assigned: frozenset = frozenset()  # of those, the ones assigned (not only moved)
        self.inplace_moves: dict[cst.Call, Value] = {}  # `m.to(d)` statement calls -> the moved value
        self._moved_origins: set = set()  # modules (by origin) some `.to()`/`.cuda()` moves in place
        self._host_moved_origins: set = set()  # modules (by origin) some `.cpu()` / `.to("cpu")` moves in place
        # module origin -> the origins of the instances whose attribute the move went through
        # (`w.model.to(device)`: the `Wrapper()` call that made `w`), None for any other receiver
        self._moved_holders: dict = {}
        self.tokenized: set[cst.Call] = set()  # tokenizer calls that made host tensors
        self._host_inputs_cache: dict[str, set] = {}
        self._globals_cache: dict = {}  # function -> the names it declares `global`
        # the file freezes parameters somewhere (`p.requires_grad = False`, `requires_grad_(False)`):
        # which module's outputs then hold a graph is not decided here
        self._freezes = bool(_FREEZES.search(model.source)) if hasattr(model, "source") else True
        # no move, no device argument, no device object, no launcher: nothing is put on an accelerator
        self._places_nothing = not _PLACES.search(model.source) if hasattr(model, "source") else False
        self.set_default_device = model.cuda_default_set()
        self._dispatch = {
            cst.Name: self._e_name,
            cst.Attribute: self._e_attribute,
            cst.Call: self._e_call,
            cst.BinaryOperation: self._e_binary,
            cst.UnaryOperation: self._e_unary,
            cst.Subscript: self._e_subscript,
            cst.Tuple: self._e_tuple,
            cst.List: self._e_tuple,
            cst.IfExp: self._e_ifexp,
            cst.Await: lambda e, f: self.eval(e.expression, f),
            cst.Lambda: lambda e, f: Value(FUNC, None, fn=e),
        }
        self._lambda_depth = 0
        self._module_use_index: dict | None = None
        self._key_loop_moved: dict = {}  # for loops over a batch's keys that move each key
        self._operand_calls: set[cst.Call] = set()  # calls of unknown code given a tensor or a module
        self._run()

    # ------------------------------------------------------------------------------------------
    # driver
    # ------------------------------------------------------------------------------------------
    def _run(self) -> None:
        m = self.m
        counts: dict[str, int] = {}
        by_name: dict[str, int] = {}
        by_attr = self._calls_by_attr
        for c in m.calls:
            f = c.func
            t = type(f)
            if t is cst.Attribute:
                name = f.attr.value
                by_attr.setdefault(name, []).append(c)
            elif t is cst.Name:
                name = f.value
                by_name[name] = by_name.get(name, 0) + 1
            else:
                continue
            counts[name] = counts.get(name, 0) + 1
        self._site_count = counts
        self._name_site_count = by_name
        frame = _Frame(m.module, None, None, True)
        self.module_frame = frame
        self._block(m.module.body, frame)
        # every function and method, in source order (classes: __init__ first; a second pass when
        # a method read an attribute that a later method sets)
        for name, info in m.classes.items():
            self._record_class(name, info)
        for defs in m.functions.values():
            for fn in defs:
                if fn not in self.recorded and m.class_of(fn) is None:
                    self._record_function(fn, None)
        for defs in m.functions.values():  # nested in classes but not direct methods
            for fn in defs:
                if fn not in self.recorded:
                    self._record_function(fn, None)
        if "append" in self._calls_by_attr:
            self._appended_mixes()
        self._site_mismatches()

    def _appended_mixes(self) -> None:
        """E62-1 (pytorch-retinanet#220): a list filled by `.append` calls, one of which appends a
        tensor on the host and another a tensor on the accelerator, then given to `torch.stack` /
        `torch.cat` (all operands on one device, whatever their dimension). The flow engine joins
        every appended value into one element ("on either device"), which decides nothing; here the
        appends are read one by one. Reported only when both appends run in one call of the
        function: on one path, or on two branches of a test that reads a value the loop around them
        re-binds on every pass (`if bbox_annotation.shape[0] == 0:` per image), the list bound
        outside that loop and stacked after it. A branch that runs only without a GPU (the `else:`
        of `if torch.cuda.is_available():`) does not count."""
        m = self.m
        by_list: dict = {}
        for c in self._calls_by_attr["append"]:
            f = c.func
            if type(f.value) is not cst.Name or len(c.args) != 1 or c.args[0].keyword is not None or c.args[0].star:
                continue
            by_list.setdefault((m.scope_of(c), f.value.value), []).append(c)
        by_list = {k: v for k, v in by_list.items() if len(v) >= 2}
        if not by_list:
            return
        for call in m.calls:
            if call in self._mismatch_seen or not call.args or call.args[0].keyword is not None or call.args[0].star:
                continue
            arg = call.args[0].value
            if type(arg) is not cst.Name:
                continue
            apps = by_list.get((m.scope_of(call), arg.value))
            if apps is None:
                continue
            q = m.qualname(call.func) or ""
            if not (q.startswith("torch.") and q.rsplit(".", 1)[-1] in _STRICT_OPERANDS and q.count(".") == 1):
                continue
            fn = m.scope_of(call)
            in_forward = type(fn) is cst.FunctionDef and self._forwardish(fn)
            binds = [b.node for b in m.bindings.get((fn, arg.value), ()) if b.node is not None]
            hosts, accs = [], []
            for a in apps:
                if not m.precedes(a, call):
                    continue
                x = a.args[0].value
                v = self.values.get(x)
                if v is None or v.kind != TENSOR or v.dev is None or not self._gpu_path(a, fn):
                    continue
                if v.dev.is_host:
                    hosts.append((a, x, v))
                elif v.dev.where == "acc" or (v.dev.where == "model" and in_forward):
                    accs.append((a, x, v))
            found = next(((h, c) for h in hosts for c in accs
                          if self._both_appended(h[0], c[0], call, binds, fn)), None)
            if found is None:
                continue
            (_, hx, hv), (_, ax, av) = found
            self._mismatch_seen.add(call)
            self.mismatches.append(Mismatch(call, "call", hx, hv, ax, av, fn if fn is not m.module else None))

    def _gpu_path(self, node, scope) -> bool:
        """`node` is not on a branch that runs only without a GPU (the `else:` of `if
        torch.cuda.is_available():`, the body of `if not use_cuda:`)."""
        prev = node
        for anc in self.m.ancestors(node):
            if anc is scope:
                return True
            if type(anc) is cst.If:
                g = self.gpu_guard(anc.test)
                if g is not None and (prev is anc.body) != g:
                    return False
            prev = anc
        return True

    def _both_appended(self, a, b, stack_call, binds, scope) -> bool:
        """Both appends run in one call of `scope`: every branch that holds one and not the other
        is decided by a test that reads a name the loop around both re-binds on each pass (a loop
        that does not bind the list and does not hold the stacking call), or by a GPU test (the
        branch that runs on a GPU; `_gpu_path` kept only appends on it)."""
        m = self.m
        for first, other in ((a, b), (b, a)):
            other_anc = set(map(id, m.ancestors(other)))
            prev = first
            for anc in m.ancestors(first):
                if anc is scope:
                    break
                t = type(anc)
                if id(prev) not in other_anc:
                    if t is cst.If and prev is not anc.test:
                        # `prev` is this `if`'s body or its `else`/`elif`, and `other` is not in it
                        if self.gpu_guard(anc.test) is None and not self._varies_per_pass(
                                anc, stack_call, binds, scope):
                            return False
                    elif t is cst.ExceptHandler or t is cst.IfExp or t is cst.BooleanOperation:
                        return False
                prev = anc
        return True

    def _varies_per_pass(self, branch, stack_call, binds, scope) -> bool:
        """The test of `branch` reads a name bound inside a `for` loop around it (its target or an
        assignment of its body), a loop that holds neither the list's bindings nor `stack_call`."""
        m = self.m
        names = {n.value for n in m.walk(branch.test) if type(n) is cst.Name}
        for anc in m.ancestors(branch):
            if anc is scope:
                return False
            if type(anc) is not cst.For:
                continue
            inside = set(map(id, m.walk(anc)))
            if id(stack_call) in inside or any(id(b) in inside for b in binds):
                return False
            bound = {n.value for n in _names_in(m, anc.target)}
            for n in m.walk(anc.body):
                t = type(n)
                if t is cst.Assign:
                    for tgt in n.targets:
                        bound.update(x.value for x in _names_in(m, tgt.target))
                elif t is cst.AugAssign or t is cst.AnnAssign:
                    bound.update(x.value for x in _names_in(m, n.target))
                elif t is cst.For:
                    bound.update(x.value for x in _names_in(m, n.target))
            if names & bound:
                return True
        return False

    def _drop_premise_only(self) -> None:
        """A mismatch of the recorded pass met only through GL105's premise (a `forward` input is
        where the module runs) in a module class of the file that holds no weights and is never
        moved (a loss), every call of whose instances was followed with its arguments without
        meeting it there: those calls are what runs, and they hand it what it really gets (host
        lengths beside device attention weights, speedyspeech's guided-attention loss, P55-1)."""
        at_sites = {mm.node for mm, _ in self._site_found}
        self._site_found[:] = [(mm, chain) for mm, chain in self._site_found if not self._on_a_host_only_class(mm)]
        keep = []
        for mm in self.mismatches:
            fn = mm.function
            av = mm.acc_value
            if self._on_a_host_only_class(mm):
                continue
            if (av is not None and av.dev == INPUT_DEV and type(fn) is cst.FunctionDef and fn.name.value == "forward"
                    and mm.node not in at_sites):
                cls = self.m.class_of(fn)
                sites = self.site_values.get(fn)
                if (cls is not None and sites and len(sites) == self._call_sites_of_instance(fn)
                        and not self._class_stateful(cls.name.value) and not self._class_moves_itself(cls.name.value)
                        and any(type(v) is Value and v.kind == TENSOR and v.dev is not None and v.dev.is_host
                                for args in sites.values() if args for v in args.values())):
                    # (some call hands it a host tensor: the inputs are not all where the premise
                    # puts them; calls with device inputs only leave the premise's findings alone,
                    # pytorch-retinanet#220's stacked host zero)
                    continue
            keep.append(mm)
        self.mismatches[:] = keep

    def _on_a_host_only_class(self, mm) -> bool:
        """A mismatch whose accelerator side is only "where the module is" (its own state), in a method of a module class of the file that the file builds and never
        moves (no construction of it or of a subclass moved, no `self.to(...)`/`.cuda()` inside, no
        parallel wrapper): in this file the module lives on the host, so the premise does not hold
        (an STFT module kept on the host whose `transform` does one convolution on the GPU and
        brings the result back with `.cpu()`, FastSpeech2's utils/stft.py, P55-4)."""
        av = mm.acc_value
        fn = mm.function
        if av is None or av.dev != MODEL_DEV or type(fn) is not cst.FunctionDef:
            return False  # (a forward input, INPUT_DEV, is where the caller put it: csp#19's Interface)
        cls = self.m.class_of(fn)
        if cls is None:
            return False
        name = cls.name.value
        got = self._host_only_cache.get(name)
        if got is None:
            family = [c for c in self.m.classes if c == name or self._subclass(c, name)]
            built = [c for c in self.m.calls if type(c.func) is cst.Name and c.func.value in family]
            got = (bool(built) and self._class_kind(name) == MODULE
                   and not any(c in self._moved_origins for c in built)
                   and not any(self._class_moves_itself(c) for c in family)
                   and not any(self._instance_moved_later(c) for c in built))
            self._host_only_cache[name] = got
        return got

    def _instance_moved_later(self, construction: cst.Call) -> bool:
        """The instance a construction makes is moved, wrapped or handed to another object in a way
        the engine does not follow: `m = C(); m.to(d)` is in `_moved_origins`; here the shapes that
        are not: bound to a name that is ever `.to()`/`.cuda()`-ed, passed to any call, or stored
        in an attribute or a container (where someone else may move it)."""
        m = self.m
        parent = m.parents.get(construction)
        if type(parent) is cst.Attribute:
            return True  # `C().to(d)`, `C().eval()`...: a chain on the instance
        if type(parent) is cst.Arg:
            return True  # handed to a call (a wrapper, a trainer, `nn.Sequential`)
        if type(parent) is cst.Assign and len(parent.targets) == 1 and type(parent.targets[0].target) is cst.Name:
            name = parent.targets[0].target
            for c in [*self._calls_by_attr.get("to", ()), *self._calls_by_attr.get("cuda", ())]:
                if type(c.func.value) is cst.Name and c.func.value.value == name.value:
                    return True
            scope = m.scope_of(construction)
            for n in m.walk(scope if scope is not None else m.module):
                if type(n) is cst.Arg and type(n.value) is cst.Name and n.value.value == name.value:
                    return True  # handed on (`DataParallel(stft)`, `Trainer(stft)`)
                if (type(n) is cst.Assign and type(n.value) is cst.Name and n.value.value == name.value):
                    return True  # stored elsewhere (`self.stft = stft`, `net = stft`)
            return False
        return True

    def _site_mismatches(self) -> None:
        """Mismatches that only the arguments of one call produce (the recorded pass of the callee
        joins the values of every call, and a tensor moved at one call and not at another is "host
        or device" there): each operation once, through the shortest chain of calls, unless the
        recorded pass reported it or a call of the chain already mismatched."""
        best: dict = {}
        seen = self._mismatch_seen
        self._drop_premise_only()
        if self._apply_calls:
            found = []
            for mm, chain in self._site_found:
                mm, chain = self._at_apply(mm, chain)
                if chain:
                    found.append((mm, chain))
                elif mm.node not in seen:
                    seen.add(mm.node)
                    self.mismatches.append(mm)
            self._site_found = found
        others: dict = {}  # node -> the other host origins met there through other calls
        for mm, chain in self._site_found:
            if mm.node in seen or any(c in seen for c in chain):
                continue  # reported there, or a call on the way already mismatched (its cause)
            cur = best.get(mm.node)
            if cur is None or len(chain) < len(cur[1]):
                if cur is not None:
                    others.setdefault(mm.node, []).append(cur)
                best[mm.node] = (mm, chain)
            else:
                others.setdefault(mm.node, []).append((mm, chain))
        for node in [n for n, (mm, chain) in best.items() if any(c in best for c in chain)]:
            del best[node]  # inside a call that is itself a per-site mismatch: that one is the cause
        for node, (mm, chain) in best.items():
            seen.add(node)
            self.mismatches.append(replace(mm, site=chain[0]))
            # the same operation failing through another call with another host operand (the
            # GAN helper `adversarial_loss(y_hat, y)` given labels made in two steps): not a second
            # report there, but the factory that made it is a finding of its own (GL105)
            origins = {mm.host_value.origin}
            for mm2, chain2 in others.get(node, ()):
                o = mm2.host_value.origin
                if o is not None and o not in origins:
                    origins.add(o)
                    self.site_alternatives.append(replace(mm2, site=chain2[0]))
        # a function every call of which already mismatched (`model.forward(batch.src, ...)` with a
        # host tensor) fails inside on what those calls passed: one report, at the calls
        at = {mm.node for mm in self.mismatches}
        keep = []
        for mm in self.mismatches:
            fn = mm.function
            sites = self.site_values.get(fn) if type(fn) is cst.FunctionDef else None
            origin = mm.host_value.origin
            if (sites and mm.site is None and all(c in at for c in sites) and origin is not None
                    and not self.m.contains(fn, origin)):
                continue
            keep.append(mm)
        self.mismatches[:] = keep

    def _record_class(self, name: str, info) -> None:
        methods = list(info.methods.values())
        own = set(methods)
        # summaries of its methods made before (from module-level code) that read an attribute
        # not known then (`self.model` set in `fit()`, read by a helper `fit()` reaches): again
        for key in [k for k in self._missed_summaries if k[0] in own]:
            self._summaries.pop(key, None)
            self._summary_found.pop(key, None)
            self._missed_summaries.discard(key)
        methods.sort(key=lambda f: (f.name.value != "__init__", self.m.order[f]))
        self._missed_reads = set()
        self._class_reads = {}
        found_before = (len(self.mismatches), len(self._site_found), set(self._mismatch_seen))
        for fn in methods:
            self._record_function(fn, name)
        known = self.class_attrs.get(name, {})
        again = any(c == name and a in known for c, a in self._missed_reads)
        if any(c == name and self._set_otherwise(c, a, reader, v) for (c, a, reader), v in self._class_reads.items()):
            # a method read an attribute that another method, recorded after it, sets otherwise
            # (`forward` re-binds `self.mask = self.mask.type_as(x)`, `predict` above it reads the
            # mask): what the first pass found with the partial value is dropped, and the pass made
            # again (a method's own later re-binding is its next call's business, not this one's)
            self.mismatches[found_before[0]:] = []
            self._site_found[found_before[1]:] = []
            self._mismatch_seen.intersection_update(found_before[2])
            again = True
        if again:
            # a method read an attribute a later method sets: once more, without the summaries of
            # its methods made before that attribute was known (`self.model` set in `fit()`, read by
            # a helper method a first pass summarised as returning nothing known)
            for key in [k for k in self._summaries if k[0] in own]:
                del self._summaries[key]
                self._summary_found.pop(key, None)
            for fn in methods:
                self._record_function(fn, name)

    def _set_otherwise(self, cls: str, attr: str, reader: str, read: Value) -> bool:
        """The class's methods other than `reader` leave `self.<attr>` somewhere known (on some
        path) other than where the value `reader` read while the class was recorded lives. (A
        setter the engine cannot place, `self.mean = stats["mean"]` from a checkpoint, changes
        nothing: the first pass's reading stands, as it did before this check.)"""
        out = None
        for method, v in self._attr_setters.get((cls, attr), {}).items():
            if method == reader:
                continue
            if v != read and self._calls_own_method(cls, method, reader):
                return True  # `forward` re-binds it and then calls `self.predict(...)`, the reader
            out = v if out is None else join(out, v)
        return out is not None and out.dev is not None and read.dev is not None and out.dev != read.dev

    def _calls_own_method(self, cls: str, caller: str, callee: str) -> bool:
        """The method `caller` of the file's class `cls` calls `self.<callee>(...)` itself."""
        found = self.m.method_of_class(cls, caller)
        if found is None:
            return False
        fn = found[0]
        return any(type(c.func.value) is cst.Name and c.func.value.value == "self"
                   and self.m.enclosing(c, cst.FunctionDef) is fn
                   for c in self._calls_by_attr.get(callee, ()))

    def _params_of(self, fn: cst.FunctionDef, cls: str | None, args: dict | None, frame: _Frame) -> None:
        for name in self._globals_of(fn):
            # `global MODEL` (a lazily built singleton, `if MODEL is None: MODEL = ...; return
            # MODEL`): on a path that does not assign it, the name holds the module's value
            outer = self.module_frame.env.get(name) if self.module_frame is not None else None
            if outer is not None:
                frame.env[name] = outer
        p = fn.params
        ordered = [*p.posonly_params, *p.params]
        is_method = cls is not None and not _is_static(fn)
        forward = is_method and fn.name.value == "forward" and self._class_kind(cls) == MODULE
        for i, param in enumerate([*ordered, *p.kwonly_params]):
            name = param.name.value
            if i == 0 and is_method and param in ordered:
                if name == "self":
                    sv = self._param_from_sites(fn, _RECEIVER) if args is None else None
                    if sv is not None and sv.cls != cls and sv.cls is not None and self._subclass(sv.cls, cls):
                        # an inherited method whose every call is on one subclass's instance: it
                        # reads the attributes that subclass sets
                        sv = Value(sv.kind, sv.dev, sv.half, cls=sv.cls, origin=sv.origin, placed=sv.placed,
                                   stateful=sv.stateful)
                    elif sv is not None and sv.kind == OBJECT and sv.cls == cls and type(sv.origin) is cst.Call:
                        # an instance of a class with an imported base: which construction made it
                        # (and what every call's receiver had set on it, see below); a dataclass's
                        # fields as every receiver's construction gave them (E51-2)
                        sv = Value(OBJECT, None, cls=cls, origin=sv.origin, attrs=sv.attrs, keys=sv.keys)
                    elif sv is not None and sv.kind == OBJECT and sv.cls == cls and sv.attrs:
                        # every call's receiver is an instance whose attributes an earlier call
                        # re-bound (`model.parallelize()` wrapping `self.network`, then
                        # `model.save(...)`, DrQA): the method reads them as those calls left them
                        sv = Value(OBJECT, None, cls=cls, attrs=sv.attrs)
                    elif sv is None or sv.cls != cls or sv.dev is None:
                        sv = Value(self._class_kind(cls) or OBJECT, None, cls=cls)
                    else:  # every call site's receiver: where the instance is when the method runs
                        sv = Value(sv.kind, sv.dev, sv.half, cls=cls, origin=sv.origin, placed=sv.placed,
                                   stateful=sv.stateful)
                    frame.env[name] = sv
                continue
            v = None
            if args is not None:
                v = args.get(name)
                if v is None and args and param.default is not None and _DOUBLE_STAR not in args:
                    # this call leaves it out (`self.encoder(inputs)`): its constant default
                    v = self._constant_default(fn, name)
            if v is None:
                v = self._param_from_sites(fn, name)
            if v is None and param.annotation is not None:
                q = self.m.qualname(param.annotation.annotation)
                k = kb.class_kind(q) if q else None
                if k is not None:
                    v = Value(k, INPUT_DEV if (forward and k == TENSOR) else None)
            if v is None and i == 1 and is_method and self._lightning_step(fn):
                v = Value(BATCH, INPUT_DEV)  # the batch Lightning moved to the module's device
            if v is None and forward and name != "self":
                # a forward input lives where the module runs; when every call of the file's one
                # instance passes a tensor, it is a tensor (where it is stays the module's device)
                site = self._forward_site(fn, name) if args is None else None
                if site is not None and site.kind == TENSOR:
                    v = Value(TENSOR, INPUT_DEV, nonscalar=site.nonscalar, deep=site.deep)
                elif site is not None and site.kind == MAPPING and site.keys:
                    # a dict of tensors (another model's outputs, `{"enc": {"anchors": ...}}`): its
                    # keys, each tensor where the module runs (E54-2)
                    v = Value(MAPPING, None, keys=_input_keys(site.keys))
                else:
                    v = Value(None, INPUT_DEV)
            frame.env[name] = v if v is not None else UNKNOWN
        for star in (p.star_arg, p.star_kwarg):
            if isinstance(star, cst.Param):
                frame.env[star.name.value] = UNKNOWN
        if isinstance(p.star_kwarg, cst.Param):
            extra = self._extra_keywords(fn, args)
            if extra is not None:
                frame.env[p.star_kwarg.name.value] = _mapping(extra, None)

    def _extra_keywords(self, fn: cst.FunctionDef, args: dict | None) -> tuple | None:
        """What `**kwargs` of `fn` holds: ((keyword, value), ...) of the keywords the call passes
        that name no parameter (every recorded call's, when they agree on which), or None when a
        call hands on a mapping of its own or is not known."""
        p = fn.params
        named = {x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)}
        maps = [args] if args is not None else list((self.site_values.get(fn) or {}).values())
        if not maps or (args is None and len(maps) != self._site_total(fn, fn.name.value)):
            return None
        out = None
        for a in maps:
            if a is None or _DOUBLE_STAR in a:
                return None
            extra = tuple(sorted((k, v) for k, v in a.items() if k not in named and k != _RECEIVER))
            if out is None:
                out = extra
            elif tuple(k for k, _ in out) != tuple(k for k, _ in extra):
                return None
        return out

    def _param_from_sites(self, fn: cst.FunctionDef, name: str) -> Value | None:
        sites = self.site_values.get(fn)
        callee = fn.name.value
        if callee == "__init__":
            cls = self.m.class_of(fn)
            callee = cls.name.value if cls is not None else callee
            heirs = self._inheriting(cls.name.value, "__init__") if cls is not None else ()
            if heirs and sites:
                # `Sub(transform="stft")` of a subclass without an `__init__` of its own runs this
                # one: its constructions are this method's calls too (spectral-optimal-transport's
                # `Wasserstein1DLoss` on `_BaseSOTLoss`)
                counts = [self._site_count.get(callee, 0)] + [self._site_total(fn, c) for c in heirs]
                if all(n >= 0 for n in counts) and len(sites) == sum(counts):
                    return self._joined_sites(fn, name, sites)
                return None
        if not sites or len(sites) != self._site_total(fn, callee):
            if callee != "__call__" and self._never_passed(fn, callee, name):
                # not every call is recorded yet (a construction inside a method summarised
                # later), but no call of that name in the file passes it: its constant default
                return self._constant_default(fn, name)
            return None
        return self._joined_sites(fn, name, sites)

    def _inheriting(self, cls: str, method: str) -> tuple:
        """The file's subclasses of `cls` (at any depth) that run its `method` (they define none
        on the way down): their instances call it."""
        key = (cls, method)
        got = self._heirs_cache.get(key)
        if got is None:
            own = self.m.method_of_class(cls, method)
            got = tuple(sorted(name for name in self.m.classes if name != cls and self._subclass(name, cls)
                               and own is not None and self.m.method_of_class(name, method) == own))
            self._heirs_cache[key] = got
        return got

    def _never_passed(self, fn: cst.FunctionDef, callee: str, name: str) -> bool:
        """No call in the file whose callee is named `callee` (`ACModel(...)`, `x.ACModel(...)`)
        passes the parameter `name`, by keyword or by position, nor unpacks `*`/`**`."""
        key = (fn, name)
        got = self._never_passed_cache.get(key)
        if got is not None:
            return got
        p = fn.params
        ordered = [x.name.value for x in (*p.posonly_params, *p.params)]
        if self.m.class_of(fn) is not None and not _is_static(fn) and ordered:
            ordered = ordered[1:]
        idx = ordered.index(name) if name in ordered else None
        got = self.m.class_of(fn) is None or fn.name.value == "__init__"  # (a method: by attribute name, too loose)
        calls = self._calls_by_attr.get(callee, [])
        if got:
            calls = list(calls) + [c for c in self._calls_by_name(callee)]
            # every mention of the name is its definition or one of these calls (not a subclass's
            # base, a value handed on, a `partial`...); a class or function no call of this file
            # makes (built elsewhere) says nothing
            got = bool(calls) and self._name_count(callee) == 1 + len(calls)
        for c in calls if got else ():
            npos = 0
            for a in c.args:
                if a.star or (a.keyword is not None and a.keyword.value == name):
                    got = False
                    break
                if a.keyword is None:
                    npos += 1
            if not got or (idx is not None and npos > idx):
                got = False
                break
        self._never_passed_cache[key] = got
        return got

    def _calls_by_name(self, name: str) -> list:
        got = self._name_calls
        if got is None:
            got = self._name_calls = {}
            for c in self.m.calls:
                if type(c.func) is cst.Name:
                    got.setdefault(c.func.value, []).append(c)
        return got.get(name, [])

    def _joined_sites(self, fn: cst.FunctionDef, name: str, sites: dict) -> Value | None:
        """The parameter's value joined over every recorded call of `fn` (a call that leaves it out
        gives its default, when that is a constant); None when one of them cannot say."""
        out = None
        default = _UNSET
        for argmap in sites.values():
            if argmap is None:
                return None
            v = argmap.get(name)
            if v is None:
                if _DOUBLE_STAR in argmap:
                    return None  # maybe passed in the call's `**mapping`
                if default is _UNSET:
                    default = self._constant_default(fn, name)
                v = default
                if v is None:
                    return None
            out = v if out is None else join(out, v)
        return out

    def _constant_default(self, fn: cst.FunctionDef, name: str) -> Value | None:
        """The value of a parameter's default when it is a constant: a device string (`"cpu"`,
        `"cuda:0"`: that device), `None`, `True`/`False`, a number, a tuple or list of strings, a
        list of the file's functions; None otherwise."""
        p = fn.params
        param = next((x for x in (*p.posonly_params, *p.params, *p.kwonly_params) if x.name.value == name), None)
        d = param.default if param is not None else None
        t = type(d)
        if t is cst.SimpleString:
            dev = self._device_value(d, None)
            if dev is not None:
                return Value(DEVICE, dev, origin=d)
            v = self.eval(d, self.module_frame)
            return v if v.const is not None else None  # `return_tensors="pt"`
        if (t is cst.Name and d.value in ("None", "True", "False")) or t in (cst.Integer, cst.Float):
            return self.eval(d, self.module_frame)
        if (t is cst.Call and len(d.args) == 1 and d.args[0].keyword is None
                and type(d.args[0].value) is cst.SimpleString and self.m.qualname(d.func) == "torch.device"):
            # `device=torch.device("cpu")` (torchvision's `_generate_wh_pairs`)
            dev = self._device_value(d.args[0].value, None)
            if dev is not None:
                return Value(DEVICE, dev, origin=d)
        if (t is cst.List or t is cst.Tuple) and d.elements and all(
                type(el) is cst.Element and type(el.value) is cst.SimpleString for el in d.elements):
            # `exclude_batch_keys_from_device=("image",)`: constant strings (F:E69-5)
            v = self.eval(d, self.module_frame)
            return v if v.kind == TUPLE and v.items and all(x.const is not None for x in v.items) else None
        if (t is cst.List or t is cst.Tuple) and d.elements and all(
                type(el) is cst.Element and type(el.value) is cst.Name and self._function_named(el.value.value)
                is not None for el in d.elements):
            # `transforms=[aggregate]`: a list of the file's functions (AgML-CY-Bench#236)
            return Value(TUPLE, None, items=tuple(Value(FUNC, None, fn=self._function_named(el.value.value))
                                                  for el in d.elements), origin=d)
        if t is cst.Attribute:
            q = self.m.qualname(d)
            if q in kb.LEGACY_TENSOR_TYPES or q == "torch.Tensor":
                return Value(FUNC, None, fn=_TorchFn.of(q))  # `tensor=torch.FloatTensor` (pix2pix's GANLoss)
        return None

    def _forward_site(self, fn: cst.FunctionDef, name: str) -> Value | None:
        """A `forward` parameter's value joined over the calls of the class's one instance in the
        file (`criterion = Loss()` ... `criterion(out, y)`), when each of them was seen."""
        sites = self.site_values.get(fn)
        if not sites or len(sites) != self._call_sites_of_instance(fn):
            return None
        return self._joined_sites(fn, name, sites)  # `self.encoder(inputs)`: the default for the rest

    def _site_total(self, fn: cst.FunctionDef, callee: str) -> int:
        """How many calls in the file may call `fn`: calls by its name, less the method calls
        whose receiver is known to be something else (`self.optimizer.step()` for a `step`)."""
        if callee == "__call__":
            return self._call_sites_of_instance(fn)
        total = self._site_count.get(callee, -1)
        if callee == fn.name.value and self.m.class_of(fn) is None and self.m.enclosing(fn, cst.ClassDef) is None:
            # a function of the file is called by its name (`model.train()` is not a call of a
            # module-level `train()`), or through the function used as a value
            total = self._name_site_count.get(callee, -1)
            # calls through the function used as a value (`self.metric(...)`, a `collate_fn=`)
            extra = sum(1 for c in self.site_values.get(fn, ())
                        if not (type(c) is cst.Call and type(c.func) is cst.Name and c.func.value == callee))
            if extra:
                total = max(total, 0) + extra
        if callee == fn.name.value and self.m.class_of(fn) is not None:
            if total > 0:
                # a bare `get_action(state, net)` calls a function, never the method (E50-4)
                total -= self._name_site_count.get(callee, 0)
            own_sites = self.site_values.get(fn) or {}
            others = None
            for c in self._calls_by_attr.get(callee, ()):
                if self._imported_receiver(c.func.value):
                    total -= 1  # `torch.save(...)` is no call of the file's `save` method
                    continue
                if c not in own_sites:
                    if others is None:
                        others = [f for f in self.m.functions.get(callee, ()) if f is not fn
                                  and self.m.class_of(f) is not None and self.site_values.get(f)]
                    if any(c in self.site_values[f] for f in others):
                        total -= 1  # a call of another class's method of that name (its receiver known)
                        continue
                rv = self._known_receiver(c.func.value)
                if rv is not None and rv.kind in (OPTIMIZER, SCHEDULER, SCALER, TENSOR, MODULE, LOADER, DATASET):
                    if rv.cls is None:
                        total -= 1
        return total

    def _imported_receiver(self, recv) -> bool:
        """`torch` in `torch.save(...)`, `np.random` in `np.random.seed(...)`: a receiver that is
        an imported module (or a name from one), never an instance of a class of this file."""
        while type(recv) is cst.Attribute:
            recv = recv.value
        if type(recv) is not cst.Name:
            return False
        return self.m.qualname(recv) is not None and all(
            b.how == "import" for b in self.m.bindings.get((self.m.module, recv.value), ()))

    def _call_sites_of_instance(self, fn: cst.FunctionDef) -> int:
        """Calls of a class's `__call__`: the class is instantiated once in the file, bound to a
        name (or `self.name`), and that name's calls are the sites; -1 when it cannot be told."""
        cached = self._instance_sites.get(fn)
        if cached is not None:
            return cached
        out = self._instance_sites[fn] = self._count_instance_sites(fn)
        return out

    def _count_instance_sites(self, fn: cst.FunctionDef) -> int:
        m = self.m
        cls = m.class_of(fn)
        if cls is None:
            return -1
        cname = cls.name.value
        if self._site_count.get(cname, 0) == 0:
            # a base class built only through one subclass that inherits this method (`Sub(...)`)
            made = [c for c in self._inheriting(cname, fn.name.value) if self._site_count.get(c, 0)]
            if len(made) == 1:
                cname = made[0]
        if self._site_count.get(cname, 0) != 1:
            return -1
        for c in m.calls:
            f = c.func
            if type(f) is not cst.Name or f.value != cname:
                continue
            top = c  # `Mesh().to(device)`, `Net().cuda().eval()`: the module itself
            while True:
                up = m.parents.get(top)
                if type(up) is cst.Attribute and up.value is top and up.attr.value in _SELF_RETURNING:
                    call = m.parents.get(up)
                    if type(call) is not cst.Call or call.func is not up:
                        return -1
                    top = call
                else:
                    break
            parent = m.parents.get(top)
            if type(parent) is cst.Arg:
                # `Predictor(net, Gen())`: handed to a class of the file whose constructor keeps it
                # as `self.gen`; that attribute's calls are the sites (gluonts' forecast generator)
                held = self._held_by_constructor(parent)
                return self._site_count.get(held, 0) if held is not None else -1
            if type(parent) is not cst.Assign or len(parent.targets) != 1:
                return -1
            t = parent.targets[0].target
            if type(t) is cst.Name:
                name = t.value
            elif type(t) is cst.Attribute and type(t.value) is cst.Name and t.value.value == "self":
                name = t.attr.value
            else:
                return -1
            if type(t) is cst.Name and m.functions.get(name):
                return -1
            return self._site_count.get(name, 0)
        return -1

    def _held_by_constructor(self, arg: cst.Arg) -> str | None:
        """The attribute a file class's `__init__` stores `arg` in, when `arg` is an argument of
        that class's construction and its parameter is stored once, as is, in a statement of the
        constructor's own body (`self.gen = gen`); None otherwise."""
        m = self.m
        call = m.parents.get(arg)
        if type(call) is not cst.Call or type(call.func) is not cst.Name or call.func.value not in m.classes:
            return None
        found = m.method_of_class(call.func.value, "__init__")
        if found is None or arg.star:
            return None
        init = found[0]
        params = [x.name.value for x in (*init.params.posonly_params, *init.params.params)][1:]
        if arg.keyword is not None:
            pname = arg.keyword.value
        else:
            i = [a for a in call.args if a.keyword is None].index(arg)
            if any(a.star for a in call.args[:i]) or i >= len(params):
                return None
            pname = params[i]
        held = None
        for n in m.nodes[m.order[init]:m.end[init]]:
            if type(n) is cst.Name and n.value == pname:
                up = m.parents.get(n)
                if type(up) is cst.Param or (type(up) is cst.Attribute and up.attr is n):
                    continue  # the parameter itself; `self.gen`'s name
                if (type(up) is cst.Assign and up.value is n and len(up.targets) == 1
                        and type(up.targets[0].target) is cst.Attribute
                        and type(up.targets[0].target.value) is cst.Name
                        and up.targets[0].target.value.value == "self" and held is None
                        and m.enclosing(up, cst.FunctionDef) is init):
                    held = up.targets[0].target.attr.value
                    continue
                return None  # read in another way too: where it goes is not only the attribute
        return held

    def _known_receiver(self, recv) -> Value | None:
        v = self.values.get(recv)
        if v is not None and v.kind is not None:
            return v
        if type(recv) is cst.Attribute and type(recv.value) is cst.Name and recv.value.value == "self":
            cls = self.m.class_of(recv)
            if cls is not None:
                return self.class_attrs.get(cls.name.value, {}).get(recv.attr.value)
        return None

    def _globals_of(self, fn) -> tuple:
        """The names a function declares `global` (not those of the functions it defines)."""
        found = self._globals_cache.get(fn)
        if found is None:
            out = []
            for node in self.m.walk(fn.body, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) if type(fn) is cst.FunctionDef else ():
                if type(node) is cst.Global:
                    out += [n.name.value for n in node.names]
            found = self._globals_cache[fn] = tuple(out)
        return found

    def _record_function(self, fn: cst.FunctionDef, cls: str | None) -> None:
        self.recorded.add(fn)
        outer = self._outer_frame(fn)
        frame = _Frame(fn, cls, outer, True)
        self._params_of(fn, cls, None, frame)
        self._globals_from_sites(fn, frame)
        active = self._active.setdefault(fn, [])
        active.append(frame)
        try:
            self._block(fn.body.body if isinstance(fn.body, cst.IndentedBlock) else [fn.body], frame)
        finally:
            active.pop()
        if cls is not None:
            self._store_attrs(frame, cls)

    def _closure(self, v: Value, frame: _Frame) -> Value:
        """A nested function returned by the function that defines it (`def hinge(labels): def
        fun(x, y): ...; return fun`): the function with the values its free names have in that
        frame when it returns (MIL-Lab#4's smooth top-k SVM losses)."""
        fn = v.fn
        if type(frame.fn) is not cst.FunctionDef or self.m.enclosing(fn, cst.FunctionDef) is not frame.fn:
            return v
        free = self._free_names.get(fn)
        if free is None:
            m = self.m
            free = set()
            for n in m.walk(fn):
                if type(n) is cst.Name and not m.bindings.get((fn, n.value)):
                    free.add(n.value)
            self._free_names[fn] = free
        got = tuple(sorted((k, x) for k, x in frame.env.items()
                           if type(k) is str and k in free and x.kind is not None))
        return replace(v, attrs=got) if got else v

    def _globals_from_sites(self, fn, frame: _Frame) -> None:
        """A function every call of which comes after its caller moved a module-level name in
        place (`model.to(device)` in `train()`, then `test_accuracy()`): in its recorded pass that
        name is as the calls left it (joined with the module's own value where a call had not
        moved it)."""
        sites = self.site_values.get(fn)
        if not sites or any(a is None for a in sites.values()):
            return
        names = {k[1] for a in sites.values() for k in a if type(k) is tuple and k[0] == _GLOBAL}
        if not names:
            return
        callee = fn.name.value
        if callee == "__init__":
            return
        if len(sites) != self._site_total(fn, callee):
            return
        top = self.module_frame.env
        for n in sorted(names):
            out = None
            for a in sites.values():
                v = a.get((_GLOBAL, n), top.get(n))
                out = v if out is None or v is None else join(out, v)
                if v is None:
                    out = None
                    break
            if out is not None and self._global_name(n, fn):
                frame.env[n] = out
                if frame.moved_globals is None:
                    frame.moved_globals = set()
                frame.moved_globals.add(n)

    def _global_name(self, name: str, fn) -> bool:
        """`name`, read or moved in `fn` (a function or method of the module, not nested), is
        the module-level binding: `fn` binds no local of that name."""
        m = self.m
        return (type(fn) is cst.FunctionDef and not m.bindings.get((fn, name))
                and bool(m.bindings.get((m.module, name))) and m.enclosing(fn, cst.FunctionDef) is None)

    def _live_outer(self, fn):
        """The frame of the function that encloses `fn` while it is being run (a closure called
        back during its enclosing function's pass: `u_func=scalarization_th` handed to a method
        that calls it), or None. The closure reads that frame's bindings as they are then."""
        outer = self.m.enclosing(fn, cst.FunctionDef, cst.Lambda)
        found = self._active.get(outer) if type(outer) is cst.FunctionDef else None
        return found[-1] if found else None

    def _outer_frame(self, fn) -> _Frame:
        """Closures read the module's values; a name an enclosing function binds (its parameters,
        its assignments) is unknown there, not the module-level name of the same spelling. A
        parameter of an enclosing function that only binds it as a parameter is what every call
        of that function passes, when each call was seen (`make_validate_fnc(model, loss_fnc)`:
        `model` in the nested `validate` is that model)."""
        m = self.m
        outer = m.enclosing(fn, cst.FunctionDef, cst.Lambda)
        if outer is None:
            return self.module_frame
        live = self._live_outer(fn)
        if live is not None:
            return live
        cache = self._closure_frames
        found = cache.get(outer)
        if found is None:
            if self._scope_names is None:
                names: dict = {}
                for scope, name in m.bindings:
                    if type(scope) is not cst.Module and "." not in name:
                        names.setdefault(scope, set()).add(name)
                self._scope_names = names
            found = _Frame(outer, None, self.module_frame, False)
            complete = True
            scope = outer
            while scope is not None:
                for name in self._scope_names.get(scope, ()):
                    if name in found.env:
                        continue
                    v = self._closure_param(scope, name)
                    if v is None:
                        complete = complete and not self._is_param_only(scope, name)
                        v = UNKNOWN
                    found.env[name] = v
                scope = m.enclosing(scope, cst.FunctionDef, cst.Lambda)
            if complete:
                cache[outer] = found
        return found

    def _is_param_only(self, scope, name: str) -> bool:
        bs = self.m.bindings.get((scope, name), ())
        return type(scope) is cst.FunctionDef and len(bs) == 1 and bs[0].how == "param"

    def _closure_param(self, scope, name: str) -> Value | None:
        """An enclosing function's parameter, never re-bound there, joined over its calls."""
        if not self._is_param_only(scope, name) or self.m.class_of(scope) is not None:
            return None
        return self._param_from_sites(scope, name)

    def _store_attrs(self, frame: _Frame, cls: str, key=None) -> None:
        """What a method leaves in `self.attr`, joined over the class's methods that set it.

        `key`: the summary of a construction (`__init__` run with one call site's arguments). Two
        constructions that leave an attribute in different places (P64-1: `Wrapper()` on the
        accelerator, `Wrapper(device="cpu")` on the host) make it their join for the class's other
        methods, whatever the pass without arguments found: those methods' recorded passes stand
        for every instance, and must not take one instance's network with another's device."""
        method = frame.fn.name.value
        per = self._attr_by_method.setdefault((cls, method), {})
        merged = self.class_attrs.setdefault(cls, {})
        for attr in frame.assigned_self:
            v = frame.env.get("self." + attr, UNKNOWN)
            if v.kind == "none" and frame.reset_from is not None and attr in frame.reset_from:
                # set, used (by methods this one calls) and dropped: other methods may see either
                v = join(frame.reset_from[attr], v)
            by_key = self._attr_by_construction.get((cls, method, attr))
            if key is not None:
                if by_key is None:
                    by_key = self._attr_by_construction[(cls, method, attr)] = {}
                by_key[key] = v
            # (a construction that leaves it unknown knows less, it does not disagree)
            known = {kv for kv in by_key.values() if kv.kind is not None or kv.dev is not None} if by_key else ()
            if len(known) > 1:
                out = v if key is None and (v.kind is not None or v.dev is not None) else None
                for kv in known:
                    out = kv if out is None else join(out, kv)
                v = out  # the constructions disagree: neither one's value alone
            elif v.kind is None and v.dev is None and attr in per:
                continue  # a pass without its arguments knows less than one with them
            per[attr] = v
            setters = self._attr_setters.setdefault((cls, attr), {})
            setters[method] = v
            out = None
            for sv in setters.values():
                out = sv if out is None else join(out, sv)
            merged[attr] = out

    # ------------------------------------------------------------------------------------------
    # statements
    # ------------------------------------------------------------------------------------------
    def _block(self, stmts, frame: _Frame) -> bool:
        """Interpret statements in order; False when the block always leaves (return/raise...)."""
        for i, stmt in enumerate(stmts):
            t = type(stmt)
            if t is cst.SimpleStatementLine or t is cst.SimpleStatementSuite:
                for small in stmt.body:
                    if not self._small(small, frame):
                        return False
            elif isinstance(stmt, cst.BaseSmallStatement):
                # the body of a one-line compound statement (`if c: x = x.cuda()`) is its small
                # statements themselves
                if not self._small(stmt, frame):
                    return False
            elif t is cst.If:
                ran = self._if(stmt, frame)
                if ran is _LEAVES:
                    return False
                if ran and i + 1 < len(stmts):
                    # `if cuda_available: return x.cuda()` then `return x`: the rest of the block
                    # runs only where the GPU test fails
                    frame.cpu_only += 1
                    try:
                        return self._block(stmts[i + 1:], frame)
                    finally:
                        frame.cpu_only -= 1
            elif t is cst.For or t is cst.While:
                self._loop(stmt, frame)
            elif t is cst.With:
                self._with(stmt, frame)
            elif t is cst.Try or t is cst.TryStar:
                self._try(stmt, frame)
            elif t is cst.FunctionDef or t is cst.ClassDef:
                for d in getattr(stmt, "decorators", ()):
                    self.eval(d.decorator, frame)
                if t is cst.FunctionDef and type(frame.fn) is cst.FunctionDef and not stmt.decorators:
                    # a nested function: the value its name holds (made into a closure when it
                    # leaves its enclosing function, see _closure)
                    frame.env[stmt.name.value] = Value(FUNC, None, fn=stmt)
            elif t is cst.Match:
                frame.env = {k: UNKNOWN for k in frame.env}
        return True

    def _small(self, s, frame: _Frame) -> bool:
        t = type(s)
        if t is cst.Assign:
            v = self.eval(s.value, frame)
            if (type(s.value) is cst.Call and type(s.value.func) is cst.Attribute and v.kind == MODULE
                    and kb.module_method(s.value.func.attr.value) == "inplace_move"):
                # `m = model.to(device)`: the module moves in place, whatever name the result gets
                # (the nanoGPT lecture's bigram.py, PRECISION24)
                self._module_moved_in_place(s.value, v, frame, rebind_only=True)
            for tgt in s.targets:
                self._bind(tgt.target, v, frame, s.value)
        elif t is cst.Expr:
            self._expr_statement(s.value, frame)
        elif t is cst.AnnAssign:
            if s.value is not None:
                v = self.eval(s.value, frame)
                q = self.m.qualname(s.annotation.annotation)
                k = kb.class_kind(q) if q else None
                if v.kind is None and k is not None:
                    v = replace(v, kind=k)
                self._bind(s.target, v, frame, s.value)
        elif t is cst.AugAssign:
            cur = self.eval(s.target, frame)
            rhs = self.eval(s.value, frame)
            if cur.kind == TENSOR and rhs.kind == TENSOR:  # `ema_v += (1 - d) * model_v`: in place
                # the target is the output: a 0-dim host tensor cannot take a device result
                # (`total = torch.tensor(0.0); total += out.norm()`, LCCNet#4)
                target = replace(cur, nonscalar=True) if cur.dev is not None and cur.dev.is_host else cur
                self._check(s, "binary", [(s.target, target), (s.value, rhs)], frame)
            if cur.kind == TENSOR and rhs.kind == TENSOR and rhs.graph and not cur.graph and type(
                    s.operator) in _DIFFERENTIABLE_AUG_OPERATORS:
                cur = replace(cur, graph=True)  # `total += loss`: the accumulator now holds the graph
            if (cur.kind is None or (cur.kind == HOSTVAL and cur.py in ("int", "float", None))) and rhs.kind == TENSOR:
                # `total = 0.0; total += loss`: a Python number plus a tensor is a tensor
                cur = Value(TENSOR, rhs.dev, nograd=rhs.nograd, origin=s,
                            graph=rhs.graph and type(s.operator) in _DIFFERENTIABLE_AUG_OPERATORS)
            self._bind(s.target, cur, frame, None)
        elif t is cst.Return:
            v = self.eval(s.value, frame) if s.value is not None else Value(HOSTVAL, HOST)
            if v.kind == FUNC and type(v.fn) is cst.FunctionDef and v.attrs is None:
                v = self._closure(v, frame)
            if frame.cpu_only and v.kind in (DEVICE, TENSOR, MODULE):
                # the return of a branch that does not run on a GPU (`if torch.cuda.is_available():
                # return torch.device("cuda:0") else: return torch.device("cpu")`): as for
                # `a if torch.cuda.is_available() else b`, the value is the GPU path's
                return False
            frame.returns = v if frame.returns is None else join(frame.returns, v)
            return False
        elif t is cst.Raise:
            if s.exc is not None:
                self.eval(s.exc, frame)
            return False
        elif t is cst.Del:
            pass
        elif t is cst.Assert:
            self.eval(s.test, frame)
        return True

    def _module_moved_in_place(self, e: cst.Call, v: Value, frame: _Frame, rebind_only: bool = False) -> bool:
        """`model.to(device)`, `model.half()` (and `model.eval().cpu()`): the module the call is
        made on is moved or cast in place; its name (or `self` attribute) is re-bound to `v`."""
        meth = e.func.attr.value
        recv = e.func.value
        rv = self.values.get(recv) if frame.record else None
        if rv is None:
            rv = self._peek(recv, frame)
        if not (rv.kind in (MODULE, METRIC) and (kb.module_method(meth) == "inplace_move" or (
                v.kind == MODULE and v.half and not rv.half and v.half_at is e))):
            return False
        base = recv
        # `model.eval().cpu()`: methods that return the module itself lead to the name moved
        while type(base) is cst.Call and type(base.func) is cst.Attribute and kb.module_method(
                base.func.attr.value) in ("same", "inplace_move"):
            base = base.func.value
        if rebind_only and type(base) is not cst.Name and not (
                type(base) is cst.Attribute and type(base.value) is cst.Name and base.value.value == "self"):
            return False
        self._bind(base, v, frame, None, rebinding=True)
        if not rebind_only:
            self.inplace_moves[e] = v
        if type(base) in (cst.Attribute, cst.Subscript) and not (
                type(base) is cst.Attribute and type(base.value) is cst.Name and base.value.value == "self"):
            self._part_moved(base, frame)  # `model.classifier.cuda()`: a part moved by itself
        if type(base) is cst.Name and self._global_name(base.value, frame.fn):
            if frame.moved_globals is None:
                frame.moved_globals = set()
            frame.moved_globals.add(base.value)
        return True

    def _expr_statement(self, e, frame: _Frame) -> None:
        v = self.eval(e, frame)
        if type(e) is cst.Call:
            self._nested_module_moves(e, frame)
        # Module moves and casts are in place: `model.to(device)`, `model.half()`
        if type(e) is cst.Call and type(e.func) is cst.Attribute:
            meth = e.func.attr.value
            recv = e.func.value
            rv = self.values.get(recv) if frame.record else None
            if rv is None:
                rv = self._peek(recv, frame)
            moved = self._module_moved_in_place(e, v, frame)
            if not moved and kb.module_method(meth) == "same":
                # `model.to(device).eval()`, `model.cuda().train(False)`: the move under methods that
                # return the module itself (diffusers' tests, P48-3)
                inner = recv
                while (type(inner) is cst.Call and type(inner.func) is cst.Attribute
                       and kb.module_method(inner.func.attr.value) == "same"):
                    inner = inner.func.value
                if (type(inner) is cst.Call and type(inner.func) is cst.Attribute
                        and kb.module_method(inner.func.attr.value) == "inplace_move"):
                    iv = self.values.get(inner) if frame.record else None
                    if iv is None:
                        iv = self.eval(inner, frame)
                    moved = self._module_moved_in_place(inner, iv, frame)
            if moved:
                pass
            elif kb.module_method(meth) == "inplace_move" and type(recv) in (cst.Attribute, cst.Subscript):
                self._part_moved(recv, frame)  # `model.fc.to(device)` after `model.fc = nn.Linear(...)`
            elif rv.kind == BATCH and meth in ("to", "cuda", "cpu"):
                # a BatchEncoding's (a graph batch's) `.to()` moves its tensors in place
                self._bind(recv, v, frame, None, rebinding=True)
            elif (rv.kind == OBJECT and v.kind == OBJECT and v.placed is e and meth in ("to", "cuda", "cpu")
                  and type(recv) is cst.Name):
                self._bind(recv, v, frame, None, rebinding=True)  # (see the OBJECT move in _method)
            elif meth == "enter_context" and e.args and self._is_nograd(e.args[0].value):
                frame.nograd += 1  # stack.enter_context(torch.no_grad()): the rest of the block

    def _nested_module_moves(self, e: cst.Call, frame: _Frame) -> None:
        """`torch.save(model.cpu().state_dict(), path)`: a module's `.cpu()` / `.to()` / `.cuda()`
        inside a statement's call (an argument, or the receiver of another method) moves the named
        module in place as the statement `model.cpu()` does (pix2pix#253, E62-3). Only a name or
        a `self` attribute is re-bound (`copy.deepcopy(model).cpu()` moves a copy)."""
        stack = [a.value for a in e.args]
        if type(e.func) is cst.Attribute:
            stack.append(e.func.value)
        while stack:
            x = stack.pop()
            if type(x) is not cst.Call:
                continue
            f = x.func
            if type(f) is cst.Attribute:
                if kb.module_method(f.attr.value) == "inplace_move":
                    xv = self.values.get(x) if frame.record else None
                    if xv is None:
                        xv = self.eval(x, frame)
                    self._module_moved_in_place(x, xv, frame, rebind_only=True)
                stack.append(f.value)
            stack.extend(a.value for a in x.args)

    def _list_add(self, recv, rv: Value, meth: str, v: Value, frame: _Frame) -> None:
        """`xs.append(v)`: a list's elements are what was put in it (joined)."""
        if meth == "extend":
            v = self._element(v) if v.kind in (TUPLE, ITER) else UNKNOWN
        old = list(rv.items) if rv.items is not None else ([rv.elem] if rv.elem is not None else [UNKNOWN])
        elem = v
        for x in old:
            elem = join(elem, x)
        self._bind(recv, Value(TUPLE, None, elem=elem, origin=rv.origin), frame, None, rebinding=True)

    def _peek(self, e, frame) -> Value:
        if type(e) is cst.Name:
            return self._lookup(e.value, frame) or UNKNOWN
        if type(e) is cst.Attribute and type(e.value) is cst.Name and e.value.value == "self":
            return self._self_attr(e.attr.value, frame, False) or UNKNOWN
        return UNKNOWN

    def _bind(self, target, v: Value, frame: _Frame, value_expr, rebinding: bool = False) -> None:
        t = type(target)
        if t is cst.Name:
            frame.env[target.value] = v
            if frame.record:
                self.values[target] = v
        elif t is cst.Attribute:
            if type(target.value) is cst.Name and target.value.value == "self" and frame.cls is not None:
                key = target.attr.value
                if v.kind == HOSTVAL and value_expr is not None and type(value_expr) is cst.SimpleString:
                    # `self.device = 'cpu'` (a memory bank's default, moved later by its own `to()`):
                    # that device, so `.to(self.device)` reads it rather than guessing from the name
                    v = self._device_literal(value_expr, v)
                if (v.kind == TENSOR and type(value_expr) is cst.Attribute and value_expr.attr.value in ("weight", "bias")
                        and self._class_kind(frame.cls) in (MODULE, METRIC)
                        and self._peek(value_expr.value, frame).kind == MODULE):
                    # `self.k0 = conv0.weight`: a layer's Parameter assigned to a module attribute is
                    # registered by `nn.Module.__setattr__` and moves with the module (basicsr's
                    # SeqConv3x3, P50-1)
                    self._param_made.add(value_expr)
                    if v.dev is not None and v.dev.is_host and not frame.devctx:
                        self._made_on_host.add(value_expr)
                    v = replace(v, dev=None, origin=value_expr, placed=None)
                prev = frame.env.get("self." + key)
                if (v.kind == TENSOR and prev is not None and prev.kind == TENSOR and prev.origin in self._param_made
                        and type(prev.origin) is cst.Call and type(prev.origin.func) is cst.Attribute
                        and prev.origin.func.attr.value == "register_buffer"):
                    # `self.memory = F.normalize(self.memory)` after `self.register_buffer("memory", t)`:
                    # `nn.Module.__setattr__` keeps a tensor assigned to a buffer's name in `_buffers`,
                    # so it is still the buffer, moved with its module (PyContrast, P42-2)
                    v = replace(v, dev=None, origin=prev.origin, placed=None)
                if v.kind == "none" and prev is not None and prev.kind not in (None, "none"):
                    if frame.reset_from is None:
                        frame.reset_from = {}
                    frame.reset_from[key] = join(frame.reset_from.get(key), prev)
                frame.env["self." + key] = v
                frame.assigned_self.add(key)
                if frame.record:
                    self.values[target] = v
            elif not self._instance_attr_set(target, v, frame, value_expr):
                self._part_assigned(target, v, frame, value_expr)
        elif t is cst.Tuple or t is cst.List:
            els = target.elements
            n = len(els)
            src_items = value_expr.elements if isinstance(value_expr, (cst.Tuple, cst.List)) else None
            star = next((i for i, el in enumerate(els) if isinstance(el, cst.StarredElement)), None)
            around = self._around_star(star, n, v, value_expr) if star is not None else None
            for i, el in enumerate(els):
                if isinstance(el, cst.StarredElement):
                    sub = UNKNOWN
                    self._bind(el.value, sub, frame, None)
                    continue
                if around is not None:
                    # `b, *_, device = *x.shape, x.device`: a target before the starred one takes the
                    # value's item from the start, one after it from the end, when no starred value
                    # item stands between (P44-3)
                    j = i if i < star else len(around) - (n - i)
                    span = around[: j + 1] if i < star else around[j:]
                    self._bind(el.value, UNKNOWN if j < 0 or None in span else around[j], frame, None)
                    continue
                if v.items is not None and len(v.items) == n:
                    sub = v.items[i]
                elif v.kind == BATCH or (v.kind in (TUPLE, ITER) and v.elem is not None):
                    sub = v.elem if v.kind != BATCH else Value(TENSOR, v.dev, nonscalar=True, origin=v.origin)
                elif v.kind == TENSOR and n == 2 and self._pair_result(value_expr):
                    sub = v  # `_, predicted = torch.max(outputs, 1)`: values and indices, where the input is
                elif v.kind == TENSOR and v.dev is not None and v.dev.where != "either":
                    # `a, b = t` iterates its first dimension (or it was a tuple of tensors read as one,
                    # `batch[:-1]`): each part is where `t` is; of fewer dimensions
                    sub = Value(TENSOR, v.dev, v.half, v.deep, v.nograd, origin=v.origin)
                else:
                    sub = UNKNOWN
                self._bind(el.value, sub, frame,
                           src_items[i].value if src_items is not None and i < len(src_items) else None)
        elif t is cst.Subscript:
            base = target.value
            bv = self.eval(base, frame)
            if bv.kind == TENSOR and v.kind == TENSOR and value_expr is not None:
                # `dense[keep] = scores` with a tensor index: `index_put_`, which needs the values on
                # the tensor's device (a slice or an integer index copies across devices) (E38-5)
                idx = [self.eval(el.slice.value, frame) for el in target.slice if type(el.slice) is cst.Index]
                if any(iv.kind == TENSOR for iv in idx):
                    self._check(target, "binary", [(base, bv), (value_expr, v)], frame)
            if bv.kind in (MODULE, None) and v.kind == MODULE:
                self._part_assigned(target, v, frame, value_expr)  # `model.classifier[6] = nn.Linear(...)`
            elif bv.kind in (MAPPING, TUPLE) and self._container_name(base):
                self._item_assigned(target, base, bv, v, frame)
            elif bv.kind == BATCH and self._container_name(base) and len(target.slice) == 1 and isinstance(
                    target.slice[0].slice, cst.Index):
                # `data["video"] = data["video"].to(device)` on a batch dict from a loader: that
                # key's value from here on (the others are still the loader's)
                key = _const_key(target.slice[0].slice.value)
                if key is not None:
                    keys = tuple((k0, v0) for k0, v0 in (bv.keys or ()) if k0 != key) + ((key, v),)
                    self._rebind_container(base, replace(bv, keys=keys), frame)
                else:
                    # `batch[k] = batch[k].to(device)` with a variable key: in a loop over the
                    # batch's own keys every key is moved; anywhere else, which one is unknown
                    loop = self._key_loop(target, base)
                    if loop is not None and v.kind == TENSOR and v.dev is not None:
                        new = Value(BATCH, v.dev, origin=bv.origin, placed=v.placed)
                        self._key_loop_moved[loop] = (base, new)
                    else:
                        new = Value(BATCH, None, origin=bv.origin)
                    self._rebind_container(base, new, frame)

    def _instance_attr_set(self, target: cst.Attribute, v: Value, frame: _Frame, value_expr=None) -> bool:
        """`inst.model = CNN(...)` on a name holding an instance of a plain class of the file: that
        instance's attribute from here on (its methods, summarised for it, read it first)."""
        base = target.value
        if type(base) is not cst.Name:
            return False
        cur = self._lookup(base.value, frame)
        if cur is None or cur.kind != OBJECT or cur.cls is None or cur.cls not in self.m.classes or cur.keys is not None:
            return False
        if v.kind is None and type(value_expr) is cst.Call and type(value_expr.func) is cst.Attribute and (
                value_expr.func.attr.value in ("to", "cuda")):
            prev = instance_attr(cur.attrs, target.attr.value)
            if prev is None and target.attr.value in self.class_attrs.get(cur.cls, {}):
                prev = (self.class_attrs[cur.cls][target.attr.value], False)  # what the class's methods set
            if prev is not None and prev[0].kind == TENSOR:
                # `model.objective_vectors = torch.load(path).to(device)` replacing a tensor the
                # constructor made: a tensor again, where it was moved (ProDA#49, F:E69-1)
                f = value_expr
                if f.func.attr.value == "cuda":
                    d = Dev("acc", "cuda")
                elif len(f.args) == 1 and f.args[0].keyword is None and not f.args[0].star:
                    d = self._device_value(f.args[0].value, self._peek(f.args[0].value, frame))
                else:
                    d = None
                if d is not None and d.where == "acc":
                    v = Value(TENSOR, d, nonscalar=prev[0].nonscalar, deep=prev[0].deep, origin=value_expr,
                              placed=value_expr)
        attrs = _set_attrs(cur.attrs, {target.attr.value: v})
        self._bind(base, replace(cur, attrs=attrs), frame, None, rebinding=True)
        if frame.record:
            self.values[target] = v
        return True

    def _held_instance_set(self, recv: cst.Attribute, v: Value, frame: _Frame) -> None:
        """`holder.attr` (a plain instance of the file) is `v` from here on: `self.attr` in a method
        of the holder's class, else the attribute of the instance the name `holder` holds."""
        base = recv.value
        if base.value == "self" and frame.cls is not None:
            frame.env["self." + recv.attr.value] = v
            return
        cur = self._lookup(base.value, frame)
        if cur is not None and cur.kind == OBJECT and cur.cls in self.m.classes and cur.keys is None:
            self._bind(base, replace(cur, attrs=_set_attrs(cur.attrs, {recv.attr.value: v})), frame, None,
                       rebinding=True)

    def _part_assigned(self, target, v: Value, frame: _Frame, value_expr) -> None:
        """`model.fc = nn.Linear(n, k)` (`model.roi_heads.box_predictor = FastRCNNPredictor(...)`)
        after `model` was moved to an accelerator: the new layer is built on the host and the
        module now has parts on two devices until it is moved again (torchvision fine-tuning
        recipes replace the head before the move; doing it after is a common crash). Remembered on
        the module's value (`host_part`); a later move of the module or of that part forgets it."""
        base = target.value
        while (type(base) is cst.Subscript or type(base) is cst.Attribute) and not (
                type(base.value) is cst.Name and base.value.value == "self"):
            base = base.value  # `model.classifier[6] = nn.Linear(...)`: the part of `model`
        if type(base) is cst.Name and base.value != "self":
            key = base.value
        elif type(base) is cst.Attribute and type(base.value) is cst.Name and frame.cls is not None:
            key = "self." + base.attr.value
        else:
            return
        rv = frame.env.get(key)
        if rv is None or rv.kind != MODULE or rv.scatters or rv.wrap is not None:
            return
        if rv.host_part is not None and self.m.module.code_for_node(rv.host_part[0]) == self.m.module.code_for_node(target):
            frame.env[key] = replace(rv, host_part=None)  # the part replaced (moved) again
            rv = frame.env[key]
        if (rv.dev is None or rv.dev.where != "acc" or v.kind != MODULE or v.dev is None or not v.dev.is_host
                or type(value_expr) is not cst.Call or v.origin is not value_expr):
            return
        if not v.stateful and not (self.m.qualname(value_expr.func) or "").startswith(("torchvision.models.", "timm.")):
            return  # a layer without weights runs anywhere; torchvision's heads (FastRCNNPredictor) have some
        if self._weightless_container(value_expr):
            # `inception.fc = torch.nn.Sequential()` (imaginaire's FID head, P54-1), or a container of
            # torch layers without weights (`nn.Sequential(nn.ReLU(), nn.Dropout(0.1))`): nothing
            # left on the host (a container the code grows later is another assignment's business)
            return
        frame.env[key] = replace(rv, host_part=(target, value_expr))

    def _weightless_container(self, call: cst.Call) -> bool:
        """`nn.Sequential()`, `nn.ModuleList([nn.ReLU()])`: a torch container whose every part is a
        torch layer call without weights (STATELESS_MODULES), or that has none."""
        from gpulint.model import STATELESS_MODULES

        q = self.m.qualname(call.func) or ""
        if q not in ("torch.nn.Sequential", "torch.nn.ModuleList") or any(a.keyword is not None or a.star for a in call.args):
            return False
        parts = []
        for a in call.args:
            v = a.value
            if q == "torch.nn.ModuleList" and type(v) in (cst.List, cst.Tuple):
                parts.extend(el.value for el in v.elements)
            else:
                parts.append(v)
        for p in parts:
            pq = (self.m.qualname(p.func) or "") if type(p) is cst.Call else ""
            if not (pq.startswith("torch.nn.") and pq.rsplit(".", 1)[-1] in STATELESS_MODULES):
                return False
        return True

    def _part_moved(self, recv, frame: _Frame) -> None:
        """`model.fc.cuda()` / `model.roi_heads.to(device)` as a statement: a host part remembered
        at or under that attribute (see _part_assigned) moves with it; forgotten."""
        code = self.m.module.code_for_node
        text = code(recv)
        for key, val in list(frame.env.items()):
            if val.kind == MODULE and val.host_part is not None:
                part = code(val.host_part[0])
                if part == text or part.startswith((text + ".", text + "[")):
                    frame.env[key] = replace(val, host_part=None)

    def _loop_keys(self, target: cst.Subscript, idx, frame: _Frame) -> tuple | None:
        """The constant string keys a `for` loop's variable `idx` takes, when `target` (`d[idx]`)
        is in that loop's body: `for k in ("train", "val")`, `for k, v in {"train": ...}.items()`,
        `for k in d` / `d.keys()` of a dict whose keys are known; None otherwise."""
        if type(idx) is not cst.Name:
            return None
        loop = self.m.enclosing(target, cst.For)
        if loop is None or self.m.enclosing(loop, cst.FunctionDef) is not self.m.enclosing(target, cst.FunctionDef):
            return None
        tgt = loop.target
        it = loop.iter
        items = type(it) is cst.Call and type(it.func) is cst.Attribute and it.func.attr.value == "items" and not it.args
        if type(tgt) in (cst.Tuple, cst.List):
            if not items or len(tgt.elements) != 2:
                return None
            tgt = tgt.elements[0].value
        elif items:
            return None
        if type(tgt) is not cst.Name or tgt.value != idx.value:
            return None
        if type(it) is cst.Call and type(it.func) is cst.Attribute and it.func.attr.value in ("keys", "items") and not it.args:
            it = it.func.value
        if type(it) in (cst.Tuple, cst.List):
            keys = tuple(_const_key(el.value) for el in it.elements if type(el) is cst.Element)
            return keys if keys and len(keys) == len(it.elements) and None not in keys else None
        v = self.values.get(it)
        if v is not None and v.kind == MAPPING and v.keys:
            return tuple(k for k, _ in v.keys)
        return None

    def _key_loop(self, target: cst.Subscript, base):
        """The `for` loop over `base`'s keys (`for k in batch`, `batch.keys()`, `for k, v in
        batch.items()`) whose key variable indexes `target`, or None."""
        idx = target.slice[0].slice.value
        if type(idx) is not cst.Name:
            return None
        text = self.m.module.code_for_node(base)
        loop = self.m.enclosing(target, cst.For)
        if loop is None:
            return None
        it = loop.iter
        if type(it) is cst.Call and type(it.func) is cst.Attribute and it.func.attr.value in ("keys", "items") and not it.args:
            it = it.func.value
        if self.m.module.code_for_node(it) != text:
            return None
        tgt = loop.target
        if type(tgt) in (cst.Tuple, cst.List) and tgt.elements:
            tgt = tgt.elements[0].value
        return loop if type(tgt) is cst.Name and tgt.value == idx.value else None

    @staticmethod
    def _container_name(base) -> bool:
        return type(base) is cst.Name or (
            type(base) is cst.Attribute and type(base.value) is cst.Name and base.value.value == "self")

    def _rebind_container(self, base, v: Value, frame: _Frame) -> None:
        """A dict or list changed in place: its name (or `self` attribute) holds the new value from
        here on (not recorded as the value of the name read there)."""
        if type(base) is cst.Name:
            frame.env[base.value] = v
        elif frame.cls is not None:
            frame.env["self." + base.attr.value] = v
            frame.assigned_self.add(base.attr.value)

    def _item_assigned(self, target: cst.Subscript, base, bv: Value, v: Value, frame: _Frame) -> None:
        """`d[k] = v`, `xs[i] = v`: one key's value for a constant key of a dict whose keys are
        known; otherwise any value may now be v (`batch[k] = batch[k].to(device)` in a loop over the
        keys moves them all on some paths only: host or device)."""
        idx = target.slice[0].slice.value if len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index) else None
        if bv.kind == MAPPING:
            key = _const_key(idx) if idx is not None else None
            looped = self._loop_keys(target, idx, frame) if key is None and bv.keys is not None else None
            if key is not None and bv.keys is not None:
                keys = tuple((k0, v if k0 == key else v0) for k0, v0 in bv.keys)
                if all(k0 != key for k0, _ in bv.keys):
                    keys = keys + ((key, v),)
                new = _mapping(keys, None, bv.origin)
            elif looped:
                # `for name, n in {"train": 64, "validation": 16}.items(): loaders[name] =
                # DataLoader(...)`: each key the loop walks gets this value (WatChMaL, E51-3b)
                keys = tuple((k0, v if k0 in looped else v0) for k0, v0 in bv.keys) + tuple(
                    (k, v) for k in looped if all(k != k0 for k0, _ in bv.keys))
                new = _mapping(keys, None, bv.origin)
            else:
                if bv.elem is not None:
                    elem = join(bv.elem, v)
                elif bv.keys is not None:
                    # a dict display (`out = {}`) given a value under a computed key (`out[f"stage_{s}"]
                    # = [self.lin(x)]`, PatchmatchNet#35, E62-2): any value is one of those it was given
                    elem = v
                    for _k0, v0 in bv.keys:
                        elem = join(elem, v0)
                else:
                    elem = None
                if elem is not None and not (elem.kind == TENSOR or (
                        elem.kind == TUPLE and (_elem_of(elem) or UNKNOWN).kind == TENSOR)):
                    elem = None  # (tensors, and lists of tensors, only)
                new = Value(MAPPING, None, elem=elem, origin=bv.origin)
        else:
            items = None
            if type(idx) is cst.Integer and bv.items is not None:
                i = int(idx.value, 0)
                if 0 <= i < len(bv.items):
                    items = tuple(v if j == i else x for j, x in enumerate(bv.items))
            if items is not None:
                new = Value(TUPLE, None, items=items, origin=bv.origin)
            else:
                old = _elem_of(bv)
                new = Value(TUPLE, None, elem=join(old, v) if old is not None else UNKNOWN, origin=bv.origin)
        self._rebind_container(base, new, frame)

    def _mapping_mutated(self, recv, rv: Value, meth: str, pos, frame: _Frame) -> None:
        """`d.update(other)`, `d.setdefault(k, v)`, ...: merged where both sides' keys are known;
        otherwise nothing is known of its values any more."""
        if not self._container_name(recv):
            return
        if meth == "update" and len(pos) == 1 and not pos[0][2] and rv.keys is not None and pos[0][1].keys is not None:
            other = dict(pos[0][1].keys)
            keys = tuple((k0, other.pop(k0, v0)) for k0, v0 in rv.keys) + tuple(other.items())
            new = _mapping(keys, None, rv.origin)
        elif meth in ("pop", "popitem", "clear"):
            return  # what is left is what was there
        else:
            new = Value(MAPPING, None, origin=rv.origin)
        self._rebind_container(recv, new, frame)

    def _pair_result(self, e) -> bool:
        """A call giving a (values, indices) pair: `torch.max(x, 1)`, `x.topk(k)`, `x.sort()`."""
        if type(e) is not cst.Call:
            return False
        f = e.func
        if type(f) is cst.Attribute:
            name = f.attr.value
            q = self.m.qualname(f)
            if q is not None and not q.startswith("torch."):
                return False
        elif type(f) is cst.Name:
            q = self.m.qualname(f)
            if q is None or not q.startswith("torch."):
                return False
            name = q.rsplit(".", 1)[-1]
        else:
            return False
        if name in _PAIR_ALWAYS:
            return True
        # max/min/median/mode give a pair only with a dimension
        if name not in _PAIR_WITH_DIM:
            return False
        at = 0 if type(f) is cst.Attribute and self.m.qualname(f) is None else 1
        for i, a in enumerate(e.args):
            if a.keyword is not None and a.keyword.value == "dim":
                return True
            if a.keyword is None and i == at:  # a dimension, not a second tensor (`torch.max(a, b)`)
                x = a.value.expression if type(a.value) is cst.UnaryOperation else a.value
                return type(x) is cst.Integer or (type(x) is cst.Name and x.value in ("dim", "axis"))
        return False

    def gpu_guard(self, test) -> bool | None:
        return gpu_guard(self.m, test)

    def _if(self, stmt: cst.If, frame: _Frame) -> bool:
        """Interpret an `if`; True when its test holds on a GPU run, it has no `else`, and its body
        always leaves: what follows it runs only off the GPU."""
        self.eval(stmt.test, frame)
        fn = frame.fn
        if (type(fn) is cst.FunctionDef and fn.name.value == "__init__" and frame.cls is not None
                and self._guarded_by_unset(stmt.body, fn, self._init_params_never_given(frame.cls, fn))):
            # `if device is not None:` in a constructor no construction gives `device`: not run
            if isinstance(stmt.orelse, cst.If):
                self._if(stmt.orelse, frame)
            elif isinstance(stmt.orelse, cst.Else):
                self._block(stmt.orelse.body.body, frame)
            return
        decided = self._not_none_test(stmt.test, frame)
        if decided is None and frame is self.module_frame and _main_test(stmt.test):
            # `if __name__ == "__main__":` of the script being run: its body runs, and the names it
            # binds are the module's globals the functions read (E49-2)
            decided = True
        if decided is None:
            decided = self._flag_test(stmt.test, frame)
        if decided is None:
            decided = self._type_test(stmt.test, frame)
        if decided is None:
            decided = self._const_test(stmt.test, frame)
        if decided is None:
            decided = self._callable_test(stmt.test, frame)
        if decided is not None:
            # `if self.device is not None:` with `self.device = 'cpu'` from every construction: only
            # one branch runs
            if decided:
                live = self._block(stmt.body.body, frame)
            elif isinstance(stmt.orelse, cst.If):
                live = self._if(stmt.orelse, frame) != _LEAVES
            elif isinstance(stmt.orelse, cst.Else):
                live = self._block(stmt.orelse.body.body, frame)
            else:
                live = True
            # the branch that runs always leaves (`if return_tensors == "pt": return ...`): the
            # statements after the `if` do not run
            return None if live else _LEAVES
        guard = self.gpu_guard(stmt.test)
        before = frame.env
        frame.env = dict(before)
        narrowed = self._class_narrowing(stmt.test, frame)
        if narrowed is not None:
            frame.env[narrowed[0]] = narrowed[1]
        frame.cpu_only += guard is False
        live_then = self._block(stmt.body.body, frame)
        frame.cpu_only -= guard is False
        then_env = frame.env
        frame.env = dict(before)
        if narrowed is not None:
            frame.env[narrowed[0]] = narrowed[2]
        live_else = True
        frame.cpu_only += guard is True
        if isinstance(stmt.orelse, cst.If):
            live_else = self._if(stmt.orelse, frame) is not _LEAVES
        elif isinstance(stmt.orelse, cst.Else):
            live_else = self._block(stmt.orelse.body.body, frame)
        frame.cpu_only -= guard is True
        else_env = frame.env
        if guard is True and not live_then and stmt.orelse is None:
            frame.env = else_env
            return True
        if guard is True and live_then:
            frame.env = then_env  # on a GPU the guarded branch runs
        elif guard is None and live_then and _and_with_availability(self.m, stmt.test):
            # `if args.gpu is not None and torch.cuda.is_available():` (pytorch/examples' ImageNet
            # script): the branch of the GPU run that gives the option; an `elif`/`else` is another
            # configuration, which this run does not take (pytorch/examples#1071, E69-2)
            frame.env = then_env
        elif guard is False and live_else:
            frame.env = else_env
        elif live_then and live_else:
            self._fill_self_attrs(frame, before, (then_env, else_env))
            frame.env = _join_env(then_env, else_env)
            if guard is None and _and_with_availability(self.m, stmt.test):
                self._device_choice(then_env, else_env, frame)
            if guard is None and frame.record:
                self._branch_moves(stmt.test, then_env, else_env, frame.env)
            if type(fn) is cst.FunctionDef and fn.name.value == "__init__" and frame.cls is not None:
                self._set_on_one_path(frame, before, then_env, else_env)
        elif live_then:
            frame.env = then_env
        elif live_else:
            frame.env = else_env
        else:
            frame.env = _join_env(then_env, else_env)

    @staticmethod
    def _device_choice(then_env: dict, else_env: dict, frame: _Frame) -> None:
        """`if use_cuda and torch.cuda.is_available(): device = torch.device("cuda")` / `else:
        device = torch.device("cpu")` (DIPY's DeepN4, E64-2): a device choice, read like the
        conditional expression `torch.device("cuda" if use_cuda and ... else "cpu")`, i.e. the
        accelerator on a run that has one, where the branch that needs the GPU binds it."""
        for k, a in then_env.items():
            b = else_env.get(k)
            if (b is not None and a.kind == DEVICE and b.kind == DEVICE and a.dev is not None and b.dev is not None
                    and a.dev.where == "acc" and b.dev.is_host):
                frame.env[k] = a

    def _const_test(self, test, frame: _Frame) -> bool | None:
        """`return_tensors == "pt"` (or `!=`) where both sides are the same string literal on every
        path, or one is such a string and the other `None` (a parameter left to its default):
        whether the test holds; None otherwise."""
        if type(test) is not cst.Comparison or len(test.comparisons) != 1:
            return None
        op = type(test.comparisons[0].operator)
        if op in (cst.In, cst.NotIn):
            # `target in ["bin_class", "class"]` of a string every call passes (Deeprank-GNN's
            # `self.task`, E32-3b): whether it is one of those literals
            a = self.eval(test.left, frame)
            b = self.eval(test.comparisons[0].comparator, frame)
            if a.const is not None and b.kind == MAPPING and b.keys and any(k == a.const for k, _ in b.keys):
                # `"mask" in batch` of a dict known to hold that key (F:E69-5); a key it is not known
                # to hold may still have been added where the engine does not see
                return op is cst.In
            if a.const is None or b.kind != TUPLE or not b.items or any(x.const is None for x in b.items):
                return None
            found = any(x.const == a.const for x in b.items)
            return found if op is cst.In else not found
        if op not in (cst.Equal, cst.NotEqual):
            return None
        a = self.eval(test.left, frame)
        b = self.eval(test.comparisons[0].comparator, frame)
        if a.const is not None and b.const is not None:
            same = a.const == b.const
        elif (a.const is not None and b.kind == "none" and not b.nullable) or (
                b.const is not None and a.kind == "none" and not a.nullable):
            same = False
        else:
            return None
        return same if op is cst.Equal else not same

    def _callable_test(self, test, frame: _Frame) -> bool | None:
        """`callable(timesteps)` (or its `not`) of a value whose kind the engine knows on every
        path: an instance of a file class with a `__call__`, a module or a function is callable; a
        tensor, a number, a string is not (MMGeneration's `reconstruction_step(data, timesteps=
        self.sampler)`, E42-3's fixture); None otherwise."""
        neg = False
        if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
            test, neg = test.expression, True
        if not (type(test) is cst.Call and type(test.func) is cst.Name and test.func.value == "callable"
                and "callable" not in self.m.aliases and not self.m.bindings_of(test.func)
                and len(test.args) == 1 and test.args[0].keyword is None and not test.args[0].star):
            return None
        v = self.eval(test.args[0].value, frame)
        if v.nullable:
            return None
        if v.kind == OBJECT and v.cls is not None and v.cls in self.m.classes:
            found = self.m.method_of_class(v.cls, "__call__") is not None
            if not found and any(b not in self.m.classes for b in self.m.classes[v.cls].bases):
                return None  # an imported base may define `__call__`
        elif v.kind in (MODULE, FUNC):
            found = True
        elif v.kind == TENSOR or (v.kind == HOSTVAL and v.py in ("int", "float", "str", "bool")):
            found = False
        else:
            return None
        return found != neg

    def _flag_test(self, test, frame: _Frame) -> bool | None:
        """`if per_comp:` / `if not per_comp:` where the name (or `self` attribute) is the literal
        `True` or `False` on every path the engine saw (every call passes `per_comp=True`):
        whether the test holds; None otherwise."""
        neg = False
        if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
            test, neg = test.expression, True
        root, depth = test, 0
        if (type(test) is cst.Subscript and type(test.value) is cst.Name and len(test.slice) == 1
                and type(test.slice[0].slice) is cst.Index and type(test.slice[0].slice.value) is cst.SimpleString):
            root = test.value  # `config["cpu_offload"]` of a dict display (A70-E2)
        while type(root) is cst.Attribute and depth < 3:
            root, depth = root.value, depth + 1
        if type(test) is cst.Attribute and test.attr.value == "is_cuda":
            pass  # `next(module.parameters()).is_cuda`: the tensor's place, where the engine knows it
        elif type(root) is not cst.Name or (depth > 1 and root.value != "self"):
            return None  # a name, `x.flag`, or `self.part.flag` (`self.acmodel.recurrent`, a property)
        if type(test) is cst.Name and test.value in ("True", "False"):
            return None  # `while True`-like literals: left to the statement's own handling
        v = self.eval(test, frame)
        if v.kind != HOSTVAL or v.truth is None:
            return None
        return v.truth != neg

    def _class_narrowing(self, test, frame: _Frame):
        """`isinstance(loss, GeneratorLoss)` of a name holding an instance of one of several classes
        of the file: (name, its value where the test holds, where it fails), or None. Also
        `isinstance(s, torch.Tensor)` / `torch.is_tensor(s)` of a name of unknown kind: a tensor
        where the test holds (E42-5)."""
        if (type(test) is cst.Call and len(test.args) in (1, 2) and type(test.args[0].value) is cst.Name
                and not any(a.keyword or a.star for a in test.args)):
            q = self.m.qualname(test.func)
            tensor_test = (q == "torch.is_tensor" and len(test.args) == 1) or (
                type(test.func) is cst.Name and test.func.value == "isinstance" and "isinstance" not in self.m.aliases
                and len(test.args) == 2 and self.m.qualname(test.args[1].value) == "torch.Tensor")
            if tensor_test:
                name = test.args[0].value.value
                v = frame.env.get(name)
                if v is not None and v.kind is None and not v.py:
                    return name, replace(v, kind=TENSOR), v
                return None
        if (type(test) is not cst.Call or type(test.func) is not cst.Name or test.func.value != "isinstance"
                or len(test.args) != 2 or type(test.args[0].value) is not cst.Name):
            return None
        name = test.args[0].value.value
        v = frame.env.get(name)
        if v is None or v.kind != OBJECT or not v.alts:
            return None
        t = test.args[1].value
        elts = [el.value for el in t.elements] if type(t) is cst.Tuple else [t]
        if not all(type(el) is cst.Name and el.value in self.m.classes for el in elts):
            return None
        hit = [c for c in v.alts if any(self._subclass(c, el.value) for el in elts)]
        miss = [c for c in v.alts if c not in hit]

        def one_of(classes):
            if not classes:
                return v
            if len(classes) == 1:
                return Value(OBJECT, None, cls=classes[0], origin=v.origin)
            return replace(v, alts=tuple(classes))
        return name, one_of(hit), one_of(miss)

    def _type_test(self, test, frame: _Frame, _depth: int = 0) -> bool | None:
        if type(test) is cst.BooleanOperation and _depth < 4:
            # `isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)` (openmixup's
            # `assert_equal`, P44-4): `and` holds when both do and fails when either fails; `or`
            # the converse; undecided otherwise
            a = self._type_test(test.left, frame, _depth + 1)
            b = self._type_test(test.right, frame, _depth + 1)
            if type(test.operator) is cst.And:
                return False if False in (a, b) else (True if a is True and b is True else None)
            return True if True in (a, b) else (False if a is False and b is False else None)
        return self._one_type_test(test, frame)

    def _one_type_test(self, test, frame: _Frame) -> bool | None:
        """Whether `isinstance(x, float)` / `isinstance(x, (int, float))` / `torch.is_tensor(x)` /
        `isinstance(x, torch.Tensor)` / `isinstance(x, np.ndarray)` (or its `not`) holds, where x
        is a value whose type the engine knows on every path: a plain host value whose builtin type
        it knows (a number literal handed to every call: `if isinstance(threshold, float):
        threshold = torch.tensor([threshold])`), a NumPy array a NumPy constructor or `.numpy()`
        made, or a tensor (`if isinstance(x, np.ndarray): x = torch.from_numpy(x)` given an array,
        ChatTTS#724); None otherwise. A value of unknown kind, or None on some path, never decides."""
        neg = False
        if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
            test, neg = test.expression, True
        if type(test) is not cst.Call or len(test.args) not in (1, 2) or any(a.keyword or a.star for a in test.args):
            return None
        x = test.args[0].value
        if type(x) is not cst.Name and not (type(x) is cst.Attribute and type(x.value) is cst.Name):
            return None
        q = self.m.qualname(test.func)
        tensor = False  # whether a tensor passes
        if q == "torch.is_tensor" and len(test.args) == 1:
            types, tensor = set(), True
        elif q == "torch.is_floating_point" and len(test.args) == 1:
            types = None  # a tensor test whose answer for a tensor depends on its dtype
        elif type(test.func) is cst.Name and test.func.value == "isinstance" and "isinstance" not in self.m.aliases \
                and len(test.args) == 2:
            t = test.args[1].value
            elts = [el.value for el in t.elements] if type(t) is cst.Tuple else [t]
            types = set()
            for el in elts:
                if type(el) is cst.Name and el.value in _ISINSTANCE_OF and el.value not in self.m.aliases \
                        and self._function_named(el.value) is None:
                    types.update(_ISINSTANCE_OF[el.value])
                elif self.m.qualname(el) == "torch.Tensor":
                    tensor = True
                elif self.m.qualname(el) == "numpy.ndarray":
                    types.add(NDARRAY)
                else:
                    return None  # a class the engine does not decide (list, a class of the file)
        else:
            return None
        v = self.eval(x, frame)
        if v.nullable:
            return None
        if v.py == NDARRAY and v.kind in (None, HOSTVAL):
            holds = types is not None and NDARRAY in types
        elif v.kind == HOSTVAL and v.py is not None:
            holds = types is not None and v.py in types
        elif v.kind == TENSOR and types is not None:
            holds = tensor
        elif v.kind == TUPLE and (v.items is not None or v.py == "list") and types is not None:
            # a list or tuple whose items the engine knows (`X = [[0.0, 1.0]]`, LassoNet's
            # `if isinstance(X, np.ndarray):` given a list, E54-3): no number, string, array or tensor
            holds = False
        else:
            return None
        return holds != neg

    def _not_none_test(self, test, frame: _Frame) -> bool | None:
        """Whether `X is not None` (True) or `X is None` (False) holds, where X is a name or an
        attribute whose value is an object that is never None on any path the engine saw (a
        module, a tensor, an optimizer, a device it knows...); None when it cannot tell. A value
        that is None on some path (joined with `None`), or of unknown or plain kind, decides
        nothing; "is None" is never concluded (attribute values may be incomplete)."""
        if type(test) is not cst.Comparison or len(test.comparisons) != 1:
            return None
        c = test.comparisons[0]
        if type(c.comparator) is not cst.Name or c.comparator.value != "None":
            return None
        op = type(c.operator)
        if op is not cst.IsNot and op is not cst.Is:
            return None
        x = test.left
        if type(x) is not cst.Name and type(x) is not cst.Attribute:
            return None
        v = self.eval(x, frame)
        if v.nullable or v.kind not in _NEVER_NONE or (v.kind == DEVICE and v.dev is None):
            return None
        return op is cst.IsNot

    def _registered_alias(self, e: cst.Call, pos, frame) -> Value:
        """`getattr(self, name)` in the same block as, and after, `self.register_buffer(name, t)`
        (the same `name` expression) in `__init__`: the tensor `t` itself, which stays where it is
        when the module moves (the module's buffer is replaced by a moved copy; pytorch#29807's
        `self.params.append(getattr(self, "param_{}".format(i)))`)."""
        fn = frame.fn
        if len(pos) != 2 or type(fn) is not cst.FunctionDef or fn.name.value != "__init__" or not (
                type(pos[0][0]) is cst.Name and pos[0][0].value == "self"):
            return UNKNOWN
        m = self.m
        stmt = m.enclosing(e, cst.SimpleStatementLine)
        block = m.parents.get(stmt) if stmt is not None else None
        if block is None or not hasattr(block, "body"):
            return UNKNOWN
        code = m.module.code_for_node
        name = code(pos[1][0])
        for prior in block.body:
            if prior is stmt:
                break
            if type(prior) is not cst.SimpleStatementLine or len(prior.body) != 1 or type(prior.body[0]) is not cst.Expr:
                continue
            call = prior.body[0].value
            if (type(call) is cst.Call and type(call.func) is cst.Attribute and call.func.attr.value == "register_buffer"
                    and type(call.func.value) is cst.Name and call.func.value.value == "self"
                    and len(call.args) >= 2 and call.args[0].keyword is None and call.args[1].keyword is None
                    and type(call.args[1].value) is cst.Name and code(call.args[0].value) == name):
                v = frame.env.get(call.args[1].value.value)  # the name registered, as it is bound now
                return v if v is not None and v.kind == TENSOR else UNKNOWN
        return UNKNOWN

    def _fill_self_attrs(self, frame, before: dict, envs: tuple, other: dict | None = None) -> None:
        """A `self` attribute that a method sets on some paths only (in one branch of an `if`, in a
        loop's body: `if val_loss < self.best_loss: self.best_loss = val_loss`): on the other
        paths it still holds what the method would have read before, which goes into `envs` for
        the join (not the unknown a missing binding gives). Not in `__init__`, where the attribute
        may not exist yet (see _set_on_one_path)."""
        if frame.cls is None or frame.fn is None or getattr(frame.fn, "name", None) is None or frame.fn.name.value == "__init__":
            return
        keys = {k for e in (*envs, other or {}) for k in e if k.startswith("self.") and k not in before}
        keys = {k for k in keys if any(k not in e for e in envs)}
        if not keys:
            return
        saved = frame.env
        frame.env = before
        try:
            for k in keys:
                v = self._self_attr(k[5:], frame, note_miss=False)
                if v is None:
                    continue
                for e in envs:
                    e.setdefault(k, v)
        finally:
            frame.env = saved

    def _set_on_one_path(self, frame, before: dict, then_env: dict, else_env: dict) -> None:
        """In `__init__`, an attribute first set on one branch only (`if scale == "mel": self.fb =
        ...`): the instance has no such attribute on the other path, so every later read that
        does not fail reads the value set (auraloss#34). Not when the class body gives it a
        default (`fb = None`)."""
        for k in then_env.keys() ^ else_env.keys():
            if not k.startswith("self.") or k in before:
                continue
            if self._class_level_default(frame.cls, k[5:]):
                continue
            frame.env[k] = then_env[k] if k in then_env else else_env[k]

    def _class_level_default(self, cls: str, attr: str) -> bool:
        info = self.m.classes.get(cls)
        if info is None:
            return True
        for stmt in info.node.body.body if isinstance(info.node.body, cst.IndentedBlock) else ():
            if type(stmt) is cst.SimpleStatementLine:
                for small in stmt.body:
                    targets = [t.target for t in small.targets] if type(small) is cst.Assign else (
                        [small.target] if type(small) is cst.AnnAssign else [])
                    if any(type(t) is cst.Name and t.value == attr for t in targets):
                        return True
        return any(b in self.m.classes for b in info.bases)  # a file base may set it elsewhere

    def _branch_moves(self, test, then_env: dict, else_env: dict, joined: dict) -> None:
        """A module on the accelerator after one branch and on the host after the other, where the
        test is not about devices (`if weights is None: ... DQN().to(device)` / `else: DQN()`): on
        the path that builds it on the host it stays there (BRANCH_HOST, with that path's origin).
        An instance of a plain class of the file given an accelerator tensor attribute on one
        branch only (`if stage1: h.proto = torch.load(p).to(0)`) keeps the class's own value on
        the other: marked `attr!` (F:E69-1, ProDA#49)."""
        unrelated = None
        for k, v in list(joined.items()):
            if v.kind != OBJECT or not v.attrs or v.cls not in self.m.classes:
                continue
            a, b = then_env.get(k), else_env.get(k)
            if a is None or b is None or a.kind != OBJECT or b.kind != OBJECT:
                continue
            da, db = dict(a.attrs or ()), dict(b.attrs or ())
            marks = {}
            paths = {}
            for key, val in v.attrs:
                if key in da and key in db and not key.endswith(("?", "!")):
                    va, vb = da[key], db[key]
                    if va.kind == TENSOR == vb.kind and va.dev is not None and vb.dev is not None:
                        host, acc = (va, vb) if va.dev.is_host else (vb, va)
                        if (host.dev.is_host and acc.dev.where == "acc" and host.nonscalar and host.placed is None
                                and host.origin is not None):
                            if unrelated is None:
                                unrelated = self._device_unrelated(test)
                            if unrelated:
                                # made on the host by the construction, replaced by a moved tensor on
                                # one branch only (`if opt.prototypes_path: model.proto = ...to(device)`)
                                paths[key] = replace(val, dev=PATH_HOST, origin=host.origin, placed=None,
                                                     deep=host.deep)
                    continue
                if not key.endswith("?"):
                    continue
                base = key[:-1]
                if (base in da) == (base in db) or (base + "?") in da or (base + "?") in db:
                    continue
                if val.kind != TENSOR or val.dev is None or val.dev.where != "acc":
                    continue
                if unrelated is None:
                    unrelated = self._device_unrelated(test)
                if unrelated:
                    marks[key] = base + "!"
            if marks or paths:
                joined[k] = replace(v, attrs=tuple(sorted(((marks.get(kk, kk), paths.get(kk, vv)) for kk, vv in v.attrs),
                                                          key=lambda kv: kv[0])))
        for k, v in joined.items():
            if v.kind != MODULE or v.dev is None or v.dev.where != "either" or v.scatters:
                continue
            a, b = then_env.get(k), else_env.get(k)
            if a is None or b is None or a.kind != MODULE or b.kind != MODULE or a.dev is None or b.dev is None:
                continue
            if a.dev.where == "host" and b.dev.where == "acc":
                host = a
            elif b.dev.where == "host" and a.dev.where == "acc":
                host = b
            else:
                continue
            if not host.stateful or host.origin is None:
                continue
            if not self._device_unrelated(test):
                return
            joined[k] = replace(v, dev=BRANCH_HOST, origin=host.origin, placed=None)

    def _fresh_factory(self, origin, branch) -> bool:
        """`origin` is a call of a torch factory (`torch.zeros(...)`) without `device=` (nor a tensor
        operand to take one from) inside `branch`."""
        if type(origin) is not cst.Call or not self.m.contains(branch, origin):
            return False
        q = self.m.qualname(origin.func)
        f = kb.function(q) if q is not None and q.startswith("torch.") else None
        if f is None or not f.creates or q.rsplit(".", 1)[-1] in ("tensor", "as_tensor", "from_numpy", "asarray"):
            return False
        return not any(a.keyword is not None and a.keyword.value == "device" for a in origin.args) and not any(
            a.star for a in origin.args)

    def _device_unrelated(self, test, depth: int = 0, torch_ok: bool = False) -> bool:
        """No name, attribute, string or call in the test speaks of devices, precision or processes
        (`weights is None`, `args.resume`, `os.path.exists(ckpt)`), nor do the values of the names
        it reads. `torch_ok`: a torch function whose name says none of that (`torch.from_numpy`
        behind `nrow, ncol = a3m.shape`) does not count either."""
        m = self.m
        stack = [test]
        while stack:
            n = stack.pop()
            t = type(n)
            text = None
            if t is cst.Name:
                text = n.value
                if depth < 2 and text not in m.aliases:
                    for b in m.bindings_of(n):
                        if b.value is not None and not self._device_unrelated(b.value, depth + 1, torch_ok):
                            return False
            elif t is cst.Attribute:
                text = n.attr.value
            elif t is cst.SimpleString:
                text = n.value
            elif t is cst.Call:
                q = m.qualname(n.func)
                if q and q.startswith("torch") and not (torch_ok and q.count(".") == 1 and not _DEVICE_WORDS.search(q[6:])):
                    return False
            if text is not None and _DEVICE_WORDS.search(text):
                return False
            stack.extend(n.children)
        return True

    def _loop(self, stmt, frame: _Frame) -> None:
        is_for = type(stmt) is cst.For
        if is_for:
            it = self.eval(stmt.iter, frame)
            elem = self._element(it)
            if (elem is UNKNOWN and it.cls is not None and it.kind in (OBJECT, None)
                    and self.m.method_of_class(it.cls, "__iter__") is not None):
                # `for batch in It(data)`: a class of the file whose `__iter__` is a generator gives
                # what it yields (torchtext-style iterators re-implemented in scripts)
                r = self._call_method(it.cls, "__iter__", it, stmt.iter, [], {}, frame)
                if r.kind == ITER and r.elem is not None:
                    elem = r.elem
        else:
            self.eval(stmt.test, frame)
        entry = frame.env
        cur = dict(entry)
        # a loop over a list the engine knows is not empty (`for transform in [aggregate]`, a
        # parameter's default list) runs its body at least once: what follows it sees the body's
        # values, not the ones before it (AgML-CY-Bench#236)
        once = is_for and it.kind == TUPLE and bool(it.items)
        for i in range(LOOP_ROUNDS):
            frame.env = dict(cur)
            if is_for:
                self._bind(stmt.target, elem, frame, None)
            self._block(stmt.body.body, frame)
            self._fill_self_attrs(frame, entry, (cur,), frame.env)
            if once and i == 0:
                cur = dict(frame.env)
                continue
            nxt = _join_env(cur, frame.env)
            if nxt == cur:
                if (frame.record and not self._in_summary and not frame.cpu_only
                        and _crosses_back_edge(entry, frame.env) and self._repeats(stmt, it if is_for else None)):
                    self._back_edge_pass(stmt, frame, frame.env, cur, elem if is_for else None, entry)
                break
            cur = nxt
        else:
            # no fixed point: what changed becomes unknown
            cur = {k: (v if entry.get(k) == v else UNKNOWN) for k, v in cur.items()}
            frame.env = dict(cur)
            if is_for:
                self._bind(stmt.target, elem, frame, None)
            self._block(stmt.body.body, frame)
        if is_for and type(stmt.target) is cst.Name and it.kind == TUPLE and it.elem is not None and it.elem.kind == MODULE:
            # `for conv in self.convs: conv.cuda()` (or `conv = conv.cuda()`): a module moves in
            # place, so every element of the list is where the loop moved its item
            last = frame.env.get(stmt.target.value)  # the item after the loop's last pass
            if (last is not None and last.kind == MODULE and last.dev is not None and last.dev.where == "acc"
                    and last.placed is not None and self.m.contains(stmt.body, last.placed)
                    and (type(stmt.iter) is cst.Name or (type(stmt.iter) is cst.Attribute
                                                          and type(stmt.iter.value) is cst.Name
                                                          and stmt.iter.value.value == "self"))):
                key = stmt.iter.value if type(stmt.iter) is cst.Name else "self." + stmt.iter.attr.value
                if key in cur or key.startswith("self."):
                    cur[key] = replace(it, elem=replace(it.elem, dev=last.dev, placed=last.placed))
        moved = self._key_loop_moved.pop(stmt, None) if is_for else None
        if moved is not None:
            # every key of the container moved by the loop over its keys: moved after it
            base, new = moved
            if type(base) is cst.Name:
                cur[base.value] = new
            else:
                cur["self." + base.attr.value] = new
        frame.env = cur
        if stmt.orelse is not None:
            self._block(stmt.orelse.body.body, frame)

    def _repeats(self, stmt, it: Value | None) -> bool:
        """The loop's body runs again after a pass that reaches its end: not a loop over a display
        of one item, and no `break` or `continue` of its own (a pass cut short flows round too,
        with other values than the end of the body has)."""
        if it is not None and it.kind == TUPLE and it.items is not None and len(it.items) < 2:
            return False
        for node in self.m.walk(stmt.body, (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            if type(node) is cst.Break or type(node) is cst.Continue:
                return False
        return True

    def _back_edge_pass(self, stmt, frame: _Frame, back: dict, cur: dict, elem, entry) -> None:
        """The body once more from the values its end hands to the next pass alone (E60-1,
        sd-scripts#2102): a table a later call in the body moves to the accelerator meets host
        indices at the top of the second pass, which the joined entry ("host or accelerator")
        hides. Then the body again from the joined values, so that what `value_of` answers stays
        the fixed point's."""
        for env in (back, cur):
            frame.env = dict(env)
            if elem is not None:
                self._bind(stmt.target, elem, frame, None)
            if env is back:
                self._back_loops.append(stmt)
            try:
                self._block(stmt.body.body, frame)
            finally:
                if env is back:
                    self._back_loops.pop()
            self._fill_self_attrs(frame, entry, (cur,), frame.env)

    def _element(self, it: Value) -> Value:
        if it.kind == MAPPING:
            return UNKNOWN  # its keys
        if it.elem is not None:
            return it.elem
        if it.kind == TUPLE and it.items:
            return _elem_of(it)  # `for metric in [{"name": ..., "function": accuracy}]`: any of its items
        if it.kind == TENSOR:
            return Value(TENSOR, it.dev, origin=it.origin)
        if it.kind == MODULE:
            return Value(MODULE, it.dev)
        if it.kind == BATCH:  # `[t.to(d) for t in batch]`: a collated batch's tensors
            return Value(TENSOR, it.dev, nonscalar=True, origin=it.origin)
        if it.kind == HOSTVAL:  # `for i in range(n)`: numbers
            return Value(HOSTVAL, HOST)
        return UNKNOWN

    def _is_nograd(self, e) -> bool:
        if type(e) is cst.Call:
            q = self.m.qualname(e.func)
            if q in _NOGRAD:
                return True
            if q in ("torch.set_grad_enabled", "torch.autograd.set_grad_enabled") and e.args:
                a = e.args[0].value
                return isinstance(a, cst.Name) and a.value == "False"
        return False

    def _with(self, stmt: cst.With, frame: _Frame) -> None:
        nograd = False
        devctx = 0
        for item in stmt.items:
            v = self.eval(item.item, frame)
            if v.kind == DEVICE:
                devctx = 1
            if self._is_nograd(item.item):
                nograd = True
            if item.asname is not None:
                self._bind(item.asname.name, v if v.kind in (MODULE, TENSOR) else UNKNOWN, frame, None)
        if nograd:
            frame.nograd += 1
        saved = frame.nograd
        frame.devctx += devctx
        self._block(stmt.body.body, frame)
        frame.devctx -= devctx
        frame.nograd = saved - (1 if nograd else 0)

    def _try(self, stmt, frame: _Frame) -> None:
        before = dict(frame.env)
        self._block(stmt.body.body, frame)
        envs = [frame.env]
        for h in stmt.handlers:
            frame.env = _join_env(before, envs[0])
            if h.type is not None:
                self.eval(h.type, frame)
            if h.name is not None:
                frame.env[h.name.name.value] = UNKNOWN
            if self._block(h.body.body, frame):
                envs.append(frame.env)
        env = envs[0]
        for e in envs[1:]:
            env = _join_env(env, e)
        frame.env = env
        if stmt.orelse is not None:
            self._block(stmt.orelse.body.body, frame)
        if stmt.finalbody is not None:
            self._block(stmt.finalbody.body.body, frame)

    # ------------------------------------------------------------------------------------------
    # expressions
    # ------------------------------------------------------------------------------------------
    def eval(self, e, frame: _Frame) -> Value:
        self._work += 1
        fn = self._dispatch.get(type(e))
        if fn is None:
            v = self._e_other(e, frame)
        else:
            v = fn(e, frame)
        if frame.nograd and not v.nograd and (v.kind == TENSOR or (v.kind is None and type(e) is cst.Call)):
            v = replace(v, nograd=True)  # (a call's unknown result too: `outputs = model(**batch)`)
        if frame.nograd and v.graph:
            v = replace(v, graph=False)
        if frame.nograd and (v.items or v.keys or v.elem is not None) and v.kind in (TUPLE, OBJECT, MAPPING, BATCH):
            # a record of outputs (a tuple, a dataclass, a dict) computed under no_grad: so are its parts
            v = _without_grad(v)
        if frame.record:
            # code that only runs without a GPU: where things live there is not the question
            self.values[e] = replace(v, dev=HOST) if (frame.cpu_only and v.dev is not None) else v
        return v

    def _e_other(self, e, frame) -> Value:
        t = type(e)
        if t is cst.SimpleString:
            text = e.evaluated_value if "b" not in e.prefix.lower() else None
            if isinstance(text, str) and len(text) <= 64 and not _DEVICE_TEXT.match(text):
                # (a device string is a device choice: the GPU test's branches decide it)
                return Value(HOSTVAL, HOST, py="str", const=text)
            if isinstance(text, str) and _TORCH_DEVICE_TEXT.fullmatch(text):
                return Value(HOSTVAL, HOST, py="str", devtext=text)
            return Value(HOSTVAL, HOST, py="str")
        if t is cst.Integer or t is cst.Float or t is cst.Imaginary:
            return Value(HOSTVAL, HOST, py=_LITERAL_TYPES[t])
        if t is cst.Dict:
            out = None
            keys = []
            for el in e.elements:
                if isinstance(el, cst.DictElement):
                    self.eval(el.key, frame)
                    v = self.eval(el.value, frame)
                    out = v if out is None else join(out, v)
                    k = _const_key(el.key)
                    if keys is not None and k is not None and all(k != k0 for k0, _ in keys):
                        keys.append((k, v))
                    else:
                        keys = None
                else:
                    self.eval(el.value, frame)
                    out = UNKNOWN  # `**other`
                    keys = None
            if out is not None and out.kind == TENSOR:  # `{"features": x[i], "target": y[i]}`
                origins = {id(self._peek_origin(el.value)) for el in e.elements}
                if len(origins) > 1:
                    out = replace(out, origin=None, placed=None)  # which key's tensor: not kept
                return Value(MAPPING, None, elem=out, keys=tuple(keys) if keys else None)
            if keys:  # `{"output": model(x), "n": 3}`: per key, though the values differ in kind
                return Value(MAPPING, None, keys=tuple(keys))
            parent = self.m.parents.get(e)
            if (not e.elements and type(parent) is cst.Assign and parent.value is e and len(parent.targets) == 1
                    and type(parent.targets[0].target) is cst.Name):
                # `state = {}`: a dict with no key yet, which `state["y_pred"] = model(x)` fills
                # one known key at a time (torchbearer's state dict, E52-5). Not a `{}` nested in
                # another display (`{"kwargs": {}}`): its keys may be set through the outer one
                return Value(MAPPING, None, keys=(), origin=e)
            return UNKNOWN
        if t is cst.Comparison:
            vals = [self.eval(e.left, frame)] + [self.eval(c.comparator, frame) for c in e.comparisons]
            if len(vals) == 2 and type(e.comparisons[0].operator) in _ELEMENTWISE_CMP:
                a, b = vals
                if a.kind == TENSOR and b.kind == TENSOR:
                    self._check(e, "binary", [(e.left, a), (e.comparisons[0].comparator, b)], frame)
                    return Value(TENSOR, join_dev(a.dev, b.dev) if a.dev == b.dev else None,
                                 nonscalar=a.nonscalar or b.nonscalar, origin=e)
                if a.kind == TENSOR and b.kind in (HOSTVAL, None):
                    return Value(TENSOR, a.dev, nonscalar=a.nonscalar, nograd=True, origin=a.origin)
                if b.kind == TENSOR and a.kind in (HOSTVAL, None):
                    return Value(TENSOR, b.dev, nonscalar=b.nonscalar, nograd=True, origin=b.origin)
            if (len(vals) == 2 and type(e.comparisons[0].operator) in (cst.In, cst.NotIn)
                    and vals[0].kind == TENSOR and vals[1].kind == TENSOR):
                # `pred_label not in target_labels`: `Tensor.__contains__` compares the element with
                # every entry, an elementwise operation of the two (eriklindernoren's YOLOv3
                # evaluation, F:E69-4's other site)
                self._check(e, "binary", [(e.left, vals[0]), (e.comparisons[0].comparator, vals[1])], frame)
                return Value(HOSTVAL, HOST, py="bool")
            if len(vals) == 2 and vals[0].const is not None and (vals[1].const is not None or vals[1].kind == TUPLE):
                decided = self._const_test(e, frame)
                if decided is not None:
                    return TRUE_VALUE if decided else FALSE_VALUE  # `self.flag = target in [...]`
            if all(v.kind == HOSTVAL for v in vals):
                return Value(HOSTVAL, HOST, py="bool")  # `x > 0` of plain numbers
            return UNKNOWN
        if t is cst.BooleanOperation:
            a = self.eval(e.left, frame)
            b = self.eval(e.right, frame)
            if type(e.operator) is cst.Or and a.kind is not None and b.kind is not None:
                # `device or torch.device(...)`, `weight or torch.ones(n)`: the left value unless it
                # is None (a given device/tensor is truthy), else the right one
                if a.kind == "none":
                    return b
                if a.kind in (DEVICE, MODULE):
                    return a  # always true
                if a.kind == b.kind == TENSOR:
                    return join(a, b)
            return UNKNOWN
        if t in (cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp):
            return self._comprehension(e, frame)
        if t is cst.Set:
            for el in e.elements:
                self.eval(el.value, frame)
            return UNKNOWN
        if t is cst.FormattedString:
            for part in e.parts:
                if isinstance(part, cst.FormattedStringExpression):
                    self.eval(part.expression, frame)
            return Value(HOSTVAL, HOST, py="str")
        if t is cst.ConcatenatedString:
            return Value(HOSTVAL, HOST, py="str")
        if t is cst.Yield:
            if e.value is None:
                v = Value(HOSTVAL, HOST)
            elif isinstance(e.value, cst.From):
                v = self._element(self.eval(e.value.item, frame))
            else:
                v = self.eval(e.value, frame)
            frame.yields = v if frame.yields is None else join(frame.yields, v)
            return UNKNOWN
        if t is cst.NamedExpr:
            v = self.eval(e.value, frame)
            self._bind(e.target, v, frame, e.value)
            return v
        return UNKNOWN

    def _items_per_key(self, e, frame) -> Value | None:
        """`{k: v[c, y, x] for k, v in batch.items() if ...}` over a dict whose constant keys the
        engine knows: the body once per key, the key bound to its string and the value to that
        key's value (a condition decided on the key skips it), so a host entry indexed with device
        indices is met (nerfstudio's pixel sampler, F:E69-5), and `{k: v if k in excluded else
        v.to(d) ...}` keeps each key's own device. The display's keys when the comprehension's
        key is the loop's key; None when the shape does not apply."""
        f = e.for_in
        if f.inner_for_in is not None or type(f.target) is not cst.Tuple or len(f.target.elements) != 2:
            return None
        kt, vt = (el.value for el in f.target.elements)
        if type(kt) is not cst.Name or type(vt) is not cst.Name or type(f.iter) is not cst.Call:
            return None
        it = f.iter
        if type(it.func) is not cst.Attribute or it.func.attr.value != "items" or it.args:
            return None
        src = self._peek(it.func.value, frame)
        if src.kind != MAPPING or not src.keys or len(src.keys) > 16:
            return None
        self.eval(it, frame)
        saved = frame.env
        out_keys = []
        joined = None
        for key, kv in src.keys:
            frame.env = dict(saved)
            self._bind(kt, Value(HOSTVAL, HOST, py="str", const=key), frame, None)
            self._bind(vt, kv, frame, None)
            skip = False
            for cond in f.ifs:
                d = self._key_condition(cond.test, frame)
                if d is False:
                    skip = True
                    break
            if skip:
                continue
            if isinstance(e, cst.DictComp):
                ev = self.eval(e.value, frame)
                out_keys.append((key, ev))
            else:
                ev = self.eval(e.elt, frame)
            joined = ev if joined is None else join(joined, ev)
        frame.env = saved
        if isinstance(e, cst.DictComp):
            if type(e.key) is cst.Name and e.key.value == kt.value:
                return _mapping(tuple(out_keys), None, origin=e) if out_keys else Value(MAPPING, None, keys=())
            return Value(MAPPING, None, elem=joined) if joined is not None and joined.kind == TENSOR else UNKNOWN
        if joined is not None and joined.kind is not None:
            return Value(TUPLE, None, elem=joined)
        return Value(TUPLE, None) if type(e) is cst.ListComp else UNKNOWN

    def _key_condition(self, test, frame) -> bool | None:
        """A comprehension's condition decided on a constant key (`k != "image_idx"`, `k in KEYS`,
        either joined by `and`); None when it is not decided."""
        if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
            a = self._key_condition(test.left, frame)
            b = self._key_condition(test.right, frame)
            if a is False or b is False:
                return False
            return True if a is True and b is True else None
        d = self._const_test(test, frame)
        if d is None:
            self.eval(test, frame)
        return d

    def _comprehension(self, e, frame) -> Value:
        if type(e) in (cst.DictComp, cst.ListComp, cst.GeneratorExp):
            per_key = self._items_per_key(e, frame)
            if per_key is not None:
                return per_key
        saved = frame.env
        frame.env = dict(saved)
        f = e.for_in
        while f is not None:
            it = self.eval(f.iter, frame)
            self._bind(f.target, self._element(it), frame, None)
            for cond in f.ifs:
                self.eval(cond.test, frame)
            f = f.inner_for_in
        if isinstance(e, cst.DictComp):
            self.eval(e.key, frame)
            ev = self.eval(e.value, frame)
            out = Value(MAPPING, None, elem=ev) if ev.kind == TENSOR else UNKNOWN
            keys = _comprehension_keys(e)
            if keys is not None and ev.kind is not None and ev.kind != TENSOR:
                # `{x: DataLoader(image_datasets[x], ...) for x in ["train", "val"]}`: a display
                out = Value(MAPPING, None, keys=tuple((k, ev) for k in keys))
        else:
            ev = self.eval(e.elt, frame)
            if ev.kind is not None:
                out = Value(TUPLE, None, elem=ev)
            elif type(e) is cst.ListComp:
                out = Value(TUPLE, None)  # a list, of values of unknown kind
            else:
                out = UNKNOWN
        frame.env = saved
        return out

    def _lookup(self, name: str, frame: _Frame) -> Value | None:
        f = frame
        while f is not None:
            v = f.env.get(name)
            if v is not None:
                return v
            f = f.outer
        return None

    def _e_name(self, e: cst.Name, frame) -> Value:
        v = self._lookup(e.value, frame)
        if v is not None:
            return v
        if e.value == "None":
            return NONE_VALUE
        if e.value == "True":
            return TRUE_VALUE
        if e.value == "False":
            return FALSE_VALUE
        fn = self._function_named(e.value)
        if fn is not None:
            return Value(FUNC, None, fn=fn)  # `loss_fn = my_loss`, `Trainer(model, compute_metrics)`
        if e.value in self.m.classes:
            return Value(CLASS, None, cls=e.value)  # `NeuralNet(database, GINet)`: the class handed on
        return UNKNOWN

    def _peek_origin(self, e):
        v = self.values.get(e)
        return v.origin if v is not None else e

    def _function_named(self, name: str) -> cst.FunctionDef | None:
        """The file's one function of this name, when the name means nothing else (no import)."""
        return None if name in self.m.aliases else self.m.module_function(name)

    def _holder_origin(self, recv, frame: _Frame):
        """The origin of the instance `recv` is an attribute of (`w` of `w.model`), when the engine
        knows which construction made it; None otherwise (a name, `self.model`, an unknown object)."""
        if type(recv) is not cst.Attribute or type(recv.value) is not cst.Name or recv.value.value == "self":
            return None
        hv = frame.env.get(recv.value.value)
        if hv is None or hv.kind not in (OBJECT, MODULE) or type(hv.origin) is not cst.Call or hv.cls is None:
            return None
        # the name bound by that construction itself (`w = Wrapper()`), not a loop variable or an
        # element of a list of instances (whose origin is one representative of several)
        parent = self.m.parent(hv.origin)
        if not (type(parent) is cst.Assign and len(parent.targets) == 1
                and type(parent.targets[0].target) is cst.Name and parent.targets[0].target.value == recv.value.value):
            return None
        return hv.origin

    def _moved_for(self, origin, sv) -> bool:
        """The in-place moves of the module made at `origin` may have moved the one this instance
        (`sv`, the method's `self`) holds: a move through another instance of the class
        (`w1.model.to(device)`, the same `nn.Linear(...)` of `__init__` made for each instance)
        does not (timoschick/pet#86, E63-3)."""
        holders = self._moved_holders.get(origin)
        if not holders or None in holders:
            return True
        if sv is None or type(sv.origin) is not cst.Call:
            return True
        return sv.origin in holders

    def _self_attr(self, attr: str, frame: _Frame, note_miss: bool = True) -> Value | None:
        sv = frame.env.get("self")
        if (sv is not None and sv.kind == OBJECT and sv.keys and "self." + attr not in frame.env
                and sv.cls is not None and self._record_fields(sv.cls) is not None):
            # a field of a dataclass (NamedTuple) instance: what its construction gave it (E51-2)
            for k, v in sv.keys:
                if k == attr:
                    return v
        if sv is not None and sv.attrs and "self." + attr not in frame.env:
            found = instance_attr(sv.attrs, attr)
            if found is not None:
                if found[1]:
                    return found[0]  # set on this very instance by code outside the class: as set
                own = self._self_attr_raw(attr, frame, note_miss)
                if own is None:
                    return UNKNOWN
                if (set_on_one_branch(sv.attrs, attr) and own.kind == TENSOR == found[0].kind
                        and own.dev is not None and own.dev.is_host and own.nonscalar and own.placed is None
                        and own.origin is not None and found[0].dev is not None and found[0].dev.where == "acc"):
                    # the class's own host tensor on the path that skips the branch (F:E69-1)
                    return replace(join(found[0], own), dev=PATH_HOST, origin=own.origin, placed=None,
                                   deep=own.deep)
                return join(found[0], own)  # on some paths only
        v = self._self_attr_raw(attr, frame, note_miss)
        if (v is not None and v.kind in (MODULE, METRIC) and v.origin is not None and v.dev is not None
                and not v.dev.is_acc and v.origin in self._moved_origins
                and "self." + attr not in frame.env and self._moved_for(v.origin, sv)):
            # a module the instance was given (`self.model = model`) that the code moves in place
            # elsewhere (`trainer = Trainer(model); model.to(device)`): where it is here is unknown
            v = replace(v, dev=None)
        if v is not None and v.kind == MODULE and v.dev is not None and (
            self._class_kind(frame.cls) in (MODULE, METRIC) or self._unresolved_bases(frame.cls)
        ):
            sv = frame.env.get("self")
            if sv is not None and sv.dev is not None and sv.dev.where == "acc" and not v.scatters:
                return replace(v, dev=sv.dev)  # the instance is known moved: so are its submodules
            if sv is not None and sv.dev is not None and sv.dev.is_host and sv.cls == frame.cls and v.dev.is_host:
                return v  # an instance never moved (every call's receiver): its submodules stay where made
            if (sv is not None and sv.dev is not None and sv.dev.is_host and sv.cls == frame.cls and v.dev == MODEL_DEV
                    and sv.kind == MODULE and type(sv.origin) is cst.Call):
                # a container of its own parts (`nn.Sequential(self.featurizer, self.classifier)`,
                # "wherever the module is") of an instance every call's receiver shows never moved:
                # the host (TSD#6, F22-2)
                return replace(v, dev=HOST)
            if (sv is not None and sv.kind == OBJECT and sv.cls == frame.cls and type(sv.origin) is cst.Call
                    and v.dev.is_host and self._places_nothing):
                # an instance of a class with an imported base, built by this file, which places
                # nothing anywhere (OpenNRE's `BagOne(BagRE)` run as a CPU script): where made
                return v
            if (v.dev.where == "acc" and not v.scatters and self._class_kind(frame.cls) == MODULE
                    and (sv is None or sv.dev is None or (sv.dev.is_host and sv.placed is None and sv.cls == frame.cls))):
                # a submodule the class itself moved (`self.actor = nn.Linear(4, 2).to(self.device)`)
                # of an instance nothing moves elsewhere: where that move put it (the A2C agent's
                # `select_action` called from the script, E56-1)
                return v
            if (v.dev.is_host and self._class_kind(frame.cls) not in (MODULE, METRIC)
                    and not self._module_evident(frame.cls)):
                # a class with a base the engine cannot read and nothing of a module (no `forward`):
                # a scikit-learn-style detector that builds its network in `fit` (pyod's
                # `SO_GAAL(BaseDetector)`, P43-2) may keep it anywhere: unknown
                return replace(v, dev=None)
            return replace(v, dev=MODEL_DEV)  # a submodule lives wherever its module is
        if (v is not None and v.kind == TENSOR and v.dev is None and v.origin in self._param_made
                and (self._class_kind(frame.cls) in (MODULE, METRIC) or self._unresolved_bases(frame.cls))):
            # a registered parameter or buffer (`nn.Parameter(...)`, `register_buffer(...)`) moves
            # with its module: read in a method, it lives wherever the module is
            if (v.origin in self._made_on_host and "self." + attr in frame.env and type(frame.fn) is cst.FunctionDef
                    and frame.fn.name.value == "__init__" and not self._init_moves_anything(frame.fn)):
                # read in the `__init__` that made it, which moves nothing: still where it was made
                # (DiGress's `self.alphas_bar = ...(self.betas)` of a schedule's own buffer, E44-1a)
                return replace(v, dev=HOST)
            sv = frame.env.get("self")
            if sv is not None and sv.dev is not None and sv.dev.where == "acc" and not sv.scatters:
                return replace(v, dev=sv.dev)
            if sv is not None and sv.dev is not None and sv.dev.is_host and sv.cls == frame.cls:
                return v  # an instance never moved: its parameters are where they were made (not known here)
            return replace(v, dev=MODEL_DEV)
        if (v is not None and v.kind in (MODULE, TENSOR) and v.dev is not None and v.dev.is_host
                and "self." + attr not in frame.env and attr in self._external_attrs()
                and (attr in self._external_assigned or v.origin not in self._moved_holders
                     or self._moved_for(v.origin, frame.env.get("self")))):
            # `w.model.to(device)` / `inst.model = nn.Linear(...)` by code outside the class: the
            # instance's attribute may be elsewhere than its own methods put it (DeepForest's
            # `m.model.to("cuda")`, DashAI's `load` classmethod): where it is is unknown
            return replace(v, dev=None)
        if (v is not None and v.kind == TENSOR and v.dev is not None and v.dev.is_host
                and self._class_kind(frame.cls) == MODULE and self._moved_by_override(frame.cls, attr)):
            # a plain tensor the class's own `cuda()`/`to()` override moves with the module
            # (CloserLookFewShot's `self.c_0 = self.c_0.cuda()`): wherever the module is
            sv = frame.env.get("self")
            if sv is not None and sv.dev is not None and sv.dev.where == "acc" and not sv.scatters:
                return replace(v, dev=sv.dev)
            return replace(v, dev=MODEL_DEV)
        if v is not None and v.kind == TUPLE and self._registered:
            return self._registered_parts(v)
        return v

    def _external_attrs(self) -> frozenset:
        """Attribute names the file assigns, or moves in place (`x.attr.to(d)` / `.cuda()` as a
        statement), on an object other than `self` (computed once per file)."""
        if self._external_attr_names is None:
            out = set()
            assigned = set()
            for node in self.m.nodes:
                t = type(node)
                if t is cst.AssignTarget:
                    tgt = node.target
                    if type(tgt) is cst.Attribute and not (type(tgt.value) is cst.Name and tgt.value.value == "self"):
                        out.add(tgt.attr.value)
                        assigned.add(tgt.attr.value)
                elif t is cst.Expr and type(node.value) is cst.Call:
                    f = node.value.func
                    if (type(f) is cst.Attribute and f.attr.value in ("to", "cuda", "cpu") and type(f.value) is cst.Attribute
                            and not (type(f.value.value) is cst.Name and f.value.value.value == "self")):
                        out.add(f.value.attr.value)
            self._external_attr_names = frozenset(out)
            self._external_assigned = frozenset(assigned)
        return self._external_attr_names

    def _moved_by_override(self, cls: str, attr: str) -> bool:
        """The file's class `cls` (or a base of the file) defines `cuda()`/`to()`/`_apply()` that
        re-assigns `self.<attr>` moved (`self.c_0 = self.c_0.cuda()`)."""
        moved = self._override_moves.get(cls)
        if moved is None:  # the attributes those overrides move, once per class
            moved = set()
            for name in ("cuda", "to", "_apply"):
                found = self.m.method_of_class(cls, name)
                for node in self.m.walk(found[0]) if found is not None else ():
                    if type(node) is not cst.Assign or len(node.targets) != 1:
                        continue
                    t, val = node.targets[0].target, node.value
                    if (type(t) is cst.Attribute and type(t.value) is cst.Name and t.value.value == "self"
                            and type(val) is cst.Call and type(val.func) is cst.Attribute
                            and val.func.attr.value in ("cuda", "to")):
                        moved.add(t.attr.value)
            self._override_moves[cls] = moved
        return attr in moved

    def _forget_aliases(self, recv, origin, frame: _Frame, moved_off: bool = False) -> None:
        """A module moved in place (`model.to(device)`, `model = model.to(device)`): other names and
        `self` attributes of this frame holding the same module no longer say where it is (those
        on the host; with `moved_off`, those off it: the module was moved back to the CPU)."""
        own = recv.value if type(recv) is cst.Name else (
            "self." + recv.attr.value if type(recv) is cst.Attribute and type(recv.value) is cst.Name
            and recv.value.value == "self" else None)
        def stale(val):
            return (val.kind in (MODULE, METRIC) and val.origin is origin and val.dev is not None
                    and val.dev.is_host != moved_off)

        for k, val in list(frame.env.items()):
            if k != own and stale(val):
                frame.env[k] = replace(val, dev=None)
            elif k != own and val.kind == TUPLE and (
                    any(stale(x) for x in val.items or ()) or (val.elem is not None and stale(val.elem))):
                # `for c in criterions: c.to(device)`: the list's element is that module, moved now
                # (mrs's loss list, E52-3)
                frame.env[k] = replace(
                    val, items=tuple(replace(x, dev=None) if stale(x) else x for x in val.items)
                    if val.items is not None else None,
                    elem=replace(val.elem, dev=None) if val.elem is not None and stale(val.elem) else val.elem)
        sv = frame.env.get("self")
        for cls in {frame.cls, sv.cls if sv is not None else None} - {None}:
            for attr, val in self.class_attrs.get(cls, {}).items():
                k = "self." + attr
                if (k != own and k not in frame.env and val.kind in (MODULE, METRIC) and val.origin is origin
                        and val.dev is not None and val.dev.is_host != moved_off):
                    frame.env[k] = replace(val, dev=None)  # `m = self.model; m.cpu()`: `self.model` too

    def _registered_parts(self, v: Value, depth: int = 0) -> Value:
        """A plain list of modules each also registered with `add_module`: they live where their
        module does."""
        if v.kind == MODULE and v.origin in self._registered:
            return replace(v, dev=MODEL_DEV)
        if v.kind != TUPLE or depth > 3:
            return v
        items = tuple(self._registered_parts(x, depth + 1) for x in v.items) if v.items is not None else None
        elem = self._registered_parts(v.elem, depth + 1) if v.elem is not None else None
        if items == v.items and elem == v.elem:
            return v
        return replace(v, items=items, elem=elem)

    def _module_evident(self, cls: str | None) -> bool:
        """The file's class (or a base of the file) defines what only a module has: `forward`, or a
        Lightning step."""
        return any(self.m.method_of_class(cls, name) is not None
                   for name in ("forward", "training_step", "extra_repr"))

    def _unresolved_bases(self, cls: str) -> bool:
        """A class with a base the engine cannot see (a relative import, another package): it may
        well be an nn.Module."""
        info = self.m.classes.get(cls)
        if info is None:
            return True
        for b in info.bases:
            if b in ("object", "builtins.object"):
                continue
            if b in self.m.classes:
                if self._unresolved_bases(b) if b != cls else False:
                    return True
                continue
            if kb.class_kind(b) is None:
                return True
        return False

    def _subclass(self, sub: str, base: str) -> bool:
        seen = set()
        todo = [sub]
        while todo:
            c = todo.pop()
            if c == base:
                return True
            if c in seen or len(seen) > 50:
                continue
            seen.add(c)
            info = self.m.classes.get(c)
            if info is not None:
                todo.extend(b for b in info.bases if b in self.m.classes)
        return False

    def _self_attr_raw(self, attr: str, frame: _Frame, note_miss: bool = True) -> Value | None:
        v = frame.env.get("self." + attr)
        if v is not None:
            return v
        if frame.cls is None:
            return None
        sv = frame.env.get("self")
        if sv is not None and sv.cls is not None and sv.cls != frame.cls:
            # an inherited method run for an instance of a subclass: that class's attributes first
            sub = self.class_attrs.get(sv.cls)
            if sub is None and self._ensure_init(sv.cls):
                sub = self.class_attrs.get(sv.cls)
            if sub is not None and attr in sub:
                return sub[attr]
        attrs = self.class_attrs.get(frame.cls)
        if attrs is not None and attr in attrs:
            if attrs[attr].kind == "none" and self._run_other_setters(frame.cls, attr):
                attrs = self.class_attrs[frame.cls]
            self._class_reads.setdefault((frame.cls, attr, frame.fn.name.value), attrs[attr])
            return attrs[attr]
        info = self.m.classes.get(frame.cls)
        for base in info.bases if info is not None else ():
            if base in self.class_attrs and attr in self.class_attrs[base]:
                return self.class_attrs[base][attr]
        if self._ensure_init(frame.cls):
            return self._self_attr_raw(attr, frame, note_miss)
        if note_miss:
            self._missed_reads.add((frame.cls, attr))
            if self._summary_keys:
                self._missed_summaries.update(self._summary_keys)
        return None

    def _property_of(self, frame: _Frame, attr: str):
        """The getter of `self.<attr>` when the instance's class (or a base of the file) defines
        `attr` as a `@property`: (function, defining class), else None."""
        sv = frame.env.get("self")
        cls = sv.cls if sv is not None and sv.cls is not None else frame.cls
        found = self.m.method_of_class(cls, attr)
        if found is None and cls != frame.cls:
            found = self.m.method_of_class(frame.cls, attr)
        if found is None or not _is_property(found[0]):
            return None
        return found

    def _property_value(self, attr: str, e, frame: _Frame) -> Value | None:
        """`self.loader` where `loader` is a `@property` of the class: what its getter returns
        (a trainer's `@property def loader(self): return DataLoader(...)`)."""
        found = self._property_of(frame, attr)
        if found is None:
            return None
        fn, owner = found
        selfv = frame.env.get("self") or Value(self._class_kind(frame.cls) or OBJECT, None, cls=frame.cls)
        # the getter's summary for this receiver; not recorded as a call site (`e` is no call: the
        # rules read call sites' arguments, and the getter takes none)
        return self._summary(fn, owner, {}, selfv, None)

    def _run_other_setters(self, cls: str, attr: str) -> bool:
        """`self.<attr> = None` so far (a placeholder `__init__` sets) while other methods of the
        class set it too (`fit()` storing `self._classes = torch.tensor(...)`, captum's TCAV
        classifier, E46-4): run those methods once, as `_ensure_init` runs `__init__`, so that what
        they store joins the placeholder. True when one ran."""
        info = self.m.classes.get(cls)
        if info is None:
            return False
        known = self._attr_setters.get((cls, attr), {})
        ran = False
        for b in self.m.bindings.get((info.node, "self." + attr), ()):
            fn = self.m.enclosing(b.node, cst.FunctionDef)
            if fn is None or fn.name.value in known or fn.name.value == "__init__" or fn in self._in_summary:
                continue
            if info.methods.get(fn.name.value) is not fn or (cls, fn) in self._setter_runs:
                continue
            self._setter_runs.add((cls, fn))
            frame = _Frame(fn, cls, self.module_frame, False)
            self._params_of(fn, cls, None, frame)
            frame.env["self"] = Value(self._class_kind(cls) or OBJECT, None, cls=cls)
            self._in_summary.append(fn)
            try:
                self._block(fn.body.body if isinstance(fn.body, cst.IndentedBlock) else [fn.body], frame)
            finally:
                self._in_summary.pop()
            self._store_attrs(frame, cls)
            ran = True
        return ran

    def _ensure_init(self, cls: str) -> bool:
        """Before the class is recorded, a method summarised from module-level code reads the
        attributes its `__init__` sets: run `__init__` once with its call sites' arguments."""
        info = self.m.classes.get(cls)
        if info is None or (cls, "__init__") in self._attr_by_method:
            return False
        init = info.methods.get("__init__")
        self._attr_by_method[(cls, "__init__")] = {}
        if init is None or init in self._in_summary:
            return False
        frame = _Frame(init, cls, self.module_frame, False)
        self._params_of(init, cls, None, frame)
        frame.env["self"] = Value(self._class_kind(cls) or OBJECT, None, cls=cls)
        self._in_summary.append(init)
        try:
            self._block(init.body.body if isinstance(init.body, cst.IndentedBlock) else [init.body], frame)
        finally:
            self._in_summary.pop()
        self._store_attrs(frame, cls)
        return True

    def _e_attribute(self, e: cst.Attribute, frame) -> Value:
        base = e.value
        attr = e.attr.value
        if type(base) is cst.Name and base.value == "self" and frame.cls is not None:
            v = self._self_attr(attr, frame)
            if v is not None:
                return v
            pv = self._property_value(attr, e, frame)
            if pv is not None:
                return pv
            if frame.record:
                self.values[base] = frame.env.get("self", UNKNOWN)
            return UNKNOWN
        q = self.m.qualname(e)
        if q is not None:
            if kb.is_dtype(q):
                return Value(DTYPE, HOST, half=q in ("torch.float16", "torch.half"))
            fi = kb.function(q) if q.startswith("torch.") else None
            if (fi is not None and (fi.creates or fi.returns == "tensor")) or q in kb.LEGACY_TENSOR_TYPES or q == "torch.Tensor":
                # a factory named as a value; also a legacy tensor type (`tensor=torch.FloatTensor`,
                # pix2pix's GANLoss builds its targets with `self.Tensor(input.size())`); and any
                # function giving tensors (`loss_fn=F.cross_entropy` kept on a pipeline schedule and
                # called as `self.loss_fn(out, t)`, E59-2)
                return Value(FUNC, None, fn=_TorchFn.of(q))
            return UNKNOWN
        bv = self.eval(base, frame)
        k = bv.kind
        if bv.py == NDARRAY and k in (None, HOSTVAL) and attr == "T":
            return Value(k, HOST, origin=e, py=NDARRAY)  # `pv.T`: the transposed array (A70-E1)
        if k == "none" and not bv.nullable:
            # an attribute of `None` on every path seen (a parameter left to its `None` default in
            # the pass of one call): reading it raises, so the code that does is not run there and
            # its value says nothing (`device=pixel_values.device` under `if pixel_values is not
            # None:` in lerobot's MolmoAct2, analysed for a text-only call, is not the host: P53-2)
            return UNKNOWN
        if k == CLASS and bv.cls is not None:
            found = self.m.method_of_class(bv.cls, attr)
            if found is not None and any(type(d.decorator) is cst.Name and d.decorator.value == "staticmethod"
                                         for d in found[0].decorators):
                # `collate_fn=Squares.collate_fn`, a staticmethod of a class of the file used as a
                # value: that function (yolov3-multigpu#13's collate, E69-4)
                return Value(FUNC, None, fn=found[0])
        if k is None and bv.dev == HOST:
            return Value(None, HOST, origin=bv.origin)  # a field of a structure moved to the host
        if k is None and bv.nograd:
            return Value(None, None, nograd=True)  # a field of an output computed under no_grad
        if k is None and type(base) is cst.Name and is_parsed_namespace(self.m, base):
            # `ns.device` of `ns = parser.parse_args()`: its option's default when that names a
            # device (`default="cuda" if torch.cuda.is_available() else "cpu"`); a configured value
            # otherwise, as `args.device` (probe69 E69-5/E69-6)
            d = self._option_device(attr)
            if d is not None and d.where == "acc":
                return Value(DEVICE, Dev("acc", d.key, e), origin=e)
            if attr == "device":
                # (a `"cpu"` default is what the user overrides on a GPU run: a configured device)
                return Value(DEVICE, None, origin=e)
        if attr == "device":
            if k == MODULE and bv.cls is not None and bv.cls in self.m.classes:
                # `bc.device` of a module class of the file that sets `self.device` (an
                # nn.Module has none of its own): that attribute, a device expression
                self._ensure_init(bv.cls)
                v = self.class_attrs.get(bv.cls, {}).get(attr)
                if v is not None:
                    return v if v.kind == DEVICE else Value(DEVICE, None, origin=e)
            if bv.dev is not None:
                return Value(DEVICE, bv.dev, origin=e)
            if k is None and type(base) is cst.Subscript and type(base.value) in (cst.Name, cst.Attribute):
                # `feature_maps[0].device` of a forward input list: the device of the container's
                # items, where the container is known to be (torchvision's DefaultBoxGenerator)
                cv = self.eval(base.value, frame)
                if cv.kind in (None, TUPLE, BATCH) and cv.dev is not None and cv.dev.where != "either":
                    return Value(DEVICE, cv.dev, origin=e)
            if k in (TENSOR, MODULE, BATCH) or (k is None and (dotted(base) or "").split(".", 1)[0] not in _CONFIG_ROOTS):
                # the device of a tensor or module the engine cannot place (not a configuration's
                # `args.device`): wherever it is, which a name bound to it keeps (`b, *_, device =
                # *x.shape, x.device`, P44-3), as `x.device` written out is (`_device_value`)
                return Value(DEVICE, None, origin=e, py="operand")
            return Value(DEVICE, None, origin=e)
        if k == DEVICE and attr == "type" and bv.dev is not None and bv.dev.is_host:
            # `next(m.parameters()).device.type` of parameters on the host: "cpu", that device
            return Value(DEVICE, HOST, origin=e)
        if k == TUPLE and bv.elem is not None and bv.elem.kind == TENSOR and attr in _NAMED_RESULTS:
            return bv.elem  # `x.max(dim=1).values`, `torch.sort(x).indices`
        if k == OBJECT and bv.attrs:
            found = instance_attr(bv.attrs, attr)
            if found is not None:
                if found[1]:
                    return found[0]  # `inst.model` set on this instance (see _instance_attr_set)
                own = self.class_attrs.get(bv.cls, {}).get(attr) if bv.cls is not None else None
                return join(found[0], own) if own is not None else UNKNOWN  # on some paths only
        if bv.cls is not None and k in (MODULE, OBJECT) and bv.cls in self.m.classes:
            found = self.m.method_of_class(bv.cls, attr)
            if found is not None and _is_property(found[0]):
                # `self.acmodel.recurrent` of `@property def recurrent(self): return self.use_memory`:
                # what the getter returns for this instance
                return self._summary(found[0], found[1], {}, bv, None)
        if k == OBJECT and bv.keys is not None:
            # `out.logits` of a dataclass instance of the file (`Output(logits=self.fc(x))`, the
            # Hugging Face ModelOutput shape) or a `SimpleNamespace(...)`: the field as it was given
            for k0, v0 in bv.keys:
                if k0 == attr:
                    return v0
            return UNKNOWN
        if k in (OBJECT, DATASET) and bv.cls is not None and self._set_in_init_only(bv.cls, attr, plain=k == OBJECT):
            # `batch.src` of a plain data holder of the file (`class Batch: def __init__(self, src):
            # self.src = src`) that only its `__init__` sets: what the constructions gave it; so
            # for a Dataset of the file read outside its loader (`dataset.offsets`, Skeleton-Aware
            # Networks, E65-4), and a list of tensors it keeps
            self._ensure_init(bv.cls)
            v = self.class_attrs.get(bv.cls, {}).get(attr)
            if v is not None and (v.kind == TENSOR or (v.kind == TUPLE and v.items and all(
                    it.kind == TENSOR for it in v.items))):
                return v
        if k == OBJECT and bv.cls is not None and bv.cls in self.m.classes:
            # `self.policy.hidden` that every method of the policy's class setting it sets to a
            # host tensor (`__init__` and `init_hidden()` both `torch.zeros(...)`): on the host,
            # whichever ran last (MARL#2, E34-1)
            self._ensure_init(bv.cls)
            setters = self._attr_setters.get((bv.cls, attr))
            info = self.m.classes.get(bv.cls)
            writers = {fn.name.value for b in self.m.bindings.get((info.node, "self." + attr), ())
                       if (fn := self.m.enclosing(b.node, cst.FunctionDef)) is not None}
            if setters and writers and writers <= set(setters) and all(
                    sv.kind == TENSOR and sv.dev == HOST for sv in setters.values()):
                v = self.class_attrs.get(bv.cls, {}).get(attr)
                if v is not None and v.kind == TENSOR and v.dev == HOST:
                    return v
        if k == OBJECT and bv.cls is not None and self._set_in_init_only(bv.cls, attr):
            # `learn.model` of a plain holder of the file (`class Learner: def __init__(self, model):
            # self.model = model`) that only its `__init__` sets, every construction handing it a
            # module already on the accelerator (a holder never moves what it holds; moving it
            # back to the host later is not assumed)
            self._ensure_init(bv.cls)
            v = self.class_attrs.get(bv.cls, {}).get(attr)
            if v is not None and v.kind in (MODULE, METRIC) and v.dev is not None and v.dev.where == "acc":
                return v
            if v is not None and v.kind in (MODULE, METRIC):
                # a module elsewhere (the host, unknown): still that module, of that class (its
                # layers, its mode), wherever it is now (FedAgg's `root.model`, fixtures29 E29-1)
                return replace(v, dev=None, placed=None)
            if v is not None and v.kind == LOADER and v.elem is not None:
                # `data.train_dl` of a holder of loaders (fastai-course DataBunch): the loader
                # every construction handed it, with the batches it gives
                return v
            if v is not None and v.kind == OPTIMIZER and v.source is not None:
                # `trainer.optim` of a holder whose `__init__` builds it (pytorch#8741): that
                # optimizer, with the module its parameters came from (where they are now is not
                # taken from outside the class)
                return replace(v, dev=None, placed=None)
        if bv.cls is not None and k not in (MODULE, METRIC, TENSOR):
            # `runner.meter` of an instance of a file class: which class of the file it holds (its
            # methods can then be followed); where it lives is not taken from outside the class
            v = self.class_attrs.get(bv.cls, {}).get(attr)
            if v is not None and v.cls is not None and v.kind not in (MODULE, METRIC, TENSOR):
                return Value(v.kind, None, cls=v.cls)
        if k == TENSOR:
            how = kb.tensor_attribute(attr)
            if how == "same":
                return Value(TENSOR, bv.dev, bv.half, bv.nonscalar, bv.nograd or attr == "data", origin=bv.origin,
                             graph=bv.graph and attr != "data")
            if attr == "is_cuda" and bv.dev is not None and (bv.dev.is_host or (
                    bv.dev.where == "acc" and not bv.dev.key.startswith(_NON_CUDA_ACCELERATORS))):
                # whether the tensor is on a CUDA device, where the engine knows it (a helper's
                # `if next(module.parameters()).is_cuda:` given a moved module, E42-3)
                return TRUE_VALUE if bv.dev.where == "acc" else FALSE_VALUE
            if attr in ("shape", "dtype", "ndim", "is_cuda", "requires_grad"):
                return Value(HOSTVAL, HOST)
            if bv.nograd and how is None:
                # a field of an output computed under no_grad (`outputs.loss` of a model output):
                # it holds no graph either; where it lives is not assumed
                return Value(TENSOR, None, nograd=True, origin=bv.origin)
            return UNKNOWN
        if k == MODULE:
            if attr == "module":
                return Value(MODULE, bv.dev, bv.half, wrap=UNWRAPPED)
            if attr == "weight" or attr == "bias":
                return Value(TENSOR, bv.dev, bv.half, True)
            if (bv.cls is not None and bv.cls in self.m.classes and bv.placed is None
                    and bv.origin is not None and bv.origin not in self._moved_origins
                    and bv.origin not in self._host_moved_origins
                    and self._set_in_init_only(bv.cls, attr, plain=False)):
                # `model.weights` of a module class of the file whose `__init__` keeps a tensor
                # it was given on the accelerator (`self.weights = init_weight`, an
                # `nn.Parameter(x.cuda())`: SimplePIM#2, E44-3), the instance never moved since:
                # that tensor, where it was made (a move to the host would take a parameter with
                # it, a move to a device leaves it on one)
                self._ensure_init(bv.cls)
                v = self.class_attrs.get(bv.cls, {}).get(attr)
                if v is not None and v.kind == TENSOR and v.dev is not None and v.dev.where == "acc":
                    return Value(TENSOR, v.dev, v.half, v.nonscalar, origin=v.origin)
            if bv.cls is not None and bv.cls in self.m.classes and bv.dev is not None and bv.dev.is_acc:
                # `predictor.criterion(...)`: a submodule the file's module class stores in its
                # `__init__` moved with it (registered submodules follow `.to()`); on the host
                # side it may have been moved by itself, so only the accelerator is taken
                self._ensure_init(bv.cls)
                v = self.class_attrs.get(bv.cls, {}).get(attr)
                if (v is not None and v.kind in (MODULE, METRIC) and (v.cls is None or v.cls in self.m.classes)
                        and (v.cls is not None or v.stateful)
                        and self._set_in_init_only(bv.cls, attr, plain=False)):
                    # (a torch layer with parameters too: `self.rnn.emb(inp)`, TopKDecoder's
                    # `self.rnn.forward_step` parts)
                    return Value(v.kind, bv.dev, bv.half, cls=v.cls, stateful=v.stateful)
            return UNKNOWN
        return UNKNOWN

    def _e_ifexp(self, e: cst.IfExp, frame) -> Value:
        self.eval(e.test, frame)
        a, b = self.eval(e.body, frame), self.eval(e.orelse, frame)
        guard = self.gpu_guard(e.test)
        if guard is not None:
            return a if guard else b  # `x.cuda() if torch.cuda.is_available() else x`
        decided = self._const_test(e.test, frame)
        if decided is not None:
            return a if decided else b  # `torch.tensor(ids) if return_tensors == "pt" else ids`
        decided = self._flag_test(e.test, frame)
        if decided is not None:
            # `"cpu" if config["cpu_offload"] else device` with the flag a literal on every path the
            # engine saw (PufferDrive PR#405, A70-E2)
            chosen = e.body if decided else e.orelse
            if type(chosen) is cst.SimpleString:
                d = self._device_value(chosen, None)
                if d is not None:
                    return Value(DEVICE, d, origin=chosen)
            return a if decided else b
        decided = self._not_none_test(e.test, frame)
        if decided is not None:
            # `context_encoder if context_encoder is not None else (lambda x: x)` where the
            # construction passes a module (nflows' ConditionalDiagonalNormal, E40-2)
            return a if decided else b
        if (a.kind == DEVICE and b.kind == DEVICE and a.dev is not None and b.dev is not None
                and (a.dev.is_acc or b.dev.is_acc)):
            # `torch.device("cuda") if f else torch.device("cpu")`: a device choice, read like
            # `torch.device("cuda" if f else "cpu")` (the accelerator on a run that has one)
            return Value(DEVICE, Dev("acc", "", e), origin=e)
        # `x if cond else None`: where x lives is what matters (None has no device)
        if _is_none(e.orelse):
            return a
        if _is_none(e.body):
            return b
        if a.kind == TENSOR and type(e.orelse) in (cst.List, cst.Tuple) and not e.orelse.elements:
            # `annotations[:, 0] if len(annotations) else []`: the empty list has no device either
            return a
        out = join(a, b)
        if a.kind == TENSOR == b.kind and a.dev is not None and b.dev is not None and a.dev.is_host != b.dev.is_host:
            host, acc = (a, b) if a.dev.is_host else (b, a)
            if (acc.dev.where == "acc" and host.nonscalar and host.placed is None
                    and self._fresh_factory(host.origin, e.body if host is a else e.orelse)
                    and self._device_unrelated(e.test, torch_ok=True)):
                # `fast_dca(msa, w) if nrow > 1 else torch.zeros(n, n, 442)` (trRosetta's single-
                # sequence MSA, E64-1): a tensor made on the host on the path where a test that has
                # nothing to do with devices fails, beside one on the accelerator on the other
                return replace(out, dev=PATH_HOST, origin=host.origin, placed=None)
        if out.kind == MODULE and out.wrap is UNWRAPPED and isinstance(a.wrap if b.wrap is UNWRAPPED else b.wrap, cst.Call):
            # `net.module if torch.cuda.device_count() > 1 else net`, `net` wrapped on every path:
            # the other branch is the wrapper whatever the condition, unless the condition asks
            # about the wrapper itself (`... if hasattr(net, "module") else net`, isinstance)
            other = a if b.wrap is UNWRAPPED else b
            test = self.m.module.code_for_node(e.test)
            if other.scatters and not any(w in test for w in ("module", "isinstance", "Parallel", "parallel")):
                out = replace(out, wrap=other.wrap, scatters=False)
        return out

    def _e_unary(self, e, frame) -> Value:
        v = self.eval(e.expression, frame)
        if v.kind == HOSTVAL and v.py in ("int", "float") and type(e.operator) in (cst.Minus, cst.Plus):
            return Value(HOSTVAL, HOST, py=v.py)  # `-0.5`
        if v.kind == TENSOR and v.graph and type(e.operator) is not cst.Minus:
            return replace(v, graph=False)  # `~mask`: no gradient flows
        if number_or_tensor(v) and type(e.operator) in (cst.Minus, cst.Plus):
            return v  # `-negated_sum` of a sum started at 0 (a number, then a tensor): the same (G43-3b)
        return v if v.kind == TENSOR else UNKNOWN

    def _around_star(self, star: int, n: int, v: Value, value_expr) -> tuple | None:
        """The item values a target list with a starred target at `star` (of `n` targets) unpacks:
        a known tuple value's items, or a display's with None for its starred items."""
        if v.kind == TUPLE and v.items is not None:
            return v.items if len(v.items) >= n - 1 else None
        items = self._starred_displays.get(value_expr) if value_expr is not None else None
        return items

    def _e_tuple(self, e, frame) -> Value:
        items = []
        for el in e.elements:
            v = self.eval(el.value, frame)
            items.append(UNKNOWN if isinstance(el, cst.StarredElement) else v)
        if any(isinstance(el, cst.StarredElement) for el in e.elements):
            self._starred_displays[e] = tuple(None if isinstance(el, cst.StarredElement) else v
                                              for el, v in zip(e.elements, items))
            return UNKNOWN
        return Value(TUPLE, None, items=tuple(items))

    def _e_binary(self, e: cst.BinaryOperation, frame) -> Value:
        a = self.eval(e.left, frame)
        b = self.eval(e.right, frame)
        ta, tb = a.kind == TENSOR, b.kind == TENSOR
        if not (ta or tb):
            if (type(e.operator) is cst.Add and a.kind == TUPLE and b.kind == TUPLE and a.items is not None
                    and b.items is not None):
                # `losses + [sum(losses)]`: a list of both lists' elements, in order (faster-rcnn's
                # trainer, E49-1)
                return Value(TUPLE, None, items=a.items + b.items)
            if type(e.operator) is cst.Multiply and {a.kind, b.kind} == {TUPLE, HOSTVAL}:
                # `[False] * n`: a list of the same (plain) values (rl-starter-files' `dones`);
                # `(shift_x, shift_y) * k`: of the same tensors (torchvision's default boxes)
                seq = a if a.kind == TUPLE else b
                el = _elem_of(seq) if seq.items else seq.elem
                if el is not None and el.kind in (HOSTVAL, TENSOR):
                    return Value(TUPLE, None, elem=el)
            if a.kind == HOSTVAL and b.kind == HOSTVAL:
                return Value(HOSTVAL, HOST)  # arithmetic of plain numbers
            if (NDARRAY in (a.py, b.py) and a.kind in (None, HOSTVAL) and b.kind in (None, HOSTVAL)
                    and all(v.py == NDARRAY or v.kind == HOSTVAL for v in (a, b))):
                # `pv.T / np.maximum(...)`: arithmetic of arrays and numbers is an array (A70-E1)
                return Value(None, HOST, origin=e, py=NDARRAY)
            if ((number_or_tensor(a) or number_or_tensor(b)) and _number_or_tensor(a) and _number_or_tensor(b)
                    and type(e.operator) in _DIFFERENTIABLE_OPERATORS):
                # `adv_loss / len(disc_fake)`: still a number or a tensor (where the tensor is)
                return join(a, b) if a.kind == b.kind else (a if number_or_tensor(a) else b)
            if type(e.operator) in _DIFFERENTIABLE_OPERATORS and (
                    (number_or_tensor(a) and b.kind is None and b.py is None)
                    or (number_or_tensor(b) and a.kind is None and a.py is None)):
                # `-negated_entropy_sum / n_e` with `n_e` of unknown kind: as a tensor met with a
                # value of unknown kind, still a number or a tensor holding its graph (PAAC, G43-3b)
                return a if number_or_tensor(a) else b
            return UNKNOWN
        if ta and tb:
            self._check(e, "binary", [(e.left, a), (e.right, b)], frame)
            dev = join_dev(a.dev, b.dev)
            if (a.dev is not None and b.dev is not None and a.dev.is_acc != b.dev.is_acc
                    and a.dev.where != "either" and b.dev.where != "either"):
                dev = a.dev if a.dev.is_acc else b.dev  # 0-dim host tensors may meet device tensors
            elif a.dev is not None and a.dev.is_host and not a.nonscalar and not (b.dev is not None and b.dev.is_host):
                dev = b.dev  # a host tensor that may have no dimension (`torch.tensor(n)`) never decides
            elif b.dev is not None and b.dev.is_host and not b.nonscalar and not (a.dev is not None and a.dev.is_host):
                dev = a.dev
            return Value(TENSOR, dev, a.half or b.half, a.nonscalar or b.nonscalar, a.nograd and b.nograd, origin=e,
                         graph=(a.graph or b.graph) and type(e.operator) in _DIFFERENTIABLE_OPERATORS,
                         deep=(a.deep or b.deep) and type(e.operator) is not cst.MatrixMultiply)
        t = a if ta else b
        other = b if ta else a
        if other.kind in (HOSTVAL, None) or other.kind is None:
            dev = t.dev
            if (other.kind is None and other.dev != HOST and dev is not None and dev.is_host
                    and not t.nonscalar):
                dev = None  # `relative_pos + torch.tensor(n)`: the other side (maybe a tensor) decides
            return Value(TENSOR, dev, t.half, t.nonscalar, t.nograd, origin=e,
                         graph=t.graph and type(e.operator) in _DIFFERENTIABLE_OPERATORS, deep=t.deep)
        return UNKNOWN

    def _e_subscript(self, e: cst.Subscript, frame) -> Value:
        base = self.eval(e.value, frame)
        idx_vals = []
        only_slices = True
        for s in e.slice:
            if isinstance(s.slice, cst.Index):
                only_slices = False
                idx_vals.append((s.slice.value, self.eval(s.slice.value, frame)))
            else:
                for part in (s.slice.lower, s.slice.upper, s.slice.step):
                    if part is not None:
                        self.eval(part, frame)
        k = base.kind
        if base.py == NDARRAY and k in (None, HOSTVAL) and only_slices and e.slice:
            return Value(k, HOST, origin=e, py=NDARRAY)  # `X[200:]`: a view, still an array
        if k is None and base.dev == HOST:
            if not (_put_on_host(base) and any(v.kind == TENSOR and v.nonscalar and v.dev is not None
                                               and v.dev.where == "acc" for _, v in idx_vals)):
                return Value(None, HOST, origin=base.origin)
            # `sim = self.encoder.s_sim_mx.cpu()` (of a value the engine cannot name) indexed with a
            # mask made on the device: only tensors (and structures that index theirs) are put on
            # the host that way and take a tensor mask; it fails there (ST-SSL#3)
            base = replace(base, kind=TENSOR)
            k = TENSOR
        if k == TENSOR:
            # an index of unknown kind moved to a device on purpose (`labels.to(device)`) is a tensor
            tensor_idx = [(x, v if v.kind == TENSOR else replace(v, kind=TENSOR)) for x, v in idx_vals
                          if v.kind == TENSOR or (_moved_unknown(v) and v.dev.where == "acc")]
            if tensor_idx:
                # an element picked by integers (`ranks[r, q]`) may be 0-dim, which PyTorch reads as
                # a plain integer wherever it is (Landmark2019's hard-negative mining): no meeting
                checked = [(x, v) for x, v in tensor_idx if not self._int_selected(x, frame)]
                if checked:
                    self._check(e, "index", [(e.value, base)] + checked, frame)
                nonscalar = any(v.nonscalar for _, v in tensor_idx)
                dev = base.dev
                if dev is not None and dev.is_host and any(v.dev is None or not v.dev.is_host for _, v in tensor_idx):
                    dev = None  # a host table indexed on the device fails (reported once, above)
                return Value(TENSOR, dev, base.half, nonscalar, base.nograd, origin=base.origin, graph=base.graph)
            adds_dim = any(_is_none(x) for x, _ in idx_vals)  # `t[None, :]`: at least one dimension
            # `target[i]` of a tensor of two or more dimensions keeps one
            keeps = base.deep and len(e.slice) == 1 and len(idx_vals) == 1
            # a slice keeps its dimension (`hidden[:, agent_num, :]`): a tensor with one still has one
            sliced = len(idx_vals) < len(e.slice)
            # (a view of the same tensor: placed where the tensor was, `source[0:5]` of a `.cuda()`
            # batch, E46-1)
            return Value(TENSOR, base.dev, base.half, adds_dim or keeps or (base.nonscalar and sliced), base.nograd,
                         origin=base.origin, deep=base.deep and only_slices, graph=base.graph, placed=base.placed)
        if k == BATCH:
            if base.keys is not None and len(idx_vals) == 1 and len(e.slice) == 1:
                key = _const_key(idx_vals[0][0])
                for k0, v0 in base.keys:
                    if k0 == key:
                        return v0  # a key assigned since the batch came
            return Value(TENSOR, base.dev, nonscalar=True, origin=base.origin)
        if k == MAPPING:
            key = None
            if base.keys is not None and len(idx_vals) == 1 and len(e.slice) == 1:
                key = _const_key(idx_vals[0][0])
                if key is not None:
                    for k0, v0 in base.keys:
                        if k0 == key:
                            return v0
            if base.elem is not None:
                return base.elem
            if base.keys and key is None and len(idx_vals) == 1 and idx_vals[0][1].kind in (HOSTVAL, None):
                # `dataloaders[phase]` in `for phase in ["train", "val"]`: one of its values
                out = None
                for _k0, v0 in base.keys:
                    out = v0 if out is None else join(out, v0)
                return out if out is not None else UNKNOWN
            return UNKNOWN
        if k == DATASET and base.dev is not None and idx_vals and not any(v.kind == TENSOR for _, v in idx_vals):
            # one sample of a Dataset: a tuple of its tensors, where the dataset keeps them
            return Value(TUPLE, None, elem=Value(TENSOR, base.dev, origin=base.origin), origin=base.origin)
        if (k == DATASET and base.cls is not None and len(idx_vals) == 1 and idx_vals[0][1].kind != TENSOR
                and self.m.method_of_class(base.cls, "__getitem__") is not None):
            # `test_data[0]` of a Dataset class of the file: what its `__getitem__` returns
            x, v = idx_vals[0]
            return self._call_method(base.cls, "__getitem__", base, e, [(x, v, "")], {}, frame)
        if k == TUPLE:
            if not idx_vals:  # `parts[:-1]`: a list of the same elements
                el = _elem_of(base)
                return Value(TUPLE, None, elem=el) if el is not None else UNKNOWN
            ix = idx_vals[0][0] if len(idx_vals) == 1 else None
            if (type(ix) is cst.UnaryOperation and type(ix.operator) is cst.Minus
                    and type(ix.expression) is cst.Integer):
                ix_val = -int(ix.expression.value, 0)  # `input_i[-1]` (pix2pixHD's GANLoss, E65-3)
            else:
                ix_val = int(ix.value, 0) if type(ix) is cst.Integer else None
            if ix_val is not None and base.items is not None:
                if -len(base.items) <= ix_val < len(base.items):
                    return base.items[ix_val]
            if base.elem is not None and base.items is None:
                return base.elem
            if (base.items and len(idx_vals) == 1 and len(e.slice) == 1
                    and type(idx_vals[0][0]) not in (cst.Integer, cst.UnaryOperation)):
                out = base.items[0]  # `outputs[j]`: any of the items (the same where they agree)
                for it in base.items[1:]:
                    out = join(out, it)
                return out
        return UNKNOWN

    # calls --------------------------------------------------------------------------------------
    def _args(self, call: cst.Call, frame) -> tuple[list, dict]:
        pos, kw = [], {}
        for a in call.args:
            v = self.eval(a.value, frame)
            if a.star:
                pos.append((a.value, UNKNOWN, a.star))
                kw[_DOUBLE_STAR if a.star == "**" else _STAR] = (a.value, v)
            elif a.keyword is None:
                pos.append((a.value, v, ""))
            else:
                kw[a.keyword.value] = (a.value, v)
        return pos, kw

    def _device_value(self, expr, v: Value | None) -> Dev | None:
        """The device a device expression names (`"cuda"`, `torch.device(...)`, a device variable,
        `x.device`, a tensor for `.to(other)`)."""
        if v is not None and v.kind in (DEVICE, TENSOR) and v.dev is not None:
            if v.kind == DEVICE and v.dev.where == "acc" and type(expr) in (cst.Name, cst.Attribute):
                # keep the expression the user wrote (`self.device`), and the one it came from
                return Dev("acc", v.dev.key, expr, v.dev.outer or (v.dev.expr if v.dev.expr is not expr else None))
            return v.dev
        if v is not None and v.kind == DEVICE and v.py == "operand":
            return None  # `device` bound to `x.device` of an `x` the engine cannot place: wherever x is
        if v is not None and v.kind == DTYPE:
            return None
        t = type(expr)
        if t is not cst.SimpleString and v is not None and v.kind == HOSTVAL and isinstance(v.const, str):
            head = v.const.split(":", 1)[0]
            if head in ("cpu", "meta"):
                return HOST  # a name holding the string "cpu" on every path (A70-E2's `obs_device`)
        if t is cst.SimpleString:
            s = expr.evaluated_value
            if not isinstance(s, str):
                return None
            head = s.split(":", 1)[0]
            if head in ("cpu", "meta"):
                return HOST
            return Dev("acc", s, expr) if head in ("cuda", "mps", "xpu", "hpu", "npu", "xla") else None
        if t is cst.Integer:
            return Dev("acc", "cuda:" + expr.value, expr)
        if t is cst.Call and type(expr.func) is cst.Name and not expr.args:
            fn = self._function_named(expr.func.value)
            if fn is not None and fn not in self._device_fns:
                # `.to(get_device())` of a file function every `return` of which gives a device
                # string, one of them an accelerator (`return "cuda"` under an availability test):
                # the configured accelerator, as `"cuda" if ... else "cpu"` is (E42-7)
                self._device_fns.add(fn)  # (a function returning another's call: no endless recursion)
                try:
                    devs = [self._device_value(r.value, None) if r.value is not None else None for r in _exits_in(fn)]
                finally:
                    self._device_fns.discard(fn)
                if devs and all(d is not None for d in devs) and any(d.is_acc for d in devs):
                    return Dev("acc", "", expr)
                return None
        if t is cst.IfExp:
            a, b = self._device_value(expr.body, None), self._device_value(expr.orelse, None)
            if a is not None and a.is_acc:
                return Dev("acc", "", expr)
            if b is not None and b.is_acc:
                return Dev("acc", "", expr)
            return None
        if t is cst.Name and (v is None or v.kind in (HOSTVAL, None)):
            # `device = 'cpu'` (PyTorch-BYOL's notebook, the availability test commented out):
            # a name bound only to device strings is those devices, whatever it is called
            d = self._literal_bound_device(expr)
            if d is not None:
                return d
        if t is cst.Name or t is cst.Attribute:
            from gpulint.model import dotted

            text = dotted(expr) or ""
            last = text.rsplit(".", 1)[-1].lower()
            if "dtype" in last:
                return None
            if "cpu" in last:
                return HOST
            if t is cst.Attribute and type(expr.value) is cst.Name and is_parsed_namespace(self.m, expr.value):
                # `ns.device` of `ns = parser.parse_args()`: the option's default when it names a
                # device (`default="cuda" if torch.cuda.is_available() else "cpu"`), else a configured
                # device by its name as for `args.device` (probe69 E69-5/E69-6)
                d = self._option_device(expr.attr.value)
                if d is not None and d.where == "acc":
                    return Dev("acc", d.key, expr)
            elif t is cst.Attribute and expr.attr.value == "device" and text.split(".", 1)[0] not in _CONFIG_ROOTS:
                return None  # `x.device` of a value the engine cannot place: wherever x is, not a configured GPU
            if t is cst.Name and (self._device_of_operand(expr) or self._picked_by_tensor(expr)):
                return None  # `d = get_device(wav)`: wherever that tensor is, not a configured GPU
            if any(h in last for h in _DEVICE_NAME_HINTS) or last in ("gpu_id",):
                return Dev("acc", text, expr)
        if v is not None and v.kind == HOSTVAL and v.devtext is not None:
            # a value that is one device string on every path, whatever the expression's name (a
            # parameter `where` every call gives `"cuda:0" if torch.cuda.is_available() else "cpu"`)
            return HOST if v.devtext.split(":", 1)[0] in ("cpu", "meta") else Dev("acc", v.devtext, expr)
        return None

    def _option_device(self, dest: str) -> Dev | None:
        """The device the default of the file's `--<dest>` option names (`default="cuda" if ... else
        "cpu"`, `default=torch.device(...)`); None when it names none."""
        default = argparse_default(self.m, dest)
        if (type(default) is cst.Call and self.m.qualname(default.func) == "torch.device" and len(default.args) == 1
                and default.args[0].keyword is None and not default.args[0].star):
            default = default.args[0].value
        return self._device_value(default, None) if default is not None else None

    def _literal_bound_device(self, name: cst.Name) -> Dev | None:
        bs = self.m.bindings_of(name)
        if not bs:
            return None
        keys = set()
        for b in bs:
            d = self._named_device(b.value) if b.how == "assign" else None
            if d is None and b.how == "assign" and type(b.value) is cst.IfExp:
                # `where = "cuda" if torch.cuda.is_available() else "cpu"`: a choice between two
                # device strings is a device whatever the name (not one picked by a tensor's
                # `is_cuda`, which is wherever that tensor is)
                a, c = self._named_device(b.value.body), self._named_device(b.value.orelse)
                if a is not None and c is not None and not self._picked_by_tensor(name):
                    d = Dev("acc", "", b.value) if (a.is_acc or c.is_acc) else HOST
            if d is None:
                return None
            if d.is_acc:
                keys.add(d.key)
        if not keys:
            return HOST
        # an accelerator on some binding (`device = "cpu"` then `device = "cuda"` where one is
        # found): the configured accelerator, as for `"cuda" if ... else "cpu"`
        return Dev("acc", keys.pop() if len(keys) == 1 and len(bs) == 1 else "", name)

    def _picked_by_tensor(self, name: cst.Name) -> bool:
        """`curr_dev = torch.device(f"cuda:{n}") if n >= 0 else torch.device("cpu")` with `n =
        scores.get_device()` (or a test on `x.is_cuda`): the device of that tensor, which may be the
        host (pytorch_neural_crf, PRECISION31 A3)."""
        for b in self.m.bindings_of(name):
            if b.how != "assign" or type(b.value) is not cst.IfExp:
                continue
            for n in (b.value.test, *self.m.walk(b.value.test)):
                if type(n) is cst.Attribute and n.attr.value in ("is_cuda", "get_device"):
                    return True
                if type(n) is cst.Name and n is not name:
                    for b2 in self.m.bindings_of(n):
                        v = b2.value if b2.how == "assign" else None
                        if (type(v) is cst.Call and type(v.func) is cst.Attribute
                                and v.func.attr.value == "get_device" and not v.args):
                            return True
        return False

    def _device_of_operand(self, name: cst.Name) -> bool:
        """`name` is bound (somewhere in its scope) to a call of code the engine cannot follow
        that is given a tensor or a module (`input_device = get_device(wav)`): a device taken
        from that operand, which may be the host."""
        calls = self._operand_calls
        return bool(calls) and any(b.how == "assign" and b.value in calls for b in self.m.bindings_of(name))

    def _e_call(self, e: cst.Call, frame) -> Value:
        func = e.func
        tf = type(func)
        q = self.m.qualname(func)
        if (tf is cst.Name and q is None and func.value not in self.m.classes and self.m.module_function(func.value) is None
                and self.cuda_tensor_type(func)):
            # `input_tensor_type(data)` with `input_tensor_type = torch.cuda.FloatTensor if
            # torch.cuda.is_available() else torch.FloatTensor`: made on the accelerator (E42-6)
            pos, kw = self._args(e, frame)
            inner = pos[0][1] if pos else None
            if inner is not None and inner.kind == TENSOR:
                return Value(TENSOR, inner.dev, inner.half, inner.nonscalar, origin=e)
            return Value(TENSOR, Dev("acc", "cuda"), nonscalar=bool(pos), origin=e, placed=e)
        if tf is cst.Name and q is None and func.value not in self.m.classes:
            fields = self._namedtuple_fields(func.value)
            if fields is not None:
                # `Batch(torch.tensor(rows), [0])` of `Batch = collections.namedtuple("Batch", ["ids",
                # "labels"])`: a record of what each field was given (E54-1)
                pos, kw = self._args(e, frame)
                return Value(OBJECT, None, origin=e, keys=_record_keys(fields, pos, kw))
        if tf is cst.Attribute and q is None:
            recv = func.value
            meth = func.attr.value
            if type(recv) is cst.Name and recv.value == "self" and frame.cls is not None:
                av = self._self_attr(meth, frame, False)
                if av is None and self._property_of(frame, meth) is not None:
                    av = self._property_value(meth, func, frame)  # `self.net(x)` of `@property def net`
                av = _called_moved(av)
                if av is not None and av.kind in (MODULE, METRIC):  # self.model(x)
                    if frame.record:
                        self.values[func] = av
                    pos, kw = self._args(e, frame)
                    return self._module_call(e, av, pos, kw, frame)
                if av is not None and av.kind == TRANSFORM:
                    pos, kw = self._args(e, frame)
                    return self._transform(e, pos)
                if av is not None and av.kind == TOKENIZER:
                    self._args(e, frame)
                    return self._tokenize(e, "__call__", kw={a.keyword.value: (a.value, UNKNOWN) for a in e.args if a.keyword})
                if av is not None and av.kind == FUNC and meth not in self.m.classes[frame.cls].methods:
                    # `self.metric(y_pred, y)`: the function stored; also a closure a maker returned
                    # (`self.local_loss = Loss()._create_pytorch_loss()`, DeepChem's InfoGraph losses
                    # kept by a trainer: probe69 classify), run with the values it closed over
                    pos, kw = self._args(e, frame)
                    return self._call_function(av.fn, None, e, pos, kw, frame, None, closure=av.attrs or ())
                if (av is not None and av.cls is not None and av.kind in (OBJECT, None)
                        and meth not in self.m.classes[frame.cls].methods
                        and self.m.method_of_class(av.cls, "__call__") is not None):
                    pos, kw = self._args(e, frame)  # `self.loss_fn(pred, t)`: an instance of a callable class
                    if frame.record:
                        self.values[func] = av
                    return self._call_method(av.cls, "__call__", av, e, pos, kw, frame)
            if (type(recv) is cst.Call and type(recv.func) is cst.Name and recv.func.value == "super"
                    and frame.cls is not None):
                pos, kw = self._args(e, frame)
                info = self.m.classes.get(frame.cls)
                selfv = frame.env.get("self")
                for base in info.bases if info is not None else ():
                    if base in self.m.classes:
                        return self._call_method(base, meth, selfv, e, pos, kw, frame)
                return UNKNOWN
            if (type(recv) is cst.Name and recv.value in self.m.classes and self._lookup(recv.value, frame) is None):
                found = self.m.method_of_class(recv.value, meth)
                if found is not None and (_is_static(found[0]) or _is_classmethod(found[0])):
                    # `GANLoss.rand_between(low, high)`: a static method named through its class
                    pos, kw = self._args(e, frame)
                    return self._call_function(found[0], found[1], e, pos, kw, frame, None)
            rv = self.eval(recv, frame)
            pos, kw = self._args(e, frame)
            if meth in ("add_module", "register_module") and len(pos) >= 2 and pos[1][1].origin is not None:
                self._registered.add(pos[1][1].origin)
            part = pos[1][1] if meth in ("add_module", "register_module") and len(pos) >= 2 else (
                pos[0][1] if meth in ("append", "extend", "insert") and pos and rv.kind == MODULE else None)
            if (part is not None and rv.kind == MODULE and rv.dev is not None and rv.dev.is_host
                    and type(recv) is cst.Name and recv.value != "self" and part.kind in (MODULE, TUPLE)
                    and not (part.dev is not None and part.dev.is_host)):
                # `model.add_module(name, layer)` of a layer of a CNN moved to the device (the style
                # transfer tutorial's assembly loop): the container's parts are not all on the host
                # (PRECISION30 A5)
                self._bind(recv, replace(rv, dev=None), frame, None, rebinding=True)
            if (meth in ("register_buffer", "register_parameter") and len(pos) >= 2 and type(recv) is cst.Name
                    and recv.value == "self" and frame.cls is not None and type(pos[0][0]) is cst.SimpleString
                    and pos[1][1].kind in (TENSOR, None) and not (type(pos[1][0]) is cst.Name and pos[1][0].value == "None")):
                # `self.register_buffer("name", t)`: `self.name` is the module's own tensor from here on
                name = pos[0][0].evaluated_value
                if isinstance(name, str) and name.isidentifier():
                    self._param_made.add(e)
                    tv = pos[1][1]
                    if tv.kind == TENSOR and tv.dev is not None and tv.dev.is_host and not frame.devctx:
                        self._made_on_host.add(e)
                    frame.env["self." + name] = Value(TENSOR, None, nonscalar=tv.nonscalar, deep=tv.deep, origin=e)
                    frame.assigned_self.add(name)
            if meth == "add_graph":  # SummaryWriter.add_graph(model, input_to_model): runs the model
                self._traced(e, pos, kw, ("input_to_model",), frame)
            if e.args:
                # a dict handed to a method: of a class of the file (changed there in place?), or
                # of unknown code (`helper.to_device(batch)`)
                owner = frame.cls if (type(recv) is cst.Name and recv.value == "self") else rv.cls
                if owner is not None:
                    found = self.m.method_of_class(owner, meth)
                    if found is not None:
                        self._escape_containers(e, frame, found[0], 0 if _is_static(found[0]) else 1)
                    else:
                        self._escape_containers(e, frame)
                elif rv.kind in (None, OBJECT):
                    self._escape_containers(e, frame)
            if (rv.kind in (MODULE, OBJECT) and rv.cls is not None and rv.cls in self.m.classes
                    and self.m.method_of_class(rv.cls, meth) is None):
                av = self._e_attribute(func, frame)  # `predictor.criterion(out, y)`: a submodule called
                if av.kind in (MODULE, METRIC) and av.dev is not None:
                    if frame.record:
                        self.values[func] = av
                    return self._module_call(e, av, pos, kw, frame)
            return self._method(e, meth, recv, rv, pos, kw, frame)
        pos, kw = self._args(e, frame)
        if q is None and tf is cst.Call:
            q = self._getattr_qualname(func, frame)
        if q is not None:
            if q in _TRACING_CALLS:
                traced = self._traced(e, pos, kw, _TRACING_CALLS[q], frame)
                if q == "torch.jit.trace" and traced is not None:
                    return traced  # the traced module lives where the model does
                return UNKNOWN  # a ScriptModule or a traced function, an export: never a tensor
            if q in _COMPILING_CALLS:
                # `torch.jit.script(m)`, `torch.compile(m)`: a module for a module (where it is),
                # a callable for a function; never a tensor of its operands
                if pos and not pos[0][2] and pos[0][1].kind == MODULE:
                    return pos[0][1]
                return UNKNOWN
            return self._qualified_call(e, q, pos, kw, frame)
        self._escape(e, frame)
        if tf is cst.Name:
            name = func.value
            if name in self.m.classes and self._lookup(name, frame) is None:
                return self._instance(name, e, pos, kw, frame)
            fnode = frame.fn
            if (frame.cls is not None and _is_classmethod(fnode) and self._lookup(name, frame) is None
                    and (fnode.params.posonly_params or fnode.params.params)
                    and (*fnode.params.posonly_params, *fnode.params.params)[0].name.value == name):
                return self._instance(frame.cls, e, pos, kw, frame)  # `cls(...)` in a classmethod
            fn = self.m.module_function(name)
            if fn is not None and self._lookup(name, frame) is None:
                return self._call_function(fn, None, e, pos, kw, frame, None)
            fv = _called_moved(self._lookup(name, frame))
            if fv is not None and frame.record:
                self.values[func] = fv
            if fv is not None and fv.kind in (MODULE, METRIC):
                return self._module_call(e, fv, pos, kw, frame)
            if fv is not None and fv.kind == FUNC:
                return self._call_function(fv.fn, None, e, pos, kw, frame, None, closure=fv.attrs or ())
            if fv is not None and fv.kind == CLASS and fv.cls in self.m.classes:
                # `Net(4, 2)` of a parameter every call binds to the file's class `GINet`
                return self._instance(fv.cls, e, pos, kw, frame)
            if fv is not None and fv.kind == TOKENIZER:
                return self._tokenize(e, "__call__", kw)
            if fv is not None and fv.kind == TRANSFORM:
                return self._transform(e, pos)
            if fv is not None and fv.cls is not None:
                return self._call_method(fv.cls, "__call__", fv, e, pos, kw, frame)
            return self._builtin(name, e, pos, kw, frame)
        fv = self.eval(func, frame) if tf is not cst.Name else UNKNOWN
        if fv.kind in (MODULE, METRIC):
            return self._module_call(e, fv, pos, kw, frame)
        if fv.kind == TRANSFORM:
            return self._transform(e, pos)
        if fv.kind == FUNC:
            return self._call_function(fv.fn, None, e, pos, kw, frame, None, closure=fv.attrs or ())
        if fv.kind == CLASS and fv.cls in self.m.classes:
            return self._instance(fv.cls, e, pos, kw, frame)  # `self.net_cls(...)`
        return UNKNOWN

    def _getattr_qualname(self, call: cst.Call, frame) -> str | None:
        """`getattr(torch, window)` with `window` the same string on every path (a parameter's
        default `"hann_window"`): the torch function it names, `torch.hann_window` (Mozilla TTS's
        `TorchSTFT`, E56-4 b)."""
        f = call.func
        if (type(f) is not cst.Name or f.value != "getattr" or len(call.args) != 2
                or any(a.star or a.keyword is not None for a in call.args) or self._lookup("getattr", frame) is not None):
            return None
        base = self.m.qualname(call.args[0].value)
        if base not in ("torch", "torch.nn.functional", "torch.special", "torch.fft", "torch.linalg"):
            return None
        v = self.eval(call.args[1].value, frame)
        if v.kind != HOSTVAL or v.const is None or not v.const.isidentifier():
            return None
        return base + "." + v.const

    def _escape_containers(self, e: cst.Call, frame, fn: cst.FunctionDef | None = None, offset: int = 0) -> None:
        """A dict (or list) passed to code that may change it in place (`to_device(batch)` doing
        `batch[k] = v.to(device)`): what its values are is no longer known. For a function of this
        file, only when its body stores into that parameter's items or hands it on; for unknown
        code, a dict always (a list keeps its elements: unknown code appending to it is rare)."""
        for i, a in enumerate(e.args):
            x = a.value
            if type(x) is not cst.Name or a.star:
                continue
            v = frame.env.get(x.value)
            if v is None or v.kind not in (MAPPING, TUPLE, BATCH):
                continue
            if fn is not None:
                if not self._may_mutate_param(fn, i + offset, a):
                    continue
            elif v.kind == BATCH:
                # a loader's batch handed to unknown code with a device (`to_device(batch, device)`
                # as a statement): it may move a dict batch's values in place
                if not self._given_a_device(e, x):
                    continue
            elif v.kind != MAPPING:
                continue
            frame.env[x.value] = Value(v.kind, None, origin=v.origin)

    def _given_a_device(self, e: cst.Call, batch: cst.Name) -> bool:
        """`e` is a statement of its own (its result unused) and also receives a device (a value
        the engine knows is one, or a name or attribute called `device`)."""
        if type(self.m.parent(e)) is not cst.Expr:
            return False
        for a in e.args:
            if a.value is batch:
                continue
            v = self.values.get(a.value)
            if v is not None and v.kind == DEVICE:
                return True
            d = dotted(a.value)
            if d is not None and "device" in d.rsplit(".", 1)[-1].lower():
                return True
        return False

    def _may_mutate_param(self, fn: cst.FunctionDef, i: int, arg: cst.Arg, depth: int = 0) -> bool:
        """Could the file's function `fn` change the container passed as this argument in place:
        an item stored (`p[k] = ...`, `p[k] += ...`), a mutating method called on it, or the
        parameter handed on to another call (of unknown code, or of a function or method of the
        file that may change it: `batch = self.to_device(batch)` returning a new dict does not)."""
        name = param_name(fn, i, arg)
        if name is None:
            return True
        key = (fn, name, "items")
        cached = self._moves_param.get(key)
        if cached is not None:
            return cached
        self._moves_param[key] = True  # (recursion: assume it may)
        out = False
        for node in self.m.walk(fn.body):
            t = type(node)
            if t is cst.Subscript and type(node.value) is cst.Name and node.value.value == name:
                parent = self.m.parent(node)
                if (type(parent) is cst.AssignTarget and parent.target is node) or (
                        type(parent) is cst.AugAssign and parent.target is node) or (
                        type(parent) is cst.Del):
                    out = True
                    break
            elif t is cst.Call:
                f = node.func
                if type(f) is cst.Attribute and type(f.value) is cst.Name and f.value.value == name:
                    if f.attr.value in _MAPPING_MUTATORS or f.attr.value in ("append", "extend", "insert", "remove"):
                        out = True
                        break
                elif any(type(a.value) is cst.Name and a.value.value == name for a in node.args):
                    q = self.m.qualname(f)
                    if not (q and q.partition(".")[0] in _NON_MUTATING_ROOTS) and not (
                            type(f) is cst.Name and f.value in _PURE_BUILTINS) and self._handed_on_mutates(
                            fn, node, name, depth):
                        out = True
                        break
        self._moves_param[key] = out
        return out

    def _handed_on_mutates(self, fn: cst.FunctionDef, call: cst.Call, name: str, depth: int) -> bool:
        """`fn` hands its parameter `name` to `call`: may that change it in place? A function of
        the file, or a method of `fn`'s own class called on `self`, is looked into (three levels
        at most); anything else may."""
        f = call.func
        inner, offset = None, 0
        if type(f) is cst.Name and f.value not in self.m.classes:
            inner = self.m.module_function(f.value)
        elif type(f) is cst.Attribute and type(f.value) is cst.Name and f.value.value == "self":
            cls = self.m.class_of(fn)
            found = self.m.method_of_class(cls.name.value, f.attr.value) if cls is not None else None
            if found is not None:
                inner, offset = found[0], (0 if _is_static(found[0]) else 1)
        if inner is None or depth >= 3:
            return True
        j = 0
        for a in call.args:
            if a.star:
                return True
            if type(a.value) is cst.Name and a.value.value == name:
                return self._may_mutate_param(inner, (j if a.keyword is None else 0) + offset, a, depth + 1)
            if a.keyword is None:
                j += 1
        return True

    def _escape(self, e: cst.Call, frame) -> None:
        """A module passed to code of this file (or unknown code) may be moved there in place: its
        name no longer says where it lives."""
        f = e.func
        if type(f) is cst.Name and f.value not in _PURE_BUILTINS and f.value not in self.m.classes:
            self._escape_containers(e, frame, self.m.module_function(f.value))
        if type(f) is cst.Name and f.value in _NON_MOVING_BUILTINS:
            return
        callee = None
        offset = 0
        if type(f) is cst.Name and f.value in self.m.classes:
            # `ModelEma(model, device="cpu")`: a class of the file whose own `__init__` only copies or
            # reads the module it is given (`self.module = deepcopy(model)`) leaves it where it is
            # (an `__init__` inherited from a base of the file is that one)
            found = self.m.method_of_class(f.value, "__init__")
            if found is not None:
                callee, offset = found[0], 1
        elif type(f) is cst.Name:
            callee = self.m.module_function(f.value)
            if callee is None:
                # `grad_norm = lambda m: ...` called with the model: its body says what it does
                fv = self._lookup(f.value, frame)
                if fv is not None and fv.kind == FUNC and type(fv.fn) is cst.Lambda:
                    callee = fv.fn
        for i, a in enumerate(e.args):
            x = a.value
            if type(x) is cst.Name:
                if callee is not None and not a.star and not self._may_move_param(callee, i + offset, a) and not (
                        offset and self._stores_param(callee, i + offset, a)
                        and not self._stored_never_moved(f.value, callee, i + offset, a)):
                    continue
                v = frame.env.get(x.value)
                if (offset and v is not None and v.kind == MODULE and v.origin is not None and not a.star
                        and self._registers_param(f.value, callee, i + offset, a)):
                    self._parts.setdefault(e, set()).add(v.origin)
                if v is not None and v.kind in (MODULE, METRIC) and v.dev is not None:
                    frame.env[x.value] = replace(v, dev=None)

    def _registers_param(self, cls: str, init: cst.FunctionDef, i: int, arg: cst.Arg) -> bool:
        """The `__init__` of the file's module class `cls` assigns this parameter itself to a `self`
        attribute (`self.decoder = decoder`, `self.encoder, self.decoder = encoder, decoder`), which
        registers it as a submodule that moves with the instance."""
        if self._class_kind(cls) != MODULE:
            return False
        name = param_name(init, i, arg)
        if name is None:
            return False
        for node in self.m.walk(init.body):
            if type(node) is not cst.Assign or len(node.targets) != 1:
                continue
            tgt, val = node.targets[0].target, node.value
            pairs = [(tgt, val)]
            if type(tgt) is cst.Tuple and type(val) is cst.Tuple and len(tgt.elements) == len(val.elements):
                pairs = [(t.value, v.value) for t, v in zip(tgt.elements, val.elements)]
            for t, v in pairs:
                if (type(v) is cst.Name and v.value == name and type(t) is cst.Attribute
                        and type(t.value) is cst.Name and t.value.value == "self"):
                    return True
        return False

    def _stores_param(self, fn: cst.FunctionDef, i: int, arg: cst.Arg) -> bool:
        """Could the constructor `fn` keep the argument (or a part of it) where the instance may
        move it later (`self.model = model`, `self.net = DataParallel(model)`, `self.head =
        model.fc`)? False only when every use of the parameter is a copy (`deepcopy(model)`) or
        reads its parameters or state (`model.parameters()`, `model.state_dict()`)."""
        name = param_name(fn, i, arg)
        if name is None:
            return True
        key = (fn, name, "stores")
        cached = self._moves_param.get(key)
        if cached is not None:
            return cached
        m = self.m
        out = False
        for node in m.walk(fn.body):
            if type(node) is not cst.Name or node.value != name:
                continue
            parent = m.parent(node)
            tp = type(parent)
            if tp is cst.Arg:
                call = m.parent(parent)
                q = m.qualname(call.func) if type(call) is cst.Call else None
                if q in _COPIES or (
                        type(call) is cst.Call and type(call.func) is cst.Name and call.func.value in _NON_MOVING_BUILTINS):
                    continue
            elif tp is cst.Attribute and parent.value is node and parent.attr.value in _READ_ONLY_MODULE_METHODS:
                call = m.parent(parent)
                if type(call) is cst.Call and call.func is parent:
                    continue
            elif tp is cst.Comparison or tp is cst.ComparisonTarget or tp is cst.If or tp is cst.BooleanOperation \
                    or tp is cst.UnaryOperation:
                continue  # `if model is not None:`
            out = True
            break
        self._moves_param[key] = out
        return out

    def _stored_never_moved(self, cls: str, fn: cst.FunctionDef, i: int, arg: cst.Arg) -> bool:
        """The constructor `fn` of the file's plain class `cls` (not a module: moving an instance of
        one moves what it registered) only stores the parameter on `self` (`self.model = model`),
        and no code of the file moves or hands on those attributes (`self.model.to(d)`,
        `DataParallel(self.model)`, `trainer.model.cuda()`): the module stays where it was."""
        if self._class_kind(cls) in (MODULE, METRIC) or self._unresolved_bases(cls):
            return False
        name = param_name(fn, i, arg)
        if name is None:
            return False
        m = self.m
        attrs = set()
        for node in m.walk(fn.body):
            if type(node) is not cst.Name or node.value != name:
                continue
            parent = m.parent(node)
            if type(parent) is cst.Attribute and parent.attr is node:
                continue  # `self.model`: the attribute's name, not the parameter
            if not (type(parent) is cst.Assign and parent.value is node and all(
                    type(t.target) is cst.Attribute and type(t.target.value) is cst.Name
                    and t.target.value.value == "self" for t in parent.targets)):
                return False
            attrs.update(t.target.attr.value for t in parent.targets)
        if not attrs or attrs & self._external_attrs():
            return False
        key = ("stored-moved", frozenset(attrs))
        cached = self._moves_param.get(key)
        if cached is not None:
            return not cached
        moved = False
        for node in m.nodes:
            if not (type(node) is cst.Attribute and node.attr.value in attrs and type(node.value) is cst.Name
                    and node.value.value == "self"):
                continue
            parent = m.parent(node)
            tp = type(parent)
            if tp is cst.AssignTarget or (tp is cst.Call and parent.func is node):
                continue  # its own assignment; `self.model(x)`
            if tp is cst.Attribute and parent.value is node:
                call = m.parent(parent)
                if type(call) is cst.Call and call.func is parent:
                    if kb.module_method(parent.attr.value) == "inplace_move":
                        moved = True  # `self.model.to(device)`, `self.model.cuda()`
                        break
                    continue  # `self.model.eval()`, `self.model.parameters()`
                continue  # `self.model.module`, `self.model.training`
            if tp is cst.Arg:
                call = m.parent(parent)
                f = call.func if type(call) is cst.Call else None
                q = m.qualname(f) if f is not None else None
                if (q and q.startswith("torch.") and kb.class_kind(q) is None) or (
                        type(f) is cst.Name and f.value in _NON_MOVING_BUILTINS):
                    continue
            moved = True  # aliased, returned, handed to other code: it may be moved there
            break
        self._moves_param[key] = moved
        return not moved

    def _may_move_param(self, fn: cst.FunctionDef, i: int, arg: cst.Arg) -> bool:
        """Could the file's function `fn` move (in place) the module passed as this argument? Only
        a call of a moving method on that parameter, or passing it on to other code, can."""
        name = param_name(fn, i, arg)
        if name is None:
            return True
        key = (fn, name)
        cached = self._moves_param.get(key)
        if cached is not None:
            return cached
        out = False
        for c in self.m.calls_in(fn):
            f = c.func
            if type(f) is cst.Attribute and type(f.value) is cst.Name and f.value.value == name:
                if kb.module_method(f.attr.value) == "inplace_move":
                    out = True
                    break
            elif any(type(a.value) is cst.Name and a.value.value == name for a in c.args):
                q = self.m.qualname(f)
                if not (q and (q.startswith("torch.") or kb.class_kind(q) is not None
                               or q in _COPIES)) and not (
                        type(f) is cst.Name and f.value in ("print", "len", "isinstance", "id", "type")):
                    out = True  # handed on to code that may move it
                    break
        self._moves_param[key] = out
        return out

    def _builtin(self, name, e, pos, kw, frame) -> Value:
        if name in self.m.aliases:
            return UNKNOWN
        vals = [v for _, v, s in pos if not s]
        if name == "iter" and vals:
            return vals[0] if vals[0].kind in (LOADER, ITER, TUPLE) else UNKNOWN
        if name == "next" and vals:
            return vals[0].elem if vals[0].elem is not None else UNKNOWN
        if name == "enumerate" and vals:
            el = self._element(vals[0])
            return Value(ITER, None, elem=Value(TUPLE, None, items=(Value(HOSTVAL, HOST), el)))
        if name == "zip" and vals:
            return Value(ITER, None, elem=Value(TUPLE, None, items=tuple(self._element(v) for v in vals)))
        if name == "map" and len(vals) == 2 and vals[0].kind == FUNC and len(pos) == 2:
            # `map(lambda t: t.to(device), (x, y))`: what the function gives for an element
            el = self._element(vals[1])
            out = self._call_function(vals[0].fn, None, e, [(pos[1][0], el, "")], {}, frame, None)
            return Value(ITER, None, elem=out) if out.kind is not None else UNKNOWN
        if name == "dict" and not pos and kw and _DOUBLE_STAR not in kw and _STAR not in kw:
            # `dict(real_img=x)` handed to a method: its keys as a display gives them (E42-4)
            return _mapping(tuple((k, v) for k, (_x, v) in kw.items() if isinstance(k, str)), None, origin=e)
        if name in ("list", "tuple", "sorted", "reversed") and vals:
            el = self._element(vals[0])
            return Value(TUPLE, None, elem=el) if el.kind is not None else UNKNOWN
        if name in ("len", "int", "float", "str", "bool", "range", "print", "round", "abs", "isinstance",
                    "min", "max", "sum", "format", "repr", "hasattr", "getattr"):
            if name in ("min", "max", "sum", "abs") and any(v.kind == TENSOR for v in vals):
                return UNKNOWN
            if name == "sum" and len(pos) == 1 and not pos[0][2] and vals[0].kind in (TUPLE, ITER):
                el = self._element(vals[0])
                if el.kind == TENSOR:
                    # `sum(losses)` of a list of tensors: a tensor, holding their graphs (E49-1)
                    items = vals[0].items or (el,)
                    graph = any(it.kind == TENSOR and it.graph for it in items) or el.graph
                    return Value(TENSOR, el.dev, el.half, el.nonscalar, el.nograd, origin=e, graph=graph)
                if el.kind is None:
                    return UNKNOWN  # (what it adds up is not known: maybe tensors)
            if name == "getattr":
                return self._registered_alias(e, pos, frame)
            return Value(HOSTVAL, HOST, py=_BUILTIN_TYPES.get(name))
        if any(v.kind in (TENSOR, MODULE) for v in vals):
            self._operand_calls.add(e)  # `get_device(wav)` from a star import: see _device_of_operand
        if self._module_by_use(e):
            return Value(MODULE, None, origin=e, stateful=True)  # `from models import *`: `ResNet18()`
        return UNKNOWN

    def _qualified_call(self, e, q: str, pos, kw, frame) -> Value:
        q = kb.canonical(q)
        if q == "torch.nn.utils.rnn.pack_padded_sequence":
            # its `lengths` must be a CPU tensor whatever the input's device (torch >= 1.7): one
            # known to be moved to an accelerator fails ("'lengths' argument should be a 1D CPU
            # int64 tensor"); recorded as a mismatch with the call's own CPU requirement
            given = pos[1][:2] if len(pos) > 1 and not pos[1][2] else kw.get("lengths")
            if (given is not None and given[1].kind == TENSOR and given[1].dev is not None and given[1].dev.where == "acc"
                    and given[1].origin not in self._opaque_outputs):
                # (not an output of a module the file cannot see into: it may return its lengths as
                # a list, `scores, caps, decode_lengths, sort_ind = decoder(...)`)
                self._check(e, "cpu-arg", [(e.func, Value(TENSOR, HOST, nonscalar=True)), given], frame)
        if q == "torch.distributions.utils.broadcast_all" and pos and not kw and not any(st for _, _, st in pos):
            # `self.a, self.b = broadcast_all(a, b)`: each argument as a tensor of the common shape,
            # on the device of the tensor arguments (numbers join them there) (E40-1)
            ts = [v for _, v, _ in pos if v.kind == TENSOR]
            if ts and all(v.dev is not None for v in ts) and all(v.kind in (TENSOR, HOSTVAL) for _, v, _ in pos):
                dev = ts[0].dev
                for v in ts[1:]:
                    dev = join_dev(dev, v.dev)
                wide = any(v.nonscalar for v in ts)
                items = tuple(replace(v, nonscalar=v.nonscalar or wide) if v.kind == TENSOR
                              else Value(TENSOR, dev, nonscalar=wide, origin=e) for _, v, _ in pos)
                return Value(TUPLE, None, items=items)
            return UNKNOWN
        if q.startswith("torch.distributions.") and q.rsplit(".", 1)[-1][:1].isupper() and ".constraints" not in q \
                and ".transforms" not in q:
            # `torch.distributions.Normal(mu, std)`: a distribution whose parameters live where its
            # tensor arguments are; what it draws (`sample()`, `rsample()`) is there (E38-1)
            devs = [v.dev for _, v, st in pos if not st and v.kind == TENSOR]
            devs += [v.dev for k0, (_, v) in kw.items() if k0 not in (_STAR, _DOUBLE_STAR) and v.kind == TENSOR]
            if devs and all(d is not None for d in devs):
                dev = devs[0]
                for d in devs[1:]:
                    dev = join_dev(dev, d)
                nonscalar = any(v.nonscalar for _, v, st in pos if not st and v.kind == TENSOR)
                return Value(OBJECT, dev, origin=e, py=DISTRIBUTION, nonscalar=nonscalar)
            return UNKNOWN
        if q == "types.SimpleNamespace" and not pos and _DOUBLE_STAR not in kw:
            # `SimpleNamespace(loss=loss, logits=logits)`: a record of the fields given
            return Value(OBJECT, None, origin=e, keys=tuple((k0, v0) for k0, (x0, v0) in kw.items() if k0 != _STAR))
        if q.startswith("tqdm") or q in ("itertools.cycle", "itertools.islice"):
            vals = [v for _, v, s in pos if not s]
            return Value(ITER, None, elem=self._element(vals[0])) if vals else UNKNOWN
        if q == "copy.deepcopy":
            # a copy of a module or tensor where the original is now (an EMA or target network
            # copied before `model.to(device)` stays on the host): later moves of the original,
            # in place or not, leave the copy where it is, so it gets an origin of its own
            v = pos[0][1] if len(pos) == 1 and not pos[0][2] and not kw else UNKNOWN
            if v.kind == OBJECT and v.cls is not None:
                return v  # an instance of a file class: a copy of its attributes, where they are (SD3's scheduler copy)
            return replace(v, origin=e) if v.kind in (MODULE, METRIC, TENSOR) else UNKNOWN
        if q == "torch.device":
            dev = self._device_value(pos[0][0], pos[0][1]) if pos else None
            if dev is not None and dev.is_acc:
                dev = Dev("acc", dev.key, e)
            return Value(DEVICE, dev, origin=e)
        if q in _NOGRAD:
            return UNKNOWN
        if _reads_into_host(q):
            # an image or array read into host memory (a NumPy array where a NumPy constructor made it)
            array = q in _NUMPY_ARRAYS or (q.startswith("numpy.random.") and _np_random_array(
                q.rsplit(".", 1)[-1], pos, kw))
            return Value(None, HOST, origin=e, py=NDARRAY if array else None)
        if (q.startswith("numpy.") and q.rsplit(".", 1)[-1] in _NUMPY_ELEMENTWISE and pos
                and any(not st and v.py == NDARRAY for _, v, st in pos)
                and all(v.kind in (None, HOSTVAL) and (v.py == NDARRAY or v.kind == HOSTVAL) for _, v, st in pos if not st)):
            # `np.maximum(arr, 1.0)`, `np.exp(arr)` of arrays and numbers: an array (LEGCN's `pvt`, A70-E1)
            return Value(None, HOST, origin=e, py=NDARRAY)
        if q in _NUMPY_GENERATORS:
            return Value(None, None, origin=e, py=NP_RNG)  # `np.random.RandomState(0)`: its draws are arrays
        if q == "torch.autograd.Variable":  # the pre-0.4 wrapper: the tensor itself today
            vals = [v for _, v, s in pos if not s]
            return vals[0] if vals and vals[0].kind == TENSOR else UNKNOWN
        ck = kb.class_kind(q)
        if ck is not None:
            return self._construct(e, q, ck, pos, kw, frame)
        owner, _, last = q.rpartition(".")
        if last in _PRETRAINED:
            ok = kb.class_kind(owner)
            if ok == TOKENIZER:
                return Value(TOKENIZER, HOST, origin=e)
            if ok == MODULE:  # weights loaded on the host unless placed by `device_map=`/`device=`
                base = pos[0][1] if pos and not pos[0][2] else None
                if base is not None and base.kind == MODULE and "device_map" not in kw and "device" not in kw:
                    # `PeftModel.from_pretrained(base, adapter)`: adapters injected into the base
                    # model in place, on its device
                    return Value(MODULE, base.dev, base.half, origin=e, placed=base.placed, stateful=True,
                                 half_at=base.half_at)
                dev, given = self._placement(e, kw)
                if "device_map" in kw or _quantized(kw):
                    # placed by the load (8-/4-bit weights are put on the GPU while loading)
                    dev, given = None, True
                # `torch_dtype=torch.float16` (`dtype=` in newer releases): float16 weights
                half = any(k in kw and kw[k][1].kind == DTYPE and kw[k][1].half for k in ("torch_dtype", "dtype"))
                return Value(MODULE, dev if given else (None if frame.devctx else HOST), half, origin=e,
                             placed=e if given else None, stateful=True, half_at=e if half else None)
        info = kb.function(q)
        if info is not None:
            return self._torch_function(e, q, info, pos, kw, frame)
        if q == "torch.hub.load" and _hub_model(e):
            # a hub entry point's model (`torch.hub.load("pytorch/vision", "resnet18")`): a module;
            # where it lives is the entry point's choice (YOLOv5's picks the GPU itself)
            return Value(MODULE, None, origin=e, stateful=True)
        if q.partition(".")[0] not in _NON_MUTATING_ROOTS:
            self._escape_containers(e, frame)  # `utils.to_device(batch, device)`
        if any(v.kind in (TENSOR, MODULE) for _, v, _s in pos):
            self._operand_calls.add(e)  # `get_device(wav)`: see _device_of_operand
        if not q.startswith("torch.") and self._module_by_use(e):
            # `model = Net()` with `Net` from the project's own package (`from model import Net`):
            # used as a module, it is one; where its constructor put it is not known
            return Value(MODULE, None, origin=e, stateful=True)
        return UNKNOWN

    def _module_by_use(self, e: cst.Call) -> bool:
        """The call of unknown code `e` (through a chain of module methods, `Net().to(d).eval()`)
        is assigned to a name of a function or module body that the same body uses the way only
        an `nn.Module` is used: its `.parameters()`/`.named_parameters()` (given to an optimizer),
        or both `.load_state_dict(...)` and `.eval()` (an inference script)."""
        m = self.m
        cur = e
        parent = m.parent(cur)
        while (type(parent) is cst.Attribute and parent.value is cur and parent.attr.value in _SELF_RETURNING
               and type(m.parent(parent)) is cst.Call and m.parent(parent).func is parent):
            cur = m.parent(parent)
            parent = m.parent(cur)
        if type(parent) is not cst.Assign or parent.value is not cur or len(parent.targets) != 1:
            return False
        target = parent.targets[0].target
        if type(target) is cst.Name:
            key = (m.scope_of(parent), target.value)
        elif (type(target) is cst.Attribute and type(target.value) is cst.Name and target.value.value == "self"
              and m.class_of(parent) is not None):
            key = (m.class_of(parent), "self." + target.attr.value)  # used in any method of the class
        else:
            return False
        found = self._module_uses().get(key)
        return found is not None and ("parameters" in found or {"load_state_dict", "eval"} <= found)

    def _module_uses(self) -> dict:
        """(scope, name) -> the module-only methods called on that name in that scope."""
        if self._module_use_index is None:
            out: dict = {}
            m = self.m
            for call, recv, meth in m.method_calls("parameters", "named_parameters", "load_state_dict", "eval"):
                if call.args and meth in ("parameters", "named_parameters", "eval"):
                    continue
                if type(recv) is cst.Name:
                    key = (m.scope_of(call), recv.value)
                elif (type(recv) is cst.Attribute and type(recv.value) is cst.Name and recv.value.value == "self"
                      and m.class_of(call) is not None):
                    key = (m.class_of(call), "self." + recv.attr.value)
                else:
                    continue
                out.setdefault(key, set()).add("parameters" if meth == "named_parameters" else meth)
            self._module_use_index = out
        return self._module_use_index

    def _by_default(self, arg) -> bool:
        """`device=<name>` whose value is a parameter's default device (see _constant_default)."""
        if arg is None:
            return False
        x, v = arg
        if type(x) is not cst.Name or v.kind != DEVICE or v.origin is None:
            return False
        p = self.m.parent(v.origin)
        return type(p) is cst.Param and p.default is v.origin

    def _placement(self, e, kw) -> tuple[Dev | None, bool]:
        """device= of a constructor or factory: (device, given). A `**mapping` argument may carry
        a device (`**dd` with `dd = dict(device=device, ...)`, timm's convention): unknown."""
        if "device" not in kw and any(a.star == "**" for a in e.args):
            dv = kw.get(_DOUBLE_STAR, (None, UNKNOWN))[1]
            if not (dv.kind == MAPPING and dv.keys is not None and not _grown_from_empty(dv)
                    and not any(k0 in ("device", "device_map") for k0, _ in dv.keys)):
                return None, True
            # (`Net(**model_configs["vits"])` of dict displays without a device key: no placement)
        if "device" in kw:
            x, v = kw["device"]
            if type(x) is cst.Name and x.value == "None":
                return HOST, True
            return self._device_value(x, v), True
        return None, False

    def _construct(self, e, q, kind, pos, kw, frame) -> Value:
        if kind == DEVICE:
            return Value(DEVICE, None, origin=e)
        if kind in (MODULE, METRIC):
            if kb.is_wrapper(q) and (pos or "module" in kw):
                # (`DistributedDataParallel(module=backbone, ...)`, insightface's arcface, P48-2)
                inner = pos[0][1] if pos else kw["module"][1]
                if inner.kind in (OPTIMIZER, SCHEDULER):
                    return inner
                return Value(MODULE, inner.dev if inner.kind == MODULE else None, inner.half, origin=e,
                             stateful=True, scatters=True, wrap=e)
            dev, given = self._placement(e, kw)
            if "device_map" in kw:
                dev, given = None, True
            if not given and q in CONTAINERS and (_STAR in kw or any(type(x) is not cst.Call for x, _, _ in pos)):
                # `nn.Sequential(*list(model.children())[:-1])`: where its parts are
                parts = [(_elem_of(v) or UNKNOWN) if v.kind == TUPLE else v for _, v, s in pos if not s]
                if _STAR in kw:
                    star = kw[_STAR][1]
                    el = _elem_of(star) if star.kind == TUPLE else (star.elem if star.kind == ITER else None)
                    parts.append(el if el is not None else UNKNOWN)
                dev = None
                if parts and all(p.kind == MODULE for p in parts):
                    dev = parts[0].dev
                    for p in parts[1:]:
                        dev = join_dev(dev, p.dev)
                return Value(kind, dev, origin=e, stateful=True)
            if not given:
                dev = HOST if kb.builds_on_host(q) and not frame.devctx else None
            return Value(kind, dev, origin=e, placed=e if given else None, stateful=self._stateful(q, pos, kw))
        if kind == TENSOR:  # torch.Tensor(...), nn.Parameter(t), torch.FloatTensor(...)
            inner = pos[0][1] if pos else None
            if q.rsplit(".", 1)[-1] in ("Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"):
                # a module's parameter or buffer lives wherever its module is moved: not known here
                self._param_made.add(e)
                if (inner is not None and inner.kind == TENSOR and inner.dev is not None and inner.dev.is_host
                        and not frame.devctx):
                    self._made_on_host.add(e)
                dev = None
                parent = self.m.parent(e)
                if (inner is not None and inner.kind == TENSOR and type(parent) is cst.Assign
                        and all(type(t.target) is cst.Name for t in parent.targets)
                        and self.m.enclosing(e, cst.ClassDef) is None
                        and inner.dev is not None and inner.dev.where == "acc"):
                    # `w = nn.Parameter(torch.zeros(3).to(device))` in a script or a plain function:
                    # the accelerator tensor it wraps, where a module holding it later would be
                    # moved too (SimplePIM, E44-3); one wrapping a host tensor may be returned to a
                    # module's constructor and moved with it (transformers' `_alloc_expert_proj`)
                    dev = inner.dev
                return Value(TENSOR, dev, nonscalar=inner.nonscalar if inner is not None else False,
                             deep=inner.deep if inner is not None else False, origin=e)
            if inner is not None and inner.kind == TENSOR:
                return Value(TENSOR, inner.dev, inner.half, inner.nonscalar, origin=e)
            dev, given = self._placement(e, kw)
            if q.startswith("torch.cuda.") and q in kb.LEGACY_TENSOR_TYPES:
                dev, given = Dev("acc", "cuda"), True
            listed = bool(pos) and ((type(pos[0][0]) in (cst.List, cst.Tuple) and len(pos[0][0].elements) > 0)
                                    or _sliced(pos[0][0]) or _list_repeat(pos[0][0])
                                    # `torch.Tensor(rows)` of a list or tuple built elsewhere (E50-3)
                                    or (not pos[0][2] and pos[0][1].kind == TUPLE and pos[0][1].items != ())
                                    # `torch.FloatTensor(arr)` of a NumPy array (LEGCN#1, A70-E1)
                                    or (not pos[0][2] and pos[0][1].py == NDARRAY and pos[0][1].kind in (None, HOSTVAL))
                                    or self._numpy_array_call(pos[0][0]))
            # `torch.FloatTensor(n, k)`: sizes, so at least one dimension per size (a legacy
            # constructor never makes a 0-dim tensor from sizes or data)
            sizes = len(pos) >= 2 and all(not s and v.kind in (HOSTVAL, None) for _, v, s in pos)
            if len(pos) == 1 and not pos[0][2] and _size_of_tensor(pos[0][0]):
                # `self.Tensor(input.size())` (pix2pix's GANLoss targets): the shape of a tensor the
                # code sizes a target for, a prediction map with dimensions
                listed = True
            return Value(TENSOR, dev if given else (HOST if not (self.set_default_device or frame.devctx) else None),
                         nonscalar=listed or sizes, deep=sizes, origin=e)
        if kind == LOADER:
            ds = pos[0][1] if pos else (kw["dataset"][1] if "dataset" in kw else UNKNOWN)
            ds_expr = pos[0][0] if pos and not pos[0][2] else (kw["dataset"][0] if "dataset" in kw else None)
            places = ("collate_fn" in kw and not self._host_collator(kw["collate_fn"][0])) or "pin_memory_device" in kw
            collate = kw.get("collate_fn", (None, UNKNOWN))[1]
            if collate.kind == FUNC:
                # the loader calls the collate function with a list of the dataset's samples
                dev = self._dataset_device(ds, e, frame, ds_expr)
                sample = Value(TUPLE, None, elem=Value(TENSOR, dev)) if dev is not None else UNKNOWN
                if ds.kind == TUPLE and dev is not None and _elem_of(ds) is not None:
                    sample = _elem_of(ds)  # a list of samples: the samples themselves (graph objects)
                made = self._call_function(collate.fn, None, e, [(e, Value(TUPLE, None, elem=sample), "")], {},
                                           frame, None)
                if (made.kind in (TENSOR, TUPLE) or (made.kind == OBJECT and made.cls is not None)) and "pin_memory_device" not in kw:
                    # its batches: what it returns (a tensor, a tuple, an instance of a batch class of
                    # the file), whose tensors are the loader's batch tensors (E50-6)
                    return Value(LOADER, None, elem=_from_loader(made, e), origin=e)
            dev = None if places else self._dataset_device(ds, e, frame, ds_expr)
            return Value(LOADER, None, elem=Value(BATCH, dev, origin=e), origin=e)
        if kind == DATASET:
            tensors = [v for _, v, s in pos if not s and v.kind == TENSOR]
            if tensors and len(tensors) == len(pos):
                dev = tensors[0].dev
                for t in tensors[1:]:
                    dev = join_dev(dev, t.dev)
                return Value(DATASET, dev, origin=e)
            if q.rsplit(".", 1)[-1] == "TensorDataset" and any(v.kind is None for _, v, s in pos if not s):
                # tensors the engine cannot place (`x, y = helper(x, y)`): not known to be on the host
                return Value(DATASET, EITHER, origin=e)
            if self._moving_transform(e):
                # `MNIST(..., transform=transforms.Compose([..., transforms.Lambda(lambda x:
                # x.to(device))]))` (Modern-CV's autoencoder notebooks): its samples are moved
                return Value(DATASET, None, origin=e)
            return Value(DATASET, HOST if kb.dataset_on_host(q) else None, origin=e)
        if kind == OPTIMIZER and pos and pos[0][1].kind == PARAMS:
            return _optimizer_over(pos[0][1], e)
        if kind in (OPTIMIZER, SCHEDULER, SCALER):
            return Value(kind, None, origin=e)
        return Value(kind, None, origin=e)

    def _stateful(self, q: str, pos, kw) -> bool:
        """A torch module that holds tensors: layers, and losses given a weight tensor."""
        from gpulint.model import STATELESS_MODULES

        last = q.rsplit(".", 1)[-1]
        if "loss" in kb.class_tags(q) or last.endswith("Loss"):
            ws = [v for k, (x, v) in kw.items() if k in ("weight", "pos_weight")]
            if last in _WEIGHT_FIRST and pos:
                ws.append(pos[0][1])
            return any(v.kind == TENSOR and v.dev is not None and v.dev.is_host for v in ws)
        return q.startswith("torch.nn.") and last not in STATELESS_MODULES

    def _dataset_device(self, ds: Value, e=None, frame=None, expr=None) -> Dev | None:
        """Where the samples of a dataset live (so where a DataLoader's default collation leaves
        its batches): a TensorDataset's tensors' device; for a Dataset class of this file what its
        `__getitem__` returns (every tensor in it: a tuple, a dict or one tensor), unknown when the
        class moves tensors itself; else the host (datasets load on the CPU), unless the dataset is
        a value the engine cannot see (a parameter without known call sites)."""
        if ds.kind == DATASET and ds.cls is None:
            return ds.dev if ds.dev is not None else HOST
        if ds.cls is not None and e is not None and ds.kind in (DATASET, OBJECT):
            sample = self._call_method(ds.cls, "__getitem__", ds, e, [(e, Value(HOSTVAL, HOST), "")], {}, frame)
            dev = _leaf_dev(sample)
            if dev is not None:
                return dev
            if self._class_moves_tensors(ds.cls) or any(
                    "__call__" in info.methods and self._class_moves_tensors(name) for name, info in self.m.classes.items()):
                return None  # the class, or a transform class of the file its samples may pass through, moves them
            return HOST
        if ds.kind == TUPLE and (ds.elem is not None or ds.items):
            # a list of samples (`[(torch.randn(4), torch.tensor(1)) for _ in range(8)]`)
            return _leaf_dev(ds)
        if ds.kind is None and ds.dev is None and expr is not None and self._made_here(expr):
            return HOST
        return None

    def _class_moves_tensors(self, cls: str) -> bool:
        info = self.m.classes.get(cls)
        if info is None:
            return True
        for c in self.m.calls_in(info.node):
            f = c.func
            if type(f) is cst.Attribute and f.attr.value in ("to", "cuda"):
                return True
            if any(a.keyword is not None and a.keyword.value == "device" for a in c.args):
                return True
        return False

    def _host_collator(self, x, depth: int = 0) -> bool:
        """A collate function of a library that stacks samples on the host: torch's
        `default_collate`, Hugging Face's `DataCollator*` classes and `default_data_collator`."""
        if type(x) is cst.Name and depth < 2:
            bindings = self.m.bindings_of(x)
            if bindings and all(b.how == "assign" and b.value is not None for b in bindings):
                return all(self._host_collator(b.value, depth + 1) for b in bindings)
        if type(x) is cst.Call:
            x = x.func
        q = self.m.qualname(x) or ""
        last = q.rsplit(".", 1)[-1]
        if q.startswith("transformers."):
            return last.startswith("DataCollator") or last == "default_data_collator"
        return q in ("torch.utils.data.default_collate", "torch.utils.data.dataloader.default_collate",
                     "torch.utils.data._utils.collate.default_collate")

    def _made_here(self, expr) -> bool:
        """A dataset built by a call in this file (directly, or a name bound only to calls), or a
        split of one (`tokenized["train"]`)."""
        if type(expr) is cst.Subscript:
            expr = expr.value
        if type(expr) is cst.Call:
            return True
        if type(expr) is not cst.Name:
            return False
        bindings = self.m.bindings_of(expr)
        return bool(bindings) and all(b.how == "assign" and isinstance(b.value, cst.Call) for b in bindings)

    def _tensor_operands(self, info, pos, kw, q: str = "") -> list:
        ops = []
        q_last = q.rsplit(".", 1)[-1]
        # by position: `torch.stft(x, n_fft, hop, win, window)` or `torch.gather(x, 1, idx)` name the
        # tensor parameters that come after others (E56-4)
        names = info.slots or info.tensor_params or ()
        star = "*args" in names
        for i, (x, v, s) in enumerate(pos):
            if s:
                sv = kw.get(_STAR, (None, UNKNOWN))[1] if s == "*" else UNKNOWN
                if sv.kind == TUPLE and sv.elem is not None and sv.elem.kind == TENSOR and i == 0 and names:
                    # `torch.lu_unpack(*torch.linalg.lu_factor(Q))`: the unpacked tensors are its operands
                    ops.append((x, sv.elem))
                continue
            pname = names[i] if i < len(names) else ("*args" if star else None)
            if pname is None:
                continue
            if v.kind == TUPLE:
                els = x.elements if type(x) in (cst.Tuple, cst.List) else None
                # an element of unknown kind in a sequence torch takes tensors from (`torch.cat([idx,
                # torch.tensor([n])])`, `idx` a value the engine cannot see) is a tensor of unknown
                # device: it keeps the result's device unknown
                kinds = (TENSOR, None) if pname == "tensors" else (TENSOR,)
                if v.items is not None and els is not None and len(els) == len(v.items):
                    # `torch.cat((a, b))`: each element is an operand, named by its own expression
                    ops.extend((el.value, _as_tensor(it)) for el, it in zip(els, v.items) if it.kind in kinds)
                else:
                    ops.extend((x, _as_tensor(it)) for it in (v.items or ()) if it.kind in kinds)
                if v.elem is not None and (v.elem.kind == TENSOR or (pname == "tensors" and _moved_unknown(v.elem))):
                    # `torch.cat(parts)` of tensors appended as `t.cpu()` (their kind unknown, not
                    # where they are): host parts
                    ops.append((x, _as_tensor(v.elem)))
                continue
            if (v.kind is None and v.dev is not None and v.dev.is_acc and v.py != NUMBER) or _moved_unknown(v):
                v = replace(v, kind=TENSOR)  # a forward input (or a value moved on purpose) where torch takes a Tensor
            if v.kind == TENSOR:
                if pname == "weight" and q_last in kb.CLASS_WEIGHTED and not v.nonscalar:
                    v = replace(v, nonscalar=True)
                ops.append((x, v))
        for k, (x, v) in kw.items():
            if v.kind == TENSOR and k in names:
                if k == "weight" and q_last in kb.CLASS_WEIGHTED and not v.nonscalar:
                    v = replace(v, nonscalar=True)  # a loss's class weights: one per class
                ops.append((x, v))
        return ops

    def _torch_function(self, e, q, info, pos, kw, frame) -> Value:
        ret = info.returns
        if ret == "tensor_or_tensors":
            last = q.rsplit(".", 1)[-1]
            if q == "torch.where" and len(pos) == 1 and not kw and not pos[0][2]:
                ret = "tensors"  # `torch.where(cond)`: a tuple of index tensors where `cond` is
            elif last in ("max", "min", "median", "nanmedian") and pos and not any(s for _, _, s in pos):
                # `torch.max(x)`: a 0-dim tensor; `torch.max(x, other)`: elementwise; `torch.max(x, 1)`
                # or `dim=`: a (values, indices) pair on x's device
                if "dim" in kw or (len(pos) > 1 and pos[1][1].kind != TENSOR):
                    ret = "tensors"
                else:
                    ret = "tensor"
            else:
                ret = "tensor" if len(pos) + len(kw) > 1 else "other"
        elif ret == "mixed" and q == "torch.sort":
            ret = "tensors"  # (values, indices) on the input's device, whatever the overload
        elif ret == "mixed" and q in ("torch.eq", "torch.ne") and pos and not pos[0][2] and pos[0][1].kind == TENSOR:
            # `torch.ne(y[:, None], labels[None, :])`: an overload for Python numbers returns a
            # bool, the one taking a tensor a tensor (MIL-Lab#4's smooth top-k SVM)
            ret = "tensor"
        if ret not in ("tensor", "tensors"):
            if ret in (MODULE, OPTIMIZER, SCHEDULER, LOADER, DATASET, METRIC, SCALER):
                dev, given = self._placement(e, kw)
                return Value(ret, dev if given else (HOST if ret == MODULE else None), origin=e)
            return Value(HOSTVAL, HOST) if ret == "none" else UNKNOWN
        ops = self._tensor_operands(info, pos, kw, q)
        dev, given = self._placement(e, kw)
        creates = False
        if not given:
            if ops:
                # a host tensor that may have no dimension (`torch.tensor(n)`, a clamp bound) does
                # not decide where the result is, unless every operand is one
                decisive = [v for _, v in ops if not (v.dev is not None and v.dev.is_host and not v.nonscalar)]
                decisive = decisive or [v for _, v in ops]
                dev = decisive[0].dev
                for v in decisive[1:]:
                    dev = join_dev(dev, v.dev)
                if len(ops) > 1:
                    self._check(e, "call", ops, frame, strict=q.rsplit(".", 1)[-1] in _STRICT_OPERANDS)
            elif info.creates or q.rsplit(".", 1)[-1] in ("from_numpy", "tensor", "as_tensor"):
                creates = True
                dev = None if ((self.set_default_device or frame.devctx) and not q.endswith("from_numpy")) else HOST
                if (q.rsplit(".", 1)[-1] in ("tensor", "as_tensor") and pos and not pos[0][2]
                        and type(pos[0][0]) is cst.Name and pos[0][1].kind is None and pos[0][1].dev != HOST
                        and self._param_read(pos[0][0], e)):
                    # `torch.tensor(x)` of a parameter of unknown kind (maybe a tensor, which keeps
                    # its device: transformers' d_fine `torch.tensor(spatial_shapes)`; also re-bound
                    # by this very statement, `phonemes = torch.as_tensor(phonemes)`, speedyspeech,
                    # P55-5): not a host factory
                    dev = pos[0][1].dev
                elif (q.rsplit(".", 1)[-1] in ("tensor", "as_tensor") and pos and not pos[0][2]
                        and pos[0][1].kind == TENSOR):
                    # `torch.tensor(x)` of a tensor copies it where it is (PRECISION30 A3: a
                    # dataset's `torch.tensor(x).float()` of inputs moved to the device)
                    dev = pos[0][1].dev
            else:
                dev = None
        half = any(v.half for _, v in ops)
        nonscalar = (creates or given) and self._nonscalar_factory(q, pos, kw)
        if not nonscalar and ops and (info.shape_same or (
                "reduction" in kw and string_value(kw["reduction"][0]) == "none")):
            nonscalar = any(v.nonscalar for _, v in ops)
        if not nonscalar and q.rsplit(".", 1)[-1] in kb.ALWAYS_NONSCALAR:
            nonscalar = True
        if not nonscalar and q.rsplit(".", 1)[-1] in _REDUCTIONS:
            nonscalar = _reduced_keeps_a_dim(pos[1:], kw, bool(pos) and not pos[0][2] and pos[0][1].deep)
        origin = e
        if ops and not given and dev is not None and dev.is_host:
            # `torch.cat([past_target, past_covariate], dim=2)` of parts of one batch a DataLoader (or
            # a tokenizer) made: still that batch, for the rules that name where a batch comes from
            first = ops[0][1].origin
            if (type(first) is cst.Call and all(v.origin is first for _, v in ops)
                    and (first in self.tokenized or kb.class_kind(self.m.qualname(first.func) or "") == LOADER)):
                origin = first
        graph = (not creates and q.rsplit(".", 1)[-1] in _DIFFERENTIABLE_FUNCTIONS and any(v.graph for _, v in ops))
        if given and dev is not None and dev.is_host and self._by_default(kw.get("device")):
            given = False  # `device=device`, a parameter the call left to its default "cpu": not placed on purpose
        v = Value(TENSOR, dev, half, nonscalar, origin=origin, placed=e if given else None,
                  deep=(creates or given) and self._deep_factory(q, pos), graph=graph)
        if "out" in kw:
            # `torch.arange(n, out=buf)` returns `buf`: where that buffer is (flowtron's mask)
            ov = kw["out"][1]
            v = replace(v, dev=ov.dev if ov.kind == TENSOR else None, placed=None)
        if ret == "tensors":
            return Value(TUPLE, None, elem=v)
        return v

    def _param_read(self, name: cst.Name, call: cst.Call) -> bool:
        """Every binding of `name` is a parameter, or the target of the statement that holds `call`
        (`x = torch.as_tensor(x)`): what `call` reads is the parameter."""
        bindings = self.m.bindings_of(name)
        if not any(b.how == "param" for b in bindings):
            return False
        stmt = self.m.statement_of(call)
        return all(b.how == "param" or (stmt is not None and self.m.contains(stmt, b.node)) for b in bindings)

    @staticmethod
    def _deep_factory(q, pos) -> bool:
        """A factory making at least two dimensions: `torch.tensor([[...], ...])`, `torch.zeros(a, b)`."""
        last = q.rsplit(".", 1)[-1]
        if not pos or pos[0][2]:
            return False
        first = pos[0][0]
        if last in ("tensor", "as_tensor", "Tensor", "FloatTensor", "LongTensor"):
            return (type(first) in (cst.List, cst.Tuple) and len(first.elements) > 0
                    and type(first.elements[0].value) in (cst.List, cst.Tuple))
        if last in ("zeros", "ones", "empty", "rand", "randn"):
            if type(first) in (cst.Tuple, cst.List):
                return len(first.elements) >= 2
            return len([p for p in pos if not p[2]]) >= 2
        if last == "eye":
            return True
        return False

    def _numpy_array_call(self, x) -> bool:
        """`np.eye(k)`, `np.zeros((n, m))`, `np.arange(n)`: a NumPy constructor of an array with at
        least one dimension."""
        if type(x) is not cst.Call:
            return False
        q = self.m.qualname(x.func) or ""
        if q.startswith("numpy.random."):
            # `np.random.normal(scale=0.2)` draws one number (PRECISION32 A1): only a size makes an array
            pos = [a for a in x.args if a.keyword is None and not a.star]
            kw = {a.keyword.value: a for a in x.args if a.keyword is not None}
            return any(a.star for a in x.args) or _np_random_array(q.rsplit(".", 1)[-1], pos, kw)
        return q in _NUMPY_ARRAY_MAKERS

    def _nonscalar_factory(self, q, pos, kw) -> bool:
        last = q.rsplit(".", 1)[-1]
        if last == "from_numpy":
            return True  # an array (0-d arrays through from_numpy are rare)
        if last in ("tensor", "as_tensor", "Tensor", "FloatTensor", "LongTensor"):
            # a list display, or a list or tuple built elsewhere, or an array a NumPy constructor
            # makes (`torch.tensor(np.eye(k))`): at least one dimension
            return bool(pos) and (type(pos[0][0]) in (cst.List, cst.Tuple, cst.ListComp) or _sliced(pos[0][0])
                                  or _list_repeat(pos[0][0]) or (
                not pos[0][2] and pos[0][1].kind == TUPLE) or self._numpy_array_call(pos[0][0]) or (
                not pos[0][2] and pos[0][1].py == NDARRAY and pos[0][1].kind in (None, HOSTVAL)))
            # (a name bound to a NumPy array, `P = torch.FloatTensor(arr)`, LEGCN#1, A70-E1)
        if last in ("arange", "linspace", "logspace", "randperm", "eye", "hann_window", "hamming_window",
                    "blackman_window", "bartlett_window", "kaiser_window"):
            return True  # (a window function makes a 1-D window: gard-adversarial-speaker-id#2's STFT)
        if last in ("randint",):
            sizes = [x for x, v, st in pos if type(x) in (cst.Tuple, cst.List)]
            return bool(sizes) and len(sizes[-1].elements) > 0
        if last in ("zeros", "ones", "empty", "full", "rand", "randn"):
            if not pos and "size" in kw:
                first = kw["size"][0]  # `torch.ones(size=(n,))`
                return type(first) not in (cst.Tuple, cst.List) or len(first.elements) > 0
            if not pos:
                return False
            first = pos[0][0]
            sizes = [el.value for el in first.elements] if type(first) in (cst.Tuple, cst.List) else [x for x, _, _ in pos]
            if any(type(x) is cst.Integer and x.value == "0" for x in sizes):
                # `torch.zeros(0)`: an empty tensor, a "nothing yet" sentinel (silero-vad's decoder
                # state): no element ever meets another device's, so it does not count as an operand
                return False
            if type(first) in (cst.Tuple, cst.List):
                return len(first.elements) > 0
            return True
        if last.endswith("_like"):
            return bool(pos) and not pos[0][2] and pos[0][1].kind == TENSOR and pos[0][1].nonscalar  # its input's shape
        return False

    def _method(self, e, meth, recv, rv: Value, pos, kw, frame) -> Value:
        k = rv.kind
        if (rv.py == NDARRAY and k in (None, HOSTVAL) and meth in ("sum", "mean", "max", "min", "prod", "std")
                and "keepdims" in kw and type(kw["keepdims"][0]) is cst.Name and kw["keepdims"][0].value == "True"):
            return Value(k, HOST, origin=e, py=NDARRAY)  # `a.sum(1, keepdims=True)`: still an array
        if rv.py == NDARRAY and k in (None, HOSTVAL) and meth in _NDARRAY_TO_NDARRAY:
            return Value(k, HOST, origin=e, py=NDARRAY)  # `arr.astype(np.float32)`: still an array
        if rv.py == NDARRAY and k in (None, HOSTVAL) and meth == "tolist" and not pos and not kw:
            return Value(TUPLE, None, origin=e, py="list")  # `X[200:].tolist()`: nested Python lists
        if rv.py == NP_RNG and k is None:
            return Value(None, HOST, origin=e, py=NDARRAY if _np_random_array(meth, pos, kw) else None)
        if k == TENSOR:
            if (meth == "get_device" and not pos and not kw and rv.dev is not None and rv.dev.where == "acc"
                    and not rv.dev.key.startswith(_NON_CUDA_ACCELERATORS)):
                # the index of the CUDA device the tensor is on: a device for `.to()` (a helper's
                # `return next(module.parameters()).get_device()`, E42-3)
                return Value(DEVICE, rv.dev, origin=e, py="int")
            how = kb.tensor_method(meth)
            if how is None:
                return UNKNOWN
            if meth.startswith("new_") and ("device" in kw or any(a.star == "**" for a in e.args)):
                # `x.new_tensor(data, device=d)`: made on `d`, not where `x` is (latent_ode, PRECISION25 A1)
                dev, given = self._placement(e, kw)
                return Value(TENSOR, dev if given else None, origin=e, nonscalar=meth != "new_tensor")
            if how in ("same", "inplace", "cast"):
                ops = [(x, v) for x, v, s in pos if not s and v.kind == TENSOR]
                # keyword operands too: `.gather(dim=-1, index=idx)`, `.masked_fill(mask=m, value=0)`
                ops += [(x, v) for k0, (x, v) in kw.items()
                        if k0 not in (_STAR, _DOUBLE_STAR, "out") and v.kind == TENSOR]
                if ops and how != "cast" and meth not in _CROSS_DEVICE_METHODS:
                    # an in-place method's receiver is its output: even a 0-dim host one fails
                    target = (replace(rv, nonscalar=True) if how == "inplace" and rv.dev is not None
                              and rv.dev.is_host and meth not in _RESHAPING_INPLACE else rv)
                    self._check(e, "call", [(recv, target)] + ops, frame, strict=meth in _STRICT_OPERANDS)
                # an in-place method returns its receiver, shape and all (but `squeeze_`,
                # `resize_`...); an elementwise one broadcasts, which never drops a dimension
                nonscalar = (rv.nonscalar and (meth in kb.SHAPE_KEEPING or meth in _ELEMENTWISE or (
                    how == "inplace" and meth not in _RESHAPING_INPLACE))) or meth in ("unsqueeze", "unsqueeze_")
                if not nonscalar and meth in _REDUCTIONS:
                    nonscalar = _reduced_keeps_a_dim(pos, kw, rv.deep)
                if how == "cast":
                    return Value(TENSOR, rv.dev, meth == "half", rv.nonscalar, rv.nograd, origin=rv.origin, placed=rv.placed,
                                 deep=rv.deep, graph=rv.graph and meth in _FLOAT_CASTS)
                deep = _reshaped_deep(meth, pos, kw, rv)
                graph = (rv.graph or any(v.graph for _, v in ops)) and meth in _DIFFERENTIABLE_METHODS
                return Value(TENSOR, rv.dev, rv.half, nonscalar or deep, rv.nograd or meth == "detach", origin=rv.origin,
                             placed=rv.placed, deep=deep, graph=graph)
            if how == "move":
                dev = self._move_target(meth, pos, kw, rv)
                cast = ("device" not in kw and pos and not pos[0][2] and (
                    pos[0][1].kind == DTYPE or (type(pos[0][0]) is cst.Attribute and pos[0][0].attr.value == "dtype")))
                # `.to(torch.float16)`, `.to(x.dtype)`: a cast, which places nothing
                return Value(TENSOR, dev, rv.half, rv.nonscalar, rv.nograd, origin=rv.origin,
                             placed=rv.placed if cast else e, graph=rv.graph and (not cast or _float_cast(pos)))
            if how == "host":
                return Value(TENSOR, HOST, rv.half, rv.nonscalar, rv.nograd, origin=rv.origin, placed=e, graph=rv.graph)
            if how == "host_value":
                return Value(HOSTVAL, HOST, py=NDARRAY if meth == "numpy" else None)
            if how == "tensors":
                if meth in ("max", "min", "median", "nanmedian") and not kw and not pos:
                    # `x.max()`: the 0-dim maximum, a tensor (a (values, indices) pair only with `dim`)
                    return Value(TENSOR, rv.dev, rv.half, nograd=rv.nograd, origin=rv.origin, graph=rv.graph)
                if meth in ("max", "min") and pos and not pos[0][2] and pos[0][1].kind == TENSOR:
                    # `x.max(other)`: the elementwise maximum of two tensors, which meet
                    self._check(e, "call", [(recv, rv), (pos[0][0], pos[0][1])], frame)
                    return Value(TENSOR, rv.dev, rv.half, rv.nonscalar or pos[0][1].nonscalar, origin=rv.origin)
                return Value(TUPLE, None, elem=Value(TENSOR, rv.dev, rv.half, origin=rv.origin))
            return UNKNOWN
        if k in (MODULE, METRIC):
            how = kb.module_method(meth)
            if k == MODULE and not rv.half and self._converts_to_half(rv.cls, meth, pos):
                # `model.convert_to_fp16()` (a method of its class casting its blocks to float16),
                # `model.apply(convert_module_to_f16)`: the module now holds float16 weights
                if rv.cls is not None and meth != "apply":
                    self._call_method(rv.cls, meth, rv, e, pos, kw, frame)
                return Value(k, rv.dev, True, origin=rv.origin, placed=rv.placed, cls=rv.cls, half_at=e,
                             stateful=rv.stateful, scatters=rv.scatters, wrap=rv.wrap)
            if how == "inplace_move":
                if meth in ("to", "cuda", "cpu"):
                    dev = self._move_target(meth, pos, kw, rv)
                    if rv.origin is not None and (dev is None or not dev.is_host):
                        # the object moves: every other reference to it (`trainer.model`, an alias)
                        # is no longer where it was made
                        self._moved_origins.add(rv.origin)
                        self._moved_holders.setdefault(rv.origin, set()).add(self._holder_origin(recv, frame))
                        self._forget_aliases(recv, rv.origin, frame)
                    elif rv.origin is not None and dev is not None and dev.is_host:
                        self._host_moved_origins.add(rv.origin)
                        if rv.dev is not None and not rv.dev.is_host:
                            # moved back to the host (`m = self.model; m.cpu()`): the other
                            # references to it are not where they were either
                            self._forget_aliases(recv, rv.origin, frame, moved_off=True)
                    parts = self._parts.get(rv.origin) if rv.origin is not None else None
                    if parts and dev is not None:
                        # the submodules it was built from (`decoder` in `Seq2seq(enc, decoder)`) move too
                        for k0, val in list(frame.env.items()):
                            if val.kind == MODULE and val.origin in parts:
                                frame.env[k0] = replace(val, dev=dev)
                    to_half = any(v.half for _, v, _s in pos) or any(v.half for _, v in kw.values())
                    moved = Value(k, dev, rv.half or to_half, origin=rv.origin, placed=e, cls=rv.cls,
                                  half_at=e if to_half else rv.half_at, stateful=rv.stateful, scatters=rv.scatters,
                                  wrap=rv.wrap)
                    if type(recv) is cst.Name and type(self.m.parent(e)) is cst.Arg and recv.value in frame.env:
                        # `test_model(model.to("cpu"))`: a module's `.to()` moves it in place wherever
                        # the call is written, so `model` is there afterwards too
                        frame.env[recv.value] = moved
                    return moved
                half = meth == "half" or (rv.half and meth not in ("float", "double", "bfloat16"))
                return Value(k, rv.dev, half, origin=rv.origin, placed=rv.placed, cls=rv.cls,
                             half_at=(e if meth == "half" else rv.half_at) if half else None, stateful=rv.stateful,
                             scatters=rv.scatters, wrap=rv.wrap)
            if how == "same":
                return rv
            if how in ("module_iter", "named_module_iter"):  # children(), modules(): where the module is
                sub = Value(MODULE, rv.dev, rv.half, stateful=True, scatters=False)
                if how == "named_module_iter":
                    sub = Value(TUPLE, None, items=(Value(HOSTVAL, HOST), sub))
                return Value(ITER, None, elem=sub)
            if how == "tensor_iter":
                return Value(PARAMS, rv.dev, rv.half, elem=Value(TENSOR, rv.dev, rv.half, True), half_at=rv.half_at,
                             origin=recv, source=rv.origin)
            if how == "state_dict" and k == MODULE and not pos and not kw and (
                    rv.cls is None or self.m.method_of_class(rv.cls, "state_dict") is None):
                # its parameters and buffers, detached, where the module is (an EMA copy's
                # `state_dict().values()` zipped with the model's)
                return Value(MAPPING, None, elem=Value(TENSOR, rv.dev, rv.half, True, True, origin=e))
            if meth == "forward" or (meth == "generate" and rv.cls is None):
                return self._module_call(e, rv, pos, kw, frame)  # `generate` embeds its inputs first
            if rv.cls is not None:
                return self._call_method(rv.cls, meth, rv, e, pos, kw, frame)
            return UNKNOWN
        if k == TOKENIZER:
            return self._tokenize(e, meth, kw) if meth in _TOKENIZE else UNKNOWN
        if k == MAPPING and meth in _MAPPING_MUTATORS:
            self._mapping_mutated(recv, rv, meth, pos, frame)
            return UNKNOWN
        if k == MAPPING and meth == "get" and rv.keys is not None and pos and not pos[0][2]:
            key = _const_key(pos[0][0])
            for k0, v0 in rv.keys:
                if k0 == key:
                    return v0
        if k == MAPPING and rv.elem is None and rv.keys and meth in ("items", "values") and not pos:
            # `for m in metrics.values()` of `{"acc": Accuracy(), "f1": F1Score()}`: any of its values
            ev = None
            for _, v0 in rv.keys:
                ev = v0 if ev is None else join(ev, v0)
            if ev is not None and ev.kind is not None:
                if meth == "items":
                    return Value(ITER, None, elem=Value(TUPLE, None, items=(Value(HOSTVAL, HOST), ev)))
                return Value(ITER, None, elem=ev)
        if k == MAPPING and rv.elem is not None:
            if meth == "items":
                return Value(ITER, None, elem=Value(TUPLE, None, items=(Value(HOSTVAL, HOST), rv.elem)))
            if meth == "values":
                return Value(ITER, None, elem=rv.elem)
            if meth == "get":
                return rv.elem
            return UNKNOWN
        if k == BATCH and meth in ("to", "cuda", "cpu"):  # a tokenizer's BatchEncoding, a batch object
            return Value(BATCH, self._move_target(meth, pos, kw, rv), origin=rv.origin, placed=e)
        if k in (OPTIMIZER, SCHEDULER, SCALER):
            if meth in ("to", "cuda", "cpu"):
                return rv
            if k == SCALER and meth == "scale" and pos:
                return pos[0][1]
            return UNKNOWN
        if k == PARAMS:
            return UNKNOWN
        if k == TUPLE and meth in ("append", "extend", "insert") and pos and not pos[-1][2]:
            if type(recv) is cst.Name or (type(recv) is cst.Attribute and type(recv.value) is cst.Name
                                          and recv.value.value == "self"):
                self._list_add(recv, rv, meth, pos[-1][1], frame)
            return Value(HOSTVAL, HOST)
        if (rv.cls is not None and k == OBJECT and meth in ("to", "cuda", "cpu") and self._unresolved_bases(rv.cls)
                and self.m.method_of_class(rv.cls, meth) is None):
            # an instance of a class of the file with a base it cannot see (maybe an nn.Module),
            # moved with the base's own `.to()`: it is where it was moved (in place, as a module)
            target = self._move_target(meth, pos, kw, rv)
            return replace(rv, dev=target, placed=e) if target is not None else rv
        if k == OBJECT and rv.py == DISTRIBUTION:
            if meth in ("sample", "rsample") and rv.dev is not None and rv.dev.where != "either":
                return Value(TENSOR, rv.dev, nonscalar=rv.nonscalar or bool(pos) or "sample_shape" in kw, origin=e)
            return UNKNOWN
        if k == CLASS and meth == "apply" and rv.cls is not None and self.m.class_is(rv.cls, _AUTOGRAD_FUNCTION):
            return self._autograd_apply(rv.cls, e, pos, kw, frame)
        if k == CLASS:
            # `net_cls.from_config(cfg)` of a class handed on as a value: its classmethods and
            # staticmethods (an instance method called on the class takes its instance first)
            found = self.m.method_of_class(rv.cls, meth) if rv.cls is not None else None
            if found is None or not (_is_classmethod(found[0]) or _is_static(found[0])):
                return UNKNOWN
            return self._call_method(rv.cls, meth, rv, e, pos, kw, frame)
        if k == OBJECT and rv.cls is None and rv.alts:
            # `loss.train_ops(generator)` with `loss` one of several classes of the file: each one's
            # method runs with these arguments (torchgan's loss list, E41-1)
            found = [self.m.method_of_class(c, meth) for c in rv.alts]
            if all(f is not None for f in found):
                out = None
                for c in rv.alts:
                    r = self._call_method(c, meth, Value(OBJECT, None, cls=c, origin=rv.origin), e, pos, kw, frame)
                    out = join(out, r)
                return out
            return UNKNOWN
        if rv.cls is not None:
            own = (type(recv) is cst.Name and recv.value == "self" and frame.cls is not None
                   and rv is frame.env.get("self") and k in (OBJECT, MODULE))
            # `agents.policy.init_hidden(1)`: a method of a plain instance held in another's attribute
            held = (k == OBJECT and type(recv) is cst.Attribute and type(recv.value) is cst.Name
                    and rv.cls in self.m.classes and rv.keys is None)
            if not held and ((k != OBJECT and not own) or type(recv) is not cst.Name or rv.cls not in self.m.classes
                             or rv.keys is not None):
                return self._call_method(rv.cls, meth, rv, e, pos, kw, frame)
            self._last_exit_self = None
            out = self._call_method(rv.cls, meth, rv, e, pos, kw, frame)
            left = self._last_exit_self
            if left and own:
                # `self.set_device(device)` from `__init__` re-binds `self.rnn`: this method's
                # view of it from here on (EduNLP#110)
                for a, v in left:
                    frame.env["self." + a] = v
                    frame.assigned_self.add(a)
            elif left and held:
                # `agents.policy.init_hidden(1)` re-bound the policy's `eval_hidden` (a host tensor):
                # the holder's attribute is that instance as the call left it, what the holder's next
                # method call reads through `self.policy` (MARL#2)
                self._held_instance_set(recv, replace(rv, attrs=_set_attrs(rv.attrs, dict(left))), frame)
            elif left:
                # `agent.get_actions(obs)` set `self.memories` (the model's output, on the
                # device): this instance's attribute from here on, what its next method call reads
                # (`agent.analyze_feedbacks(dones)`, rl-starter-files#41)
                cur = self._lookup(recv.value, frame)
                if cur is not None and cur.kind == OBJECT and cur.cls == rv.cls:
                    self._bind(recv, replace(cur, attrs=_set_attrs(cur.attrs, dict(left))), frame, None, rebinding=True)
            return out
        if k is None and meth in _TENSOR_ONLY_METHODS and not self.m.qualname(recv):
            # only a tensor has this method (numpy arrays and lists do not): `transform(raw).unsqueeze(0)`
            return Value(TENSOR, rv.dev, nonscalar=meth in ("unsqueeze", "unsqueeze_"), origin=e)
        if k is None and meth in ("to", "cpu", "cuda"):
            # whatever it is (a tensor, a structure of tensors), moved to the host it is there
            target = self._move_target(meth, pos, kw, rv)
            if meth != "cuda" and target == HOST:
                return Value(None, HOST, origin=e, placed=e)
            if target is not None and target.where == "acc" and (self._data_like(recv) or (
                    self._local_unknown(recv) and _known_accelerator(meth, pos, kw))):
                # and an item of a loop over data of unknown kind (a batch of a loader the file
                # does not build, a graph `data` object) moved to an accelerator is there, as is a
                # local of unknown kind (`y = batch[k][1]; y.to(device)`); its kind stays unknown
                # (a parameter the file's calls give a value, or an attribute, may be a module:
                # left unknown, its value comes from those calls)
                return Value(None, target, origin=e, placed=e)
            return UNKNOWN
        if k is None and rv.dev == HOST and rv.origin is not None and self._reads_host(rv.origin):
            return Value(None, HOST, origin=rv.origin)  # `Image.open(p).convert("RGB")`, `arr.reshape(...)`
        if type(recv) is cst.Name and recv.value == "self" and frame.cls is not None:
            cls = frame.cls
            if rv.cls is not None and rv.cls != cls and self.m.class_is(rv.cls, frozenset({cls})):
                # a base's method run for a subclass instance: `self._loss(...)` is the override
                # (chemprop's metric `update` calling the subclass's `_calc_unreduced_loss`)
                cls = rv.cls
            return self._call_method(cls, meth, rv, e, pos, kw, frame)
        if k == DEVICE:
            return UNKNOWN
        return UNKNOWN

    def _autograd_apply(self, cls: str, e, pos, kw, frame) -> Value:
        """`MaskedFn.apply(x, self.weight, self.mask)` of a `torch.autograd.Function` of the file:
        its static `forward(ctx, x, weight, mask)` run on those arguments (the context object is
        unknown), so the tensors meet in its operations (customized-linear's mask, E36-4)."""
        found = self.m.method_of_class(cls, "forward")
        if found is None or not _is_static(found[0]) or any(s for _, _, s in pos):
            return UNKNOWN
        fn, owner = found
        p = fn.params
        names = [x.name.value for x in (*p.posonly_params, *p.params)]
        if len(pos) + 1 > len(names):
            return UNKNOWN
        self._apply_calls.add(e)
        args = {names[0]: UNKNOWN}
        for name, (x, v, _) in zip(names[1:], pos):
            args[name] = self._device_literal(x, v)
        for k0, (x, v) in kw.items():
            if k0 in (_STAR, _DOUBLE_STAR):
                return UNKNOWN
            args[k0] = self._device_literal(x, v)
        return self._summary(fn, owner, args, None, e)

    def _made_in_forward(self, origin, cls: str) -> bool:
        """`origin` is a torch factory call (`torch.zeros(...)`) written in the `forward` of the
        file's class `cls` (or of a class it inherits from)."""
        if type(origin) is not cst.Call:
            return False
        q = self.m.qualname(origin.func)
        if q is None or not q.startswith("torch.") or kb.function(q) is None:
            return False
        return self._in_forward_of(origin, cls)

    def _in_forward_of(self, node, cls: str) -> bool:
        """`node` is written in the `forward` of the file's class `cls` (or of a class it inherits from)."""
        fn = self.m.enclosing(node, cst.FunctionDef)
        owner = self.m.class_of(fn) if fn is not None else None
        return (fn is not None and fn.name.value == "forward" and owner is not None
                and (owner.name.value == cls or self._subclass(cls, owner.name.value)))

    def _local_unknown(self, recv) -> bool:
        """`recv` is a name of the function (or module body) whose value no call of this file
        supplies: a local, or a parameter of a plain function the file never calls."""
        if type(recv) is not cst.Name:
            return False
        bindings = self.m.bindings_of(recv)
        if not bindings:
            return False
        if all(b.how != "param" for b in bindings):
            return True
        fn = self.m.enclosing(recv, cst.FunctionDef)
        if fn is None or self.m.class_of(fn) is not None or len(self.m.functions.get(fn.name.value, [])) != 1:
            return False
        return self._name_count(fn.name.value) <= 1  # never called, passed or exported by name here

    def _name_count(self, name: str) -> int:
        """How often `name` is written in the file (as a name or an attribute's name)."""
        if self._name_counts is None:
            counts: dict = {}
            for n in self.m.nodes:
                if type(n) is cst.Name:
                    counts[n.value] = counts.get(n.value, 0) + 1
            self._name_counts = counts
        return self._name_counts.get(name, 0)

    def _data_like(self, recv) -> bool:
        """`recv` is an item a `for` loop takes from data (`for x, y in loader`), or a part of one
        (`batch[0]`, `batch["ids"]`), possibly re-bound to its own move (`x, y = x.to(d), y.to(d)`)."""
        t = type(recv)
        if t is cst.Subscript:
            recv = recv.value
            t = type(recv)
        if t is not cst.Name:
            return False
        bindings = self.m.bindings_of(recv)
        if not bindings or not any(b.how == "for" for b in bindings):
            return False
        name = recv.value
        for b in bindings:
            if b.how == "for":
                continue
            if b.how not in ("assign", "unpack") or b.value is None:
                return False
            # `x = x.to(device)` / `x, y = x.to(device), y.to(device)`: its own move
            parts = b.value.elements if type(b.value) is cst.Tuple else [b.value]
            if not any(type(p) is cst.Element and type(p.value) is cst.Call or type(p) is cst.Call for p in parts):
                return False
            ok = False
            for p in parts:
                c = p.value if type(p) is cst.Element else p
                f = c.func if type(c) is cst.Call else None
                if (type(f) is cst.Attribute and f.attr.value in ("to", "cuda") and type(f.value) is cst.Name
                        and f.value.value == name):
                    ok = True
            if not ok:
                return False
        return True

    def _reads_host(self, origin) -> bool:
        if type(origin) is not cst.Call:
            return False
        return _reads_into_host(self.m.qualname(origin.func))

    def _transform(self, e, pos) -> Value:
        """A torchvision transform keeps a tensor where it is, and turns host data (a PIL image, an
        array) into host data (a tensor with ToTensor); what it gives for anything else is unknown."""
        vals = [v for _, v, s in pos if not s]
        if not vals:
            return UNKNOWN
        v = vals[0]
        if v.kind == TENSOR:
            return Value(TENSOR, v.dev, nonscalar=v.nonscalar, origin=v.origin)
        if v.dev is not None and v.dev.is_host:
            return Value(None, HOST, origin=e)
        return UNKNOWN

    def _tokenize(self, e, meth, kw) -> Value:
        """A tokenizer asked for tensors (`return_tensors="pt"`) makes them on the host: `encode`
        returns one tensor, the others a mapping of tensors (a BatchEncoding)."""
        rt = kw.get("return_tensors")
        if rt is None or type(rt[0]) is not cst.SimpleString or rt[0].evaluated_value != "pt":
            return UNKNOWN
        self.tokenized.add(e)
        if meth == "encode":
            return Value(TENSOR, HOST, nonscalar=True, origin=e)
        return Value(BATCH, HOST, origin=e)

    def _move_target(self, meth, pos, kw, rv) -> Dev | None:
        if meth == "cpu":
            return HOST
        if meth == "cuda":
            if pos:
                d = self._device_value(pos[0][0], pos[0][1])
                return d if d is not None else Dev("acc", "cuda", pos[0][0])
            if "device" in kw:
                return self._device_value(*kw["device"]) or Dev("acc", "cuda")
            return Dev("acc", "cuda")
        if "device" in kw:
            if kw["device"][1].kind == "none" and not kw["device"][1].nullable and meth == "to":
                return rv.dev  # `.to(device=None)`: no move (P46-1)
            return self._device_value(*kw["device"])
        if meth == "type" and pos and not pos[0][2]:
            # `.type(torch.FloatTensor)` / `.type(torch.cuda.FloatTensor)` / `.type("torch.cuda.HalfTensor")`:
            # a legacy tensor type names its device; `.type(y.type())` is y's type, on y's device
            x = pos[0][0]
            q = self.m.qualname(x) if type(x) in (cst.Name, cst.Attribute) else (
                x.evaluated_value if type(x) is cst.SimpleString else None)
            if isinstance(q, str) and q in kb.LEGACY_TENSOR_TYPES:
                return Dev("acc", "cuda", x) if q.startswith("torch.cuda.") else HOST
            if type(x) is cst.Name and q is None and self.cuda_tensor_type(x):
                # `Tensor = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor`
                # (the legacy availability choice): the accelerator on a run that has one (E42-6)
                return Dev("acc", "cuda")
            if (type(x) is cst.Call and type(x.func) is cst.Attribute and x.func.attr.value == "type"
                    and not x.args):
                tv = self.values.get(x.func.value)
                if tv is not None and tv.kind == TENSOR:
                    return tv.dev
            return rv.dev if pos[0][1].kind == DTYPE else None
        if pos:
            x, v, s = pos[0]
            if v.kind == DTYPE:
                return rv.dev
            if type(x) is cst.Attribute and x.attr.value == "dtype":
                return rv.dev  # `.to(seq.dtype)`: a cast, not a move
            if type(x) is cst.Name and "dtype" in x.value.lower() and v.kind in (None, DTYPE):
                return rv.dev  # `.to(dtype)` of a parameter so named (torchvision's anchor utils): a cast
            if v.kind == TENSOR or (meth == "type_as" and v.kind == BATCH):
                return v.dev  # (`z.type_as(x)` of a Lightning step's batch: where the batch is)
            if v.kind == "none" and not v.nullable and meth == "to":
                # `.to(device)` of a parameter left to its default None (cmatch's `np2tensor(array,
                # device=None)`, P46-1): no move, the tensor stays where it is
                return rv.dev
            d = self._device_value(x, v)
            if d is None and v.kind not in (DEVICE, None):
                return rv.dev if v.kind == DTYPE else None
            return d
        if "dtype" in kw:
            return rv.dev
        return None

    def _traced(self, e, pos, kw, keywords, frame) -> Value | None:
        """A call that runs its first argument, a module, on its second (a tensor or a tuple of
        them): `torch.jit.trace(M, x)`, `torch.onnx.export(M, (x,), f)`, `writer.add_graph(M, x)`.
        Checked as the module's call; returns the module's value, None when it is not one."""
        if not pos or pos[0][2] or pos[0][1].kind != MODULE:
            return None
        given = pos[1] if len(pos) > 1 and not pos[1][2] else next(
            ((x, v, False) for k, (x, v) in kw.items() if k in keywords), None)
        if given is None:
            return pos[0][1]
        x, v, _ = given
        if v.kind == TENSOR:
            inputs = [(x, v, False)]
        elif v.kind == TUPLE and v.items and type(x) in (cst.Tuple, cst.List) and len(x.elements) == len(v.items):
            inputs = [(el.value, it, False) for el, it in zip(x.elements, v.items)]
        else:
            return pos[0][1]
        self._module_call(e, pos[0][1], inputs, {}, frame, callee=pos[0][0])
        return pos[0][1]

    def _module_call(self, e, mv: Value, pos, kw, frame, callee=None) -> Value:
        tensors = [(x, v) for x, v, s in pos if not s and v.kind == TENSOR]
        tensors += [(x, v) for x, v in kw.values() if v.kind == TENSOR]
        for x, v, s in pos:  # a tuple of tensors (an RNN's `(h, c)` state)
            if s == "*":
                # `model(*batch)` of `batch = tuple(t.to(device) for t in batch)`: its elements are
                # the inputs (dynamic-classification#1)
                sx, sv = kw.get(_STAR, (None, UNKNOWN))
                if sx is x and sv.kind == TUPLE:
                    if sv.items:
                        tensors += [(x, it) for it in sv.items if it.kind == TENSOR]
                    elif sv.elem is not None and sv.elem.kind == TENSOR:
                        tensors.append((x, sv.elem))
                continue
            if not s and v.kind == TUPLE and v.items:
                els = x.elements if type(x) in (cst.Tuple, cst.List) else None
                if els is not None and len(els) == len(v.items):
                    tensors += [(el.value, it) for el, it in zip(els, v.items) if it.kind == TENSOR]
                else:
                    tensors += [(x, it) for it in v.items if it.kind == TENSOR]
            elif not s and v.kind == TUPLE and v.items is None and v.elem is not None and v.elem.kind == TENSOR:
                # a list of tensors built by a comprehension or appends (fastbook's LMModel6
                # `self.h = [torch.zeros(...) for _ in range(2)]`): each element is an input
                tensors.append((x, v.elem))
            elif not s and v.kind == TUPLE and v.items is None and v.elem is not None and v.elem.kind == TUPLE:
                # a list of lists of outputs (pix2pixHD's multiscale discriminator appends
                # `[model(x)]` per scale, E65-3): the inner lists' tensors are the inputs
                inner = _elem_of(v.elem)
                if inner is not None and inner.kind == TENSOR:
                    tensors.append((x, inner))

            if (not s and v.kind is None and v.dev is not None and v.dev.where == "acc" and v.placed is not None
                    and mv.dev is not None and mv.dev.is_host):
                # `model(x.to(device))` with `x` of unknown kind (an item of a loader given as a
                # parameter): whatever it is, it was moved to the accelerator on purpose
                tensors.append((x, Value(TENSOR, v.dev, nonscalar=True, origin=v.origin, placed=v.placed)))
        if _DOUBLE_STAR in kw:  # `model(**batch)`: the mapping's tensors are the inputs
            x, v = kw[_DOUBLE_STAR]
            if v.kind == BATCH and v.dev is not None:
                tensors.append((x, Value(TENSOR, v.dev, nonscalar=True, origin=v.origin, placed=v.placed)))
            elif v.kind == TUPLE and v.items is None and v.elem is not None and v.elem.kind == TENSOR:
                tensors.append((x, v.elem))
            elif v.kind == MAPPING and (mv.cls is None or not self._host_inputs(mv.cls)):
                # `model(**inputs)` with `inputs = {"input_ids": ids.to(device), "attention_mask": mask}`
                if v.keys is not None:
                    tensors += [(x, kv) for _, kv in v.keys if kv.kind == TENSOR]
                elif v.elem is not None and v.elem.kind == TENSOR:
                    tensors.append((x, v.elem))
        opaque = mv.cls is None and not (type(mv.origin) is cst.Call and (self.m.qualname(mv.origin.func) or "").startswith("torch."))
        if opaque and len(tensors) > 1:
            # a module the file cannot see into (imported, unpickled): only the data input surely
            # meets its weights; lengths it is handed (`decoder(enc_out, words, cap_len)`) are
            # kept on the host on purpose by RNN-style models that pack their inputs
            tensors = [tensors[0]] + [(x, v) for x, v in tensors[1:] if not self._lengths_arg(x, v, kw)]
        if mv.cls is not None and tensors:
            host_ok = self._host_inputs(mv.cls)
            if host_ok:
                keep = {id(x) for i, (x, v, s) in enumerate(pos) if not s and i not in host_ok}
                keep |= {id(x) for k, (x, v) in kw.items() if k not in host_ok}
                tensors = [(x, v) for x, v in tensors if id(x) in keep or not self._is_arg(x, pos, kw)]
        dev = mv.dev
        if (dev is None and type(e.func) is cst.Name and e.func.value == "self" and frame.cls is not None
                and self._class_kind(frame.cls) == MODULE and type(frame.fn) is cst.FunctionDef
                and self._lightning_step(frame.fn)):
            dev = MODEL_DEV  # `self(x)` in a Lightning step: the module runs where Lightning put it
        if mv.host_part is not None and dev is not None and dev.where == "acc":
            # a submodule built on the host after the module was moved (`model.fc = nn.Linear(...)`):
            # the call meets the new layer's CPU weights with the accelerator's activations
            part, ctor = mv.host_part
            self._check(e, "module-part", [(part, Value(TENSOR, HOST, nonscalar=True, origin=ctor)),
                                           (callee or e.func, Value(TENSOR, dev, nonscalar=True))], frame)
        failed = False
        if mv.scatters:
            pass  # DataParallel / DistributedDataParallel move (scatter) their inputs themselves
        elif dev is not None and tensors and (dev.where == "acc" or (
                dev.where == "model" and mv.cls is None and type(frame.fn) is cst.FunctionDef
                and self._forwardish(frame.fn))):
            # a module on the accelerator called with a CPU tensor (its first input meets the
            # weights whatever its shape: a 0-dim sample fails too); in `forward`, a torch layer
            # held by the module is where the module is, and its inputs are there (xLSTM's
            # `self.ri_gate(ht_1)`; a module class of the file is followed into its own forward)
            if pos and not pos[0][2] and pos[0][1].kind == TENSOR and tensors[0][0] is pos[0][0]:
                tensors[0] = (tensors[0][0], replace(tensors[0][1], nonscalar=True))
            if not mv.stateful and mv.cls is None and len(tensors) > 1 and all(
                    v.dev is not None for _, v in tensors):
                # a loss without tensors of its own (`nn.MSELoss().to(d)`) runs where its inputs are:
                # they meet each other (a CPU target made in a helper beside device predictions)
                self._check(e, "call", tensors, frame)
            elif not mv.stateful and mv.cls is None and self._tensorless_torch_module(mv):
                # `nn.CrossEntropyLoss().to(device)` met with an input of unknown place: where the
                # loss was moved says nothing (it holds no tensor), its inputs decide
                pass
            else:
                self._check(e, "module-call", [(callee or e.func, Value(TENSOR, dev))] + tensors, frame)
        elif dev is not None and (dev.is_host or dev == BRANCH_HOST) and mv.stateful and tensors:
            # a module holding CPU tensors (on a path through an `if`) called with device inputs
            if dev.is_host or all(v.dev is not None and v.dev.where == "acc" for _, v in tensors):
                self._check(e, "module-host", [(e.func, Value(TENSOR, HOST, nonscalar=True, origin=mv.origin))] + tensors, frame)
                if dev.is_host and any(v.dev is not None and v.dev.is_acc for _, v in tensors):
                    # the call fails there (reported once): where its output would be is not a
                    # second finding's premise (the next layer fed "a CPU output", E34-2)
                    failed = True
        elif len(tensors) > 1 and not (
                mv.cls is not None and mv.cls in self.m.classes and self.m.method_of_class(mv.cls, "forward") is not None
                and (mv.stateful or (dev is not None and dev.is_host and all(v.dev is not None for _, v in tensors)))):
            # a loss module: its inputs meet. (Not a module class of the file that holds weights, nor
            # a weightless one on the host given inputs whose places are known: its forward, followed
            # with this call's arguments, shows which inputs meet; a wrapper handing pack lengths
            # kept on the host to its encoder is correct, the chatbot tutorial's `GreedySearchDecoder`,
            # A70-P1; a weightless loss inside a Lightning module is still checked here.)
            self._check(e, "call", tensors, frame)
        if failed:
            dev = None
        elif dev is None or dev.where == "either":
            dev = None
            # (or an instance of a class of the file built around modules that are elsewhere, or
            # that places its tensors itself: `Interface(clip_model, table)`, E38-2)
            around = mv.cls is not None and mv.placed is not None and mv.placed is mv.origin
            if (mv.kind == MODULE and (mv.cls is None or around) and not mv.scatters and pos and not pos[0][2]
                    and tensors and tensors[0][0] is pos[0][0]):
                first = tensors[0][1].dev
                if first is not None and first.where == "acc" and all(
                        v.dev is None or v.dev == first for _, v in tensors):
                    # a module of unknown placement called with inputs on the accelerator: the call
                    # runs there (on the host it fails), so its output is there too
                    dev = first
        mixed = False
        if dev is not None and dev.is_host and not mv.stateful and not mv.scatters:
            # a module without parameters (a loss of the file) computes where its inputs are
            devs = {v.dev for _, v in tensors}
            dev = tensors[0][1].dev if tensors and len(devs) == 1 else None
            # (inputs on several devices: its forward, run on them, shows which of them meet)
            mixed = dev is None and len(devs) > 1 and mv.cls is not None and all(d is not None for d in devs)
        if mv.cls is not None and dev is not None:
            # a class of the file that overrides `__call__` (SwapNet's GANLoss) runs that, not forward
            entry = "__call__" if self.m.method_of_class(mv.cls, "__call__") is not None else "forward"
            ret = self._call_method(mv.cls, entry, mv, e, pos, kw, frame, summary_only=True)
            if ret.kind == TUPLE or (ret.kind == OBJECT and ret.keys is not None) or (
                    ret.kind == MAPPING and ret.keys and _keys_known(ret.keys)):
                # (a dataclass or SimpleNamespace record of outputs too, and a dict display of
                # outputs: `return {"enc": {"anchors": ...}}`, DETA's proposals, E54-2)
                return ret
            if (ret.kind == TENSOR and ret.dev is not None and ret.dev.is_host and ret.placed is None
                    and dev.where == "acc" and self._made_in_forward(ret.origin, mv.cls)):
                # forward returns a tensor it made on the host (`outputs = torch.zeros(...)` filled
                # step by step, without `device=`): the module's output is there, not on its device
                return ret
            if (ret.kind == TENSOR and ret.dev is not None and ret.dev.is_host and type(ret.placed) is cst.Call
                    and dev.where in ("acc", "model") and self._plain_host_move(ret.placed)
                    and self._in_forward_of(ret.placed, mv.cls)):
                # forward ends by copying its output to the host on every path (`.to(device=self.device)`
                # of a plain `self.device = torch.device("cpu")`, spd_learn's wavelet layer, E46-3):
                # the module's output is on the host wherever its weights are
                return ret
        elif mv.cls is not None and mv.kind == MODULE and not mv.scatters and not failed:
            # a class of the file placed nowhere known: the shape of what its forward returns still
            # is (`rpn_out, roi_out = self.faster_rcnn(x)`, faster-rcnn-pytorch#27), its tensors'
            # devices are not
            # (a quiet run: what it meets is not reported, the call is no call site, as before)
            entry = "__call__" if self.m.method_of_class(mv.cls, "__call__") is not None else "forward"
            quiet, frame.quiet = frame.quiet, frame.quiet or not mixed
            try:
                ret = self._call_method(mv.cls, entry, mv, e, pos, kw, frame, summary_only=True)
            finally:
                frame.quiet = quiet
            if ret.kind == TUPLE and ret.items is not None and len(ret.items) > 1:
                return Value(TUPLE, None, items=tuple(replace(it, dev=None) if it.kind == TENSOR else UNKNOWN
                                                      for it in ret.items), origin=ret.origin)
            if ret.kind == MAPPING and ret.keys and _keys_known(ret.keys):
                # a dict of outputs: its keys, their tensors' devices not known
                return Value(MAPPING, None, keys=tuple((k, replace(it, dev=None) if it.kind == TENSOR else UNKNOWN)
                                                       for k, it in ret.keys), origin=ret.origin)
        # a module with parameters called with gradients on gives an output that holds its graph
        # (unless the file freezes parameters somewhere: a frozen feature extractor's does not);
        # a loss without parameters passes on the graph of its inputs
        graph = mv.kind == MODULE and not frame.nograd and (
            (mv.stateful and not self._freezes) or any(v.graph for _, v in tensors))
        if opaque:
            self._opaque_outputs.add(e)
        # a torch layer (not a loss) keeps its input's rank: `nn.Linear(4, 8)(x)` of a batch is a batch
        # (said of outputs off the host only: a layer the engine places on the host while the module
        # holding it is moved later, transformers' `self.ln_post` in a helper method, is no
        # premise for a host operand)
        # (a layer put on the host on purpose, `emb.to("cpu")` / `.cpu()`, is there for good: E64-3)
        nonscalar = bool(pos and not pos[0][2] and pos[0][1].kind == TENSOR and pos[0][1].nonscalar
                         and not (dev is not None and dev.is_host and not _moved_to_host(mv))
                         and self._rank_keeping_layer(mv))
        return Value(TENSOR, dev, mv.half if (dev is not None or tensors) else False, nonscalar, origin=e, graph=graph)

    def _rank_keeping_layer(self, mv: Value) -> bool:
        """A torch.nn layer with parameters that is not a loss (`nn.Linear`, `nn.Conv2d`,
        `nn.Embedding`): its output has at least the rank of its input."""
        if mv.cls is not None or not mv.stateful or type(mv.origin) is not cst.Call:
            return False
        ctor = self.m.constructor_of(mv.origin)
        q = (self.m.qualname(ctor.func) or "") if ctor is not None else ""
        return q.startswith("torch.nn.") and "loss" not in kb.class_tags(q) and not q.endswith("Loss")

    def _lengths_arg(self, x, v: Value, kw) -> bool:
        """A host tensor handed to a module as its lengths (`cap_len`, `lengths=...`)."""
        if v.dev is None or not v.dev.is_host:
            return False
        name = next((k for k, (kx, _) in kw.items() if kx is x and isinstance(k, str)), None)
        if name is None and type(x) is cst.Name:
            name = x.value
        return name is not None and ("len" in name.lower())

    @staticmethod
    def _is_arg(x, pos, kw) -> bool:
        return any(x is px for px, _, _ in pos) or any(x is kx for kx, _ in kw.values())

    def _host_inputs(self, cls: str) -> set:
        """The inputs of a module class's `forward` that may stay on the host: used only as the
        lengths of `pack_padded_sequence` (which wants them on the CPU), or only read into Python
        (`.tolist()`, `.cpu()`, `len()`). Positions (after self) and names."""
        cached = self._host_inputs_cache.get(cls)
        if cached is not None:
            return cached
        out: set = set()
        self._host_inputs_cache[cls] = out
        info = self.m.classes.get(cls)
        fn = info.methods.get("forward") if info is not None else None
        if fn is None:
            return out
        params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)][1:]
        for i, name in enumerate(params):
            uses = [n for n in self.m.walk(fn.body) if type(n) is cst.Name and n.value == name]
            if uses and (all(self._host_use(n) for n in uses) or self._moved_first(fn, name)):
                out.add(i)
                out.add(name)
        return out

    def _moved_first(self, fn: cst.FunctionDef, name: str) -> bool:
        """The first statement of `forward` that uses the parameter rebinds it moved (`x =
        x.to(self.device)`, `x = x.cuda()`): the module puts its input where it needs it."""
        body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else []
        for stmt in body:
            if not any(type(n) is cst.Name and n.value == name for n in self.m.walk(stmt)):
                continue
            if type(stmt) is not cst.SimpleStatementLine or len(stmt.body) != 1 or type(stmt.body[0]) is not cst.Assign:
                return False
            a = stmt.body[0]
            v = a.value
            if not (len(a.targets) == 1 and type(a.targets[0].target) is cst.Name and a.targets[0].target.value == name
                    and type(v) is cst.Call and type(v.func) is cst.Attribute and v.func.attr.value in ("to", "cuda")
                    and (v.args or v.func.attr.value == "cuda")):
                return False
            if v.func.attr.value == "to" and v.args[0].keyword is None and kb.is_dtype(self.m.qualname(v.args[0].value) or ""):
                return False  # `x = x.to(torch.float32)`: a cast, the input stays where it is
            # `x = x.to(self.device)`; also a copy made from it first (`x = torch.tensor(x).to(
            # self.device)`, `torch.from_numpy(x).float().cuda()`: precision50 P50-10)
            return copy_of_name(self.m, v.func.value, name)
        return False

    def _host_use(self, n: cst.Name) -> bool:
        parent = self.m.parents.get(n)
        if type(parent) is cst.Subscript and parent.value is n and all(
                type(el.slice) is cst.Index and _int_literal(el.slice.value) is not None for el in parent.slice):
            # `dataset_labels[0].item()`: an element picked by a number, read as one (BERT4doc's
            # multitask head choice, P37-A1)
            return self._host_use(parent)
        if type(parent) is cst.Attribute and parent.value is n:
            call = self.m.parents.get(parent)
            # (`self.fc(x.to(self.device))`: moved where it is used)
            return (parent.attr.value in ("cpu", "tolist", "item", "numpy", "size", "shape", "to", "cuda")
                    and (type(call) is cst.Call or parent.attr.value == "shape"))
        if type(parent) is cst.Arg and parent.value is n:
            call = self.m.parents.get(parent)
            if type(call) is not cst.Call:
                return False
            q = self.m.qualname(call.func) or ""
            if q.endswith(("pack_padded_sequence", "pack_sequence")):
                i = next((j for j, a in enumerate(call.args) if a is parent), -1)
                return (parent.keyword is not None and parent.keyword.value == "lengths") or (
                    parent.keyword is None and i == 1)
            return type(call.func) is cst.Name and call.func.value in ("len", "int", "range", "list") and (
                call.func.value not in self.m.aliases)
        return False

    def _instance(self, name, e, pos, kw, frame) -> Value:
        kind = self._class_kind(name)
        if kind == MODULE and pos and not pos[0][2] and self._wrapper_subclass(name):
            # `DataParallelPassthrough(model)`, a class of the file on `nn.DataParallel` (or DDP):
            # a wrapper like its base (its state_dict keys carry `module.`, it scatters its inputs)
            inner = pos[0][1]
            return Value(MODULE, inner.dev if inner.kind == MODULE else None, inner.half, origin=e,
                         stateful=True, scatters=True, wrap=e)
        if kind in (MODULE, METRIC):
            found = self.m.method_of_class(name, "__init__")  # its own, or one inherited from a file base
            init = found[0] if found is not None else None
            if init is not None:
                # its `__init__`'s parameters are what the constructions pass (`PCB_test(model)`),
                # read in the class's recorded pass; no summary is run here
                self._call_function(init, found[1], e, pos, kw, frame, Value(kind, None, cls=name), summary=False)
            dev, given = self._placement(e, kw)
            splat = kw.get(_DOUBLE_STAR, (None, UNKNOWN))[1]
            if (given and dev is None and "device" not in kw and init is not None and _takes_no_device(init)
                    and not (splat.kind == MAPPING and splat.keys is not None)):
                # `MLPNetwork(**qnet["kwargs"])` of a file class whose `__init__` takes no `device`
                # and no `**kwargs`: the splat cannot place it (RLHive's registry helper, E44-6)
                given = False
            if not given and (self._class_made_placed(name) or self._class_moves_itself(name, e)):
                dev, given = None, True  # its tensors are made or moved on a device in __init__: where is not known
                if init is not None and self._init_moves_self(init):
                    # `self.to(self.device)` in `__init__`: where its summary with this
                    # construction's arguments leaves the instance
                    self._last_init_self = None
                    self._call_function(init, name, e, pos, kw, frame, Value(kind, None, cls=name))
                    after = self._last_init_self
                    if after is not None and after.kind == kind and after.dev is not None and after.dev.where in ("acc", "host"):
                        dev = after.dev
            if not given and any(v.kind == MODULE and (v.dev is None or not v.dev.is_host)
                                 for v in [*(v for _, v, _s in pos), *(v for _, v in kw.values())]) and not (
                    kind == MODULE and not self._unresolved_bases(name) and self._class_stateful(name)):
                # built around a module that is (or may be) elsewhere: `PCB_test(model)`. Not a class
                # that makes layers of its own in `__init__` (`SoftmaxLoss(model)` adding a
                # `nn.Linear` head, sentence-transformers#26, E63-1): those are on the host
                dev, given = None, True
            if not given and init is not None and self._keeps_called_part_of_unknown(name, init, e, pos, kw):
                dev, given = None, True
            half_at = self._init_half_call(name) if kind == MODULE else None
            if half_at is not None and init is not None and self._off_in_construction(half_at, init, e, pos, kw):
                half_at = None  # `if use_fp16: self.blocks.half()` built with `use_fp16=False` (TripoSF)
            stateful = self._class_stateful(name) or (init is not None and self._given_stateful_parts(init, pos, kw))
            attrs = None
            if kind == MODULE and init is not None and (pos or kw) and self._param_or_plain_attrs(name, init):
                # an attribute `__init__` makes a Parameter on one branch and a plain tensor on the
                # other, the branch chosen by the construction's arguments (`Layer(requires_grad=False)`
                # beside `Layer()`, E42-2): what this construction leaves there, per instance
                self._last_exit_self = None
                self._call_function(init, found[1], e, pos, kw, frame, Value(kind, None, cls=name))
                left = self._last_exit_self or ()
                others = self._set_outside_init(name)
                kept = {a: v for a, v in left if v.kind == TENSOR and v.dev is not None and v.dev.is_host
                        and v.origin not in self._param_made and a not in others
                        and not self._moved_by_override(name, a)}
                if kept:
                    attrs = _set_attrs(None, kept)
            return Value(kind, dev if given else (None if frame.devctx else HOST), half_at is not None, origin=e,
                         cls=name, placed=e if given else None, stateful=stateful, half_at=half_at, attrs=attrs)
        if kind is not None:
            if kind == DATASET:
                init = self.m.classes[name].methods.get("__init__")
                if init is not None:
                    # what the constructions pass (`MyDataset(X, Y)` of tensors moved to the device),
                    # read in the class's recorded pass and where its samples are asked for
                    self._call_function(init, name, e, pos, kw, frame, Value(kind, None, cls=name), summary=False)
            if kind == OPTIMIZER and pos and not pos[0][2] and pos[0][1].kind == PARAMS:
                # an Optimizer subclass of the file over a module's parameters (MADGRAD, madgrad#4):
                # where those parameters are when it is built, as for torch's own (E61-2)
                return _optimizer_over(pos[0][1], e, cls=name)
            return Value(kind, None, origin=e, cls=name)
        found = self.m.method_of_class(name, "__init__")  # its own, or one inherited from a file base
        left = None
        if found is not None:
            self._last_exit_self = None
            self._call_function(found[0], found[1], e, pos, kw, frame, Value(OBJECT, None, cls=name))
            left = self._last_exit_self
        fields = self._record_fields(name) if found is None else None
        if fields is not None:
            # a dataclass (or NamedTuple) of the file: what each field was given
            return Value(OBJECT, None, cls=name, origin=e, keys=_record_keys(fields, pos, kw))
        if left and not self._unresolved_bases(name):
            # what this construction's `__init__` stored (`Frame(None, self.lin(x))`: its
            # `translations` is that output, on the device), read back through the instance (E44-5);
            # a class on an imported base may be a module moved later (transformers' models on
            # `PreTrainedModel`): not read per construction. Tensors only (a module stored there
            # may be moved in place later, `net.to(device)` after `Runner(net)`), and only those no
            # other method of the class sets (`Moved.to()` re-binding `self.src`)
            others = self._set_outside_init(name)
            kept = {a: v for a, v in left if v.kind == TENSOR and a not in others}
            if kept:
                return Value(OBJECT, None, cls=name, origin=e, attrs=_set_attrs(None, kept))
        return Value(OBJECT, None, cls=name, origin=e)

    def _set_outside_init(self, cls: str) -> frozenset:
        """The attributes a method of the class (or of a file base) other than `__init__` assigns
        on `self`; one walk per class."""
        got = self._outside_init_cache.get(cls)
        if got is not None:
            return got
        out = set()
        seen, todo = set(), [cls]
        while todo:
            c = todo.pop()
            info = self.m.classes.get(c)
            if info is None or c in seen:
                continue
            seen.add(c)
            todo.extend(b for b in info.bases if b in self.m.classes)
            for mname, fn in info.methods.items():
                if mname == "__init__":
                    continue
                for n in self.m.walk(fn):
                    t = type(n)
                    targets = ([tg.target for tg in n.targets] if t is cst.Assign
                               else [n.target] if t in (cst.AugAssign, cst.AnnAssign) else ())
                    out.update(tg.attr.value for tg in targets if type(tg) is cst.Attribute
                               and type(tg.value) is cst.Name and tg.value.value == "self")
        got = self._outside_init_cache[cls] = frozenset(out)
        return got

    def _namedtuple_fields(self, name: str) -> tuple | None:
        """The fields of `name` when the file binds it once, at module level, to
        `collections.namedtuple("T", ["a", "b"])` (or `"a b"`, `"a, b"`) or `typing.NamedTuple("T",
        [("a", int), ...])`; None otherwise."""
        cache = self._namedtuple_cache
        if name in cache:
            return cache[name]
        cache[name] = None
        bound = self.m.bindings.get((self.m.module, name), [])
        if len(bound) != 1 or bound[0].how != "assign" or type(bound[0].value) is not cst.Call:
            return None
        call = bound[0].value
        q = self.m.qualname(call.func) or ""
        if q not in ("collections.namedtuple", "typing.NamedTuple") or len(call.args) < 2:
            return None
        spec = call.args[1]
        if spec.keyword is not None and spec.keyword.value not in ("field_names", "fields"):
            return None
        fields = []
        text = string_value(spec.value)
        if text is not None:
            fields = text.replace(",", " ").split()
        elif type(spec.value) in (cst.List, cst.Tuple):
            for el in spec.value.elements:
                if type(el) is cst.StarredElement:
                    return None
                item = el.value
                if type(item) is cst.Tuple and item.elements:
                    item = item.elements[0].value  # `("a", int)`
                f = string_value(item)
                if f is None:
                    return None
                fields.append(f)
        else:
            return None
        if not fields or not all(f.isidentifier() for f in fields):
            return None
        cache[name] = tuple(fields)
        return cache[name]

    def _record_fields(self, name: str) -> list[str] | None:
        """The fields, in order, of a class of the file that is a `@dataclass` or a `NamedTuple`
        (annotated names of its body), None for any other class."""
        info = self.m.classes.get(name)
        if info is None:
            return None
        node = info.node
        decos = [d.decorator.func if type(d.decorator) is cst.Call else d.decorator for d in node.decorators]
        if not (any((self.m.qualname(d) or dotted(d) or "").rsplit(".", 1)[-1] == "dataclass" for d in decos)
                or any(b.rsplit(".", 1)[-1] == "NamedTuple" for b in info.bases)):
            return None
        out = []
        for stmt in node.body.body:
            if type(stmt) is cst.SimpleStatementLine:
                for small in stmt.body:
                    if type(small) is cst.AnnAssign and type(small.target) is cst.Name:
                        out.append(small.target.value)
        return out

    def _converts_to_half(self, cls: str | None, meth: str, pos) -> bool:
        """`m.apply(f)` with `f` a function of the file that casts its argument's weights to float16
        (`l.weight.data = l.weight.data.half()`), or a method of the module's class that casts the
        module or its parts (`self.input_blocks.half()`, `self.blocks.apply(f)`), or calls such a
        method of its own."""
        if meth == "apply":
            return len(pos) == 1 and type(pos[0][0]) is cst.Name and self._func_halves(pos[0][0].value)
        if cls is None or meth.startswith("__"):
            return False
        key = ("halves", cls, meth)
        found = self._half_cache.get(key)
        if found is None:
            self._half_cache[key] = False  # recursion guard
            before, self._half_unsure = self._half_unsure, False
            found = self._method_halves(cls, meth)
            if found or not self._half_unsure:
                self._half_cache[key] = found
            else:
                # asked while the constructor runs (`if use_fp16: self.convert_to_fp16()`): a
                # part it reads (`self.blocks`) is not stored yet; asked again later
                del self._half_cache[key]
            self._half_unsure = before or self._half_unsure
        return found

    def _method_halves(self, cls: str, meth: str) -> bool:
        return self._method_half_call(cls, meth) is not None

    def _param_or_plain_attrs(self, cls: str, init: cst.FunctionDef) -> bool:
        """The class's `__init__` assigns some `self.<attr>` an `nn.Parameter(...)` in one statement
        and something else in another (on another branch); once per class."""
        got = self._branchy_cache.get(cls)
        if got is None:
            kinds: dict = {}
            for n in self.m.walk(init):
                if type(n) is not cst.Assign or len(n.targets) != 1:
                    continue
                t = n.targets[0].target
                if not (type(t) is cst.Attribute and type(t.value) is cst.Name and t.value.value == "self"):
                    continue
                v = n.value
                param = type(v) is cst.Call and (self.m.qualname(v.func) or "").rsplit(".", 1)[-1] == "Parameter"
                kinds.setdefault(t.attr.value, set()).add(param)
            got = self._branchy_cache[cls] = any(len(k) == 2 for k in kinds.values())
        return got

    def _init_half_call(self, cls: str):
        """The call in the class's own `__init__` that casts the module or a module attribute to
        float16 (`self.model.half()` under `if args.precision == "half":`), or None."""
        key = ("init", cls)
        if key not in self._half_cache:
            self._half_cache[key] = None  # recursion guard
            info = self.m.classes.get(cls)
            found = None
            if info is not None and "__init__" in info.methods:
                found = self._method_half_call(cls, "__init__")
                if found is None:
                    found = self._part_half_call(cls)
            self._half_cache[key] = found
        return self._half_cache[key]

    def _part_half_call(self, cls: str):
        """The float16 conversion a part of the module inherits from its own class's constructor:
        `self.encoder = SparseEncoder(use_fp16=True)` where `SparseEncoder.__init__` converts its
        blocks (TripoSF#5): the parent's parameters are then float16 in part. Only parts of a class
        of the file that the constructor converts itself (a checkpoint loaded in float16 is
        usually a frozen part), and not a part the class freezes or puts in eval mode."""
        info = self.m.classes.get(cls)
        self._ensure_init(cls)
        text = None
        for attr, v in self._attr_by_method.get((cls, "__init__"), {}).items():
            if v.kind != MODULE or not v.half or v.half_at is None or v.cls is None or v.cls == cls:
                continue
            if self._init_half_call(v.cls) is not v.half_at:
                continue
            if text is None:
                text = self.m.module.code_for_node(info.node)
            if re.search(r"self\." + re.escape(attr) + r"\b[^\n]*(requires_grad|\.eval\(\))", text):
                continue  # a frozen part: no optimizer steps its float16 weights
            return v.half_at
        return None

    def _method_half_call(self, cls: str, meth: str):
        m = self.m
        got = m.method_of_class(cls, meth)
        if got is None:
            return None
        fn, owner = got
        if kb.module_method(meth) is not None or meth == "forward":
            return None
        self._ensure_init(owner)  # what its attributes are (a module method summarised from main())
        for call in m.calls_in(fn):
            f = call.func
            if type(f) is not cst.Attribute:
                continue
            target = f.value
            if type(target) is cst.Name:
                if target.value != "self":
                    continue
            elif not (type(target) is cst.Attribute and type(target.value) is cst.Name and target.value.value == "self"):
                continue
            else:
                part = self.class_attrs.get(owner, {}).get(target.attr.value)
                if part is None:
                    self._half_unsure = True
                if part is None or part.kind != MODULE:
                    continue  # `self.mask.half()`: a tensor, not the module's weights
            name = f.attr.value
            if name == "half" and not call.args:
                return call
            if name == "to" and any(m.qualname(a.value) in ("torch.float16", "torch.half") for a in call.args
                                    if a.keyword is None or a.keyword.value == "dtype"):
                return call
            if name == "apply" and len(call.args) == 1 and type(call.args[0].value) is cst.Name:
                if self._func_halves(call.args[0].value.value):
                    return call
            if type(target) is cst.Name and name != meth and self._converts_to_half(owner, name, ()):
                return call  # `self.convert_blocks()`
        return None

    def _func_halves(self, name: str) -> bool:
        """A function of the file whose parameter's weights (or the parameter) it casts to
        float16: `l.weight.data = l.weight.data.half()`, `l.half()`."""
        key = ("func", name)
        found = self._half_cache.get(key)
        if found is not None:
            return found
        found = False
        fn = self._function_named(name)
        if fn is not None:
            p = fn.params
            params = [x.name.value for x in (*p.posonly_params, *p.params)]
            if params:
                roots = {params[0]} | self._parts_loop_names(fn, params[0])
                for call in self.m.calls_in(fn):
                    f = call.func
                    if type(f) is cst.Attribute and f.attr.value == "half" and not call.args:
                        root = f.value
                        while type(root) is cst.Attribute:
                            root = root.value
                        if type(root) is cst.Name and root.value in roots:
                            found = True
                            break
        self._half_cache[key] = found
        return found

    def _parts_loop_names(self, fn, owner: str) -> set:
        """Names a `for` loop of `fn` binds to the parameters or submodules of `owner` (`for p in
        l.parameters(): p.data = p.data.half()`, E35-3)."""
        out = set()
        for node in self.m.walk(fn.body):
            if type(node) is not cst.For or type(node.target) is not cst.Name:
                continue
            it = node.iter
            if (type(it) is cst.Call and not it.args and type(it.func) is cst.Attribute
                    and it.func.attr.value in ("parameters", "modules", "children")
                    and type(it.func.value) is cst.Name and it.func.value.value == owner):
                out.add(node.target.value)
        return out

    def _class_moves_itself(self, name: str, construction: cst.Call | None = None) -> bool:
        """A module class of the file whose `__init__` moves itself or one of its attributes to a
        device (`self.to(device)`, `self.model.to(device)`, `self.net = self.net.cuda()`): an
        instance is not known to be on the host (yolov7's TracedModel). With the construction: a
        move under `if device is not None:` (or `if self.device:`...) where `device` is a
        parameter this construction leaves to its `None` default does not count (timm's
        `ModelEmaV2(model)`)."""
        info = self.m.classes.get(name)
        init = info.methods.get("__init__") if info is not None else None
        if init is None:
            return False
        m = self.m
        unset = self._params_left_none(init, construction) if construction is not None else set()
        for c in m.calls_in(init):
            if unset and self._guarded_by_unset(c, init, unset):
                continue
            f = c.func
            if type(f) is not cst.Attribute or f.attr.value not in ("to", "cuda"):
                continue
            recv = f.value
            if type(recv) is cst.Attribute:
                recv = recv.value
            if type(recv) is not cst.Name or recv.value != "self":
                continue
            mv = m.move_of_call(c)
            if mv is not None and not mv.to_cpu:
                return True
            if (mv is None and f.attr.value == "to" and len(c.args) == 1 and c.args[0].keyword is None
                    and type(c.args[0].value) is cst.Name and (bs := m.bindings_of(c.args[0].value))
                    and all(b.how == "param" for b in bs)):
                # `self.to(where)` of a parameter not named like a device: where the constructions
                # say (the summary with their arguments reads the device string they pass)
                return True
        return False

    def _set_in_init_only(self, cls: str, attr: str, plain: bool = True) -> bool:
        """A plain class of the file (no base class; any class of the file when not `plain`)
        whose `__init__` assigns `self.<attr>` and no other code of the file assigns
        `<anything>.<attr>` or touches attributes generically (`setattr`, `__dict__`, `__setattr__`)."""
        key = ("init-only", cls, attr, plain)
        found = self._fwd_cache.get(key)
        if found is not None:
            return found
        out = False
        info = self.m.classes.get(cls)
        init = info.methods.get("__init__") if info is not None else None
        # a plain class may derive from plain classes of the file (LLFlow's `class LLFlowModel(
        # BaseModel)`, BaseModel a holder with no base): their code is seen, and a store of the
        # attribute in any of them (but the class's own `__init__`) disqualifies (E67-1)
        family = self._plain_family(cls) if plain and info is not None and info.bases else None
        if init is not None and not (plain and info.bases and family is None):
            out = True
            in_init = False
            if any(self._names_of(x) for x in ("setattr", "__dict__", "__setattr__", "vars")):
                out = False
            for n in self._attributes_of(attr) if out else ():
                t = type(n)
                if t is cst.Attribute:
                    parent = self.m.parents.get(n)
                    tp = type(parent)
                    target = (tp is cst.AssignTarget or (tp in (cst.AugAssign, cst.AnnAssign) and parent.target is n)
                              or tp is cst.Element or tp is cst.StarredElement)
                    if target:
                        fn = self.m.enclosing(n, cst.FunctionDef)
                        on_self = type(n.value) is cst.Name and n.value.value == "self"
                        if on_self and fn is init:
                            in_init = True
                        elif (on_self and fn is not None and self.m.class_of(fn) is not info.node
                              and (family is None or self.m.class_of(fn) not in family)):
                            continue  # another class's own attribute
                        else:
                            out = False
                            break
            out = out and in_init
        self._fwd_cache[key] = out
        return out

    def _plain_family(self, cls: str) -> set | None:
        """The ClassDef nodes of `cls`'s base classes when every class above it is a class of the
        file and the topmost have no base; None otherwise (an imported base may set attributes)."""
        out, todo, seen = set(), list(self.m.classes[cls].bases), {cls}
        while todo:
            b = todo.pop()
            info = self.m.classes.get(b)
            if info is None or b in seen or len(seen) > 8:
                return None
            seen.add(b)
            out.add(info.node)
            todo.extend(info.bases)
        return out

    def _init_moves_anything(self, init: cst.FunctionDef) -> bool:
        """`__init__` has a `.to(...)`, `.cuda(...)` or `.apply(...)` call anywhere (on `self` or a part)."""
        got = self._init_move_cache.get(init)
        if got is None:
            got = any(type(n) is cst.Call and type(n.func) is cst.Attribute
                      and n.func.attr.value in ("to", "cuda", "to_empty", "apply", "_apply", "xpu", "mps")
                      for n in self.m.walk(init))
            self._init_move_cache[init] = got
        return got

    def _init_moves_self(self, init: cst.FunctionDef) -> bool:
        """`__init__`'s body has a statement of its own (not under an `if`, a loop or a `try`)
        that moves the whole instance: `self.to(d)`, `self.cuda()`."""
        body = init.body.body if isinstance(init.body, cst.IndentedBlock) else ()
        for stmt in body:
            if type(stmt) is not cst.SimpleStatementLine:
                continue
            for small in stmt.body:
                c = small.value if type(small) is cst.Expr else None
                if (type(c) is cst.Call and type(c.func) is cst.Attribute and c.func.attr.value in ("to", "cuda")
                        and type(c.func.value) is cst.Name and c.func.value.value == "self"):
                    return True
        return False

    def _init_params_never_given(self, cls: str, init: cst.FunctionDef) -> set[str]:
        """The `None`-default parameters of the class's `__init__` that no construction in the
        file passes; empty unless the class is only ever used by name in calls that construct it
        (no subclass, no other mention that could construct it elsewhere)."""
        key = ("unset", cls)
        found = self._fwd_cache.get(key)
        if found is not None:
            return found
        m = self.m
        self._fwd_cache[key] = set()  # a cycle of subclasses: nothing known
        out: set[str] | None = None
        names = self._names_of(cls)
        for n in names:
            parent = m.parents.get(n)
            if type(parent) is cst.ClassDef and parent.name is n:
                continue
            if type(parent) is cst.Arg and type(m.parents.get(parent)) is cst.ClassDef and parent.keyword is None:
                # a subclass of the file: what its constructions leave unset (auraloss's
                # `MelSTFTLoss(STFTLoss)` passing `**kwargs` to `super().__init__`)
                left = self._left_by_subclass(m.parents[parent], init)
            elif type(parent) is not cst.Call or parent.func is not n:
                out = set()  # a factory argument, an alias...
                break
            else:
                left = self._params_left_none(init, parent)
            out = left if out is None else (out & left)
            if not out:
                break
        out = out or set()
        self._fwd_cache[key] = out
        return out

    def _left_by_subclass(self, sub: cst.ClassDef, init: cst.FunctionDef) -> set[str]:
        """The `None`-default parameters of a base's `init` that every construction of the file
        subclass `sub` leaves unset: `sub` inherits `init` (its own constructions), or its
        `__init__` calls `super().__init__(...)` once at its top level, passing its `**kwargs` at
        most, and no construction of `sub` gives the parameter by keyword."""
        info = self.m.classes.get(sub.name.value)
        if info is None:
            return set()
        own = info.methods.get("__init__")
        if own is None:
            return self._init_params_never_given(sub.name.value, init)
        calls = [c for c in self.m.calls_in(own) if type(c.func) is cst.Attribute and c.func.attr.value == "__init__"]
        if len(calls) != 1 or not _is_super_call(calls[0].func.value):
            return set()
        call = calls[0]
        star = own.params.star_kwarg
        passed = [a for a in call.args if a.star == "**"]
        if any(a.star == "*" for a in call.args) or len(passed) > 1:
            return set()
        if passed:
            if star is None or type(passed[0].value) is not cst.Name or passed[0].value.value != star.name.value:
                return set()
            given = self._keywords_given(sub.name.value, own)
            if given is None:
                return set()
            direct = cst.Call(func=call.func, args=[a for a in call.args if not a.star])
            return self._params_left_none(init, direct) - given
        return self._params_left_none(init, call)

    def _index_names(self) -> None:
        """One pass over the file: its `Name` nodes by identifier and `Attribute` nodes by the
        attribute's name (the per-class and per-attribute questions read these, not the tree)."""
        names: dict[str, list] = {}
        attrs: dict[str, list] = {}
        Name, Attribute = cst.Name, cst.Attribute
        for n in self.m.nodes:
            t = type(n)
            if t is Name:
                names.setdefault(n.value, []).append(n)
            elif t is Attribute:
                attrs.setdefault(n.attr.value, []).append(n)
        self._name_index, self._attr_index = names, attrs

    def _names_of(self, value: str) -> list:
        if self._name_index is None:
            self._index_names()
        return self._name_index.get(value, [])

    def _attributes_of(self, attr: str) -> list:
        if self._attr_index is None:
            self._index_names()
        return self._attr_index.get(attr, [])

    def _keywords_given(self, cls: str, own: cst.FunctionDef) -> set[str] | None:
        """The keywords that constructions of `cls` pass into its `__init__`'s `**kwargs`; None
        when a construction passes star arguments or the class is used otherwise."""
        m = self.m
        p = own.params
        named = {x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)}
        out: set[str] = set()
        for n in self._names_of(cls):
            parent = m.parents.get(n)
            if type(parent) is cst.ClassDef and parent.name is n:
                continue
            if type(parent) is not cst.Call or parent.func is not n or any(a.star for a in parent.args):
                return None
            out.update(a.keyword.value for a in parent.args if a.keyword is not None and a.keyword.value not in named)
        return out

    @staticmethod
    def _params_left_none(fn: cst.FunctionDef, call: cst.Call) -> set[str]:
        """The parameters of `fn` (a method: `self` first) with a `None` default that `call` does
        not pass; empty when `call` passes `*args`/`**kwargs`."""
        if any(a.star for a in call.args):
            return set()
        p = fn.params
        ordered = [x.name.value for x in (*p.posonly_params, *p.params)][1:]
        given = {a.keyword.value for a in call.args if a.keyword is not None}
        given.update(ordered[:sum(1 for a in call.args if a.keyword is None)])
        return {x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)
                if type(x.default) is cst.Name and x.default.value == "None" and x.name.value not in given}

    def _off_in_construction(self, node, init: cst.FunctionDef, e, pos, kw) -> bool:
        """`node` (in `init`) sits under `if P:` / `if self.P:` (or `if P is not None:`) where this
        construction passes `P` a false value (`False`, `None`, `0`) or leaves it to such a default."""
        if any(s for _, _, s in pos) or _STAR in kw or _DOUBLE_STAR in kw:
            return False
        p = init.params
        ordered = [x.name.value for x in (*p.posonly_params, *p.params)][1:]
        given = {ordered[i]: v for i, (_, v, _s) in enumerate(pos) if i < len(ordered)}
        given.update({k: v for k, (_, v) in kw.items() if isinstance(k, str)})
        falsy, none = set(), set()
        for x in (*p.posonly_params, *p.params, *p.kwonly_params):
            name = x.name.value
            if name in given:
                v = given[name]
                if v.kind == "none":
                    none.add(name)
                elif v.truth is False or v.const in ("", "0"):
                    falsy.add(name)
            elif type(x.default) is cst.Name and x.default.value in ("None", "False"):
                (none if x.default.value == "None" else falsy).add(name)
        # (`P is not None` holds for a false `P` that is not None: only the bare test counts there)
        return ((bool(none) and self._guarded_by_unset(node, init, none))
                or (bool(falsy) and self._guarded_by_unset(node, init, falsy, bare=True)))

    def _guarded_by_unset(self, node, fn: cst.FunctionDef, unset: set[str], bare: bool = False) -> bool:
        """`node` sits in the body of an `if P is not None:` / `if P:` (P one of `unset`, or
        `self.P` assigned from it) inside `fn`: it does not run. With `bare`, only `if P:`."""
        m = self.m
        cur = m.parents.get(node)
        while cur is not None and cur is not fn:
            if type(cur) is cst.If and m.contains(cur.body, node):
                if any(self._unset_test(t, fn, unset) for t in _conjuncts(cur.test)
                       if not bare or type(t) in (cst.Name, cst.Attribute)):
                    return True
            cur = m.parents.get(cur)
        return False

    def _unset_test(self, test, fn: cst.FunctionDef, unset: set[str]) -> bool:
        """`P is not None`, `P`, `self.P` (P one of `unset`): false in this construction."""
        if type(test) is cst.Comparison and len(test.comparisons) == 1 and type(
                test.comparisons[0].operator) is cst.IsNot and type(test.comparisons[0].comparator) is cst.Name \
                and test.comparisons[0].comparator.value == "None":
            test = test.left
        name = test.value if type(test) is cst.Name else (
            test.attr.value if type(test) is cst.Attribute and type(test.value) is cst.Name
            and test.value.value == "self" else None)
        return name in unset and (type(test) is cst.Name or self._self_attr_from_param(fn, name))

    def _self_attr_from_param(self, fn: cst.FunctionDef, name: str) -> bool:
        """`self.name = name` is the only assignment of `self.name` in the class's `__init__`."""
        found = 0
        for node in self.m.walk(fn.body):
            if type(node) is cst.Assign:
                for t in node.targets:
                    tt = t.target
                    if type(tt) is cst.Attribute and type(tt.value) is cst.Name and tt.value.value == "self" \
                            and tt.attr.value == name:
                        found += 1
                        if not (type(node.value) is cst.Name and node.value.value == name):
                            return False
        return found == 1

    def _keeps_called_part_of_unknown(self, name: str, init: cst.FunctionDef, e: cst.Call, pos, kw) -> bool:
        """`DecoderIter(tacotron2)` of a value the engine cannot read (a whole-module checkpoint, a
        loader of another module) whose `__init__` keeps a part of it on `self` (`dec =
        model.decoder`, `self.proj = dec.proj`) that a method calls (`self.proj(out)`): a module
        built around parts of a module that may be anywhere, so not known to be on the host
        (NVIDIA Tacotron2's ONNX export wrapper, P47-4)."""
        unknown = set()
        for i, a in enumerate(e.args):
            if a.star:
                continue
            pn = param_name(init, i + 1, a)  # (after `self`)
            v = kw.get(pn, (None, None))[1] if a.keyword is not None else (pos[i][1] if i < len(pos) else None)
            if pn is not None and v is not None and v.kind is None and v.dev is None:
                unknown.add(pn)
        if not unknown:
            return False
        called = self._self_called(name)
        if not called:
            return False
        roots = set(unknown)
        for st in self.m.walk(init.body, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            if type(st) is not cst.Assign or len(st.targets) != 1:
                continue
            t, root = st.targets[0].target, _chain_root(st.value)
            if root is None or root not in roots:
                continue
            if type(t) is cst.Name:
                roots.add(t.value)  # `dec = model.decoder`
            elif (type(t) is cst.Attribute and type(t.value) is cst.Name and t.value.value == "self"
                    and t.attr.value in called and st.value is not None and type(st.value) is cst.Attribute):
                return True  # `self.proj = dec.proj`, called as `self.proj(...)`
        return False

    def _self_called(self, name: str) -> frozenset:
        """The attributes `X` that the methods of class `name` call as `self.X(...)` (once per class)."""
        cache = self._self_called_cache
        got = cache.get(name)
        if got is None:
            called = set()
            for meth in self.m.classes[name].methods.values():
                for c in self.m.calls_in(meth):
                    f = c.func
                    if type(f) is cst.Attribute and type(f.value) is cst.Name and f.value.value == "self":
                        called.add(f.attr.value)
            got = cache[name] = frozenset(called)
        return got

    def _class_made_placed(self, name: str) -> bool:
        """A module class of the file (a direct nn.Module subclass) whose `__init__` makes every
        tensor it holds on a device (`nn.Parameter(torch.rand(5, device=d))`,
        `torch.zeros(n).to(d)`) and builds no submodule that it does not move right away
        (`self.head = nn.Linear(3, 1).to(device)`, TensoRF's fields): an instance needs no move
        of its own."""
        info = self.m.classes.get(name)
        init = info.methods.get("__init__") if info is not None else None
        if init is None or any(b in self.m.classes or kb.class_kind(b) not in (MODULE, None) for b in info.bases):
            return False
        m = self.m
        placed = False
        def moved_at_once(c) -> bool:
            parent = m.parent(c)
            outer = m.parent(parent) if type(parent) is cst.Attribute and parent.value is c else None
            mv = m.move_of_call(outer) if type(outer) is cst.Call and outer.func is parent else None
            return mv is not None and not mv.to_cpu

        for c in m.calls_in(init):
            f = c.func
            q = m.qualname(f)
            if type(f) is cst.Name and f.value in m.classes:
                if moved_at_once(c):
                    placed = True
                    continue
                return False  # a submodule of the file
            if q is None:
                continue
            ck = kb.class_kind(q)
            if ck in (MODULE, METRIC) and q.rsplit(".", 1)[-1] not in ("Parameter", "ParameterList", "ParameterDict"):
                if moved_at_once(c) or _device_keyword(c):
                    # (or built there: `nn.Linear(8, h, device=device)` of the constructor's
                    # `device` parameter, CLEAN's LayerNormNet, E48-1)
                    placed = True
                    continue
                if q.startswith("torch.nn.") and q.rsplit(".", 1)[-1] in STATELESS_MODULES:
                    continue  # `nn.Dropout(p)`: holds no tensor, wherever it is
                return False  # a torch layer: a submodule on the host
            fi = kb.function(q)
            if fi is None or fi.returns != "tensor" or not q.startswith("torch."):
                continue
            # made with `device=`, or moved right away (`.to(d)`, `.cuda()`, `.type(torch.cuda.
            # FloatTensor)`, after other tensor methods: `.reshape(...).type(device_type)`, STDC's
            # kernels, PRECISION31 A5): the model's moves
            mv = m.move_of_call(c)
            typed = False
            node = c
            for _ in range(6):
                if mv is not None:
                    break
                parent = m.parent(node)
                outer = m.parent(parent) if type(parent) is cst.Attribute and parent.value is node else None
                if type(outer) is not cst.Call or outer.func is not parent:
                    break
                mv = m.move_of_call(outer)
                if mv is None and parent.attr.value == "type" and outer.args and self.cuda_tensor_type(outer.args[0].value):
                    typed = True
                    break
                node = outer
            if not typed and (mv is None or mv.to_cpu):
                return False  # a tensor made on the host
            placed = True
        return placed

    def _tensorless_torch_module(self, mv: Value) -> bool:
        """A torch loss or activation built without a weight and without positional arguments
        (`nn.CrossEntropyLoss()`, `nn.ReLU()`): nothing of its own to be on a device."""
        ctor = self.m.constructor_of(mv.origin) if type(mv.origin) is cst.Call else None
        return (ctor is not None and all(a.keyword is not None for a in ctor.args)
                and not any(a.keyword.value in ("weight", "pos_weight") for a in ctor.args)
                and self.m.is_stateless_module(ctor))

    def _moving_transform(self, e: cst.Call) -> bool:
        """A dataset built with a `transform=` (or `target_transform=`) whose expression, or the
        expression a name given there is bound to, moves to a device (`.to(...)`, `.cuda()`)."""
        for a in e.args:
            if a.keyword is None or a.keyword.value not in ("transform", "target_transform", "transforms"):
                continue
            exprs = [a.value]
            if type(a.value) is cst.Name:
                exprs = [b.value for b in self.m.bindings_of(a.value) if b.how == "assign" and b.value is not None]
            for x in exprs:
                for c in self.m.calls_in(x):
                    if type(c.func) is cst.Attribute and c.func.attr.value in ("to", "cuda"):
                        return True
        return False

    def cuda_tensor_type(self, x) -> bool:
        """A legacy CUDA tensor type, or a name bound to one or to a choice with one on either branch
        (`torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor`)."""
        return self.m.cuda_tensor_type(x)

    def _given_stateful_parts(self, init: cst.FunctionDef, pos, kw) -> bool:
        """`SSD(base_net, head)` whose `__init__` stores a parameter on `self` (`self.base_net =
        base_net`) and this construction passes a module with parameters for it: the instance
        holds that module's parameters (deeplite-torch-zoo#61)."""
        if any(st for _, _, st in pos):
            return False
        p = init.params
        ordered = [x.name.value for x in (*p.posonly_params, *p.params)][1:]
        given = {ordered[i]: v for i, (_, v, _s) in enumerate(pos) if i < len(ordered)}
        given.update({k: v for k, (_, v) in kw.items() if isinstance(k, str)})
        parts = {n for n, v in given.items() if v.kind == MODULE and v.stateful}
        if not parts:
            return False
        for node in self.m.walk(init):
            if type(node) is cst.Assign and type(node.value) is cst.Name and node.value.value in parts:
                for t in node.targets:
                    tt = t.target
                    if type(tt) is cst.Attribute and type(tt.value) is cst.Name and tt.value.value == "self":
                        return True
        return False

    def _class_stateful(self, name: str, _seen=()) -> bool:
        """Does a module class of the file hold tensors (parameters, buffers, submodules)? A
        parameterless loss module of the file does not need moving."""
        cached = self._stateful_cache.get(name)
        if cached is not None:
            return cached
        info = self.m.classes.get(name)
        out = False
        if info is not None and name not in _seen:
            m = self.m
            for b in info.bases:
                if b in m.classes:
                    out = out or self._class_stateful(b, (*_seen, name))
                elif kb.class_kind(b) in (MODULE, METRIC) and b.rsplit(".", 1)[-1] not in ("Module", "Metric"):
                    out = True  # subclass of a torch layer
            if not out:
                for c in m.calls_in(info.node):
                    f = c.func
                    meth = f.attr.value if type(f) is cst.Attribute else None
                    if meth in ("register_buffer", "register_parameter", "add_module", "add_state"):
                        out = True
                        break
                    q = m.qualname(f)
                    fi = kb.function(q) if q is not None else None
                    if q is not None and (kb.class_kind(q) in (MODULE, METRIC, TENSOR) or (fi is not None and fi.returns == "tensor")):
                        if kb.class_kind(q) == MODULE and m.is_stateless_module(c):
                            continue  # `self.criterion = nn.L1Loss()`, an activation: nothing to move
                        if kb.class_kind(q) not in (MODULE, METRIC) and not self._stored_on_self(c):
                            continue  # a local tensor of `__init__` (a default value): not the module's
                        if m.enclosing(c, cst.FunctionDef) is info.methods.get("__init__"):
                            out = True
                            break
                    if (type(f) is cst.Name and f.value in m.classes and self._class_kind(f.value) in (MODULE, METRIC)
                            and self._class_stateful(f.value, (*_seen, name))):
                        out = True  # a part of the file that holds tensors (a parameter-free one does not)
                        break
        self._stateful_cache[name] = out
        return out

    def _stored_on_self(self, call: cst.Call) -> bool:
        """The statement of `call` assigns to a `self.<attr>` (`self.w = nn.Parameter(torch.randn(n))`)
        or is not an assignment at all (`self.register_buffer(...)`, a call whose use is unknown)."""
        stmt = self.m.statement_of(call)
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            return True
        small = stmt.body[0]
        if isinstance(small, cst.Assign):
            targets = [t.target for t in small.targets]
        elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
            targets = [small.target]
        else:
            return True
        for t in targets:
            for n in (t, *self.m.walk(t)):
                if type(n) is cst.Attribute and type(n.value) is cst.Name and n.value.value == "self":
                    return True
        return False

    def _wrapper_subclass(self, name: str, _seen=()) -> bool:
        """A class of the file whose bases resolve to torch's DataParallel / DistributedDataParallel."""
        info = self.m.classes.get(name)
        if info is None or name in _seen or len(_seen) > 8:
            return False
        return any(self._wrapper_subclass(b, (*_seen, name)) if b in self.m.classes else kb.is_wrapper(b)
                   for b in info.bases)

    def _class_kind(self, name: str | None, _seen=()) -> str | None:
        if name is None:
            return None
        info = self.m.classes.get(name)
        if info is None or name in _seen:
            return None
        if not _seen and (self.m.method_of_class(name, "update") is not None
                          and self.m.method_of_class(name, "compute") is not None):
            # (its own or inherited: torchmetrics#275's IoU(ConfusionMatrix) overrides compute only)
            if self._class_kind(name, ("",)) in (MODULE, METRIC):
                return METRIC  # an nn.Module-based metric of the file (state buffers, update/compute)
        for b in info.bases:
            k = self._class_kind(b, (*_seen, name)) if b in self.m.classes else kb.class_kind(b)
            if k is not None:
                return {"dataloader": LOADER}.get(k, k)
        return None

    def _call_method(self, cls, meth, selfv, e, pos, kw, frame, summary_only=False) -> Value:
        found = self.m.method_of_class(cls, meth)
        if found is None:
            return UNKNOWN
        fn, owner = found
        return self._call_function(fn, owner, e, pos, kw, frame, selfv)

    def _call_function(self, fn: cst.FunctionDef, cls, e, pos, kw, frame, selfv, summary: bool = True,
                       closure: tuple = ()) -> Value:
        if type(fn) is _TorchFn:
            return self._qualified_call(e, fn.q, pos, kw, frame)  # `rand_func(1)`
        if fn is None:
            return UNKNOWN
        if type(fn) is cst.Lambda:
            return self._call_lambda(fn, pos, kw, frame) if summary else UNKNOWN
        p = fn.params
        names = [x.name.value for x in (*p.posonly_params, *p.params)]
        if names and ((selfv is not None and not _is_static(fn)) or _is_classmethod(fn)):
            names = names[1:]  # the receiver (a staticmethod called on an instance takes none; a classmethod its class)
        args: dict[str, Value] = {}
        ok = True
        i = 0  # the next positional parameter
        for x, v, s in pos:
            if s == "**":
                # `self._sample(features, labels, **kwargs)`: the parameters it names are known; any
                # other may come from the mapping (not its default), unless the mapping is known
                # to hold only some keywords (`**kwargs` that every call of the caller leaves empty)
                dv = kw.get(_DOUBLE_STAR, (None, UNKNOWN))[1]
                if dv.kind == MAPPING and dv.keys is not None and not _grown_from_empty(dv):
                    for k0, v0 in dv.keys:
                        if isinstance(k0, str) and k0 not in args:
                            args[k0] = v0
                else:
                    args[_DOUBLE_STAR] = UNKNOWN
                continue
            if s == "*":
                sx, sv = kw.get(_STAR, (None, UNKNOWN))
                v = sv if sx is x else UNKNOWN
            if s == "*" and v.kind == TUPLE and v.items is not None and i + len(v.items) <= len(names):
                # `DataBunch(*create_loaders(...))`: a sequence of known length fills the next
                # parameters in order
                for it in v.items:
                    args[names[i]] = it
                    i += 1
                continue
            if not s and i >= len(names) and isinstance(p.star_arg, cst.Param):
                i += 1
                continue  # taken by the function's `*args` (its named parameters are known)
            if s or i >= len(names):
                ok = False
                break
            args[names[i]] = self._device_literal(x, v)
            i += 1
        for k, (x, v) in kw.items():
            if k != _STAR and k != _DOUBLE_STAR:  # `f(*xs, **kw)`: no parameter of that name
                args[k] = self._device_literal(x, v)
        if frame.quiet or self._self_check_call(e, frame, selfv, pos, kw):
            # a self-check and its calls are not the program's call sites
            return self._summary(fn, cls, args if ok else {}, selfv, None, self._caller_attrs(e, frame, selfv), True) \
                if summary else UNKNOWN
        sites = self.site_values.setdefault(fn, {})
        site_args = args
        if ok and selfv is not None and cls is not None and selfv.cls is not None:
            site_args = {**args, _RECEIVER: selfv}  # the receiver, for the method's recorded pass
        globs = ()
        if frame.moved_globals:
            globs = tuple(sorted((n, frame.env[n]) for n in frame.moved_globals if n in frame.env))
            if ok and globs:
                site_args = {**site_args, **{(_GLOBAL, n): v for n, v in globs}}
        if not ok or (e in sites and sites[e] is None):
            sites[e] = None
        elif e in sites:
            old = sites[e]
            sites[e] = {k: join(old.get(k), v) for k, v in site_args.items() if k in old}
        else:
            sites[e] = site_args
        if not summary:
            return UNKNOWN
        self._last_exit_globals = None
        out = self._summary(fn, cls, args if ok else {}, selfv, None if frame.cpu_only else e,
                            self._caller_attrs(e, frame, selfv), globs=globs, closure=closure)
        left = self._last_exit_globals
        if left:
            # `train()` moved the module-level `model` in place: after the call it is there
            top = frame.fn is self.m.module
            for n, v in left:
                if top or self._global_name(n, frame.fn):
                    frame.env[n] = v
                    if not top:
                        if frame.moved_globals is None:
                            frame.moved_globals = set()
                        frame.moved_globals.add(n)
        return out

    def _self_check_call(self, e, frame: _Frame, selfv, pos, kw) -> bool:
        """`self.forward(sample)` from another method of the module with a sample on the host (a
        `test()` self-check that runs the model on `torch.rand(...)`): the instance is wherever the
        caller left it, unknown here, so what the forward pass meets is no mismatch to report at
        this call (MedicalZoo's models, PRECISION21 A2). A receiver known to be on an accelerator
        still counts, and so does a sample the method moved (`image.to(DEVICE)` before
        `self.forward(image)` on a model never moved: GL112)."""
        f = e.func if type(e) is cst.Call else None
        if not (type(f) is cst.Attribute and f.attr.value == "forward" and type(f.value) is cst.Name
                and f.value.value == "self" and frame.cls is not None and type(frame.fn) is cst.FunctionDef
                and not self._forwardish(frame.fn)
                and (selfv is None or selfv.dev is None or not selfv.dev.is_acc)):
            return False
        vals = [v for _, v, st in pos if not st] + [v for k, (_, v) in kw.items() if isinstance(k, str)]
        tensors = [v for v in vals if v.kind == TENSOR]
        return bool(tensors) and all(v.dev is not None and v.dev.is_host for v in tensors)

    def _caller_attrs(self, e, frame: _Frame, selfv) -> tuple:
        """`self.meth(...)` from a method that has re-bound some `self` attributes on its way
        (`self.mask = self.mask.type_as(x)` before `self.predict(x)`): the called method reads
        them as the caller left them, not as the class's other methods set them. Those bindings
        of the caller that differ from the class's joined values, as (key, value) pairs."""
        f = e.func if type(e) is cst.Call else None
        if (type(f) is not cst.Attribute or type(f.value) is not cst.Name or f.value.value != "self"
                or frame.cls is None or selfv is None or selfv is not frame.env.get("self")):
            return ()
        known = self.class_attrs.get(frame.cls, {})
        out = [(k, v) for k, v in frame.env.items()
               if k.startswith("self.") and known.get(k[5:]) != v]
        return tuple(sorted(out, key=lambda kv: kv[0]))

    def _device_literal(self, x, v: Value) -> Value:
        """An argument written as a device's name (`Policy(4, "cpu")`, `device="cuda:1"`): that
        device, for the callee's parameter; any other argument as it is."""
        d = self._named_device(x)
        return Value(DEVICE, d) if d is not None else v

    def _named_device(self, x) -> Dev | None:
        """The device a string literal names (`"cpu"`, `"cuda:1"`), None for any other expression."""
        if type(x) is cst.SimpleString and len(x.value) < 12 and _DEVICE_STRING.fullmatch(x.value):
            return self._device_value(x, None)
        return None

    def _call_lambda(self, fn: cst.Lambda, pos, kw, frame) -> Value:
        """A lambda called through a value (`update_fn(ema_v, model_v)`, where the caller was given
        `update_fn=lambda e, m: d * e + (1 - d) * m`): its body with this call's arguments, in a
        frame recorded when the calling one is (a lambda has no pass of its own; where it is
        written only its value is made). Names it does not bind are its enclosing scope's."""
        if self._lambda_depth >= MAX_DEPTH or self._work > self._budget:
            return UNKNOWN
        p = fn.params
        names = [x.name.value for x in (*p.posonly_params, *p.params)]
        inner = _Frame(fn, None, self._outer_frame(fn), frame.record)
        inner.nograd, inner.devctx, inner.cpu_only = frame.nograd, frame.devctx, frame.cpu_only
        for param in (*p.posonly_params, *p.params, *p.kwonly_params):
            inner.env[param.name.value] = UNKNOWN
        for star in (p.star_arg, p.star_kwarg):
            if isinstance(star, cst.Param):
                inner.env[star.name.value] = UNKNOWN
        for i, (x, v, s) in enumerate(pos):
            if s or i >= len(names):
                break
            inner.env[names[i]] = v
        for k, (x, v) in kw.items():
            if k in inner.env:
                inner.env[k] = v
        self._lambda_depth += 1
        try:
            return self.eval(fn.body, inner)
        finally:
            self._lambda_depth -= 1

    def _called_from_forward(self, site) -> bool:
        fn = self.m.enclosing(site, cst.FunctionDef)
        return fn is not None and self._forwardish(fn)

    def _summary(self, fn, cls, args: dict, selfv, site=None, attrs: tuple = (), quiet: bool = False,
                 globs: tuple = (), closure: tuple = ()) -> Value:
        if len(self._in_summary) >= MAX_DEPTH or fn in self._in_summary or self._work > self._budget:
            if len(self._in_summary) >= MAX_DEPTH:
                self._cut_short = True
            return UNKNOWN
        # a submodule of a module whose placement is not known (`self.denoise_fn`, "wherever the
        # module is"), called from a method that is not a forward (an export helper feeding it
        # `.cpu()` inputs, diff-svc, P52-2): GL105's premise, that its inputs are on its device, is
        # not the caller's, so "where the module is" counts as no accelerator in what it runs (only
        # where an argument was put on the host on purpose; a factory's host noise fed to a decoder
        # from `sample()` stays a finding)
        unplaced = (selfv is not None and selfv.kind == MODULE and selfv.dev == MODEL_DEV and site is not None
                    and any(type(v) is Value and v.kind == TENSOR and _moved_to_host(v) for v in args.values())
                    and not self._called_from_forward(site))
        key = (fn, tuple(sorted(args.items(), key=lambda kv: kv[0])), selfv, attrs, quiet, self._host_instances > 0,
               unplaced)
        if globs or closure:
            key = (*key, globs, closure)
        live = self._live_outer(fn)
        if live is not None:
            key = (*key, id(live), tuple(sorted((k, v) for k, v in live.env.items() if isinstance(k, str))))
        try:
            found = self._summaries.get(key)
        except TypeError:
            return UNKNOWN
        if found is not None:
            if site is not None:
                self._found_under(site, self._with_origins(self._summary_found.get(key), self._summary_args.get(key), args))
            if fn.name.value == "__init__":
                self._last_init_self = self._init_self.get(key)
            self._last_exit_self = self._exit_self.get(key)
            self._last_exit_globals = self._exit_globals.get(key)
            return found
        self._in_summary.append(fn)
        self._summary_keys.append(key)
        self._summary_args[key] = args
        outer = self._collect
        mine = self._collect = []
        cut_before, self._cut_short = self._cut_short, False
        try:
            frame = _Frame(fn, cls, self._outer_frame(fn), False)
            frame.quiet = quiet
            self._params_of(fn, cls, args, frame)
            if selfv is not None and cls is not None:
                frame.env["self"] = selfv
                frame.env.update(attrs)  # the calling method's own view of them
            if globs:
                frame.env.update(globs)  # module-level names as the caller left them
                frame.moved_globals = {n for n, _ in globs}
            if closure:
                frame.env.update(closure)  # a closure's free names, as its maker left them
            active = self._active.setdefault(fn, [])
            active.append(frame)
            # run for an instance known to be on the host (built, never moved): "where the module
            # is" is the host there and in what it calls, not the accelerator of GL105's premise
            host = selfv is not None and selfv.dev is not None and selfv.dev.is_host and selfv.kind in (MODULE, METRIC)
            host = host or unplaced
            self._host_instances += host
            try:
                self._block(fn.body.body if isinstance(fn.body, cst.IndentedBlock) else [fn.body], frame)
            finally:
                active.pop()
                self._host_instances -= host
            if frame.yields is not None:  # a generator function: calling it gives an iterator
                out = Value(ITER, None, elem=frame.yields if frame.yields.kind is not None else None)
            else:
                out = frame.returns if frame.returns is not None else Value(HOSTVAL, HOST)
            if cls is not None and frame.assigned_self and fn.name.value == "__init__":
                self._store_attrs(frame, cls, key)  # what this instance's constructor sets
                if selfv is not None and selfv.cls is not None and selfv.cls != cls and selfv.cls in self.m.classes:
                    # an `__init__` inherited from a base of the file: the subclass's instance too
                    self._store_attrs(frame, selfv.cls, key)
            if fn.name.value == "__init__":
                self._init_self[key] = self._last_init_self = frame.env.get("self")
                if selfv is not None and selfv.kind in (OBJECT, MODULE) and frame.assigned_self and args:
                    # what a plain class's constructor stored from this construction's arguments
                    self._exit_self[key] = self._last_exit_self = tuple(sorted(
                        (a, frame.env.get("self." + a, UNKNOWN)) for a in frame.assigned_self))
            elif (selfv is not None and selfv.kind in (OBJECT, MODULE) and frame.assigned_self
                    and frame.yields is None and self._falls_off_the_end(fn)):
                self._exit_self[key] = tuple(sorted(
                    (a, frame.env.get("self." + a, UNKNOWN)) for a in frame.assigned_self))
            if frame.moved_globals and frame.yields is None and self._falls_off_the_end(fn):
                self._exit_globals[key] = tuple(sorted(
                    (n, frame.env[n]) for n in frame.moved_globals if n in frame.env))
        finally:
            self._in_summary.pop()
            self._summary_keys.pop()
            self._collect = outer
            cut, self._cut_short = self._cut_short, cut_before or self._cut_short
        # a call inside cut off by the depth bound: this result holds only this deep, so it is not
        # kept; a call from a shallower place (a script's `main()`, run by the module-level call and
        # then recorded itself) analyses it again (E69-1 of the probes: texar's chain of four calls)
        keep = not (cut and self._in_summary)
        if keep:
            self._summaries[key] = out
        if fn.name.value != "__init__":
            self._last_exit_self = self._exit_self.get(key)
        self._last_exit_globals = self._exit_globals.get(key)
        if mine:
            if keep:
                self._summary_found[key] = mine
            if site is not None:
                self._found_under(site, mine)
        return out

    def _falls_off_the_end(self, fn) -> bool:
        """A function whose only way out is its end (or one `return` as its last statement; a
        `raise` anywhere leaves nothing): the environment at the end of its body is the one every
        call that comes back leaves."""
        got = self._ends_plainly.get(fn)
        if got is None:
            body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else [fn.body]
            last = body[-1] if body else None
            got = True
            for node in _exits_in(fn):
                if not (type(last) is cst.SimpleStatementLine and node in last.body):
                    got = False
                    break
            self._ends_plainly[fn] = got
        return got

    def _at_apply(self, mm: Mismatch, chain: tuple):
        """A mismatch in the static `forward` of an autograd Function of the file between two of
        its parameters, found with the arguments of `Fn.apply(...)`: the operands are the call's
        arguments (`MaskedFn.apply(x, self.weight, self.mask)`), so it is reported at that call,
        between those arguments, where the rules see the module's own state (E36-4)."""
        site = chain[0] if len(chain) == 1 else None
        if site is None or site not in self._apply_calls:
            return mm, chain
        fn = mm.function
        if type(fn) is not cst.FunctionDef or type(mm.host) is not cst.Name or type(mm.acc) is not cst.Name:
            return mm, chain
        params = [x.name.value for x in (*fn.params.posonly_params, *fn.params.params)][1:]
        pos = [a.value for a in site.args if a.keyword is None and not a.star]
        kw = {a.keyword.value: a.value for a in site.args if a.keyword is not None}

        def arg(name):
            if name in kw:
                return kw[name]
            i = params.index(name) if name in params else len(pos)
            return pos[i] if i < len(pos) else None

        host, acc = arg(mm.host.value), arg(mm.acc.value)
        if host is None or acc is None:
            return mm, chain
        return replace(mm, node=site, op="call", host=host, acc=acc, more_hosts=(),
                       function=self.m.enclosing(site, cst.FunctionDef)), ()

    @staticmethod
    def _with_origins(found, before: dict | None, now: dict):
        """A summary's mismatches reused for a call whose arguments are equal in value but made
        elsewhere (`adversarial_loss(y_hat, valid)` and `adversarial_loss(y_hat, fake)`): the host
        operand that was an argument's value is this call's argument (its origin, for GL105)."""
        if not found or not before:
            return found
        moved = {}
        for k, v in before.items():
            w = now.get(k)
            if w is not None and v.origin is not None and w.origin is not None and w.origin is not v.origin:
                moved[id(v.origin)] = w.origin
        if not moved:
            return found
        out = []
        for mm, chain in found:
            o = mm.host_value.origin
            if o is not None and id(o) in moved:
                mm = replace(mm, host_value=replace(mm.host_value, origin=moved[id(o)]))
            out.append((mm, chain))
        return out

    def _found_under(self, site, found) -> None:
        """The mismatches a summary found, under the call `site` that asked for it: into the
        enclosing summary's list, or (called from a recorded function) the per-site ones."""
        if not found:
            return
        if self._collect is None and self._back_loops:
            loop = self._back_loops[-1]
            items = [(mm if mm.loop is not None else replace(mm, loop=loop), (site, *chain)) for mm, chain in found]
        else:
            items = [(mm, (site, *chain)) for mm, chain in found]
        (self._collect if self._collect is not None else self._site_found).extend(items)

    def _lightning_step(self, fn: cst.FunctionDef) -> bool:
        """`training_step`/`validation_step`/`test_step`/`predict_step` of a LightningModule of the
        file: Lightning moves the module and each batch to the same device before calling it, so
        the batch and what the module computes from it live where the module runs
        (pytorch-lightning#2400: a `torch.arange(n)` target there meets the device predictions)."""
        if fn.name.value not in _LIGHTNING_STEPS:
            return False
        cls = self.m.class_of(fn)
        return cls is not None and self.m.class_is(cls.name.value, _LIGHTNING_BASES)

    def in_module_forward(self, node) -> bool:
        """`node` is in `forward` (or a helper only forward-ish code calls) of a module class of the
        file: what it computes from the inputs and parameters lives wherever the module runs."""
        fn = self.m.enclosing(node, cst.FunctionDef)
        cls = self.m.class_of(fn) if fn is not None else None
        return (cls is not None and self._class_kind(cls.name.value) == MODULE
                and self.m.enclosing(fn, cst.FunctionDef) is None and self._forwardish(fn))

    def _part_of_class(self, recv, cls: str) -> bool:
        """`self.<part>` every binding of which in its class builds an instance of the file's
        module class `cls` or of a subclass of it (`self.randomizer = NoiseRandomizer()`)."""
        if not (type(recv) is cst.Attribute and type(recv.value) is cst.Name and recv.value.value == "self"):
            return False
        if self._class_kind(cls) != MODULE:
            return False
        bindings = self.m.bindings_of(recv)
        if not bindings:
            return False
        for b in bindings:
            v = b.value
            if b.how != "assign" or type(v) is not cst.Call or type(v.func) is not cst.Name:
                return False
            if v.func.value not in self.m.classes or not self._subclass(v.func.value, cls):
                return False
        return True

    def _forwardish(self, fn: cst.FunctionDef, _seen=()) -> bool:
        """`forward`, or a helper every call of which (by name, in this file) is made from a
        forward-ish function of the same class: its values computed from the inputs run where the
        module runs."""
        if fn.name.value == "forward":
            return True
        cached = self._fwd_cache.get(fn)
        if cached is not None:
            return cached
        if self._lightning_step(fn):
            self._fwd_cache[fn] = True
            return True
        out = False
        name = fn.name.value
        cls = self.m.class_of(fn)
        if cls is not None and fn not in _seen and len(_seen) < 4 and not name.startswith("__"):
            sites = self._calls_by_attr.get(name, ())
            if sites and len(sites) == self._site_count.get(name, -1):
                out = True
                for c in sites:
                    recv = c.func.value
                    caller = self.m.enclosing(c, cst.FunctionDef)
                    owner = self.m.class_of(caller) if caller is not None else None
                    if owner is None or not self._forwardish(caller, (*_seen, fn)):
                        out = False
                        break
                    if type(recv) is cst.Name and recv.value == "self":
                        # the same instance: a method of its class, or of a subclass of the file
                        # (`Randomizer.forward_in` calling `self._forward_in(...)` that
                        # `NoiseRandomizer` defines)
                        if owner is cls or self._subclass(owner.name.value, cls.name.value) \
                                or self._subclass(cls.name.value, owner.name.value):
                            continue
                    elif self._part_of_class(recv, cls.name.value):
                        continue  # `self.randomizer.forward_in(obs)` in a forward: its submodule (E36-2)
                    out = False
                    break
        self._fwd_cache[fn] = out
        return out

    # ------------------------------------------------------------------------------------------
    # the device-mismatch query
    # ------------------------------------------------------------------------------------------
    def _gpu_index(self, d: Dev) -> int | None:
        """The index of the GPU a device names when the code says it: `cuda:2`, `.cuda(2)`; `cuda`
        and `.cuda()` are the current device, GPU 0 unless the file changes it."""
        if d.where != "acc":
            return None
        if d.key == "cuda":
            if self._sets_device is None:
                self._sets_device = any(True for _ in self.m.iter_calls(
                    "torch.cuda.set_device", "torch.cuda.device", "torch.cuda.device_of"))
            return None if self._sets_device else 0
        m = _CUDA_INDEX.fullmatch(d.key)
        return int(m.group(1)) if m else None

    def _check_gpus(self, node, op: str, operands, frame: _Frame) -> None:
        """Two tensor operands on GPUs the code names by different indices (the model on
        `.cuda(2)`, its input on `.cuda()`): "found at least two devices, cuda:0 and cuda:2"."""
        seen = None
        for x, v in operands:
            if v.kind != TENSOR or v.dev is None:
                continue
            i = self._gpu_index(v.dev)
            if i is None:
                continue
            if seen is None:
                seen = (x, v, i)
            elif i != seen[2]:
                if any(y in self._mismatch_seen for y, _ in operands):
                    return
                self._mismatch_seen.add(node)
                first, other = (seen[:2], (x, v)) if op != "module-call" else ((x, v), seen[:2])
                self.gpu_mismatches.append(Mismatch(node, op, first[0], first[1], other[0], other[1], frame.fn))
                return

    def _check(self, node, op: str, operands, frame: _Frame, strict: bool = False) -> None:
        """`strict`: an operation whose operands must all be on one device whatever their
        dimension (`torch.stack`, `torch.cat`, clamp bounds): a 0-dim CPU tensor counts too."""
        if frame.cpu_only:
            return
        if not frame.record or self._in_summary:
            if self._collect is not None and not frame.record:
                hosts, acc = self._placed_operands(op, operands, frame, strict)
                if hosts and acc is not None and (op != "index" or operands[0][1] is hosts[0][1]):
                    host = hosts[0]
                    self._collect.append(
                        (Mismatch(node, op, host[0], host[1], acc[0], acc[1], frame.fn, tuple(hosts[1:])), ()))
            return
        hosts, acc = self._placed_operands(op, operands, frame, strict)
        if hosts and any(v.dev == PATH_HOST for _, v in hosts):
            hosts = [(x, v) for x, v in hosts if not (v.dev == PATH_HOST and self._path_excluded(node, v))]
        if not hosts and acc is not None and node not in self._mismatch_seen:
            self._check_gpus(node, op, operands, frame)
        if not hosts or acc is None or node in self._mismatch_seen:
            return
        if any(x in self._mismatch_seen for x, _ in operands):
            return  # an operand already failed there (`(data - host_a) / host_b`): one report
        host = hosts[0]
        if op == "index" and operands[0][1] is not host[1]:
            return  # device tensor indexed with host indices: allowed
        self._mismatch_seen.add(node)
        self.mismatches.append(Mismatch(node, op, host[0], host[1], acc[0], acc[1], frame.fn, tuple(hosts[1:]),
                                        loop=self._back_loops[-1] if self._back_loops else None))

    def _path_excluded(self, node, v: Value) -> bool:
        """A value on the host on one path of a conditional expression (`criterion(...) if
        self.stopnet else torch.zeros(1)`), met inside an `if` whose test requires the other path
        (`if not self.separate_stopnet and self.stopnet:`): the host path never reaches here
        (mozilla/TTS's TacotronLoss, P55-2)."""
        m = self.m
        origin = v.origin
        if origin is None:
            return False
        test, host_is_else, child = None, False, origin
        for anc in m.ancestors(origin):
            if type(anc) is cst.IfExp and child is not anc.test:
                test, host_is_else = anc.test, child is anc.orelse
                break
            child = anc
        if test is None:
            return False
        return requires_other_path(m, node, test, host_is_else)

    def _int_selected(self, x, frame) -> bool:
        """`ranks[r, q]` or `ranks[r][q]`: an element of a tensor picked by two integers or more,
        maybe 0-dim (one integer picks a row of the batch the code iterates: still checked)."""
        if type(x) is not cst.Subscript:
            return False
        elements = list(x.slice)
        if len(elements) == 1:
            if not (type(x.value) is cst.Subscript and len(x.value.slice) == 1):
                return False  # one integer (`topk_index[i]` of a batch of rows): a row, as the code reads it
            elements += list(x.value.slice)
        for el in elements:
            s = el.slice
            if type(s) is not cst.Index:
                return False
            v = self.eval(s.value, frame)
            if not (v.kind == HOSTVAL and v.py in ("int", None)):
                return False  # (a number the code counts with: `r += 1` keeps no Python type)
        return True

    def _plain_host_move(self, call) -> bool:
        """`x.cpu()` or `x.to("cpu")` run on every path of its function (no `if`, conditional
        expression or `except` around it): a host copy whatever the device is, not a CPU-only
        branch's choice (E42-8)."""
        if not (type(call) is cst.Call and type(call.func) is cst.Attribute
                and call.func.attr.value in ("cpu", "to", "type_as")):
            # (`.type_as(host)`: converted to the type of a host tensor, its device included, to
            # match its dtype, SpatialAttentionGAN#1, E60-3)
            return False
        for anc in self.m.ancestors(call):
            t = type(anc)
            if t in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
                return True
            if t is cst.If or t is cst.IfExp:
                # a branch of a test that names no device, rank, precision or the like
                # (`elif huber_schedule == "snr":`, sd-scripts#2102) runs on a GPU as well
                if _DEVICE_WORDS.search(self.m.module.code_for_node(anc.test)):
                    return False
                continue
            if t is cst.Else and type(self.m.parent(anc)) is cst.If:
                continue  # its `if` decides
            if t in (cst.ExceptHandler, cst.Else, cst.While, cst.BooleanOperation):
                return False
        return True

    def _placed_operands(self, op: str, operands, frame: _Frame, strict: bool = False):
        """The operands known to be on the host (that count at this operation), and the first one
        known to be on an accelerator (or None)."""
        acc = None
        hosts = []
        # "where the module is" counts as the accelerator only in `forward` (GL105's premise: the
        # inputs of a model's forward are on its device); other methods may run before a move
        fn = frame.fn
        in_forward = isinstance(fn, cst.FunctionDef) and self._forwardish(fn) and not self._host_instances
        for x, v in operands:
            d = v.dev
            if d is None or v.kind != TENSOR:
                continue
            if (d.is_host or (d == PATH_HOST and v.nonscalar)) and (
                    v.nonscalar or strict or (op == "index" and v is operands[0][1])):
                if (v.placed is not None and op in ("call", "binary") and not _like_device(v.placed)
                        and not self._plain_host_move(v.placed)):
                    continue  # moved to the CPU on purpose (`x.cpu()`): usually under a CPU-only guard
                # (fed to a module on the accelerator it fails whatever the intent)
                hosts.append((x, v))
            elif d.where == "acc" or (d.where == "model" and (in_forward or (op != "module-call" and d.key == "input"))):
                acc = acc or (x, v)
        return hosts, acc
