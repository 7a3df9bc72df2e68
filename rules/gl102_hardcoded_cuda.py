"""GL102 hardcoded-cuda."""

from __future__ import annotations

import io
import re
import tokenize

import libcst as cst

from gpulint.analysis.devices import DeviceFacts
from gpulint.flow import argparse_default, is_parsed_namespace
from gpulint.model import AVAILABILITY_NAMES, AVAILABILITY_TOKENS, dotted
from gpulint.rule import Context, Rule
from gpulint.sites import line_ref, other_lines, outermost, unsuppressed

# Calls whose "cuda" string is a device *type* for a feature, not a placement.
_DEVICE_TYPE_CALLS = (
    "torch.autocast",
    "torch.amp.autocast",
    "torch.amp.GradScaler",
    "torch.GradScaler",
    "torch.cuda.amp.autocast",
    "torch.get_autocast_dtype",
    "torch.is_autocast_enabled",
    "torch.backends.",
    "torch.cuda.",
    "torch.profiler.",
    "torch.compile",
)


# the node kinds the whole-file scans below look at (none of them has a subclass: a node is one of
# them exactly when its type is)
_TESTED = frozenset({cst.If, cst.IfExp, cst.While, cst.Assert})
_BINDERS = frozenset({cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.Param})


class _FileAnswers:
    """GL102's answers about one file (the model's `facts` keeps one per file): the whole-file
    scans below are asked for up to four times per file by `check` and `_fallback_findings`, and
    read only the tests (`if`, conditional expressions, `while`, `assert`) and the binders of a
    file, listed here once in source order."""

    def __init__(self, m) -> None:
        self.answers: dict = {}
        nodes = m.nodes
        self.tested = [n for n in nodes if type(n) in _TESTED]
        self.binders = [n for n in nodes if type(n) in _BINDERS]


def _tested(m) -> list:
    return m.facts(_FileAnswers).tested


def _per_file(fn):
    """Memoize `fn(m)` per file (its answer depends on the model alone)."""
    def memoized(m):
        answers = m.facts(_FileAnswers).answers
        key = fn.__name__
        if key not in answers:
            answers[key] = fn(m)
        return answers[key]

    memoized.__name__, memoized.__doc__, memoized.__wrapped__ = fn.__name__, fn.__doc__, fn
    return memoized


def _cuda_literal(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.SimpleString):
        v = node.evaluated_value
        if isinstance(v, str) and (v == "cuda" or v.startswith("cuda:")):
            return v
    return None


# torch.cuda calls that need a CUDA device at run time: a file that makes them is CUDA-only whatever
# device its tensors are given, so a CPU fallback for the placements would not make it run.
_CUDA_ONLY_CALLS = frozenset(
    "torch.cuda." + n
    for n in (
        "get_device_capability get_device_properties get_device_name is_bf16_supported set_device "
        "current_device synchronize Event Stream stream current_stream CUDAGraph graph graphs "
        "make_graphed_callables memory_allocated max_memory_allocated memory_reserved "
        "max_memory_reserved reset_peak_memory_stats reset_max_memory_allocated memory_summary "
        "memory_stats mem_get_info memory._record_memory_history memory._dump_snapshot "
        "memory._snapshot _record_memory_history nvtx.range_push nvtx.range_pop nvtx.range nvtx.mark "
        "get_arch_list"
    ).split()
)
# CUDA queries a script makes to choose a precision, not a device (`torch.cuda.is_available() and
# torch.cuda.is_bf16_supported()` picks bfloat16 over float16)
_CAPABILITY_PROBES = frozenset(
    "torch.cuda." + n for n in ("is_bf16_supported", "get_device_capability", "get_device_properties", "get_device_name")
)
_DTYPE_NAME = re.compile(r"(?i)b?float(?:16|32)|half|bf16|fp16|fp32|tf32|(?:bf)?16-mixed|32-true|32|16")
_DTYPE_QUALNAMES = frozenset("torch." + n for n in ("bfloat16", "float16", "float32", "half", "float"))


def _dtype_choice(m, node: cst.CSTNode) -> bool:
    """A branch of a precision choice: a dtype name (`"bfloat16"`, `"float16"`) or `torch.bfloat16`."""
    if isinstance(node, cst.SimpleString):
        v = node.evaluated_value
        return isinstance(v, str) and bool(_DTYPE_NAME.fullmatch(v))
    return m.qualname(node) in _DTYPE_QUALNAMES


@_per_file
def precision_probes(m) -> set[int]:
    """ids of the availability calls and capability queries that only choose a precision: the
    test of a conditional expression between two dtypes, written
    `torch.cuda.is_available() and torch.cuda.is_bf16_supported()` (nanoGPT's
    `dtype = 'bfloat16' if ... else 'float16'`). Such a test does not choose the device."""
    out: set[int] = set()
    for node in _tested(m):
        if not isinstance(node, cst.IfExp) or not isinstance(node.test, cst.BooleanOperation):
            continue
        if not (_dtype_choice(m, node.body) and _dtype_choice(m, node.orelse)):
            continue
        test = node.test
        if not isinstance(test.operator, cst.And):
            continue
        left, right = test.left, test.right
        if not (isinstance(left, cst.Call) and m.qualname(left.func) in AVAILABILITY_NAMES and not left.args):
            continue
        probe = right
        while isinstance(probe, (cst.Comparison, cst.Subscript)):
            probe = probe.left if isinstance(probe, cst.Comparison) else probe.value
        if not (isinstance(probe, cst.Call) and m.qualname(probe.func) in _CAPABILITY_PROBES):
            continue
        out.add(id(left))
        out.add(id(probe))
    return out


_LOG_METHODS = frozenset({"info", "debug", "warning", "warn", "log", "write", "print", "echo", "add_text"})


def _shown_only(m, node) -> bool:
    """`node` is only shown to the user: an argument (or part of one: an f-string, a `%` or
    `.format()` text) of `print(...)` or a logger call, written as its own statement."""
    cur = node
    for _ in range(8):
        parent = m.parent(cur)
        if isinstance(parent, cst.Call) and cur is not parent.func:
            f = parent.func
            if (isinstance(f, cst.Name) and f.value == "print") or (
                    isinstance(f, cst.Attribute) and f.attr.value in _LOG_METHODS):
                return isinstance(m.parent(parent), cst.Expr)
            if isinstance(f, cst.Attribute) and f.attr.value == "format":
                cur = parent
                continue
            return False
        if isinstance(parent, (cst.Arg, cst.FormattedStringExpression, cst.FormattedString, cst.Element,
                               cst.Tuple, cst.BinaryOperation, cst.ConcatenatedString)):
            cur = parent
            continue
        return False
    return False


def idle_probes(m) -> set[int]:
    """ids of the availability calls whose answer the file only prints or logs (`print("CUDA:",
    torch.cuda.is_available())`, or `USE_CUDA = torch.cuda.is_available()` whose every read is
    shown that way, or never read): such a test does not choose the device."""
    out: set[int] = set()
    for call in m.calls:
        if m.qualname(call.func) not in AVAILABILITY_NAMES or call.args:
            continue
        if _shown_only(m, call):
            out.add(id(call))
            continue
        parent = m.parent(call)
        if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1
                and isinstance(parent.targets[0].target, cst.Name)):
            continue
        target = parent.targets[0].target
        bindings = m.bindings_of(target)
        if len(bindings) != 1 or m.scope_of(target) is not m.module:
            continue
        reads = m.facts(DeviceFacts).references(target.value, bindings)
        if all(_shown_only(m, n) for n in reads):
            out.add(id(call))
    return out


def _checks_availability(m) -> bool:
    """The model's `checks_availability`, except where every availability test of the file is a
    precision probe (see `precision_probes`) or only printed (see `idle_probes`)."""
    if not m.checks_availability:
        return False
    if m.device_flag:
        return True
    probes = precision_probes(m) | idle_probes(m)
    if not probes:
        return True
    tested = [c for c in m.calls if m.qualname(c.func) in AVAILABILITY_NAMES]
    if any(id(c) not in probes for c in tested):
        return True
    # every availability token of the code (not of its comments and strings) is one of the probes' calls
    return _code_tokens(m.source, AVAILABILITY_TOKENS) > len(tested)


def _code_tokens(source: str, pattern: re.Pattern) -> int:
    """How many names of the code match `pattern` (comments and strings left out)."""
    n = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.NAME and pattern.fullmatch(tok.string):
                n += 1
    except (tokenize.TokenError, SyntaxError):
        return 1 << 30  # unreadable: count as checking
    return n


_CUDA_FLAG = re.compile(r"(?i)(?:^|_)(?:cuda|gpu|gpus|n_?gpus?)(?:$|_)|^(?:use|with|has|on|is)_?(?:cuda|gpu)|^n_?gpus?$")


def _cuda_only_by_design(ctx: Context, probes: frozenset[int] | set[int] = frozenset(),
                         choices_fall_back: bool = False) -> bool:
    answers = ctx.model.facts(_FileAnswers).answers
    probes = frozenset(probes)
    found = answers.get(("_cuda_only_by_design", probes, choices_fall_back))
    if found is None and choices_fall_back and answers.get(("_cuda_only_by_design", probes, False)) is False:
        found = False  # with the choices left out, fewer tests are read: no test said so before either
    if found is None:
        found = _compute_cuda_only_by_design(ctx, probes, choices_fall_back)
    answers["_cuda_only_by_design", probes, choices_fall_back] = found
    return found


def _compute_cuda_only_by_design(ctx: Context, probes: frozenset[int] | set[int], choices_fall_back: bool) -> bool:
    """The file is written for CUDA and says so: it calls CUDA-only APIs (capability and memory
    queries, streams, events, `set_device`), uses an NCCL-only process group, pins GPUs with
    `CUDA_VISIBLE_DEVICES`, or guards its CUDA path with a flag of its own (`if args.cuda:`,
    `if USE_CUDA:`). With `choices_fall_back`, a flag that only chooses between a CUDA and a CPU
    device (`t.device('cuda') if opt.use_gpu else t.device('cpu')`) is a CPU fallback, not a
    CUDA path of its own."""
    m = ctx.model
    if _cuda_only_apis(ctx, probes):
        return True
    own_is_cuda = _sets_is_cuda(m)
    # (a test's code is a slice of the source: a source without the text has no test with it,
    # and no test's code need be measured)
    version_in_source = "torch.version.cuda" in ctx.source
    for node in _tested(m):
        test = None
        if isinstance(node, (cst.If, cst.IfExp, cst.While)):
            test = node.test
        elif isinstance(node, cst.Assert):
            test = node.test
        if test is None:
            continue
        if choices_fall_back and isinstance(node, cst.IfExp) and _fallback_choice(m, node):
            continue
        for n in (test, *m.walk(test)):
            leaf = None
            if isinstance(n, cst.Name):
                parent = m.parent(n)
                if isinstance(parent, cst.Attribute) and parent.attr is n:
                    continue  # the `cuda` of `torch.cuda.is_available`: its Attribute is judged
                leaf = n.value
            elif isinstance(n, cst.Attribute):
                leaf = n.attr.value
                if (m.qualname(n) or "").startswith("torch."):
                    continue
                if leaf == "is_cuda" and not own_is_cuda:
                    # `if not tensor.is_cuda:` (allennlp's `get_device_of`) says where a tensor
                    # already is, not how the file was configured; judged per site by
                    # `_under_cuda_operand_test`. (An `is_cuda` attribute the file sets itself,
                    # `self.is_cuda = args.cuda`, stays a flag.)
                    continue
            elif isinstance(n, cst.SimpleString):
                # a config value read by key: `if conf["use_gpu"]:`, `if cfg.get("cuda"):`,
                # `if getattr(args, "cuda", False):` (asteroid's eval scripts, PRECISION7.md)
                leaf = _config_key(m, n)
            if leaf is not None and _CUDA_FLAG.search(leaf) and not (m.qualname(n) or "").startswith("torch"):
                return True
        if version_in_source and "torch.version.cuda" in ctx.code(test):
            return True
        if not isinstance(node, cst.IfExp) and _flag_compared_to_gpu(m, test):
            # (a conditional expression choosing a device by it is a choice: `_fallback_choice`)
            return True
    return False


