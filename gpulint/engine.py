"""Checking and fixing one file: bytes -> text -> LibCST module -> ScriptModel -> rules.

The engine, not the rules, applies fixes: all non-overlapping fixes of a round together, then a
re-parse and another round, until nothing changes (at most MAX_ROUNDS). A round whose result does
not parse is retried fix by fix and the fixes that break the file are dropped and reported.
"""

from __future__ import annotations

import io
import os
import re
import stat
import sys
import threading
import time
import tokenize
from dataclasses import dataclass, field
from typing import Sequence

from gpulint.diagnostics import SAFE, Diagnostic, FileResult, Fix
from gpulint.registry import ENGINE_CODE
from gpulint.rule import Rule

MAX_ROUNDS = 10
MAX_FILE_BYTES = 10 * 1024 * 1024


@dataclass
class Options:
    fix: bool = False
    unsafe_fixes: bool = False
    write: bool = True  # False for --diff and stdin: compute fixes, do not write files
    settings: object = None  # config.RuleSettings the rules see as ctx.settings (torch version...)


@dataclass
class Source:
    """A decoded file and what is needed to write it back the same way."""

    text: str
    encoding: str = "utf-8"


def engine_diagnostic(path: str, message: str, line: int = 1, col: int = 1) -> Diagnostic:
    return Diagnostic(ENGINE_CODE, "engine-error", message, path, line, col, line, col)


class BadInput(Exception):
    def __init__(self, message: str, line: int = 1, col: int = 1) -> None:
        super().__init__(message)
        self.line = line
        self.col = col


def decode(raw: bytes) -> Source:
    """Decode Python source the way Python does (BOM, coding cookie, default UTF-8)."""
    if b"\x00" in raw[:8192]:
        raise BadInput("file is binary (contains NUL bytes), not Python source")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError as exc:
        # detect_encoding also fails on a first or second line that is not UTF-8 when there is
        # no coding cookie: say so, with the offending byte, rather than blame the declaration
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            line = raw[: bad.start].count(b"\n") + 1
            raise BadInput(
                f"file is not valid UTF-8: byte 0x{raw[bad.start]:02x} at offset {bad.start} cannot be decoded", line
            )
        raise BadInput(f"cannot determine the file's encoding: {exc.msg if hasattr(exc, 'msg') else exc}")
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        name = "UTF-8" if encoding.startswith("utf-8") else encoding
        raise BadInput(f"file is not valid {name}: byte 0x{raw[exc.start]:02x} at offset {exc.start} cannot be decoded", line)
    except LookupError:
        raise BadInput(f"unknown source encoding {encoding!r}")
    if encoding == "utf-8-sig" and text.startswith("\ufeff"):
        text = text[1:]
    return Source(text, encoding)


def digest(data: bytes) -> str:
    """The content hash the result cache keys files by."""
    from gpulint._startup import blake2b

    return blake2b(data, digest_size=16).hexdigest()


def read_source(path: str) -> Source:
    return read_source_stamped(path)[0]


def read_source_stamped(path: str) -> tuple[Source, tuple[int, int, str]]:
    """A file's decoded source and the (mtime_ns, size, digest) of the bytes it was decoded from."""
    return _read(path)[:2]


def _read(path: str) -> tuple[Source, tuple[int, int, str], bytes]:
    """Read a regular file (see read_regular_bytes) and decode it."""
    raw, st = read_regular_bytes(path, MAX_FILE_BYTES)
    return decode(raw), (st.st_mtime_ns, len(raw), digest(raw)), raw


def read_regular_bytes(path: str, limit: int) -> tuple[bytes, os.stat_result]:
    """Read a regular file, never blocking and never more than `limit` bytes (BadInput otherwise).

    A FIFO, a socket or a device named like a Python file (`x.py -> /dev/zero`) is reported, not
    read: the file is opened non-blocking (opening a FIFO without a writer would wait forever) and
    checked with fstat on the open descriptor (no window between the check and the read), and
    the read stops one byte past the limit whatever the file claims its size is. Notebooks are
    read through it too.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise BadInput("is a broken symbolic link (its target does not exist); not read")
        raise BadInput("file disappeared before it could be read")
    except OSError as exc:
        raise BadInput(f"cannot read file: {exc.strerror or exc}")
    if stat.S_ISDIR(st.st_mode):
        raise BadInput("is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise BadInput(f"is not a regular file ({_file_type(st.st_mode)}); not read")
    if st.st_size > limit:
        raise BadInput(f"file is too large to check ({st.st_size / 2**20:.1f} MiB; the limit is {limit // 2**20} MiB)")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise BadInput("file disappeared before it could be read")
    except OSError as exc:
        raise BadInput(f"cannot read file: {exc.strerror or exc}")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # replaced between the stat and the open
            raise BadInput(f"is not a regular file ({_file_type(st.st_mode)}); not read")
        chunks = []
        size = 0
        while size <= limit:
            try:
                chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            except BlockingIOError:  # pragma: no cover - regular files do not block
                break
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        raw = b"".join(chunks)
    except OSError as exc:
        raise BadInput(f"cannot read file: {exc.strerror or exc}")
    finally:
        os.close(fd)
    if len(raw) > limit:
        raise BadInput(f"file is too large to check (over {limit // 2**20} MiB)")
    return raw, st


def _file_type(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a plain file"


# ---------------------------------------------------------------------------------------------
# Analysis
# ---------------------------------------------------------------------------------------------


class Prefilter:
    """Which of the enabled rules can possibly fire on a text."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = list(rules)
        self.always = [r for r in self.rules if not r.prefilter]
        self.filtered = [(r, _LazyPattern(r.prefilter)) for r in self.rules if r.prefilter]
        # what select_live and TextMatches search: fixed texts as substring tests (see _Literals)
        self.conditions = {id(r): _condition(r.prefilter) for r in self.rules if r.prefilter}
        self._any: object = False  # compiled on first use: the syntax-tree path never needs it

    @property
    def any(self):
        """One expression for "some rule's prefilter matches" (None when a rule has none)."""
        if self._any is False:
            parts = [f"(?:{r.prefilter})" for r in self.rules if r.prefilter]
            self._any = re.compile("|".join(parts), re.MULTILINE) if parts and not self.always else None
        return self._any

    def select(self, text: str) -> list[Rule]:
        if "\r" in text:
            # `^`/`$` with re.MULTILINE know only "\n": a file with CR-only line endings would
            # be one long line to them (same length kept: "\r\n" becomes "\n\n")
            text = text.replace("\r", "\n")
        if self.any is not None and not self.any.search(text):
            return []
        return self.always + [r for r, rx in self.filtered if rx.search(text)]

    def select_live(self, text: str, live: set[int]) -> list[Rule]:
        """`select` among the rules in `live` (their ids) only: the others' expressions are not
        searched."""
        if "\r" in text:
            text = text.replace("\r", "\n")
        search = _Search(text)
        conds = self.conditions
        return [r for r in self.always if id(r) in live] + [
            r for r, _rx in self.filtered if id(r) in live and search(conds[id(r)])
        ]


_PREFILTERS: dict[tuple[int, ...], Prefilter] = {}


def prefilter_for(rules: Sequence[Rule]) -> Prefilter:
    """The Prefilter of a list of rules, compiled once (it holds the rules: their ids stay theirs)."""
    key = tuple(id(r) for r in rules)
    pre = _PREFILTERS.get(key)
    if pre is None:
        if len(_PREFILTERS) >= 32:
            _PREFILTERS.clear()
        pre = _PREFILTERS[key] = Prefilter(rules)
    return pre