def _cuda_only_apis(ctx: Context, probes) -> bool:
    """The first half of `_cuda_only_by_design`: the file calls CUDA-only APIs, uses an NCCL-only
    process group or pins GPUs with `CUDA_VISIBLE_DEVICES` (its tests are not read)."""
    m = ctx.model
    if "CUDA_VISIBLE_DEVICES" in ctx.source:
        return True
    for call in m.calls:
        q = m.qualname(call.func) or ""
        if id(call) in probes:
            continue  # guarded by an availability test, choosing a precision
        if q in _CUDA_ONLY_CALLS or q.startswith(("torch.cuda.nvtx.", "torch.cuda.memory._", "torch.cuda.graphs.")):
            return True
        if q in ("torch.distributed.init_process_group", "torch.distributed.new_group"):
            backend = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "backend"), None)
            if backend is None and call.args and call.args[0].keyword is None:
                backend = call.args[0].value
            if isinstance(backend, cst.SimpleString) and "nccl" in backend.value.lower():
                return True
    return False


@_per_file
class _OffFlags:
    """`_off_by_default_flags` of one model, computed once (`m.facts(_OffFlags)`): the rule asks for
    it for the site filter and again for each finding's message."""

    def __init__(self, m):
        self.flags = _compute_off_by_default_flags(m)


def _off_by_default_flags(m) -> dict:
    """{dest: add_argument call} for the file's argparse options named like a CUDA flag
    (`--cuda`, `--use_gpu`) defined with `action="store_true"` and no default but False, which the
    file never sets otherwise (`args.cuda = True`, `set_defaults(cuda=...)`): a run that does not
    pass the flag is a CPU run (GFM's `core/test_samples.py`, E63-5). Memoized per model: callers
    must not change the dict."""
    return m.facts(_OffFlags).flags


def _compute_off_by_default_flags(m) -> dict:
    found: dict = {}
    for call, _recv, _ in m.method_calls("add_argument"):
        opts = [a.value.evaluated_value for a in call.args if a.keyword is None
                and isinstance(a.value, cst.SimpleString) and isinstance(a.value.evaluated_value, str)]
        kw = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        if not opts or not all(o.startswith("-") for o in opts):
            continue
        action = kw.get("action")
        if not (isinstance(action, cst.SimpleString) and action.evaluated_value == "store_true"):
            continue
        default = kw.get("default")
        if default is not None and not (isinstance(default, cst.Name) and default.value == "False"):
            continue
        dest = kw.get("dest")
        if dest is not None:
            name = dest.evaluated_value if isinstance(dest, cst.SimpleString) else None
        else:
            longs = [o for o in opts if o.startswith("--")]
            name = (longs or opts)[0].lstrip("-").replace("-", "_")
        if isinstance(name, str) and _CUDA_FLAG.search(name) and not name.startswith("no_"):
            found.setdefault(name, call)
    if not found:
        return found
    for node in m.nodes:
        if isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign)):
            t = node.target
            if isinstance(t, cst.Attribute) and t.attr.value in found:
                found.pop(t.attr.value)  # `args.cuda = True`: set by the file itself
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "set_defaults":
            for a in node.args:
                if a.keyword is not None:
                    found.pop(a.keyword.value, None)
        elif isinstance(node, cst.Call) and isinstance(node.func, (cst.Name, cst.Attribute)) and (
                (node.func.value if isinstance(node.func, cst.Name) else node.func.attr.value) == "setattr"):
            return {}  # `setattr(args, key, value)`: the file may set any option
    return found


def _option_text(call) -> str | None:
    """`--cuda` for `add_argument("-c", "--cuda", ...)`: its first long option string, else its first."""
    opts = [a.value.evaluated_value for a in call.args if a.keyword is None and isinstance(a.value, cst.SimpleString)]
    opts = [o for o in opts if isinstance(o, str)]
    longs = [o for o in opts if o.startswith("--")]
    return (longs or opts or [None])[0]


def _flag_guarded_model_moves(m) -> list:
    """(move, flag test) for each index-less `X.cuda()` on a module in the body of `if <args>.<flag>:`
    with `<flag>` one of `_off_by_default_flags` (the test that attribute alone, not negated): the
    file moves its model to CUDA only when the flag is passed."""
    flags = _off_by_default_flags(m)
    if not flags:
        return []
    out = []
    for call in _cuda_calls(m):
        if call.args or m.value_of(call.func.value).kind != "module":
            continue
        child = call
        for anc in m.ancestors(call):
            if isinstance(anc, cst.If) and child is anc.body:
                t = anc.test
                if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.attr.value in flags:
                    out.append((call, t))
                break
            if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.If, cst.IfExp, cst.While)):
                break
            child = anc
    return out


def _only_off_flag_tests(ctx: Context, flags) -> bool:
    """Every test of the file that names a CUDA flag (what makes `_cuda_only_by_design` say yes)
    reads one of `flags` as `<args>.<flag>`: no other flag, `use_cuda` name, `torch.version.cuda`
    or `device == "gpu"` test decides where the file's code runs."""
    m = ctx.model
    own_is_cuda = _sets_is_cuda(m)
    for node in _tested(m):
        test = node.test
        if "torch.version.cuda" in ctx.code(test) or (not isinstance(node, cst.IfExp) and _flag_compared_to_gpu(m, test)):
            return False
        for n in (test, *m.walk(test)):
            leaf = None
            if isinstance(n, cst.Name):
                parent = m.parent(n)
                if isinstance(parent, cst.Attribute) and parent.attr is n:
                    continue
                leaf = n.value
            elif isinstance(n, cst.Attribute):
                if (m.qualname(n) or "").startswith("torch."):
                    continue
                if n.attr.value == "is_cuda" and not own_is_cuda:
                    continue
                if n.attr.value in flags and isinstance(n.value, cst.Name):
                    continue  # `args.cuda`: the off-by-default flag itself
                leaf = n.attr.value
            elif isinstance(n, cst.SimpleString):
                leaf = _config_key(m, n)
            if leaf is not None and _CUDA_FLAG.search(leaf) and not (m.qualname(n) or "").startswith("torch"):
                return False
    return True


def _unguarded_on_flag_off_path(ctx: Context):
    """(site, flag test, model move) for each index-less `.cuda()` (or `"cuda"` placement) that the
    script runs with no test about devices on the way, in a file whose only CUDA switch is an
    off-by-default `store_true` flag that guards its model move (`if args.cuda: model =
    model.cuda()`, GFM PR#5, E63-5): the default run keeps the model on the CPU, and the site
    crashes there on a machine without CUDA (with one, its tensor meets the CPU model). The same
    sites as `_unguarded_on_fallback_path` are left out (methods the file does not call, `try`,
    tensors already on CUDA, sites of functions every call of which is guarded)."""
    m = ctx.model
    moves = _flag_guarded_model_moves(m)
    if not moves or _requires_cuda(m) or _cuda_only_apis(ctx, precision_probes(m)):
        return
    flags = {t.attr.value for _, t in moves}
    if len(flags) != 1 or not _only_off_flag_tests(ctx, _off_by_default_flags(m)):
        return
    move, test = moves[0]
    moved = {id(c) for c, _ in moves}
    for site in (*_cuda_calls(m), *_cuda_string_placements(m)):
        if (isinstance(site.func, cst.Attribute) and site.func.attr.value == "cuda" and site.args) or (
                not m.reached(site) or id(site) in moved):
            continue
        fn = m.enclosing(site, cst.FunctionDef)
        if fn is None and m.enclosing(site, cst.ClassDef) is not None:
            continue
        if isinstance(site.func, cst.Attribute) and m.value_of(site.func.value).kind == "module":
            continue  # another model moved to CUDA on every run: which one the flag is for is not known
        if (_outside_file_class(m, site) or _guarded(ctx, site, cap=_CHAIN_DEPTH)
                or _under_cuda_operand_test(ctx, site)):
            continue
        if _branch_of_configured_device(m, site) or not _called_by_the_script(m, site):
            continue
        yield site, test, move


@_per_file
def _sets_is_cuda(m) -> bool:
    """The file binds an `is_cuda` attribute or name of its own (`self.is_cuda = args.cuda`)."""
    for n in m.facts(_FileAnswers).binders:
        if isinstance(n, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)):
            t = n.target
            if (isinstance(t, cst.Attribute) and t.attr.value == "is_cuda") or (
                    isinstance(t, cst.Name) and t.value == "is_cuda"):
                return True
        elif isinstance(n, cst.Param) and n.name.value == "is_cuda":
            return True
    return False


_GPU_WORDS = frozenset({"gpu", "cuda"})


def _flag_compared_to_gpu(m, test: cst.BaseExpression) -> bool:
    """`if cmd_args.ctx == 'gpu':` / `if args.device == "cuda":`: a run-time option compared with a
    GPU word (Hanjun Dai's pytorch_structure2vec `cmd_args`, kept by graph_adversarial_attack and
    Shen-Lab/GraphCL: `cmd_opt.add_argument('-ctx', default='cpu', help='cpu/gpu')`). The CUDA code
    under it is one branch of a choice the user makes. Only an attribute of an object that is not
    `self` nor torch (an options namespace), never a `.type` (`x.device.type == "cuda"` asks where a
    tensor is) nor a plain name (`device == "cuda"`, which the file may have hard-coded itself)."""
    for n in (test, *m.walk(test)):
        if not (isinstance(n, cst.Comparison) and len(n.comparisons) == 1
                and isinstance(n.comparisons[0].operator, (cst.Equal, cst.NotEqual))):
            continue
        sides = (n.left, n.comparisons[0].comparator)
        for flag, word in (sides, sides[::-1]):
            if not (isinstance(word, cst.SimpleString) and word.evaluated_value.lower() in _GPU_WORDS):
                continue
            if (isinstance(flag, cst.Name) and word.evaluated_value.lower() == "gpu"
                    and any(b.how == "param" for b in m.bindings_of(flag))):
                # `def torch_infer(x, device): if device == "gpu": device = "cuda"`: a parameter
                # compared with "gpu", a word no torch device takes, translates the caller's choice
                # (PytorchOCR's conversion check, P42-3)
                return True
            if not isinstance(flag, cst.Attribute) or flag.attr.value == "type":
                continue
            root = flag
            while isinstance(root, cst.Attribute):
                root = root.value
            if not isinstance(root, cst.Name) or root.value in ("self", "cls"):
                continue
            if (m.qualname(flag) or "").startswith("torch"):
                continue
            return True
    return False


def _config_key(m, s: cst.SimpleString) -> str | None:
    """The key a string names where it reads a configuration value: the subscript of
    `conf["use_gpu"]`, the first argument of `cfg.get("cuda")`, the second of
    `getattr(args, "cuda")`. None for any other string (a device string, a message)."""
    value = s.evaluated_value
    if not isinstance(value, str) or not value.isidentifier():
        return None
    parent = m.parent(s)
    if isinstance(parent, cst.Index):
        return value if isinstance(m.parent(m.parent(parent)), cst.Subscript) else None
    if not isinstance(parent, cst.Arg) or parent.keyword is not None:
        return None
    call = m.parent(parent)
    if not isinstance(call, cst.Call) or not call.args:
        return None
    if isinstance(call.func, cst.Attribute) and call.func.attr.value == "get" and call.args[0] is parent:
        return value
    if isinstance(call.func, cst.Name) and call.func.value == "getattr" and len(call.args) >= 2 and call.args[1] is parent:
        return value
    return None


_DEFAULT_SETTERS = frozenset({"torch.set_default_tensor_type", "torch.set_default_device"})
_EXITS = frozenset({"sys.exit", "exit", "quit", "os._exit"})


def _default_cuda_setters(m):
    """(call, description) for `torch.set_default_tensor_type('torch.cuda.FloatTensor')` (the string
    or the `torch.cuda.FloatTensor` class) and `torch.set_default_device("cuda")`: literal CUDA
    defaults. A default chosen by an expression (`'torch.cuda.FloatTensor' if args.cuda else ...`)
    is not one."""
    for call in m.calls:
        q = m.qualname(call.func)
        if q not in _DEFAULT_SETTERS or len(call.args) != 1 or call.args[0].star:
            continue
        value = call.args[0].value
        if q == "torch.set_default_tensor_type":
            text = value.evaluated_value if isinstance(value, cst.SimpleString) else m.qualname(value)
            if isinstance(text, str) and text.startswith("torch.cuda.") and text.endswith("Tensor") and text.count(".") == 2:
                yield call, "CUDA default tensor type"
        elif _cuda_literal(value) or (
            isinstance(value, cst.Call) and m.qualname(value.func) == "torch.device" and len(value.args) == 1
            and _cuda_literal(value.args[0].value)
        ):
            yield call, "CUDA default device"