class TextMatches:
    """The codes of the rules whose text prefilter matches a text, found code by code when asked
    (`code in matches`): what `Prefilter.select` would give, for the suppression step, which
    asks only about GL001, GL002 and the codes that suppression comments name."""

    def __init__(self, pre: Prefilter, text: str) -> None:
        self.text = text.replace("\r", "\n") if "\r" in text else text
        self.always = {r.code for r in pre.always}
        self.filtered = {r.code: pre.conditions[id(r)] for r, _rx in pre.filtered}
        self.seen: dict[str, bool] = {}
        self._search: _Search | None = None

    def __contains__(self, code: object) -> bool:
        if code in self.always:
            return True
        hit = self.seen.get(code)  # type: ignore[arg-type]
        if hit is None:
            cond = self.filtered.get(code)  # type: ignore[arg-type]
            if cond is None:
                hit = False
            else:
                if self._search is None:
                    self._search = _Search(self.text)
                hit = self._search(cond)
            self.seen[code] = hit  # type: ignore[index]
        return hit


# ---------------------------------------------------------------------------------------------
# The syntax-tree prefilter: facts of Python's own tree (already built by `python_syntax`), one
# line each, that a rule's `ast_prefilter` regular expressions are searched in
# ---------------------------------------------------------------------------------------------

# A switch for tests and benchmarks only: GPULINT_AST_PREFILTER=0 analyses every file the text
# prefilter selects (the results must be the same either way).
AST_PREFILTER = os.environ.get("GPULINT_AST_PREFILTER", "1") != "0"
_MAX_STRING_FACT = 200


def ast_facts(tree, text: str) -> str:
    """The facts of a syntax tree as lines, searched with re.MULTILINE by `ast_prefilter`s:

    - `name` for every identifier in the code: names, attributes (`x.name`), keywords, parameters,
      the parts and aliases of imported names, functions and classes defined
    - `.name` for every attribute read or written (`x.name`), `.name(` for every method call,
      `name(` for every call of a plain name, `name=` for every keyword argument
    - `import a.b.c` for every imported module or name (`from a.b import c` gives `import a.b.c`;
      relative imports keep their dots)
    - `def name` and `class name` for definitions, `base name` for each class base written as a
      name or an attribute (`nn.Module` gives `base Module`; an imported name renamed with `as`
      gives its original name too)
    - `expr .name(` for a method call that is a statement of its own (`x.cuda()`)
    - `'text` for every string constant that is not a statement of its own (docstrings are
      left out), its line ends written as spaces, the first 200 characters
    - `loop` when the file has a `for`/`while` loop or a comprehension
    - `script` when the file runs something at import (what ScriptModel.is_script says: a
      top-level loop or `with`, an `if` whose lines mention `__name__` and `__main__`, or a
      top-level call of a function the file defines, or of a method of an instance of a class
      the file defines)
    Comments and docstrings never give a fact.
    """
    facts: set[str] = set()
    bound_tree(tree, facts, text)
    return "\n".join(facts)


# ScriptModel's names of a script's entry functions (gpulint.model._ENTRY_NAME; kept equal by
# tests/test_engine_items38.py: this module must not import the model, which imports LibCST)
_ENTRY_NAME = re.compile(r"(main|run|train|test|evaluate|eval|predict|infer|inference|demo|fit)(_\w*)?$")


def _is_script(tree, text: str, functions: set[str]) -> bool:
    """At least what ScriptModel.is_script says (a superset: the `if` test is read as the lines
    it spans)."""
    import ast

    lines = None
    for stmt in tree.body:
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)):
            return True
        if isinstance(stmt, ast.If):
            if lines is None:
                lines = re.split(r"\r\n|\r|\n", text)  # Python's line ends only
            t = stmt.test
            seg = "\n".join(lines[t.lineno - 1 : (t.end_lineno or t.lineno)])
            if "__name__" in seg and "__main__" in seg:
                return True
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            f = stmt.value.func
            if isinstance(f, ast.Name) and f.id in functions:
                return True
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and isinstance(stmt.value, ast.Call):
            # `model = main()`: ScriptModel.is_script's entry-function clause
            f = stmt.value.func
            if isinstance(f, ast.Name) and f.id in functions and _ENTRY_NAME.match(f.id):
                return True
        # a method call at top level whose name the file defines (`trainer.train()`, `x =
        # Trainer(cfg).fit()`): a superset of ScriptModel.is_script's method clause
        value = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign)) else None
        if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                and value.func.attr in functions and isinstance(value.func.value, (ast.Name, ast.Call))):
            return True
    return False


_CONDITIONS: dict[type, tuple | None] = {}


def ast_condition(rule: Rule) -> tuple | None:
    """A rule's `ast_prefilter` compiled: a tuple of patterns that must all match the facts, or
    None (no condition). Each is a compiled expression, or a `_Literals` when the expression
    only matches fixed texts (see `_literals`)."""
    cls = type(rule)
    try:
        return _CONDITIONS[cls]
    except KeyError:
        pass
    cond = getattr(rule, "ast_prefilter", None)
    if cond is not None:
        cond = tuple(_condition(c) for c in ((cond,) if isinstance(cond, str) else cond))
    _CONDITIONS[cls] = cond
    return cond


_PATTERNS: dict[str, object] = {}


class _LazyPattern:
    """An expression compiled (with re.MULTILINE) on its first search: a run compiles ~100
    prefilter expressions and searches a dozen of them (most conditions are answered as fixed
    texts, see `_Literals`)."""

    __slots__ = ("pattern", "_rx")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._rx = None

    def search(self, text: str):
        rx = self._rx
        if rx is None:
            rx = self._rx = re.compile(self.pattern, re.MULTILINE)
        return rx.search(text)


def _condition(pattern: str):
    found = _PATTERNS.get(pattern)
    if found is None:
        found = _PATTERNS[pattern] = _literals(pattern) or _LazyPattern(pattern)
    return found


class _Literals:
    """An expression that matches exactly where one of a few fixed texts occurs in the facts
    framed by line ends ("\n" + facts + "\n"): `^` and `$` (re.MULTILINE: a line's start and
    end) are the frame's line ends, so `^\\.(?:to|cuda)\\($|device` is "\n.to(\n",
    "\n.cuda(\n" or "device" somewhere in it (a fact never holds a line end). `lower`: the
    expression ignores case; it is then answered from the lowered facts only when they are
    ASCII (where lowering is what the expression's case folding does), else by the expression."""

    __slots__ = ("texts", "lower", "rx", "lines", "parts")

    def __init__(self, texts: tuple[str, ...], lower: bool, rx) -> None:
        self.texts = texts
        self.lower = lower
        self.rx = rx
        # the texts framed by line ends on both sides are whole lines (`^\.to\($`: the line
        # ".to("), answered by a set lookup when the searched text is given as its set of lines
        self.lines = tuple(t[1:-1] for t in texts if len(t) > 2 and t[0] == t[-1] == "\n")
        self.parts = tuple(t for t in texts if not (len(t) > 2 and t[0] == t[-1] == "\n"))