def _default_setter_edit(ctx: Context, call: cst.Call):
    """The argument made conditional on `torch.cuda.is_available()`; None when the file has no
    `torch` name to call it through."""
    m = ctx.model
    t = next((k for k, v in m.aliases.items() if v == "torch"), None)
    if t is None:
        return None
    value = call.args[0].value
    code = ctx.code(value)
    if m.qualname(call.func) == "torch.set_default_tensor_type":
        if isinstance(value, cst.SimpleString):
            cpu = code.replace("torch.cuda.", "torch.", 1)
        else:
            cpu = f"{t}.{code.rsplit('.', 1)[1]}"
    elif isinstance(value, cst.SimpleString):
        quote = code[-1]
        cpu = f"{quote}cpu{quote}"
    else:
        cpu = f'{t}.device("cpu")'
    return ctx.replace(value, f"{code} if {t}.cuda.is_available() else {cpu}")


def _runs_unconditionally(m, node, depth: int = 0) -> bool:
    """`node` runs on every run of the script: no `if` (other than `if __name__ == "__main__":`),
    conditional expression, loop, `except`/`else`/`finally` clause or `and`/`or` operand between
    it and the module; in a function of the file, one of its calls runs unconditionally."""
    if depth > 3:
        return False
    child = node
    for anc in m.ancestors(node):
        if isinstance(anc, cst.If):
            if child is not anc.test and not (
                child is anc.body and anc.orelse is None and _is_main_test(m, anc.test)
                and isinstance(m.parent(anc), cst.Module)
            ):
                return False
        elif isinstance(anc, (cst.IfExp, cst.BooleanOperation, cst.For, cst.While, cst.ExceptHandler,
                              cst.Finally, cst.Else, cst.Lambda, cst.ClassDef, cst.Match,
                              cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            return False
        elif isinstance(anc, cst.FunctionDef):
            if anc.decorators or m.class_of(anc) is not None:
                return False
            sites = [c for c in m.calls if isinstance(c.func, cst.Name) and c.func.value == anc.name.value
                     and not m.contains(anc, c)]
            return len(m.functions.get(anc.name.value, [])) == 1 and any(
                _runs_unconditionally(m, c, depth + 1) for c in sites)
        child = anc
    return True


def _is_main_test(m, test) -> bool:
    text = m.module.code_for_node(test)
    return "__name__" in text and "__main__" in text


@_per_file
def _requires_cuda(m) -> bool:
    """The file stops where CUDA is missing (`assert torch.cuda.is_available()`, `if not
    torch.cuda.is_available(): sys.exit(...)` / `raise`): it is CUDA-only by design."""
    for node in _tested(m):
        if isinstance(node, cst.Assert) and _mentions_availability(m, node.test):
            return True
        if isinstance(node, cst.If) and _mentions_availability(m, node.test):
            for n in m.walk(node.body):
                if isinstance(n, cst.Raise) or (isinstance(n, cst.Call) and m.qualname(n.func) in _EXITS):
                    return True
    return False


def _mentions_availability(m, test) -> bool:
    return any(isinstance(n, cst.Call) and (m.qualname(n.func) or "").endswith((".is_available", ".device_count"))
               for n in (test, *m.walk(test)))


# libraries that fill a dataclass from the command line (and config files): a field of such a
# dataclass is a flag (`python train.py --device cpu`)
_DATACLASS_CLI = ("pyrallis", "tyro", "simple_parsing", "draccus", "transformers.HfArgumentParser")


def _dataclass_cli_field(m, node) -> bool:
    """`device: str = "cuda"` as a field of a `@dataclass` in a file that parses its dataclasses
    from the command line (`@pyrallis.wrap()`, `tyro.cli(...)`, `HfArgumentParser(...)`;
    corl-team/CORL algorithms/offline/cql.py): the literal is the default of a device flag."""
    stmt = m.statement_of(node)
    block = m.parent(stmt) if stmt is not None else None
    cls = m.parent(block) if isinstance(block, cst.IndentedBlock) else None
    if not isinstance(cls, cst.ClassDef):
        return False
    if not any(
        (m.qualname(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator) or "")
        in ("dataclasses.dataclass", "pydantic.dataclasses.dataclass")
        for d in cls.decorators
    ):
        return False
    return any(m.uses_module(lib) for lib in _DATACLASS_CLI) or any(
        (q := m.qualname(c.func) or "") == "transformers.HfArgumentParser" or q.startswith(_DATACLASS_CLI)
        for c in m.calls
    )


# calls that turn a function's parameters into command-line flags (`tyro.cli(main)`, `fire.Fire(main)`)
_FUNCTION_CLI = frozenset({"tyro.cli", "fire.Fire", "jsonargparse.CLI", "typer.run"})


def _cli_bound_param(m, node) -> bool:
    """`device: str = "cuda"` as a parameter default of a function the command line calls with its
    own flags: decorated with `@argbind.bind(...)` (descriptinc/descript-audio-codec dac/utils/encode.py,
    `python -m dac encode ... --device cpu`), or handed to `tyro.cli` / `fire.Fire`."""
    fn = m.enclosing(node, cst.FunctionDef)
    if fn is None:
        return False
    for d in fn.decorators:
        dec = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
        if (m.qualname(dec) or "").startswith("argbind."):
            return True
    for c in m.calls:
        if m.qualname(c.func) in _FUNCTION_CLI and c.args and isinstance(c.args[0].value, cst.Name):
            if c.args[0].value.value == fn.name.value:
                return True
            if fn in m.module.body and _dispatches_by_name(m, c.args[0].value.value):
                return True
    return False


def _dispatches_by_name(m, name: str) -> bool:
    """`def main(task, **kwargs): globals()[task](**kwargs)` handed to `fire.Fire(main)` (tatsu-lab's
    weight_diff.py, copied by nlpxucan/WizardLM src/weight_diff_wizard.py: `python weight_diff.py
    make_diff ... --device cpu`): the command line names a module-level function of the file and
    fills its parameters with its own flags."""
    for st in m.module.body:
        if not (isinstance(st, cst.FunctionDef) and st.name.value == name):
            continue
        kw = st.params.star_kwarg
        if not isinstance(kw, cst.Param):
            return False
        for n in m.walk(st.body):
            if not (isinstance(n, cst.Call) and isinstance(n.func, cst.Subscript)):
                continue
            g = n.func.value
            if not (isinstance(g, cst.Call) and isinstance(g.func, cst.Name) and g.func.value == "globals"):
                continue
            if any(a.star == "**" and isinstance(a.value, cst.Name) and a.value.value == kw.name.value for a in n.args):
                return True
    return False


def _default_of_configured_device(m, node) -> bool:
    """`device = <node>` in one branch of an `if`/`else` whose other branch binds the same name from
    the configuration (`if 'device' in raw_config: device = torch.device(raw_config['device'])`
    `else: device = torch.device('cuda:1')`, yandex-research/tab-ddpm scripts/pipeline.py): the
    literal is the default of a configured device."""
    stmt = m.statement_of(node)
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
        return False
    a = stmt.body[0]
    if not (isinstance(a, cst.Assign) and a.value is node and len(a.targets) == 1
            and isinstance(a.targets[0].target, cst.Name)):
        return False
    name = a.targets[0].target.value
    block = m.parent(stmt)
    owner = m.parent(block) if isinstance(block, cst.IndentedBlock) else None
    if isinstance(owner, cst.Else):
        iff, other = m.parent(owner), None
        other = iff.body if isinstance(iff, cst.If) else None
    elif isinstance(owner, cst.If) and owner.body is block and isinstance(owner.orelse, cst.Else):
        other = owner.orelse.body
    else:
        return False
    if not isinstance(other, cst.IndentedBlock):
        return False
    for st in other.body:
        if isinstance(st, cst.SimpleStatementLine):
            for small in st.body:
                if (isinstance(small, cst.Assign) and len(small.targets) == 1
                        and isinstance(small.targets[0].target, cst.Name) and small.targets[0].target.value == name
                        and _cuda_literal(small.value) is None
                        and _configured(m, small.value)):
                    return True
    return False


def _branch_of_configured_device(m, node) -> bool:
    """`node` sits in one branch of an `if`/`elif`/`else` chain that dispatches on a configured device
    value and places on that value itself in another branch (richarddwang/electra_pytorch
    finetune.py: `if isinstance(c.device, str): dls.to(torch.device(c.device))` /
    `elif isinstance(c.device, list): dls.to(torch.device('cuda', c.device[0]))` /
    `else: dls.to(torch.device('cuda:0'))`): the literal serves the configuration's GPU forms (a list
    of GPU ids, None for every GPU), and a CPU run names `'cpu'` in the configuration."""
    chain = None
    child = node
    for anc in m.ancestors(node):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            break
        if isinstance(anc, cst.If) and child is not anc.test:
            chain = anc
            break
        child = anc
    if chain is None:
        return False
    while isinstance(m.parent(chain), cst.If) and m.parent(chain).orelse is chain:
        chain = m.parent(chain)  # up to the `if` of an `elif` chain
    tests, branches = [], []
    link = chain
    while isinstance(link, cst.If):
        tests.append(link.test)
        branches.append(link.body)
        link = link.orelse
    if isinstance(link, cst.Else):
        branches.append(link.body)
    code = m.module.code_for_node
    configured = set()
    for test in tests:
        for n in (test, *m.walk(test)):
            if isinstance(n, (cst.Attribute, cst.Subscript)) and m.qualname(n) is None and _configured(m, n):
                text = code(n)
                if any(w in text.lower() for w in ("device", "gpu", "cuda")):
                    configured.add(text)
    if not configured:
        return False
    for body in branches:
        for n in m.walk(body):
            if not (isinstance(n, cst.Call) and len(n.args) == 1 and n.args[0].keyword is None):
                continue
            if (m.qualname(n.func) == "torch.device" or (
                    isinstance(n.func, cst.Attribute) and n.func.attr.value == "to")) \
                    and code(n.args[0].value) in configured:
                return True  # `torch.device(c.device)`: the configured device itself, in another branch
    return False


def _cpu_device(m, node) -> bool:
    """`'cpu'` or `torch.device('cpu')`."""
    if isinstance(node, cst.Call) and m.qualname(node.func) == "torch.device" and node.args:
        node = node.args[0].value
    return isinstance(node, cst.SimpleString) and node.evaluated_value == "cpu"


def _cpu_alternative(m, node) -> bool:
    """The CUDA device is one branch of a conditional expression whose other branch is the CPU
    (DeepRobust's examples: `device = torch.device('cuda') if args.ctx == 'gpu' else 'cpu'`, the
    `--ctx` option defined in the project's config module): the test chooses the device at run
    time, the literal is not hard-coded."""
    child, parent = node, m.parent(node)
    if isinstance(parent, cst.Arg) and isinstance(m.parent(parent), cst.Call) and \
            m.qualname(m.parent(parent).func) == "torch.device":
        child = m.parent(parent)
        parent = m.parent(child)
    if not isinstance(parent, cst.IfExp) or child is parent.test:
        return False
    other = parent.orelse if child is parent.body else parent.body
    return _cpu_device(m, other)


def _configured(m, value) -> bool:
    """A value read from a configuration or the command line: it contains a subscript
    (`raw_config['device']`) or an attribute of something other than a module the file imports
    (`args.device`, `cfg.DEVICE`), and no device literal."""
    nodes = (value, *m.walk(value))
    if any(isinstance(n, cst.SimpleString) and isinstance(n.evaluated_value, str)
           and n.evaluated_value.split(":")[0] in ("cuda", "cpu", "mps", "xpu") for n in nodes):
        return False
    return any(
        isinstance(n, cst.Subscript) or (isinstance(n, cst.Attribute) and m.qualname(n) is None)
        for n in nodes
    )


def _module_exec_statements(m) -> list:
    """Module-level `exec(...)` statements: nanoGPT's scripts set their defaults as globals
    (`device = 'cuda'`), then `exec(open('configurator.py').read())` overrides any of them from the
    command line (`python sample.py --device=cpu`): the device is a configuration value."""
    out = []
    for stmt in m.module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
                        and isinstance(small.value.func, cst.Name) and small.value.func.value == "exec"
                        and "exec" not in m.classes and m.module_function("exec") is None):
                    out.append(stmt)
    return out


# --- a hard-coded `.cuda()` that meets a value on the file's CPU-fallback device ------------------

def _device_literal(m, node) -> str | None:
    """"cuda", "cuda:0" or "cpu" for `'cuda'` / `torch.device('cuda')`; None otherwise."""
    if isinstance(node, cst.Call) and m.qualname(node.func) == "torch.device" and len(node.args) == 1:
        node = node.args[0].value
    if isinstance(node, cst.SimpleString):
        v = node.evaluated_value
        if v in ("cuda", "cuda:0", "cpu"):
            return v
    return None


def _fallback_choice(m, node, depth: int = 0) -> bool:
    """`node` chooses at run time between a CUDA device and the CPU: a conditional expression whose
    branches are `'cuda'` and `'cpu'` (or `torch.device` of them), also inside `torch.device(...)`
    (`torch.device("cuda" if torch.cuda.is_available() else "cpu")`, `t.device('cuda') if
    opt.use_gpu else t.device('cpu')`), or a name every binding of which is one."""
    if isinstance(node, cst.Call) and m.qualname(node.func) == "torch.device" and len(node.args) == 1 \
            and node.args[0].keyword is None:
        return _fallback_choice(m, node.args[0].value, depth + 1)
    if isinstance(node, cst.IfExp):
        pair = {_device_literal(m, node.body), _device_literal(m, node.orelse)}
        return "cpu" in pair and bool(pair & {"cuda", "cuda:0"})
    if depth > 3:
        return False  # (names, attributes and subscripts followed this far; the literals above end it)
    if isinstance(node, cst.Name):
        bindings = m.bindings_of(node)
        return bool(bindings) and (all(_fallback_binding(m, b, depth) for b in bindings)
                                   or _branch_choice(m, bindings))
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        bindings = _self_attr_bindings(m, node)
        return bool(bindings) and (all(_fallback_binding(m, b, depth) for b in bindings)
                                   or _branch_choice(m, bindings))
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and is_parsed_namespace(m, node.value):
        # `opt.device` of `add_argument("--device", default=torch.device("cuda" if
        # torch.cuda.is_available() else "cpu"))` (probe69 argsdev: alphazero, jiant)
        default = argparse_default(m, node.attr.value)
        return default is not None and _fallback_choice(m, default, depth + 1)
    if isinstance(node, cst.Subscript):
        # `configs["device"]` of a dict literal whose "device" is the choice (ResidualMaskingNetwork's
        # trainer: `torch.device(self._configs["device"])`, the config made by the driver)
        entries = _dict_entries(m, node, 0)
        return bool(entries) and all(_fallback_choice(m, e, depth + 1) for e in entries)
    return False


def _branch_choice(m, bindings) -> bool:
    """Every binding is a CUDA or a CPU device literal (`torch.device("cuda")`, `"cpu"`), there is
    one of each, and each CUDA binding is an alternative to a CPU one: the other branch of the same
    `if`/`else` (`if torch.cuda.is_available(): device = torch.device("cuda")` `else: device =
    torch.device("cpu")`, SWAG's run_swag.py), or the later of the two sits under an `if` the earlier
    is not in (`device = "cpu"` then `if torch.cuda.is_available(): device = "cuda"`). The statement
    form of the one-line conditional choice."""
    cuda, cpu = [], []
    for b in bindings:
        if b.how != "assign" or b.value is None:
            return False
        lit = _device_literal(m, b.value)
        if lit is None:
            return False
        (cpu if lit == "cpu" else cuda).append(b.node)
    return bool(cuda and cpu) and all(any(_alternatives(m, c, p) for p in cpu) for c in cuda)


def _alternatives(m, a, b) -> bool:
    """`a` and `b` (two assignment targets) are not both bound on one run: they sit in the two
    branches of one `if`/`else`, or the later lies under an `if` (in its body or `else`) that does
    not contain the earlier."""
    if m.exclusive(a, b):
        return True
    first, later = (a, b) if m.precedes(a, b) else (b, a)
    child = later
    for anc in m.ancestors(later):
        if m.contains(anc, first):
            return False
        if isinstance(anc, cst.If) and child is not anc.test:
            return True
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        child = anc
    return False


def _dict_entries(m, node, depth: int) -> list:
    """The values the key of `node` (`X["device"]`, a string key) has in the dict literals `X` can
    be: `X` a dict literal, a name or `self.<attr>` every binding of which is one of those, or a
    parameter every call of the file passes one (`__init__` through its class's constructions).
    Empty when any of them cannot be told."""
    sl = node.slice
    if not (len(sl) == 1 and isinstance(sl[0].slice, cst.Index) and isinstance(sl[0].slice.value, cst.SimpleString)):
        return []
    key = sl[0].slice.value.evaluated_value
    out = []
    for d in _dict_literals(m, node.value, depth):
        if d is None:
            return []
        found = [e.value for e in d.elements if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
                 and e.key.evaluated_value == key]
        if len(found) != 1 or any(not isinstance(e, (cst.DictElement)) for e in d.elements):
            return []  # the key missing, twice, or a `**other` spread in
        out.append(found[0])
    return out


def _dict_literals(m, node, depth: int) -> list:
    """The dict literals `node` can be (see `_dict_entries`); a None among them when one cannot
    be told."""
    if depth > 3:
        return [None]
    if isinstance(node, cst.Dict):
        return [node]
    if isinstance(node, cst.Name):
        bindings = m.bindings_of(node)
    elif isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        bindings = _self_attr_bindings(m, node)
    else:
        return [None]
    if not bindings or _dict_mutated(m, node, bindings):
        return [None]
    out = []
    for b in bindings:
        if b.how == "assign" and b.value is not None:
            out.extend(_dict_literals(m, b.value, depth + 1))
        elif b.how == "param":
            args = m.param_arguments(b) or _init_arguments(m, b)
            if not args:
                return [None]
            for a in args:
                out.extend(_dict_literals(m, a, depth + 1))
        else:
            return [None]
    return out


_DICT_MUTATORS = frozenset({"update", "setdefault", "pop", "popitem", "clear", "__setitem__"})


def _dict_mutated(m, node, bindings) -> bool:
    """Some read of the name (or `self.<attr>`) `node` with these bindings changes the dict in place:
    `X["device"] = ...`, `del X[...]`, `X |= ...`, `X.update(...)` (a config filled from a file)."""
    ids = {id(b.node) for b in bindings}
    is_self = isinstance(node, cst.Attribute)
    for n in m.nodes:
        if is_self:
            same = (isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) and n.value.value == "self"
                    and n.attr.value == node.attr.value)
        else:
            same = (isinstance(n, cst.Name) and n.value == node.value and bool(m.bindings_of(n))
                    and all(id(b.node) in ids for b in m.bindings_of(n)))
        if not same:
            continue
        parent = m.parent(n)
        if isinstance(parent, cst.Attribute) and parent.value is n and parent.attr.value in _DICT_MUTATORS:
            return True
        if isinstance(parent, cst.AugAssign) and parent.target is n:
            return True
        if isinstance(parent, cst.Subscript) and parent.value is n:
            holder = m.parent(parent)
            if isinstance(holder, (cst.AssignTarget, cst.Del)) or (
                    isinstance(holder, cst.AugAssign) and holder.target is parent):
                return True
    return False


def _init_arguments(m, b) -> list:
    """The arguments the file's constructions `Cls(...)` pass for parameter `b` of `Cls.__init__`.
    Empty (cannot tell) when the class is not constructed by name, its name is read anywhere else
    (handed on, subclassed), or a call cannot be matched (`*args`, `**kwargs`)."""
    fn = m.function_of_param(b)
    cls = m.class_of(fn) if fn is not None else None
    if cls is None or fn.name.value != "__init__" or m.enclosing(fn, cst.FunctionDef) is not None:
        return []
    name = cls.name.value
    info = m.classes.get(name)
    if info is None or info.node is not cls or any(name in c.bases for c in m.classes.values()):
        return []
    sites = []
    for n in m.nodes:
        if isinstance(n, cst.Name) and n.value == name and n is not cls.name:
            parent = m.parent(n)
            if isinstance(parent, cst.Attribute) and parent.attr is n:
                continue
            if not (isinstance(parent, cst.Call) and parent.func is n):
                return []
            sites.append(parent)
    if not sites:
        return []
    params = fn.params
    if params.star_kwarg is not None or isinstance(params.star_arg, cst.Param):
        return []
    positional = [p.name.value for p in (*params.posonly_params, *params.params)][1:]
    param = next((p for p in (*params.posonly_params, *params.params, *params.kwonly_params)
                  if p.name.value == b.name), None)
    if param is None:
        return []
    out = []
    for call in sites:
        found, pos = None, 0
        for arg in call.args:
            if arg.star:
                return []
            if arg.keyword is None:
                if pos < len(positional) and positional[pos] == b.name:
                    found = arg.value
                pos += 1
            elif arg.keyword.value == b.name:
                found = arg.value
        if found is None:
            found = param.default
        if found is None:
            return []
        out.append(found)
    return out


def _self_attr_bindings(m, node) -> list:
    """Every binding of `self.<attr>` (`node`) in the file's classes the instance may belong to: the
    enclosing class, its bases of the file and the file's classes derived from it
    (federated_adaptation's `Helper.__init__` sets `self.device = torch.device("cuda" if
    torch.cuda.is_available() else "cpu")`, its subclass `TextHelper` moves `self.model` to it).
    Empty (cannot tell) when the class name is defined twice in the file."""
    cls = m.class_of(node)
    if cls is None:
        return []
    info = m.classes.get(cls.name.value)
    if info is None or info.node is not cls:
        return []
    family, todo = set(), [cls.name.value]
    while todo:  # the class and its bases of the file
        name = todo.pop()
        if name in family or name not in m.classes:
            continue
        family.add(name)
        todo.extend(m.classes[name].bases)
    family |= {n for n in m.classes if m.class_is(n, frozenset({cls.name.value}))}
    key = "self." + node.attr.value
    return [b for n in sorted(family) for b in m.bindings.get((m.classes[n].node, key), [])]


def _fallback_binding(m, b, depth: int) -> bool:
    """`device = <a CUDA/CPU choice>`, or a parameter every call of the file passes one
    (`Connect2Model(..., device=device)` for `def __init__(self, ..., device)`)."""
    if b.how == "assign":
        return b.value is not None and _fallback_choice(m, b.value, depth + 1)
    if b.how == "param":
        args = m.param_arguments(b)
        return bool(args) and all(_fallback_choice(m, a, depth + 1) for a in args)
    return False


def _placement_device(m, call) -> cst.BaseExpression | None:
    """The device expression a placing call names: `x.to(d)`, `x.to(device=d)`, `f(..., device=d)`."""
    if not isinstance(call, cst.Call):
        return None
    for i, a in enumerate(call.args):
        if a.keyword is not None and a.keyword.value == "device":
            return a.value
        if (i == 0 and a.keyword is None and isinstance(call.func, cst.Attribute)
                and call.func.attr.value == "to"):
            return a.value
    return None


def _on_fallback_device(m, expr) -> cst.BaseExpression | None:
    """The device expression of the file's CPU fallback that the engine places `expr` (a tensor or
    a module) on, or None when it cannot tell."""
    v = m.value_of(expr)
    if v.kind not in ("tensor", "module"):
        return None
    dev = v.dev
    if dev is not None and dev.where == "acc" and dev.expr is not None and _fallback_choice(m, dev.expr):
        return dev.expr
    where = _placement_device(m, v.placed)
    if where is not None and _fallback_choice(m, where):
        return where
    return None


# a test that says something about devices: `if use_cuda:`, `if torch.cuda.is_available():`,
# `if device.type == 'cuda':`, `if args.gpu is not None:`, `if opt.no_cuda:`
# (read word by word: `examples` says nothing of `amp`)
_DEVICE_WORDS = frozenset(
    "cuda gpu gpus cpu device devices dev accel accelerator available mps xpu half amp fp16 ngpu ngpus".split()
)


def _device_test(text: str) -> bool:
    return any(
        w in _DEVICE_WORDS or w.startswith("cuda") or w.endswith(("gpu", "gpus"))
        for w in (t.lower() for t in re.findall(r"[A-Za-z]+", text))
    )


def _guarded(ctx: Context, node, depth: int = 0, cap: int = 3) -> bool:
    """`node` runs only under a test about devices (an `if`/`while`/conditional expression/`and`/`or`
    whose test names CUDA, a GPU, the CPU, a device or availability), inside a `try` that has an
    `except` (the handler may be the fallback), or in a function of the file some call of which is
    so guarded (or a method, whose callers the file does not tell)."""
    return _guard_state(ctx, node, depth, (), cap) is not False