class _Search:
    """Whether conditions (each a `_Literals` or a compiled expression, see `_condition`) match
    one text, each distinct condition searched once. The text is given as a string, or as the
    set of its lines (the facts; joined with "\n" in the set's order only when an expression or
    a part of a line must be searched)."""

    __slots__ = ("_text", "_lines", "_framed", "_lowered", "_found")

    def __init__(self, text: str | None = None, lines=None) -> None:
        self._text = text
        self._lines = lines
        self._framed = None
        self._lowered = None
        self._found: dict = {}

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = "\n".join(self._lines)
        return self._text

    def __call__(self, cond) -> bool:
        hit = self._found.get(cond)
        if hit is None:
            hit = self._found[cond] = self._search(cond)
        return hit

    def _search(self, cond) -> bool:
        if type(cond) is not _Literals:
            return cond.search(self.text) is not None
        if not cond.lower:
            texts = cond.texts
            lines = self._lines
            if lines is not None:
                for t in cond.lines:
                    if t in lines:
                        return True
                texts = cond.parts
                if not texts:
                    return False
            framed = self._framed
            if framed is None:
                framed = self._framed = "\n" + self.text + "\n"
            for t in texts:
                if t in framed:
                    return True
            return False
        lowered = self._lowered
        if lowered is None:
            framed = self._framed
            if framed is None:
                framed = self._framed = "\n" + self.text + "\n"
            lowered = self._lowered = framed.lower() if framed.isascii() else False
        if lowered is False:
            return cond.rx.search(self.text) is not None
        for t in cond.texts:
            if t in lowered:
                return True
        return False


_MAX_LITERALS = 64


# an expression that is plain alternatives of letters, digits, `_`, space, `'` and the escapes
# `\.` `\(` `\)`, each with an optional `^` first and `$` last: read without re's parser (which
# costs ~0.5M instructions per expression at start-up, for ~80 expressions)
_PLAIN_ALTERNATIVE = r"\^?(?:[A-Za-z0-9_ ']|\\[.()])+\$?"
_PLAIN = re.compile(rf"{_PLAIN_ALTERNATIVE}(?:\|{_PLAIN_ALTERNATIVE})*")
_UNESCAPE = re.compile(r"\\(.)")


def _plain_literals(pattern: str) -> tuple[str, ...] | None:
    if _PLAIN.fullmatch(pattern) is None:
        return None
    texts = []
    for alt in pattern.split("|"):
        start = "\n" if alt.startswith("^") else ""
        end = "\n" if alt.endswith("$") and not alt.endswith("\\$") else ""
        body = _UNESCAPE.sub(r"\1", alt[len(start) : len(alt) - len(end)])
        texts.append(start + body + end)
    return tuple(dict.fromkeys(texts))


def _literals(pattern: str) -> _Literals | None:
    """The `_Literals` of an expression that is fixed texts, alternatives (`a|b`, `(?:a|b)`,
    `[Ss]`) and `^`/`$` at the ends of an alternative only; None for anything else."""
    plain = _plain_literals(pattern)
    if plain is not None:
        return _Literals(plain, False, _LazyPattern(pattern))
    try:
        from re import _parser as sre_parse, _constants as c  # type: ignore[attr-defined]
    except ImportError:  # pragma: no cover - another Python's layout
        try:
            import sre_parse  # type: ignore[no-redef]
            import sre_constants as c  # type: ignore[no-redef]
        except ImportError:
            return None
    try:
        parsed = sre_parse.parse(pattern, re.MULTILINE)
    except Exception:  # noqa: BLE001 - re.compile reports it
        return None
    flags = parsed.state.flags
    lower = bool(flags & re.IGNORECASE)
    if flags & ~(re.IGNORECASE | re.MULTILINE | re.UNICODE):
        return None

    def expand(items) -> list[str] | None:
        out = [""]
        for op, av in items:
            if op is c.LITERAL:
                if av == 10:  # a line end in the expression itself
                    return None
                alts = [chr(av)]
            elif op is c.AT and av in (c.AT_BEGINNING, c.AT_END):
                alts = ["\n"]
            elif op is c.SUBPATTERN:
                _group, add, remove, sub = av
                if add or remove:
                    return None
                alts = expand(sub.data)
            elif op is c.BRANCH:
                alts = []
                for sub in av[1]:
                    got = expand(sub.data)
                    if got is None:
                        return None
                    alts.extend(got)
            elif op is c.IN:
                alts = []
                for iop, iav in av:
                    if iop is not c.LITERAL or iav == 10:
                        return None
                    alts.append(chr(iav))
            else:
                return None
            if alts is None:
                return None
            out = [a + b for a in out for b in alts]
            if len(out) > _MAX_LITERALS:
                return None
        return out

    texts = expand(parsed.data)
    if not texts:
        return None
    for t in texts:
        # "\n" only where `^` or `$` put it: at the ends of a text
        if "\n" in t[1:-1] or not t.strip("\n"):
            return None
        if lower and (not t.isascii() or t != t.lower()):
            return None
    return _Literals(tuple(dict.fromkeys(texts)), lower, _LazyPattern(pattern))


def ast_select(rules: Sequence[Rule], facts) -> list[Rule]:
    """The rules whose `ast_prefilter` holds on a file's facts (`ast_facts`: the lines as one
    string, or the set of them). Each distinct expression is searched once per file (several
    rules share `^script$`, `^loop$`, ...)."""
    search = _Search(lines=facts) if isinstance(facts, (set, frozenset)) else _Search(facts)
    out = []
    for r in rules:
        c = ast_condition(r)
        if c is not None:
            ok = True
            for rx in c:
                if not search(rx):
                    ok = False
                    break
            if not ok:
                continue
        out.append(r)
    return out


# Bounds on one file. A file past one of them is a GL000 "too deeply nested / too large to
# analyse" and the other files are still checked. Python's own parser stops at 200 nested
# brackets and 100 indentation levels; chains of postfix operations (`a[0][0]...`, `a.b.c...`),
# binary and boolean operator chains and elif chains are only bounded here. LibCST's parser costs
# grow with the square of the nesting (1,000 chained `a[0]`: ~13 s) and its native parser
# overflows the C stack past a few thousand levels, so nothing deeper reaches it.
MAX_EXPR_DEPTH = 200  # expressions nested inside one statement
MAX_BLOCK_DEPTH = 1000  # statements nested in blocks, each elif branch one level deeper
MAX_NODES = 500_000  # Python syntax-tree nodes (real code has ~5.5 per line: ~90,000 lines)
MAX_FILE_SECONDS = 60.0  # CPU seconds for one file: parse, analysis and every fix round
MAX_FILE_MEMORY = 1536 * 2**20  # bytes of memory one file's analysis may add to the process
ANALYSIS_STACK = 512 * 2**20  # the analysis thread's stack (reserved, only touched pages are used)
ANALYSIS_RECURSION_LIMIT = 20_000
_GRACE_SECONDS = 2.0  # after the bound is hit, how long the analysis has to stop
TOO_COMPLEX = "file is too deeply nested or too large to analyse"


class TooComplex(BadInput):
    """A file past one of the bounds above (a GL000, like any other unanalysable file)."""


def python_syntax(text: str):
    """Python's own parse of a text (its `ast.Module`), or BadInput with CPython's message.

    Python's parser is fast and its messages and positions are precise ("'(' was never closed"
    at the parenthesis), where LibCST's often point at the next line. A SyntaxError that is not
    one of CPython's limits is raised as `_PythonRejects`, so that the caller can still ask
    LibCST (whose grammar may be newer than the running Python's).
    """
    import ast
    import warnings

    try:
        # Under the lock that guards the process-wide recursion limit: CPython's AST construction
        # measures the recursion depth before and after, and a limit another analysis thread
        # raises or restores in between fails it ("AST constructor recursion depth mismatch",
        # seen once in the threaded hardening test under load). Once more if that still happens.
        for attempt in (0, 1):
            try:
                with _LIMIT_LOCK, warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # SyntaxWarning for invalid escapes etc.
                    return compile(text, "<gpulint>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
            except SystemError as exc:
                if attempt or "recursion depth mismatch" not in str(exc):
                    raise
    except SyntaxError as exc:
        msg = exc.msg or "invalid syntax"
        err_cls = BadInput if msg.startswith("too many") else _PythonRejects
        raise err_cls(f"syntax error: {msg}", exc.lineno or 1, max(exc.offset or 1, 1))
    except ValueError as exc:  # e.g. NUL bytes after the first 8 KiB
        raise BadInput(f"cannot parse: {exc}")
    except (RecursionError, MemoryError):
        # what CPython itself does with the file: "maximum recursion depth exceeded during ast
        # construction" / its parser's stack overflow
        raise TooComplex(f"{TOO_COMPLEX}: Python's own parser gives up on it (too deeply nested)")


class _PythonRejects(BadInput):
    """CPython's SyntaxError that is not one of its limits."""


_TOKEN = re.compile(r"[A-Za-z_0-9.]+|[^\sA-Za-z_0-9.]")
_TOKENS_PER_NODE = 3  # real code has 1.4-1.6 tokens per syntax node, data tables up to ~4


def bound_size(text: str) -> None:
    """Raise TooComplex for a text that is surely past MAX_NODES, before Python's parser builds a
    tree for it (a 5 MB list literal makes a 1.3-million-node tree of about 1.4 GB). Counts
    token-like pieces with one regular expression pass, only for texts over 1 MiB."""
    if len(text) <= 2**20:
        return
    _, n = _TOKEN.subn("", text)
    if n > MAX_NODES * _TOKENS_PER_NODE:
        raise TooComplex(f"{TOO_COMPLEX}: about {n:,} tokens (the limit is {MAX_NODES * _TOKENS_PER_NODE:,})")


def bound_tree(tree, facts: set[str] | None = None, text: str = "") -> None:
    """Raise TooComplex when a Python syntax tree is past MAX_EXPR_DEPTH, MAX_BLOCK_DEPTH or
    MAX_NODES. Iterative: a tree too deep for recursion is exactly what it looks for.

    With `facts` (a set), the same walk also adds the tree's facts for the syntax-tree
    prefilter (see ast_facts; `text` is the source the tree was parsed from)."""
    import ast

    stmt_types = _STMT_TYPES or _init_types()
    fields_of = _FIELDS
    kinds = _NODE_KINDS
    AST = ast.AST
    boolop = ast.BoolOp
    stack = [(tree, 0, 0)]
    pop, push = stack.pop, stack.append
    nodes = 0
    collect = facts is not None
    if collect:
        add = facts.add
        Name, Attribute, Call, Constant, keyword, arg = ast.Name, ast.Attribute, ast.Call, ast.Constant, ast.keyword, ast.arg
        Expr, ClassDef, Global, Nonlocal, ImportFrom = ast.Expr, ast.ClassDef, ast.Global, ast.Nonlocal, ast.ImportFrom
        defs = (ast.FunctionDef, ast.AsyncFunctionDef)
        loops = (ast.For, ast.AsyncFor, ast.While, ast.comprehension)
        imports = (ast.Import, ast.ImportFrom)
        functions: set[str] = set()
        docstrings: set[int] = set()
        bases: list[str] = []  # class bases written as plain names
        renamed: dict[str, str] = {}  # `import ... as x`: x -> the imported name's last part
    while stack:
        node, blocks, exprs = pop()
        nodes += 1
        t = type(node)
        if collect:
            if t is Name:
                add(node.id)
            elif t is Attribute:
                add(node.attr)
                add("." + node.attr)
            elif t is Call:
                f = node.func
                if type(f) is Name:
                    add(f.id + "(")
                elif type(f) is Attribute:
                    add("." + f.attr + "(")
            elif t is Constant:
                v = node.value
                if type(v) is str and id(node) not in docstrings:
                    add("'" + v[:_MAX_STRING_FACT].replace("\r", " ").replace("\n", " "))
            elif t is Expr:
                v = node.value
                if type(v) is Constant:
                    docstrings.add(id(v))  # a string that is a statement: a docstring or a comment-like
                elif type(v) is Call and type(v.func) is Attribute:
                    add("expr ." + v.func.attr + "(")
            elif t is keyword:
                if node.arg:
                    add(node.arg)
                    add(node.arg + "=")
            elif t is arg:
                add(node.arg)
            elif t in defs:
                add(node.name)
                add("def " + node.name)
                functions.add(node.name)
            elif t is ClassDef:
                add(node.name)
                add("class " + node.name)
                for b in node.bases:
                    if type(b) is Attribute:
                        add("base " + b.attr)
                    elif type(b) is Name:
                        bases.append(b.id)
            elif t in loops:
                add("loop")
            elif t in imports:
                base = ""
                if t is ImportFrom:
                    base = "." * node.level + (node.module or "")
                    for part in (node.module or "").split("."):
                        add(part)
                for alias in node.names:
                    full = f"{base}.{alias.name}" if base and not base.endswith(".") else base + alias.name
                    add("import " + full)
                    for part in alias.name.split("."):
                        add(part)
                    if alias.asname:
                        add(alias.asname)
                        renamed[alias.asname] = alias.name.rsplit(".", 1)[-1]
            elif t is Global or t is Nonlocal:
                for n in node.names:
                    add(n)
        if t is boolop:  # LibCST nests `a and b and c` one level per operand
            exprs += len(node.values)
        names = fields_of.get(t)
        if names is None:
            names = fields_of[t] = tuple(node._fields)
        for name in names:  # what ast.iter_child_nodes gives, in its order
            value = getattr(node, name, None)
            tv = type(value)
            if tv is list:
                children = [c for c in value if isinstance(c, AST)]
            else:
                kind = kinds.get(tv)
                if kind is None:
                    kind = kinds[tv] = _node_kind(tv)
                if not kind:
                    continue
                children = (value,)
            for child in children:
                tc = type(child)
                if tc in stmt_types:
                    if blocks >= MAX_BLOCK_DEPTH:
                        raise TooComplex(
                            f"{TOO_COMPLEX}: blocks nested over {MAX_BLOCK_DEPTH} deep (an elif branch counts as one level)",
                            getattr(child, "lineno", 1),
                        )
                    push((child, blocks + 1, 0))
                else:
                    if exprs >= MAX_EXPR_DEPTH:
                        raise TooComplex(
                            f"{TOO_COMPLEX}: expressions nested over {MAX_EXPR_DEPTH} deep", getattr(child, "lineno", None) or 1
                        )
                    kind = kinds.get(tc)
                    if kind is None:
                        kind = kinds[tc] = _node_kind(tc)
                    if kind == 2:
                        nodes += 1  # a node without fields (Load, Add, Eq...): counted, nothing to visit
                    else:
                        push((child, blocks, exprs + 1))
    if nodes > MAX_NODES:
        raise TooComplex(f"{TOO_COMPLEX}: {nodes:,} syntax nodes (the limit is {MAX_NODES:,})")
    if collect:
        for b in bases:
            add("base " + b)
            if b in renamed:
                add("base " + renamed[b])
        if _is_script(tree, text, functions):
            add("script")


_FIELDS: dict[type, tuple[str, ...]] = {}
_STMT_TYPES: set[type] = set()
# type -> 0: not a syntax node, 1: a node, 2: a node without fields and without a fact of its own
# (expression contexts and operators: `bound_tree` counts them without visiting them)
_NODE_KINDS: dict[type, int] = {}


def _node_kind(t: type) -> int:
    import ast

    if not issubclass(t, ast.AST):
        return 0
    if t._fields or issubclass(t, (ast.stmt, ast.expr, ast.keyword, ast.arg, ast.comprehension)):
        return 1
    return 2


def _init_types() -> set[type]:
    """Every concrete statement class of `ast` (a set lookup instead of isinstance)."""
    import ast

    todo = [ast.stmt]
    while todo:
        c = todo.pop()
        _STMT_TYPES.add(c)
        todo.extend(c.__subclasses__())
    return _STMT_TYPES


def parse(text: str, checked: bool = False, starts: Sequence[int] = ()):
    """The LibCST module of a text, or BadInput with the syntax error's position.

    Unless `checked` (the caller ran `python_syntax` and `bound_tree` on this text), Python's
    parser sees the text first: LibCST never parses what is past the bounds. `starts`: where to
    cut the text into pieces parsed one by one (chunk_starts; the caller has the syntax tree).
    """
    import libcst as cst

    python_error = None
    if not checked:
        try:
            tree = python_syntax(text)
            bound_tree(tree)
            starts = chunk_starts(tree, text)
            del tree
        except _PythonRejects as exc:
            python_error = exc  # LibCST may know newer syntax; if it also fails, CPython's message
            starts = ()
    try:
        return libcst_parse(text, starts)
    except cst.ParserSyntaxError as exc:
        if python_error is not None:
            raise python_error
        if "\t" in text:
            expanded = expand_indent_tabs(text)
            if expanded != text:
                try:
                    module = libcst_parse(expanded, starts)
                except cst.ParserSyntaxError:
                    pass
                else:
                    raise TabsExpanded(module, expanded)
        msg = str(exc.message).strip()
        msg = re.sub(r"^(?:parser error: )?(?:error at \d+:\d+: )?", "", msg)
        raise BadInput(f"syntax error: {msg}", exc.raw_line, exc.raw_column + 1)
    except RecursionError:
        raise TooComplex(f"{TOO_COMPLEX} (recursion)")


class TabsExpanded(Exception):
    """Raised by `parse` for a text Python's parser accepts but LibCST's rejects, that LibCST
    parses once the tabs in each line's indentation are expanded (LibCST's tokenizer rejects some
    mixes of tabs and spaces that CPython accepts, e.g. a line indented with 7 spaces and a tab
    beside lines indented with 8 spaces: "no matching outer block for dedent"). Carries the
    expanded text and its module: the analysis runs on them and `analyse` maps the findings back
    (same lines; columns shifted on the re-indented lines; no fixes, whose offsets would be the
    expanded text's)."""

    def __init__(self, module, text: str):
        super().__init__("indentation tabs expanded")
        self.module = module
        self.text = text


def expand_indent_tabs(text: str) -> str:
    """The text with the tabs of every line's leading whitespace expanded to the next multiple
    of 8 columns (what CPython's tokenizer counts for indentation); other characters kept."""
    out = []
    for line in text.splitlines(keepends=True):
        if line[:1] in (" ", "\t") and "\t" in line:
            body = line.lstrip(" \t")
            lead = line[: len(line) - len(body)]
            if "\t" in lead:
                line = lead.expandtabs(8) + body
        out.append(line)
    return "".join(out)


def _unexpand_column(original: str, expanded: str, col: int) -> int:
    """A 1-based column of a line of the expanded text, on the same line of the original."""
    lead_o = len(original) - len(original.lstrip(" \t"))
    lead_e = len(expanded) - len(expanded.lstrip(" \t"))
    if col - 1 >= lead_e:
        return col - (lead_e - lead_o)
    return min(col, lead_o + 1)


def _map_expanded(diags: list, original: str, expanded: str) -> list:
    """Findings on an expanded text (TabsExpanded) placed on the original text, without fixes."""
    import dataclasses

    o_lines = original.splitlines()
    e_lines = expanded.splitlines()
    out = []
    for d in diags:
        def col(line: int, c: int) -> int:
            if 1 <= line <= min(len(o_lines), len(e_lines)):
                return _unexpand_column(o_lines[line - 1], e_lines[line - 1], c)
            return c
        out.append(dataclasses.replace(d, col=col(d.line, d.col), end_col=col(d.end_line, d.end_col), fix=None, extra={}))
    return out


# Parsing a large file in pieces. LibCST's native parser needs ~400 bytes of memory per byte of
# source while it parses (a 50,000-line file: ~800 MB), although the tree it returns is a tenth of
# that: a large file is parsed as runs of whole top-level statements of about CHUNK_LINES lines
# each, and the pieces joined into one module, the same tree as one parse of the whole text.
CHUNK_LINES = 2000
CHUNK_MIN_LINES = 2 * CHUNK_LINES  # smaller files are parsed in one piece


def chunk_starts(tree, text: str, size: int | None = None, min_lines: int | None = None) -> list[int]:
    """The lines (1-based) where the pieces of a large file start after the first: a line where
    a top-level statement (its first decorator) starts, with no other statement on the line
    before it, about `size` lines apart; [] when the text has fewer than `min_lines` lines (it is
    parsed in one piece) or has a line end other than "\\n". `tree` is the text's Python syntax
    tree."""
    size = CHUNK_LINES if size is None else size
    min_lines = CHUNK_MIN_LINES if min_lines is None else min_lines
    if "\r" in text or text.count("\n") < min_lines:
        return []
    starts: list[int] = []
    last = 1
    prev_end = 0
    for stmt in tree.body:
        start = stmt.lineno
        for d in getattr(stmt, "decorator_list", ()):
            start = min(start, d.lineno)
        if start - last >= size and prev_end < start:
            starts.append(start)
            last = start
        prev_end = stmt.end_lineno or stmt.lineno
    return starts


def release_memory() -> None:
    """Give the C heap's free pages back to the system (glibc keeps what LibCST's parser and
    Python's own parser freed, and the next allocations of Python objects do not reuse it)."""
    global _TRIM
    if _TRIM is None:
        _TRIM = False
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                _TRIM = ctypes.CDLL("libc.so.6").malloc_trim
            except (OSError, AttributeError):
                pass
    if _TRIM:
        _TRIM(0)


_TRIM = None
RELEASE_MIN_CHARS = 256 * 1024  # texts whose parse is worth a release_memory() after it


def libcst_parse(text: str, starts: Sequence[int] = ()):
    """LibCST's module of a text: in pieces at `starts` when given (see chunk_starts), else (or
    when a piece is rejected or the pieces do not join) in one parse, whose errors propagate; the
    C heap is released after a large parse."""
    if starts:
        try:
            module = parse_in_pieces(text, list(starts))
        except Exception:  # a piece LibCST rejects: the whole text's parse reports it
            module = None
        release_memory()
        if module is not None:
            return module
    module = _parse_module(text)
    if len(text) >= RELEASE_MIN_CHARS:
        release_memory()
    return module


# LibCST's parser builds every node through the node class's constructor, whose __post_init__
# validates the node (`CSTNode._validate`: checks that hand-built trees would print as valid
# Python, e.g. that a keyword is followed by whitespace). For a tree its own parser makes from
# source the checks hold by construction and only cost time (about a sixth of a parse), so they
# are switched off while gpulint's parses run (LibCST's own comment on `__post_init__` suggests
# skipping them when parsing). Nodes built anywhere else (the fixes' `with_changes`) are
# validated as usual once the last parse running in the process has finished.
_VALIDATION_LOCK = threading.Lock()
_PARSES = 0
_VALIDATE = None  # CSTNode.__post_init__ as LibCST defines it


def _no_validation(self) -> None:
    pass


def _parse_module(text: str):
    """cst.parse_module(text) without the per-node validation (see above)."""
    global _PARSES, _VALIDATE
    import libcst as cst
    from libcst._nodes.base import CSTNode

    with _VALIDATION_LOCK:
        if _PARSES == 0:
            _VALIDATE = CSTNode.__dict__.get("__post_init__")
            if _VALIDATE is not None:
                CSTNode.__post_init__ = _no_validation
        _PARSES += 1
    try:
        return cst.parse_module(text)
    finally:
        with _VALIDATION_LOCK:
            _PARSES -= 1
            if _PARSES == 0 and _VALIDATE is not None:
                CSTNode.__post_init__ = _VALIDATE


def parse_in_pieces(text: str, starts: list[int]):
    """The LibCST module of a text parsed in pieces starting at `starts` (see chunk_starts), or
    None when the pieces cannot be joined into what one parse would give (then the caller parses
    the whole text): every piece must agree on the default indentation and newline, and start
    with its statement (no header of its own)."""
    offsets = []
    if starts:
        want = iter(starts)
        target = next(want)
        line, pos = 1, 0
        while target is not None:
            nl = text.find("\n", pos)
            if nl < 0:
                return None
            pos, line = nl + 1, line + 1
            if line == target:
                offsets.append(pos)
                target = next(want, None)
    bounds = [0] + offsets + [len(text)]
    modules = []
    for a, b in zip(bounds, bounds[1:]):
        modules.append(_parse_module(text[a:b]))
    first = modules[0]
    if len(modules) == 1:
        return first
    body = list(first.body)
    for prev, mod in zip(modules, modules[1:]):
        if (
            mod.header
            or not mod.body
            or mod.default_indent != first.default_indent
            or mod.default_newline != first.default_newline
            or not prev.has_trailing_newline
        ):
            return None
        head = mod.body[0]
        carried = list(prev.footer)
        if carried:
            head = head.with_changes(leading_lines=[*carried, *head.leading_lines])
        body.append(head)
        body.extend(mod.body[1:])
    last = modules[-1]
    return first.with_changes(body=body, footer=last.footer, has_trailing_newline=last.has_trailing_newline)


def check_syntax(text: str) -> None:
    """Raise BadInput when a text does not parse.

    Only when Python's parser rejects the text is LibCST asked (its grammar may be newer than
    the running Python's); the file is reported only when both reject it. A text Python's
    parser accepts is never given to LibCST here.
    """
    try:
        python_syntax(text)
    except _PythonRejects:
        parse(text)


# ---------------------------------------------------------------------------------------------
# The guard: one file's parse and analysis in a thread with a large stack, bounded in time
# and memory
# ---------------------------------------------------------------------------------------------


class _Overrun(BaseException):
    """Raised asynchronously in an analysis thread that went past a bound."""


_GUARD = threading.local()


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        import resource

        # the peak, not the current size: growth past the peak is still growth
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _async_raise(thread: threading.Thread, exc_type: type) -> None:
    import ctypes

    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(exc_type))