def _guard_state(ctx: Context, node, depth: int, chain: tuple, cap: int = 3) -> bool | None:
    """`_guarded`'s answer; None when every way to `node` found leads back into `chain`, the
    functions already on the way here (`_train` calls `self._model.train()`, a call the name search
    takes for the trainer's own `train`, which calls `self._train()`): a cycle of the search, no way
    in. Such a branch does not decide; where no branch does, the caller reads it as guarded."""
    m = ctx.model
    if depth > cap:
        return True
    child = node
    for anc in m.ancestors(node):
        if _left_early_before(ctx, anc, child):
            return True
        test = None
        if isinstance(anc, (cst.If, cst.While)) and child is not anc.test:
            test = anc.test
        elif isinstance(anc, cst.IfExp) and child is not anc.test:
            test = anc.test
        elif isinstance(anc, cst.BooleanOperation) and child is anc.right:
            test = anc.left
        elif isinstance(anc, cst.Try) and child is anc.body and anc.handlers:
            return True
        if test is not None and _device_test(ctx.code(test)):
            return True
        if isinstance(anc, cst.Lambda):
            return True  # who calls it, under which test, is not known here
        if isinstance(anc, cst.FunctionDef):
            outer = m.enclosing(anc, cst.FunctionDef, cst.Lambda, cst.ClassDef)
            if isinstance(outer, (cst.FunctionDef, cst.Lambda)):
                # a nested function (jiant's `make_one_hot` in `update_metrics`): called by its
                # name in the function that defines it; handed on or returned, who calls it is
                # not known here
                sites = _nested_call_sites(m, anc, outer)
                if not sites:
                    return True
            elif m.class_of(anc) is not None:
                # a method: its calls are `<anything>.<name>(...)`; the file must call it, and
                # under no test about devices
                name = anc.name.value
                sites = [c for c in m.calls if isinstance(c.func, cst.Attribute) and c.func.attr.value == name
                         and not m.contains(anc, c)]
                if not sites:
                    return True
            else:
                sites = m.call_sites(anc)
                if not sites:
                    return False
            outside = [c for c in sites if not any(m.contains(f, c) for f in chain)]
            if not outside:
                return None
            states = [_guard_state(ctx, c, depth + 1, (*chain, anc), cap) for c in outside]
            if any(st is True for st in states):
                return True
            return False if any(st is False for st in states) else None
        child = anc
    return False


_CUDA_OPERAND_TEST = re.compile(
    r"\.is_cuda\b|\bisinstance\([^()]*,\s*(?:torch\.)?cuda\.\w*Tensor\s*\)|\.device\.type\s*==\s*['\"]cuda['\"]|['\"]cuda['\"]\s*==\s*\w[\w.]*\.device\.type"
)


def _under_cuda_operand_test(ctx: Context, node) -> bool:
    """`node` runs only in the body of an `if` (or a conditional expression) whose test says that a
    tensor is already on CUDA: `if isinstance(x.data, torch.cuda.FloatTensor): zero_pads =
    zero_pads.cuda()` (the shortcut of the CIFAR ResNets in Eric-mingjie/rethinking-network-pruning),
    `if x.is_cuda:`, `if x.device.type == "cuda":`. That branch cannot run on a machine without a
    GPU: it follows the data, it is no hard-coded placement. A negated test (`not`, `!=`) and the
    `else` branch do not count."""
    m = ctx.model
    child = node
    for anc in m.ancestors(node):
        if isinstance(anc, (cst.If, cst.IfExp)) and child is anc.body:
            # the test, or one operand of an `and` (`if inputs.is_cuda and not self.alpha.is_cuda:`,
            # andy-yun/pytorch-0.4-yolov3's focal loss)
            if any(_positive_operand_test(ctx, t) for t in _conjuncts(anc.test)):
                return True
        if isinstance(anc, (cst.If, cst.IfExp)) and child is anc.orelse:
            # the `else` of `if not xyz1.is_cuda:` (OcCo's chamfer distance)
            test = anc.test
            if (isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
                    and _positive_operand_test(ctx, test.expression)):
                return True
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
        child = anc
    return False


def _conjuncts(test) -> list:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return [*_conjuncts(test.left), *_conjuncts(test.right)]
    return [test]


def _positive_operand_test(ctx: Context, test) -> bool:
    text = ctx.code(test)
    return bool(_CUDA_OPERAND_TEST.search(text)) and "not " not in text and "!=" not in text


def _left_early_before(ctx: Context, block, child) -> bool:
    """In `block` (a body), a statement before `child` is `if <device test>:` whose body leaves
    (`return`, `continue`, `break`, `raise`, `sys.exit(...)`): what follows runs only on one side of
    the test (`if device.type != "cuda": return model(x)`)."""
    m = ctx.model
    body = getattr(block, "body", None)
    if not isinstance(body, (list, tuple)) or child not in body:
        return False
    for stmt in body[: body.index(child)]:
        if not (isinstance(stmt, cst.If) and _device_test(ctx.code(stmt.test))):
            continue
        last = stmt.body.body[-1] if isinstance(stmt.body, cst.IndentedBlock) and stmt.body.body else None
        smalls = last.body if isinstance(last, cst.SimpleStatementLine) else (stmt.body.body if isinstance(stmt.body, cst.SimpleStatementSuite) else ())
        for small in smalls:
            if isinstance(small, (cst.Return, cst.Continue, cst.Break, cst.Raise)):
                return True
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and m.qualname(small.value.func) in _EXITS:
                return True
    return False


def _cuda_calls(m):
    """Hard-coded `x.cuda()` / `x.cuda(0)` calls (Tensor/Module.cuda, not `torch.cuda`)."""
    for call in m.calls:
        f = call.func
        if not (isinstance(f, cst.Attribute) and f.attr.value == "cuda" and m.qualname(f) is None):
            continue
        if any(a.keyword is not None and a.keyword.value != "non_blocking" for a in call.args):
            continue
        pos = [a for a in call.args if a.keyword is None]
        if len(pos) > 1 or (pos and not (isinstance(pos[0].value, cst.Integer) and pos[0].value.value == "0")):
            continue
        fn = m.enclosing(call, cst.FunctionDef)
        if fn is not None and fn.name.value in ("cuda", "to", "_apply"):
            continue
        yield call


def _fallback_meetings(ctx: Context):
    """(site, device expression, other operand) for every unguarded hard-coded `.cuda()` whose
    result meets, in one module call, torch call or arithmetic operation, a tensor or module the
    engine places on a device the file chooses at run time between CUDA and the CPU: on a CPU run
    (or with the GPU switched off) the `.cuda()` crashes, or its tensor meets the CPU one."""
    m = ctx.model
    sites = {id(c): c for c in _cuda_calls(m)}
    if not sites:
        return
    seen: set[int] = set()
    for node in m.nodes:
        if isinstance(node, cst.Call):
            operands = [node.func, *(a.value for a in node.args if not a.star)]
        elif isinstance(node, (cst.BinaryOperation,)):
            operands = [node.left, node.right]
        elif isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
            operands = [node.left, node.comparisons[0].comparator]
        else:
            continue
        if len(operands) < 2:
            continue
        placed = []
        for o in operands:
            v = m.value_of(o)
            if v.kind == "tensor" and v.placed is not None and id(v.placed) in sites:
                placed.append((o, v.placed))
        if not placed:
            continue
        for o, site in placed:
            if id(site) in seen:
                continue
            for other in operands:
                if other is o or (m.value_of(other).placed is site):
                    continue
                where = _on_fallback_device(m, other)
                if where is None:
                    continue
                if _guarded(ctx, site) or _guarded(ctx, node):
                    break
                seen.add(id(site))
                yield site, where, other
                break


def _fallback_placements(m) -> list:
    """(placing call, device expression) for the file's placements of a module on a device it
    chooses at run time between CUDA and the CPU (`model = Net().to(device)` with `device =
    torch.device("cuda" if torch.cuda.is_available() else "cpu")`): the file's main path runs on the
    CPU when CUDA is missing. At module level, or (G60-2, rules63) in a plain function of the file
    the script runs (`main()`), the name then being that function's own variable."""
    out = []
    for call in m.calls:
        if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "to"):
            continue
        where = _placement_device(m, call)
        option = _namespace_option(m, where)
        if where is None or not (isinstance(where, cst.Name) or option) or not _fallback_choice(m, where):
            continue
        if m.value_of(call.func.value).kind != "module":
            continue
        scope = m.scope_of(call)
        if option and scope is not m.module:
            continue  # `opt.device` (probe69 argsdev, jiant): the module-level script only
        if scope is not m.module:
            fn = m.enclosing(call, cst.FunctionDef)
            if (fn is None or scope is not fn or m.class_of(fn) is not None
                    or not m.bindings.get((fn, where.value)) or not _called_by_the_script(m, call)):
                continue  # a method, a nested scope, a module-level name read in a function, a function never run
        out.append((call, where))
    return out


def _placement_of(m, where):
    return next((c for c, w in _fallback_placements(m) if _where_key(m, w) == _where_key(m, where)), None)


def _where_key(m, where) -> str | None:
    """The text of a run-time device expression: a name, or a parsed option (`opt.device`)."""
    if isinstance(where, cst.Name):
        return where.value
    if _namespace_option(m, where):
        return m.module.code_for_node(where)
    return None


def _namespace_option(m, node) -> bool:
    """`opt.device`: an attribute of a parsed-arguments namespace."""
    return (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)
            and is_parsed_namespace(m, node.value))


def _unguarded_on_fallback_path(ctx: Context):
    """(site, device name, None) for each index-less `.cuda()` that runs, with no test about devices
    (nor a `try`) on the way, in a script that moves its model, at module level, to a device it chooses
    between CUDA and the CPU (jiant#776: `device = torch.device("cuda" if torch.cuda.is_available()
    else "cpu")`, `model.to(device)`, and a metric helper's `torch.eye(depth).cuda()`): the CPU
    fallback the file declares crashes there. Only sites the engine reaches, in functions of the
    file the script calls (every call followed, `_guarded`), outside methods of `nn.Module`
    classes and of classes whose callers the file does not show; `.cuda(i)` and `"cuda:N"` strings
    are left to the other checks, index-less `"cuda"` placements (`_cuda_string_placements`) are
    sites too (G60-2's wider form, rules63)."""
    m = ctx.model
    placements = _fallback_placements(m)
    if placements:
        names = {_where_key(m, w) for _, w in placements}
        if len(names) != 1:
            return  # two run-time devices: which one the site meant is not known
        where = placements[0][1]
    else:
        # the statement form of the fallback (DAGMM, pytorch#50401, G48-2): the model moved with
        # `.cuda()` only under `if torch.cuda.is_available():`; no device name to route through
        moves = _guarded_model_moves(m)
        if not moves:
            return
        where = moves[0]
    for site in (*_cuda_calls(m), *_cuda_string_placements(m)):
        if (isinstance(site.func, cst.Attribute) and site.func.attr.value == "cuda" and site.args) or (
                not m.reached(site) or (isinstance(where, cst.Call) and site is where)):
            continue
        fn = m.enclosing(site, cst.FunctionDef)
        if fn is None and m.enclosing(site, cst.ClassDef) is not None:
            continue
        if isinstance(where, cst.Call) and m.value_of(site.func.value).kind == "module":
            continue  # another model moved to CUDA: with no device name, which is the fallback's is not known
        if (_outside_file_class(m, site) or _guarded(ctx, site, cap=_CHAIN_DEPTH)
                or _under_cuda_operand_test(ctx, site)):
            continue
        if _branch_of_configured_device(m, site) or not _called_by_the_script(m, site):
            continue
        yield site, where, None


_CHAIN_DEPTH = 6  # calls followed from a site to the script's code (DAGMM: four method hops)


def _cuda_string_placements(m):
    """Calls that place a tensor or module on the index-less `"cuda"` string (G60-2, rules63):
    `x.to("cuda")`, `x.to(device="cuda")`, `torch.zeros(n, device="cuda")` (a `torch.*` call that is
    no autocast/GradScaler/backend device *type*, nor `torch.device(...)` itself, which places
    nothing). `"cuda:N"` is left to the other checks, as `.cuda(i)` is."""
    for call in m.calls:
        q = m.qualname(call.func) or ""
        if q == "torch.device" or any(q == p or (p.endswith(".") and q.startswith(p)) for p in _DEVICE_TYPE_CALLS):
            continue
        is_to = isinstance(call.func, cst.Attribute) and call.func.attr.value == "to" and not q
        if not is_to and not q.startswith("torch."):
            continue
        for i, arg in enumerate(call.args):
            kw = arg.keyword.value if arg.keyword is not None else None
            if kw == "device" or (is_to and kw is None and i == 0):
                if _cuda_literal(arg.value) == "cuda":
                    yield call
                break


def _string_site_arg(site):
    """The `"cuda"` argument of a string placement (`_cuda_string_placements`)."""
    for i, arg in enumerate(site.args):
        kw = arg.keyword.value if arg.keyword is not None else None
        if kw == "device" or (kw is None and i == 0 and isinstance(site.func, cst.Attribute)
                              and site.func.attr.value == "to"):
            return arg.value
    return None


def _guarded_model_moves(m) -> list:
    """`X.cuda()` calls on a module, each in the body of an `if` whose test asks whether CUDA is
    available (`if torch.cuda.is_available(): self.dagmm.cuda()`) and not negated: the file moves
    its model to CUDA only where there is one, and runs on the CPU otherwise."""
    out = []
    for call in _cuda_calls(m):
        if call.args or m.value_of(call.func.value).kind != "module":
            continue
        child = call
        for anc in m.ancestors(call):
            if isinstance(anc, cst.If) and child is anc.body:
                test = anc.test
                if _mentions_availability(m, test) and not (
                        isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)):
                    out.append(call)
                break
            if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.If, cst.IfExp, cst.While)):
                break
            child = anc
    return out


def _nested_call_sites(m, fn, outer) -> list:
    """The calls of the nested function `fn` by its name in `outer`, the function defining it; empty
    when the name is also used otherwise there (returned, handed on: callers not known here)."""
    name = fn.name.value
    calls = [c for c in m.calls_in(outer) if isinstance(c.func, cst.Name) and c.func.value == name
             and not m.contains(fn, c)]
    uses = [n for n in m.walk(outer) if type(n) is cst.Name and n.value == name and n is not fn.name]
    return calls if len(uses) == len(calls) else []


def _bound_before_run(m, where, node, depth: int = 0) -> bool:
    """Every module-level binding of the name `where` precedes `node` when `node` runs: `node` is
    module-level code after them, or in a function of the file every call of which is (followed
    through nested functions and plain-class methods)."""
    if depth > 4:
        return False
    glob = m.bindings.get((m.module, where.value)) or []
    fn = m.enclosing(node, cst.FunctionDef)
    if fn is None:
        return bool(glob) and all(m.precedes(b.node, node) for b in glob)
    outer = m.enclosing(fn, cst.FunctionDef, cst.Lambda, cst.ClassDef)
    if isinstance(outer, (cst.FunctionDef, cst.Lambda)):
        sites = _nested_call_sites(m, fn, outer)
    elif m.class_of(fn) is not None:
        sites = [c for c in m.calls if isinstance(c.func, cst.Attribute) and c.func.attr.value == fn.name.value
                 and not m.contains(fn, c)]
    else:
        sites = [c for c in m.calls if isinstance(c.func, cst.Name) and c.func.value == fn.name.value
                 and not m.contains(fn, c)]
    return bool(sites) and all(_bound_before_run(m, where, c, depth + 1) for c in sites)


def _outside_file_class(m, node) -> bool:
    """`node` sits in a class the file's class table does not resolve (a class defined twice, inside
    a function): its methods' callers are not the file's to follow. Methods of the file's classes
    (plain, `nn.Module` subclasses) count only through the calls of them `_called_by_the_script`
    and `_guarded` find by name (a `forward` run by `model(x)` has none: silent)."""
    for anc in m.ancestors(node):
        if isinstance(anc, cst.ClassDef):
            info = m.classes.get(anc.name.value)
            return info is None or info.node is not anc
    return False


def _called_by_the_script(m, node, depth: int = 0) -> bool:
    """`node` is module-level code, or in a function of the file a call of which is (followed
    through nested functions and methods of the file's classes, `_CHAIN_DEPTH` calls deep)."""
    if depth > _CHAIN_DEPTH:
        return False
    fn = m.enclosing(node, cst.FunctionDef)
    if fn is None:
        return True
    outer = m.enclosing(fn, cst.FunctionDef, cst.Lambda, cst.ClassDef)
    if isinstance(outer, (cst.FunctionDef, cst.Lambda)):
        sites = _nested_call_sites(m, fn, outer)
    elif m.class_of(fn) is not None:
        name = fn.name.value
        sites = [c for c in m.calls if isinstance(c.func, cst.Attribute) and c.func.attr.value == name
                 and not m.contains(fn, c)]
    else:
        sites = [c for c in m.calls if isinstance(c.func, cst.Name) and c.func.value == fn.name.value
                 and not m.contains(fn, c)]
    return any(_called_by_the_script(m, c, depth + 1) for c in sites)