# The recursion limit and the new-thread stack size are process-wide: analyses running at the same
# time in several threads (the editor server analyses off its event loop) share one raised limit.
# The first analysis to start raises it, the last one to finish restores it: an analysis that ends
# never lowers the limit under another one still recursing.
_LIMIT_LOCK = threading.Lock()
_LIMIT_USERS = 0
_LIMIT_SAVED: tuple[int, int] | None = None  # (the limit before the first user, the limit set)
_STACK_LOCK = threading.Lock()


def _raise_recursion_limit() -> None:
    global _LIMIT_USERS, _LIMIT_SAVED
    with _LIMIT_LOCK:
        if _LIMIT_USERS == 0:
            old = sys.getrecursionlimit()
            new = max(old, ANALYSIS_RECURSION_LIMIT)
            sys.setrecursionlimit(new)
            _LIMIT_SAVED = (old, new)
        elif sys.getrecursionlimit() < ANALYSIS_RECURSION_LIMIT:  # lowered meanwhile by someone else
            sys.setrecursionlimit(ANALYSIS_RECURSION_LIMIT)
        _LIMIT_USERS += 1


def _restore_recursion_limit() -> None:
    global _LIMIT_USERS, _LIMIT_SAVED
    with _LIMIT_LOCK:
        _LIMIT_USERS -= 1
        if _LIMIT_USERS == 0 and _LIMIT_SAVED is not None:
            old, new = _LIMIT_SAVED
            _LIMIT_SAVED = None
            if sys.getrecursionlimit() == new:  # not changed since by someone else: put it back
                sys.setrecursionlimit(old)


def _start_with_stack(thread: threading.Thread) -> None:
    """Start `thread` with the analysis stack size (set and put back under a lock, so that two
    analyses starting together both get it)."""
    with _STACK_LOCK:
        old_stack = threading.stack_size()
        try:
            threading.stack_size(ANALYSIS_STACK)
        except (ValueError, RuntimeError):  # pragma: no cover - platform without the option
            pass
        try:
            thread.start()
        finally:
            threading.stack_size(old_stack)


def guarded(fn, *args):
    """Run fn(*args) so that deep recursion, runaway time or memory become TooComplex.

    The call runs in its own thread with a large stack and a high recursion limit (deeply
    nested but legitimate code, such as a 500-branch elif chain, is analysed rather than
    reported); this thread watches its CPU time and the process's memory and, past a bound,
    raises an exception inside it. Code stuck in native code past the grace period is left
    behind (a daemon thread) and the file reported.
    """
    if getattr(_GUARD, "active", False):
        return fn(*args)
    box: dict = {}
    started = threading.Event()

    def target() -> None:
        _GUARD.active = True
        try:
            # taken here, while this thread surely exists (asking for a finished thread's clock
            # reads freed memory); reading the clock later is a plain system call
            box["clock"] = time.pthread_getcpuclockid(threading.get_ident())
        except (AttributeError, OSError):  # pragma: no cover - not on Linux/BSD
            pass
        started.set()
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # noqa: B036 - carried to the caller's thread
            box["error"] = exc

    _raise_recursion_limit()
    try:
        thread = threading.Thread(target=target, name="gpulint-analysis", daemon=True)
        _start_with_stack(thread)
        started.wait()
        clock = box.pop("clock", None)

        def cpu() -> float:
            if clock is None:  # pragma: no cover - not on Linux/BSD: wall time
                return time.monotonic()
            try:
                return time.clock_gettime(clock)
            except OSError:  # the thread has just finished
                return cpu0

        cpu0 = 0.0
        cpu0 = cpu()
        mem0 = _rss_bytes()
        reason = None
        deadline = 0.0
        while thread.is_alive():
            thread.join(0.05)
            if not thread.is_alive():
                break
            if reason is None:
                if cpu() - cpu0 > MAX_FILE_SECONDS:
                    reason = f"over {MAX_FILE_SECONDS:g} s of CPU time"
                elif _rss_bytes() - mem0 > MAX_FILE_MEMORY:
                    reason = f"over {MAX_FILE_MEMORY // 2**20} MiB of memory"
                if reason is not None:
                    _async_raise(thread, _Overrun)
                    deadline = time.monotonic() + _GRACE_SECONDS
            elif time.monotonic() > deadline:
                break  # stuck in native code: leave it behind
    finally:
        _restore_recursion_limit()
    if reason is not None:
        box.clear()
        raise TooComplex(f"{TOO_COMPLEX} ({reason})")
    err = box.get("error")
    if err is not None:
        if isinstance(err, RecursionError):
            raise TooComplex(f"{TOO_COMPLEX} (recursion too deep)")
        if isinstance(err, MemoryError):
            raise TooComplex(f"{TOO_COMPLEX} (out of memory)")
        if isinstance(err, _Overrun):  # pragma: no cover - raised only after a reason was set
            raise TooComplex(TOO_COMPLEX)
        raise err
    return box["value"]