class HardcodedCuda(Rule):
    code = "GL102"
    name = "hardcoded-cuda"
    summary = "`.cuda()` or a `\"cuda\"` device in a file that never checks whether CUDA is available."
    message = "hard-coded CUDA device with no CPU fallback: the file never checks `torch.cuda.is_available()`; use a device chosen at run time"
    fix_safety = "unsafe"
    default = True
    kind = "crash"
    prefilter = r"cuda"
    ast_prefilter = (r"^script$", r"^\.cuda\($|^'cuda|set_default_tensor_type")
    explanation = '''
A script that says `.cuda()` or `.to("cuda")` everywhere and never asks whether CUDA is there
crashes on a laptop, a CPU CI runner or a Mac (`AssertionError: Torch not compiled with CUDA
enabled` / `RuntimeError: Found no NVIDIA driver on your system`), so it cannot be tried before
it is queued on the cluster.

The rule reports once per file, at the first hard-coded site; the message lists the lines of
the others. The fix (unsafe: it changes where a CPU-only run places tensors) introduces one
`device = torch.device("cuda" if torch.cuda.is_available() else "cpu")` after the imports and
routes every hard-coded site through it: `.cuda()` becomes `.to(device)`, `"cuda"` becomes
`device`, and a string variable (`dev = "cuda"`, `def f(device="cuda")`) becomes `device.type`
so that it stays a string. An existing module-level `device = torch.device("cuda")` above every
site is reused (its value becomes the guarded one); any other existing `device` (a string, a
local variable, a name bound twice) keeps its meaning and the fix picks a fresh name
(`run_device`). Sites with an explicit other index (`"cuda:1"`) are listed but not rewritten.
`.cuda(i)` with an index the user chose (`.cuda(args.gpu)`, `.cuda(local_rank)`) is no site; one
whose index is a tensor's GPU (`.cuda(x.get_device())`, or a helper of the file returning it,
allennlp's `.cuda(util.get_device_of(spans))`, -1 on the CPU) is, and the fix writes
`.to(spans.device)`.

The rule is silent in files that check availability (`torch.cuda.is_available()`,
`torch.accelerator`, `device_count()`, a `--device`/`--cuda` command-line flag, test-suite guards
such as `TEST_CUDA`; a test that only picks a precision, nanoGPT's `dtype = 'bfloat16' if
torch.cuda.is_available() and torch.cuda.is_bf16_supported() else 'float16'`, does not count, nor
does one whose answer is only printed or logged, `print("GPU available:", torch.cuda.is_available())`), on
a module-level default such as `device = 'cuda'` followed by a module-level `exec(...)` of a
configuration (nanoGPT's `exec(open('configurator.py').read())` lets `--device=cpu` override it), on
`device = torch.device("cuda:1")` in the branch of an `if`/`else` whose other branch reads the device
from the configuration (`device = torch.device(raw_config['device'])`: the literal is its default), on
a `device` field of a `@dataclass` the command line fills (`@pyrallis.wrap()`, `tyro.cli`,
`HfArgumentParser`: `--device cpu` chooses) or a `device` parameter of a function bound to the command
line (`@argbind.bind(...)`, `tyro.cli(main)`, `fire.Fire(main)`, or any module-level function when
`fire.Fire(main)` dispatches by name, `def main(task, **kwargs): globals()[task](**kwargs)`), on
a CUDA device that is one branch of a conditional expression whose other branch is the CPU
(`torch.device('cuda') if args.ctx == 'gpu' else 'cpu'`: chosen at run time), on
`"cuda"` used as an autocast/GradScaler device *type*, on `torch.device("cuda")` compared with a
device (`if device == torch.device("cuda"): raise ...`), on a parameter default `'cuda'` whose name
is not a device name in a file that never imports torch (`def run(target='cuda')`, a TVM compilation
target), on a site that runs only when a tensor is already on CUDA (`if isinstance(x.data,
torch.cuda.FloatTensor): pad = pad.cuda()`, `if x.device.type == "cuda":`, one operand of an `and`
(`if inputs.is_cuda and not self.alpha.is_cuda:`) or the `else` of `if not x.is_cuda:`: it follows
the data; a tensor's `.is_cuda` read elsewhere is no flag of the file),
and in files that
are CUDA-only by design and say so: they call CUDA-only APIs (`get_device_capability`,
`set_device`, `synchronize`, CUDA events/streams, memory statistics and snapshots), use an NCCL
process group, set `CUDA_VISIBLE_DEVICES`, or guard their CUDA path with a flag of their own
(`if args.cuda:`, `if USE_CUDA:`). A CPU fallback would not make such a file run elsewhere.

One site is reported even in a file that checks availability: a CUDA default set on every run,
`torch.set_default_tensor_type('torch.cuda.FloatTensor')` (or `torch.cuda.FloatTensor`) or
`torch.set_default_device("cuda")`, outside any `if` (an `if __name__ == "__main__":` block
aside), at module level or in a function the script runs on every path. It fails on a CPU-only
machine whatever the rest of the file checks (nerf-pytorch's `run_nerf.py` picks `device` with a
CPU fallback, then sets the CUDA tensor type in `__main__`). The fix (unsafe) makes the argument
conditional: `'torch.cuda.FloatTensor' if torch.cuda.is_available() else 'torch.FloatTensor'`.
A default chosen by an expression or under a test, and a file that stops where CUDA is missing
(`assert torch.cuda.is_available()`, `if not torch.cuda.is_available(): sys.exit(...)`), are not
reported.

So is a hard-coded `.cuda()` in such a file (or in one whose only CUDA "flag" chooses between a
CUDA and a CPU device, `t.device('cuda') if opt.use_gpu else t.device('cpu')`) when its tensor
meets, in a model call, a torch call or an arithmetic operation, a tensor or module the file places
on that run-time device: `model(src, src_mask.cuda())` after `model.to(device)` (pytorch-book's
poetry generator). The choice may also be an `if`/`else` statement (`if torch.cuda.is_available():
device = torch.device("cuda")` `else: device = torch.device("cpu")`, or a CPU default that an `if`
sets to CUDA), or the entry of a dict literal the file builds (`torch.device(configs["device"])` with
`configs = {"device": "cuda:0" if torch.cuda.is_available() else "cpu"}` handed to the class), unless
the dict is changed in place (`configs.update(...)`). The device may be an attribute,
`self.model.to(self.device)`, when every binding of `self.device` in the class, its bases of the
file and its subclasses of the file is such a choice (federated_adaptation's `Helper.__init__` chooses it, a subclass moves its models there and a
staticmethod `batchify` returns `data.cuda()`); no fix is offered then. The CPU run the fallback
is for fails there. It is reported once per file, with
the lines of the other such sites; the fix (unsafe) writes `.to(device)` with the run-time device's
name where that name is visible. It stays silent where the `.cuda()` runs only under a test about
devices (`if use_cuda:`, `x.cuda() if use_cuda else x`, `if torch.cuda.is_available():`) or after an
`if` on such a test that leaves the block (`if device.type != "cuda": return ...`), inside a
`try` with an `except`, in a method or lambda, or in a function some call of which is so guarded, in
files that are CUDA-only by design (above), and where the other operand's device is not a CUDA/CPU
choice the file makes (`torch.device(args.device)`: unknown).

Where no such meeting can be seen, an index-less `.cuda()` that the script runs with no test about
devices (nor a `try`, nor a guarded caller) on the way is reported too, when the script declares its
CPU fallback plainly: it moves a model, at module level or in a plain function the script runs
(`main()`), to a name chosen between CUDA and the CPU (`model = Net().to(device)`; jiant's metric
helper `ones = torch.eye(depth).cuda()`), or, with no such name, moves its model with `.cuda()` only
under `if torch.cuda.is_available():` (DAGMM's `det_cov = torch.cat(det_cov).cuda()`). An
index-less `"cuda"` placement counts the same way: `x.to("cuda")`, `torch.zeros(n, device="cuda")`
(not `"cuda"` as an autocast or GradScaler device type, nor `"cuda:1"`). The fix writes
`.to(device)` (for a string, the name in its place) where that name is bound before the site runs
and visible there (`main()`'s own `device` only inside `main()`); with the `if` form there is no
name, and no fix.

A flag of the file's own that is off by default is a CPU fallback too: with `--cuda` defined as
`action="store_true"` (no other default, never set by the file) and the model moved only `if
args.cuda: model = model.cuda()`, an index-less `.cuda()` that the script runs with no test about
devices on the way (GFM's `inference_function` moving the image with `.cuda()`, PR#5) fails on the
run without the flag: at that line on a machine without CUDA, where its tensor meets the model left
on the CPU on one with CUDA. Only in files whose every test of a CUDA flag reads that one flag, with
no CUDA-only API, and when the file moves its model under that flag; no fix (guard it the same way).

Bad:

```python
model = Net().cuda()
x = torch.randn(8, 3, device="cuda")
```

Good:

```python
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
x = torch.randn(8, 3, device=device)
```
'''

    def check(self, ctx: Context):
        m = ctx.model
        if m.frameworks or not m.is_script:
            return  # libraries gate CUDA code at their call sites; the fix is for scripts
        if _checks_availability(m):
            # The file has a CPU path, but a CUDA default tensor type / default device set on every
            # run (not under any test) crashes it on a CPU machine whatever else the file checks.
            if not _cuda_only_by_design(ctx, precision_probes(m)) and not _requires_cuda(m):
                for call, what in unsuppressed(ctx, list(_default_cuda_setters(m)), node=lambda s: s[0]):
                    if _runs_unconditionally(m, call):
                        edit = _default_setter_edit(ctx, call)
                        yield ctx.finding(
                            call,
                            f"{what} set on every run: a CPU-only machine fails here although the file falls back to "
                            "the CPU elsewhere (it checks availability or takes the device from a flag); set it "
                            "only when CUDA is available",
                            ctx.fix(edit, message="Set the CUDA default only when CUDA is available")
                            if edit is not None else None,
                        )
            yield from self._fallback_findings(ctx)
            yield from self._helper_default_findings(ctx)
            return
        if _cuda_only_by_design(ctx, precision_probes(m)):
            # the file needs CUDA anyway and says so: a CPU fallback would not make it run; unless
            # its only "flag" is the fallback itself (`t.device('cuda') if opt.use_gpu else t.device('cpu')`)
            yield from self._fallback_findings(ctx)
            return
        sites = unsuppressed(ctx, [s for s in self._sites(ctx) if not _under_cuda_operand_test(ctx, s[0])
                                   and not _branch_of_configured_device(m, s[0])])
        if not sites:
            return
        group = self._group_fix(ctx, sites) if any(r for _, _, r in sites) else None
        node, what, _routable = sites[0]
        message = self.message.replace("hard-coded CUDA device", what)
        if m.checks_availability:  # every availability test chooses a precision only, or is printed only
            message = message.replace(
                "the file never checks `torch.cuda.is_available()`",
                "the file checks `torch.cuda.is_available()` only to choose a precision"
                if precision_probes(m) else "the file only prints `torch.cuda.is_available()`",
            )
        message += other_lines(ctx, node, [n for n, _, _ in sites[1:]], "also hard-coded")
        fixed = [n for n, _, r in sites if r]
        if group is not None and len(fixed) < len(sites):
            message += " (the fix routes the index-less sites; `cuda:N` with N > 0 stays for you to decide)"
        yield ctx.finding(node, message, group)

    def _fallback_findings(self, ctx: Context):
        """One finding for the file's unguarded `.cuda()` calls that meet a value on its run-time
        chosen device (`_fallback_meetings`), in a file that is not CUDA-only by design."""
        m = ctx.model
        if _requires_cuda(m):
            return
        if _cuda_only_by_design(ctx, precision_probes(m), choices_fall_back=True):
            yield from self._flag_off_findings(ctx)
            return
        found = unsuppressed(ctx, list(_fallback_meetings(ctx)))
        if not found:
            # no meeting the engine can see (an unknown function made the tensor, jiant#776's
            # `torch.sparse.torch.eye(depth).cuda()` in a nested helper): an unguarded `.cuda()`
            # that runs on the path the file's own CPU fallback takes
            found = unsuppressed(ctx, list(_unguarded_on_fallback_path(ctx)))
            if not found:
                return
        edits = []
        for site, where, _other in found:
            name = self._visible_name(m, where, site)
            scope = m.scope_of(site)
            local = scope is not m.module and (scope, name) in m.bindings
            if name is not None and not local and not _bound_before_run(m, where, site):
                # the module-level name is bound only after the site runs (textual_inversion's
                # `load_model_from_config` runs before `device` is bound): `.to(device)` would fail
                name = None
            if name is not None and not (isinstance(site.func, cst.Attribute) and site.func.attr.value == "cuda"):
                lit = _string_site_arg(site)  # `x.to("cuda")`, `device="cuda"`: the string becomes the name
                if lit is not None:
                    edits.append(ctx.replace(lit, name))
            elif name is not None:
                extra = "".join(
                    f", {ctx.code(a)}" for a in site.args if a.keyword is not None and a.keyword.value == "non_blocking"
                )
                edits.append(ctx.replace(site, f"{ctx.code(site.func.value)}.to({name}{extra})"))
        site, where, other = found[0]
        named = isinstance(where, cst.Name) or _namespace_option(m, where)
        shown = ctx.code(where) if named else "a device chosen at run time"
        if other is None and isinstance(where, cst.Call):
            message = (
                f"hard-coded `{ctx.code(site)}` on a path that also runs without CUDA: the file moves its model "
                f"to CUDA only when CUDA is available ({line_ref(ctx, where)}), but no test about devices guards "
                "this line, so a CPU run fails here; move it where the model's tensors are (`.to(x.device)`) "
                "or guard it the same way"
            )
        elif other is None:
            placed = _placement_of(m, where)
            moved = f"moves its model to `{shown}` on {line_ref(ctx, placed)}" if placed is not None else (
                f"places its model on `{shown}`")
            message = (
                f"hard-coded `{ctx.code(site)}` on a path that also runs without CUDA: the file {moved}, "
                "CUDA or the CPU chosen at run time, but no test about devices guards this line, so a CPU "
                "run fails here; move it to that device"
            )
        else:
            message = (
                f"hard-coded `{ctx.code(site)}` on a path that also runs without CUDA: it meets "
                f"`{ctx.code(other)}`, placed on {'`' + shown + '`' if named else shown} "
                "(CUDA or the CPU, chosen at run time), so a CPU run fails here; move it to that device"
            )
        message += other_lines(ctx, site, [s for s, _, _ in found[1:]], "also")
        fix = ctx.fix(*edits, message="Move it to the run-time device") if edits else None
        yield ctx.finding(site, message, fix)

    def _flag_off_findings(self, ctx: Context):
        """One finding for the `.cuda()` sites the run without the file's off-by-default CUDA flag
        reaches unguarded (`_unguarded_on_flag_off_path`); no fix (the guard to add is the user's)."""
        found = unsuppressed(ctx, list(_unguarded_on_flag_off_path(ctx)))
        if not found:
            return
        site, test, move = found[0]
        flag = ctx.code(test)
        option = _option_text(_off_by_default_flags(ctx.model)[test.attr.value]) or flag
        message = (
            f"hard-coded `{ctx.code(site)}` on a run without `{option}`: the file moves its model to CUDA only "
            f"`if {flag}:` ({line_ref(ctx, move)}), a flag that is off by default, but no test about devices guards "
            f"this line, so that run fails here (on a machine without CUDA at this line; on one with CUDA where its "
            f"tensor meets the model left on the CPU); guard it the same way (`if {flag}:`)"
        )
        message += other_lines(ctx, site, [s for s, _, _ in found[1:]], "also")
        yield ctx.finding(site, message)

    def _helper_default_findings(self, ctx: Context):
        """A torch call of a file function placed on `device=<param>` where the parameter defaults
        to `"cuda"` and no call in the file passes another device (timm's `one_hot(...,
        device='cuda')` / `mixup_target(...)`, pytorch-image-models#1222): in a file with a CPU
        path, the helper's tensors are CUDA tensors on every run."""
        m = ctx.model
        if _requires_cuda(m) or _cuda_only_by_design(ctx, precision_probes(m), choices_fall_back=True):
            return
        sites = []
        for call in m.calls:
            q = m.qualname(call.func) or ""
            arg = None
            if q.startswith("torch.") and q != "torch.device":
                arg = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "device"), None)
            elif isinstance(call.func, cst.Attribute) and call.func.attr.value == "to" and q == "":
                pos = [a for a in call.args if a.keyword is None]
                arg = pos[0].value if pos else next(
                    (a.value for a in call.args if a.keyword is not None and a.keyword.value == "device"), None)
            if not isinstance(arg, cst.Name):
                continue
            fn = m.enclosing(call, cst.FunctionDef)
            if fn is None or _availability_guarded(m, call, fn):
                continue
            default = _always_cuda_param(m, fn, arg.value, 0)
            if default is not None:
                sites.append((call, arg, fn, default))
        for call, arg, fn, default in unsuppressed(ctx, sites, node=lambda s: s[0]):
            yield ctx.finding(
                call,
                f"`{arg.value}` here is always `{ctx.code(default)}`: `{fn.name.value}()`'s parameter defaults to it "
                f"({line_ref(ctx, default)}) and no call in the file passes another device, so a CPU run (the file "
                "falls back to the CPU elsewhere) fails here; pass the caller's device (`device=x.device`)",
            )

    @staticmethod
    def _visible_name(m, where, site) -> str | None:
        """The name of the run-time device when it can be written at `site`: bound in the site's
        function before it, or at module level and not bound in that function."""
        if not isinstance(where, cst.Name):
            return None
        name = where.value
        scope = m.scope_of(site)
        local = m.bindings.get((scope, name)) if scope is not m.module else None
        if local:
            ok = all(b.how == "assign" and m.precedes(b.node, site) for b in local)
            if ok and scope is not m.scope_of(where) and not all(
                    b.value is not None and _fallback_choice(m, b.value) for b in local):
                ok = False  # another function's own `device` (G60-2: the choice made in `main()`)
            return name if ok else None
        glob = m.bindings.get((m.module, name))
        if glob and (all(b.how == "assign" and b.value is not None and _fallback_choice(m, b.value) for b in glob)
                     or _branch_choice(m, glob)):
            return name
        return None

    # sites ---------------------------------------------------------------------------------------
    def _sites(self, ctx: Context):
        """(node, description, routable) for every hard-coded CUDA placement."""
        m = ctx.model
        inside_device_call: set = set()
        for call in m.calls:
            f = call.func
            q = m.qualname(f)
            if q == "torch.device":
                if call.args and _cuda_literal(call.args[0].value):
                    lit = _cuda_literal(call.args[0].value)
                    index = call.args[1].value if len(call.args) > 1 else None
                    routable = lit in ("cuda", "cuda:0") and (
                        index is None or (isinstance(index, cst.Integer) and index.value == "0")
                    )
                    inside_device_call.add(call.args[0].value)
                    if isinstance(m.parent(call), (cst.Comparison, cst.ComparisonTarget)):
                        continue  # `if self.device == torch.device('cuda'): raise ...`: a test, not a placement
                    if _default_of_configured_device(m, call):
                        continue  # `else: device = torch.device('cuda:1')` when the config names none
                    if _cpu_alternative(m, call):
                        continue  # `torch.device('cuda') if args.ctx == 'gpu' else 'cpu'`: chosen at run time
                    yield call, f"hard-coded `torch.device({ctx.code(call.args[0].value)})`", routable
                continue
            if isinstance(f, cst.Attribute) and f.attr.value == "cuda" and q is None:
                pos = [a for a in call.args if a.keyword is None]
                idx = pos[0].value if pos else None
                if (idx is not None and len(pos) == 1 and not isinstance(idx, cst.Integer)
                        and _index_tensor(m, idx) is not None and all(a.keyword is None for a in call.args)):
                    # `.cuda(util.get_device_of(spans))`, `.cuda(x.get_device())`: the index of a
                    # tensor's GPU, -1 on the CPU (gazetteer-NER-acl19#5): the fix writes
                    # `.to(spans.device)`
                    yield call, "hard-coded `.cuda()`", True
                    continue
                if (idx is not None and not isinstance(idx, cst.Integer)) or len(pos) > 1 or any(
                    a.keyword is not None and a.keyword.value not in ("non_blocking", "memory_format") for a in call.args
                ):
                    continue  # `.cuda(device)` is not hard-coded; other signatures are not Tensor.cuda
                fn = m.enclosing(call, cst.FunctionDef)
                if fn is not None and fn.name.value in ("cuda", "to", "_apply"):
                    continue  # implementing the .cuda() API itself
                routable = idx is None or (isinstance(idx, cst.Integer) and idx.value == "0")
                routable = routable and all(
                    a.keyword is not None and a.keyword.value == "non_blocking" or a.keyword is None for a in call.args
                )
                yield call, "hard-coded `.cuda()`", routable
        for call in m.calls:
            q = m.qualname(call.func) or ""
            if q == "torch.device" or any(q == p or (p.endswith(".") and q.startswith(p)) for p in _DEVICE_TYPE_CALLS):
                continue
            is_to = isinstance(call.func, cst.Attribute) and call.func.attr.value == "to"
            for i, arg in enumerate(call.args):
                lit = _cuda_literal(arg.value)
                if lit is None or arg.value in inside_device_call:
                    continue
                kw = arg.keyword.value if arg.keyword is not None else None
                if kw == "device" or (is_to and kw is None and i == 0):
                    if _cpu_alternative(m, arg.value):
                        continue
                    yield arg.value, f'hard-coded device {ctx.code(arg.value)}', lit in ("cuda", "cuda:0")
        for call, what in _default_cuda_setters(m):
            yield call, what, _default_setter_edit(ctx, call) is not None
        # `device = "cuda"` and `def f(device="cuda")` in a script (its caller passes nothing else)
        execs = _module_exec_statements(m)
        for (scope, name), bindings in m.bindings.items():
            for b in bindings:
                if b.how in ("assign", "param") and b.value is not None and _cuda_literal(b.value):
                    if b.how == "assign" and any(m.precedes(b.node, e) for e in execs) and m.statement_of(
                        b.node
                    ) in m.module.body:
                        continue  # a default that the exec'd configuration may override (nanoGPT's configurator)
                    device_named = "device" in name.lower() or "dev" == name.lower()
                    if b.how == "assign" and _dataclass_cli_field(m, b.value):
                        continue  # `device: str = "cuda"` in a dataclass the command line fills: a flag's default
                    if b.how == "param" and _cli_bound_param(m, b.value):
                        continue  # `def encode(..., device="cuda")` bound to the command line: a flag's default
                    if b.how == "param" and not device_named and not m.uses_module("torch"):
                        # `def run(target='cuda')` in a TVM/TensorFlow file that never imports torch
                        # (mit-han-lab/temporal-shift-module tsm_fpga/main_tf.py): a compiler target
                        continue
                    if b.how == "param" or device_named:
                        yield b.value, f'hard-coded device {ctx.code(b.value)}', _cuda_literal(b.value) in ("cuda", "cuda:0")

    # the one fix for the whole file ------------------------------------------------------------------
    def _group_fix(self, ctx: Context, sites):
        m = ctx.model
        torch_alias = next((k for k, v in m.aliases.items() if v == "torch"), None)
        t = torch_alias or "torch"
        guarded = f'{t}.device("cuda" if {t}.cuda.is_available() else "cpu")'
        # a site nested in another is left to the next round
        chosen = outermost(ctx, [node for node, _what, routable in sites if routable])
        if not chosen:
            return None
        # Reuse the file's `device` only when it is one module-level `device = torch.device("cuda")`
        # and every other site comes after it: then it holds a device everywhere it is read. Any
        # other `device` (a string, a parameter, a local, bound twice) keeps its meaning and the
        # fix introduces a name of its own.
        definition = None
        module_device = m.bindings.get((m.module, "device"), [])
        if (
            len(module_device) == 1
            and module_device[0].how == "assign"
            and module_device[0].value is not None
            and any(module_device[0].value is n for n in chosen)
            and isinstance(module_device[0].value, cst.Call)
            and isinstance(m.parent(m.statement_of(module_device[0].value)), cst.Module)
            and all(n is module_device[0].value or m.order[n] > m.order[module_device[0].value] for n in chosen)
            and not any(
                name == "device" and any(b.how != "param" for b in bs)
                for (scope, name), bs in m.bindings.items()
                if scope is not m.module
            )
        ):
            definition = module_device[0].value
            name = "device"
        else:
            name = self._fresh_name(m)
        edits = []
        if definition is None:
            anchor = self._after_imports(m)
            # the header runs where it is inserted: `torch` must be bound there by a module-level
            # import above it (an `import torch` inside `if __name__ == "__main__":`, further down
            # the file or in a later notebook cell does not count), else the header imports it
            bound = self._torch_bound_at(m, anchor)
            t = bound or "torch"
            guarded = f'{t}.device("cuda" if {t}.cuda.is_available() else "cpu")'
            header = ("" if bound else "import torch\n") + f"{name} = " + guarded
            if anchor is None:
                first = m.module.body[0] if m.module.body else None
                if first is None:
                    return None
                if (
                    isinstance(first, cst.SimpleStatementLine)
                    and len(first.body) == 1
                    and isinstance(first.body[0], cst.Expr)
                    and isinstance(first.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
                ):
                    edits.append(ctx.insert_after(first, "\n" + header))  # the module docstring stays first
                else:
                    edits.append(ctx.insert_before(first, header))
            else:
                edits.append(ctx.insert_after(anchor, "\n" + header))
        string_bindings = self._string_binding_values(m)
        for node in chosen:
            if node is definition:
                edits.append(ctx.replace(node, guarded))
            elif (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "cuda"
                    and node.args and node.args[0].keyword is None and _index_tensor(m, node.args[0].value) is not None):
                tensor = _index_tensor(m, node.args[0].value)
                edits.append(ctx.replace(node, f"{ctx.code(node.func.value)}.to({ctx.code(tensor)}.device)"))
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "cuda":
                extra = "".join(
                    f", {ctx.code(a)}" for a in node.args if a.keyword is not None and a.keyword.value == "non_blocking"
                )
                edits.append(ctx.replace(node, f"{ctx.code(node.func.value)}.to({name}{extra})"))
            elif isinstance(node, cst.Call) and m.qualname(node.func) in _DEFAULT_SETTERS:
                edits.append(_default_setter_edit(ctx, node))
            elif id(node) in string_bindings:
                # `dev = "cuda"` / `def f(device="cuda")`: the variable stays a string (code compares
                # it with "cuda"; a torch.device never equals a string)
                edits.append(ctx.replace(node, f"{name}.type"))
            else:
                edits.append(ctx.replace(node, name))
        return ctx.fix(*edits, message=f"Choose the device at run time (`{name}`) and route every hard-coded site through it")

    @staticmethod
    def _string_binding_values(m) -> set[int]:
        out = set()
        for (_scope, _name), bindings in m.bindings.items():
            for b in bindings:
                if b.how in ("assign", "param") and isinstance(b.value, cst.SimpleString):
                    out.add(id(b.value))
        return out

    @staticmethod
    def _fresh_name(m) -> str:
        used = set()
        for n in m.nodes:
            if not isinstance(n, cst.Name):
                continue
            parent = m.parent(n)
            if (isinstance(parent, cst.Arg) and parent.keyword is n) or (isinstance(parent, cst.Attribute) and parent.attr is n):
                continue  # `f(device=...)`, `x.device`: not the variable
            used.add(n.value)
        for candidate in ("device", "run_device", "default_device", "torch_device"):
            if candidate not in used:
                return candidate
        i = 2
        while f"run_device{i}" in used:
            i += 1
        return f"run_device{i}"

    @staticmethod
    def _torch_bound_at(m, anchor) -> str | None:
        """The name `torch` is bound under at the end of `anchor` (a statement of the module's
        body) by the module-level statements up to it: `import torch`, `import torch.nn`,
        `import torch as th`; None when it is not (or `anchor` is None)."""
        if anchor is None:
            return None
        bound = None
        for stmt in m.module.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for s in stmt.body:
                    if isinstance(s, cst.Import):
                        for alias in s.names:
                            name = dotted(alias.name) or ""
                            if alias.asname is None and (name == "torch" or name.startswith("torch.")):
                                bound = "torch"
                            elif alias.asname is not None and name == "torch" and isinstance(alias.asname.name, cst.Name):
                                bound = alias.asname.name.value
            if stmt is anchor:
                return bound
        return None

    @staticmethod
    def _after_imports(m):
        last = None
        for stmt in m.module.body:
            if isinstance(stmt, cst.SimpleStatementLine) and all(
                isinstance(s, (cst.Import, cst.ImportFrom)) or (isinstance(s, cst.Expr) and isinstance(s.value, cst.SimpleString))
                for s in stmt.body
            ):
                if any(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body):
                    last = stmt
                continue
            break
        return last


def _index_tensor(m, idx) -> cst.BaseExpression | None:
    """For `.cuda(idx)`: the tensor whose GPU index `idx` is, when `idx` is `t.get_device()` or a
    call of a function of the file (a plain function, or a static method read off its class:
    `util.get_device_of(spans)`) that takes one argument and returns only its parameter's
    `.get_device()` or an integer literal (`-1` on the CPU). None otherwise (`.cuda(args.gpu)`,
    `.cuda(local_rank)`: a device the user chose)."""
    if not isinstance(idx, cst.Call):
        return None
    f = idx.func
    if isinstance(f, cst.Attribute) and f.attr.value == "get_device" and not idx.args:
        return f.value if isinstance(f.value, (cst.Name, cst.Attribute)) else None
    fn = None
    if isinstance(f, cst.Name) and f.value not in m.classes and len(m.functions.get(f.value, [])) == 1:
        fn = m.functions[f.value][0]
    elif isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value in m.classes:
        found = m.method_of_class(f.value.value, f.attr.value)
        fn = found[0] if found is not None else None
        if fn is not None and not any(
                isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in fn.decorators):
            fn = None
    if fn is None or len(idx.args) != 1 or idx.args[0].keyword is not None or idx.args[0].star:
        return None
    params = [p for p in (*fn.params.posonly_params, *fn.params.params)]
    if len(params) != 1 or fn.params.star_arg not in (None, cst.MaybeSentinel.DEFAULT) or fn.params.kwonly_params:
        return None
    pname = params[0].name.value
    arg = idx.args[0].value
    if not isinstance(arg, (cst.Name, cst.Attribute)):
        return None
    returns = [n for n in m.walk(fn.body, skip=(cst.FunctionDef, cst.ClassDef, cst.Lambda)) if isinstance(n, cst.Return)]
    if not returns:
        return None
    device_read = False
    for r in returns:
        v = r.value
        if isinstance(v, cst.UnaryOperation) and isinstance(v.operator, cst.Minus):
            v = v.expression
        if isinstance(v, cst.Integer):
            continue
        if (isinstance(v, cst.Call) and not v.args and isinstance(v.func, cst.Attribute)
                and v.func.attr.value == "get_device" and isinstance(v.func.value, cst.Name)
                and v.func.value.value == pname):
            device_read = True
            continue
        return None
    return arg if device_read else None


def _availability_guarded(m, node, fn) -> bool:
    """`fn` tests CUDA availability somewhere (`if not torch.cuda.is_available(): return ...`
    before the site, or around it): it chooses for itself."""
    return any(isinstance(n, (cst.If, cst.IfExp, cst.While, cst.Assert)) and _mentions_availability(m, n.test)
               for n in m.walk(fn))


def _always_cuda_param(m, fn: cst.FunctionDef, name: str, depth: int):
    """The `"cuda"` default of parameter `name` of the module-level function `fn` when every call
    of `fn` in the file leaves it out or passes on a parameter of its own caller that is itself
    always `"cuda"`; `fn` called at least once and its name used only in calls. None otherwise."""
    if depth > 3 or m.scope_of(fn) is not m.module:
        return None
    params = list(fn.params.params)
    idx = next((i for i, p in enumerate(params) if p.name.value == name), None)
    if idx is None:
        kwonly = next((p for p in fn.params.kwonly_params if p.name.value == name), None)
        if kwonly is None:
            return None
        param = kwonly
    else:
        param = params[idx]
    if param.default is None or _cuda_literal(param.default) not in ("cuda", "cuda:0"):
        return None
    if any(b.how != "param" for b in m.bindings.get((fn, name), [])):
        return None  # reassigned in the function (`device = device or x.device`)
    fname = fn.name.value
    calls = 0
    for node in m.nodes:
        if not (isinstance(node, cst.Name) and node.value == fname):
            continue
        parent = m.parent(node)
        if parent is fn:
            continue
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            continue  # `obj.one_hot`: another name
        if not (isinstance(parent, cst.Call) and parent.func is node):
            return None  # handed around: callers elsewhere
        call = parent
        if any(a.star for a in call.args):
            return None
        passed = None
        for i, a in enumerate(call.args):
            if a.keyword is not None and a.keyword.value == name:
                passed = a.value
            elif a.keyword is None and idx is not None and i == idx:
                passed = a.value
        if passed is not None:
            caller = m.enclosing(call, cst.FunctionDef)
            if not (isinstance(passed, cst.Name) and caller is not None
                    and _always_cuda_param(m, caller, passed.value, depth + 1) is not None):
                return None
        calls += 1
    return param.default if calls else None