def suppression_only(path: str, text: str, ran) -> list[Diagnostic]:
    """What `analyse` returns for a file where the rules in `ran` ran and found nothing: the
    suppression step's own findings (GL001/GL002 when they are in `ran`)."""
    from gpulint.suppression import Suppressions

    diags = Suppressions(text).apply([], path, ran)
    diags.sort(key=Diagnostic.sort_key)
    return diags


def analyse(path: str, text: str, rules: Sequence[Rule], settings=None, checked: bool = False, module=None,
            ran=None, starts: Sequence[int] = ()):
    """Run the rules over a text. Returns (diagnostics, suppressions) or raises BadInput.

    `checked`: the text already passed `python_syntax` and `bound_tree`; `module`: its LibCST
    module when the caller has it already; `ran`: what answers `code in ran` for the rules that
    count as run on the text (default: the codes of `rules`; the syntax-tree prefilter leaves out
    rules that cannot fire, and they still count for GL002); `starts`: see `parse`."""
    from gpulint.model import ScriptModel
    from gpulint.rule import Context, make_diagnostic
    from gpulint.suppression import Suppressions

    original = None
    if module is None:
        try:
            module = parse(text, checked, starts)
        except TabsExpanded as exc:
            original, text, module = text, exc.text, exc.module
    model = ScriptModel(module, text)
    if getattr(settings, "cuda_default_from", None):
        model.project_default_device = True  # another file of the run may set a CUDA default tensor type
    ctx = Context(path, text, module, model)
    if settings is not None:
        ctx.settings = settings
    sup = Suppressions(text)
    ctx.suppressed = sup.suppressed
    diags: list[Diagnostic] = []
    for rule in rules:
        ctx.rule = rule
        try:
            for finding in rule.check(ctx):
                diags.append(make_diagnostic(ctx, finding))
        except (RecursionError, MemoryError):
            raise  # the file is too complex, not the rule wrong: the guard reports it
        except Exception as exc:  # a rule bug must not hide the other rules' results
            line = 1
            diags.append(
                engine_diagnostic(
                    path,
                    f"internal error in rule {rule.code} ({type(exc).__name__}: {exc}); please report it",
                    line,
                )
            )
    release_model(model)
    diags = sup.apply(diags, path, ran if ran is not None else {r.code for r in rules})  # + GL001/GL002 when they ran
    if original is not None:
        diags = _map_expanded(diags, original, text)
    diags.sort(key=Diagnostic.sort_key)
    return diags, sup


def release_model(model) -> None:
    """Break the reference cycles of one file's analysis once its rules have run.

    The model holds its flow engine and family analyses, and they hold the model (the flow
    engine also holds its own bound methods): without this, a file's whole tree and analysis
    would be freed only by the garbage collector's full passes, which also walk every other live
    object each time. Dropping the model's memos and the memo objects' own fields lets reference
    counting free all of it at once."""
    d = getattr(model, "__dict__", None)
    if d is None:
        return
    memos = [d.get("_flow")] + list((d.get("_facts") or {}).values())
    d["_flow"] = None
    d["_facts"] = {}
    for obj in memos:
        fields = getattr(obj, "__dict__", None)
        if fields is not None:
            fields.clear()


def _applicable(fix: Fix | None, opts: Options) -> bool:
    return fix is not None and (fix.applicability == SAFE or opts.unsafe_fixes)


def _choose(diags: Sequence[Diagnostic], opts: Options) -> list[Fix]:
    """Non-overlapping fixes for one round, in source order (the first one wins a conflict)."""
    chosen: list[Fix] = []
    taken: list[tuple[int, int]] = []
    seen = set()
    for d in diags:
        if not _applicable(d.fix, opts):
            continue
        fix = d.fix
        if fix.edits in seen:  # several diagnostics may share one fix (e.g. an import rewrite)
            continue
        ok = True
        for e in fix.edits:
            for a, b in taken:
                # overlapping ranges, or two insertions at the same point (their order is unclear)
                if (e.start < b and a < e.end) or (e.start == e.end == a == b):
                    ok = False
                    break
            if not ok:
                break
        if ok:
            chosen.append(fix)
            seen.add(fix.edits)
            taken.extend((e.start, e.end) for e in fix.edits)
    return chosen


def apply_fixes(text: str, fixes: Sequence[Fix]) -> str:
    edits = sorted((e for f in fixes for e in f.edits), key=lambda e: (e.start, e.end))
    out = []
    pos = 0
    for e in edits:
        out.append(text[pos:e.start])
        out.append(e.content)
        pos = e.end
    out.append(text[pos:])
    return "".join(out)


def _parse_fixed(text: str, python_ok: bool):
    """The LibCST module of a fixed text, or None when the text does not parse (with Python's
    parser too when the original text passed it, and within the bounds)."""
    starts: list[int] = []
    if python_ok:
        try:
            tree = python_syntax(text)
            bound_tree(tree)
            starts = chunk_starts(tree, text)
            del tree
        except BadInput:
            return None
    try:
        return libcst_parse(text, starts)
    except Exception:
        return None


@dataclass
class Outcome:
    diagnostics: list[Diagnostic]
    text: str
    applied: int = 0
    fixed: list[Diagnostic] = field(default_factory=list)  # diagnostics whose fix was applied
    dropped: list[str] = field(default_factory=list)
    initial: list[Diagnostic] = field(default_factory=list)  # the diagnostics of the text as given


from gpulint.cstwalk import fast_node_identity  # noqa: E402  (re-exported: tests call engine.fast_node_identity)


def run_text(path: str, text: str, rules: Sequence[Rule], opts: Options) -> Outcome:
    """Check (and fix, when asked) one decoded text. Raises BadInput for unparseable input and
    TooComplex (a BadInput) for a text past the bounds; never RecursionError or a crash."""
    if not _GC_TUNED:
        tune_gc()
        fast_node_identity()
        from gpulint._startup import thaw_gc

        try:
            return guarded(_run_text, path, text, rules, opts)
        finally:
            thaw_gc()  # the start-up's frozen objects, back under the collector after one file
    return guarded(_run_text, path, text, rules, opts)


# The cyclic garbage collector's thresholds while files are analysed. A file's analysis allocates
# hundreds of thousands of objects that live until its rules have run (the LibCST tree, the
# model), and with Python's default thresholds (700, 10, 10) the collector walks them again and
# again as they age: about a tenth of a check run's CPU time. The analysis leaves little cyclic
# garbage (release_model breaks its cycles), so collecting less often costs little memory. Only
# raised, never lowered (the editor server sets higher ones of its own).
GC_THRESHOLDS = (20_000, 10, 10)
_GC_TUNED = False


def tune_gc() -> None:
    global _GC_TUNED
    import gc

    from gpulint._startup import resume_gc

    _GC_TUNED = True
    resume_gc()  # the program's start-up pause (see gpulint/_startup.py), before analysing
    old = gc.get_threshold()
    if old[0] <= 0:  # automatic collection switched off by someone: leave it so
        return
    gc.set_threshold(*(max(a, b) for a, b in zip(old, GC_THRESHOLDS)))


def _run_text(path: str, text: str, rules: Sequence[Rule], opts: Options) -> Outcome:
    from gpulint.suppression import might_skip_file, Suppressions

    if might_skip_file(text) and Suppressions(text).skip_file:
        return Outcome([], text)
    python_ok = True
    facts: set[str] | None = set() if AST_PREFILTER else None
    bound_size(text)
    starts: list[int] = []
    try:
        tree = python_syntax(text)
        bound_tree(tree, facts, text)  # CPython first: its verdict, the bounds, the facts
        starts = chunk_starts(tree, text)  # where a large text is cut for LibCST's parser
        del tree
        if len(text) >= RELEASE_MIN_CHARS:
            release_memory()
    except _PythonRejects:
        python_ok = False  # LibCST may know newer syntax; parse() reports CPython's error if not
    pre = prefilter_for(rules)
    if python_ok and facts is not None:
        # the syntax-tree conditions first (cheap, on the facts), then the text expressions of
        # the rules that pass them. A rule whose text prefilter matches but whose condition does
        # not cannot fire: it counts as run (for GL002), with no finding.
        live = {id(r) for r in ast_select(rules, facts)}
        selected = pre.select_live(text, live)
        ran = TextMatches(pre, text)
        if selected:
            diags, _ = analyse(path, text, selected, opts.settings, checked=True, ran=ran, starts=starts)
        else:  # no rule to run: LibCST is not needed (a GL002 finding may still be fixed below)
            diags = suppression_only(path, text, ran)
    else:
        selected = pre.select(text)
        if not selected:
            if not python_ok:
                parse(text)  # nothing to analyse, but a file that does not parse is still reported
            return Outcome([], text)
        diags, _ = analyse(path, text, selected, opts.settings, checked=python_ok, starts=starts)
    if not opts.fix:
        return Outcome(diags, text)
    outcome = Outcome(diags, text, initial=diags)
    for _round in range(MAX_ROUNDS):
        fixes = _choose(outcome.diagnostics, opts)
        if not fixes:
            break
        new_text = apply_fixes(outcome.text, fixes)
        module = _parse_fixed(new_text, python_ok)
        if module is None:
            good = []
            for f in fixes:
                if _parse_fixed(apply_fixes(outcome.text, good + [f]), python_ok) is not None:
                    good.append(f)
                else:
                    owner = next(d for d in outcome.diagnostics if d.fix is f)
                    outcome.dropped.append(f"{owner.code} fix at line {owner.line} was dropped: it would leave the file unparseable")
            fixes = good
            if not fixes:
                break
            new_text = apply_fixes(outcome.text, fixes)
            module = None
        if new_text == outcome.text:
            break
        fixed_now = [d for d in outcome.diagnostics if d.fix in fixes]
        outcome.fixed.extend(fixed_now)
        outcome.applied += len(fixes)
        outcome.text = new_text
        selected = pre.select(new_text)
        outcome.diagnostics = (
            analyse(path, new_text, selected, opts.settings, checked=python_ok, module=module)[0] if selected else []
        )
    return outcome


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------


class WriteRefused(OSError):
    """A fixed file that is deliberately not written (read-only, changed meanwhile). An OSError,
    so that every caller that reports a failed write (notebooks too) reports this one."""


def write_atomic(path: str, text: str, encoding: str, expected: bytes | None = None) -> bytes:
    """Replace a file's content in one step, keeping its permissions; never half-written.
    Returns the bytes written.

    A symlink is written through: its target gets the new content and the link stays a link.
    A read-only file (no write permission bit, or not writable by this user) is left alone. With
    `expected` (the bytes that were analysed), a file whose content changed since it was read
    (an editor saved it meanwhile) is left alone: the check is made right before the rename.
    Both raise WriteRefused. The temporary file carries the process id in its name
    (`.gpulint-<pid>-*.tmp`) so that one left by a killed worker can be found and removed.
    """
    data = text.encode(encoding)
    target = os.path.realpath(path)
    st = os.stat(target)
    if not stat.S_ISREG(st.st_mode):
        raise WriteRefused("is not a regular file; the fixes were not written")
    if not st.st_mode & 0o222 or not os.access(target, os.W_OK):
        raise WriteRefused("file is read-only; the fixes were not written (make it writable, or use --diff)")
    if expected is not None and _changed(target, expected):
        raise WriteRefused(_CHANGED)
    directory = os.path.dirname(target)
    import tempfile  # only a fix writes files

    fd, tmp = tempfile.mkstemp(prefix=f".gpulint-{os.getpid()}-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        try:
            os.chown(tmp, st.st_uid, st.st_gid)
        except (OSError, AttributeError):
            # best effort: EPERM for another user's file, EINVAL where the owner has no id in
            # this user namespace (rootless containers, where it shows as `nobody`)
            pass
        if expected is not None and _changed(target, expected):
            raise WriteRefused(_CHANGED)
        os.replace(tmp, target)
        return data
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


_CHANGED = "file changed on disk while it was being fixed; it was left as it is now (run gpulint again)"


def _changed(path: str, expected: bytes) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(len(expected) + 1) != expected
    except OSError:
        return True


def remove_stale_temps(directories, pid: int) -> None:
    """Remove the `.gpulint-<pid>-*.tmp` files a killed process left in these folders."""
    prefix = f".gpulint-{pid}-"
    for d in set(directories):
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for name in names:
            if name.startswith(prefix) and name.endswith(".tmp"):
                try:
                    os.unlink(os.path.join(d, name))
                except OSError:
                    pass


def process_file(path: str, display: str, rules: Sequence[Rule], opts: Options) -> FileResult:
    """Check (and fix) one file on disk; every problem becomes a diagnostic, never an exception."""
    if path.endswith(".ipynb"):  # a notebook: its code cells as one script (gpulint/notebook.py)
        from gpulint.notebook import process_notebook

        return process_notebook(path, display, rules, opts)
    result = FileResult(display)
    try:
        src, stamp, raw = _read(path)
        outcome = run_text(display, src.text, rules, opts)
    except BadInput as exc:
        result.diagnostics = [engine_diagnostic(display, str(exc), exc.line, exc.col)]
        return result
    except RecursionError:  # pragma: no cover - the guard turns it into TooComplex
        result.diagnostics = [engine_diagnostic(display, TOO_COMPLEX)]
        return result
    result.diagnostics = outcome.diagnostics
    result.applied = outcome.applied
    result.fixed = [d.code for d in outcome.fixed]
    result.notes = outcome.dropped
    result.stamp = stamp
    if outcome.text != src.text:
        result.original_source = src.text
        result.fixed_source = outcome.text
        result.stamp = None
        if opts.write:
            try:
                data = write_atomic(path, outcome.text, src.encoding, expected=raw)
                st = os.stat(path)
                result.stamp = (st.st_mtime_ns, len(data), digest(data))
            except FileNotFoundError:
                result.error = "file disappeared before the fixes could be written"
            except WriteRefused as exc:
                result.error = str(exc)
            except (OSError, UnicodeEncodeError) as exc:
                result.error = f"cannot write the fixed file: {exc}"
            if result.error:
                # nothing was written: the file still has every problem found in it at first
                result.diagnostics = outcome.initial + [engine_diagnostic(display, result.error)]
                result.fixed = []
                result.applied = 0
                result.fixed_source = None
    return result
