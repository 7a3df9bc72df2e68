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
import tempfile
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
    import hashlib

    return hashlib.blake2b(data, digest_size=16).hexdigest()


def read_source(path: str) -> Source:
    return read_source_stamped(path)[0]


def read_source_stamped(path: str) -> tuple[Source, tuple[int, int, str]]:
    """A file's decoded source and the (mtime_ns, size, digest) of the bytes it was decoded from."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise BadInput("file disappeared before it could be read")
    except OSError as exc:
        raise BadInput(f"cannot read file: {exc.strerror or exc}")
    if stat.S_ISDIR(st.st_mode):
        raise BadInput("is a directory, not a file")
    if st.st_size > MAX_FILE_BYTES:
        raise BadInput(f"file is too large to check ({st.st_size / 2**20:.1f} MiB; the limit is {MAX_FILE_BYTES // 2**20} MiB)")
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise BadInput("file disappeared before it could be read")
    except OSError as exc:
        raise BadInput(f"cannot read file: {exc.strerror or exc}")
    return decode(raw), (st.st_mtime_ns, len(raw), digest(raw))


# ---------------------------------------------------------------------------------------------
# Analysis
# ---------------------------------------------------------------------------------------------


class Prefilter:
    """Which of the enabled rules can possibly fire on a text."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = list(rules)
        self.always = [r for r in self.rules if not r.prefilter]
        self.filtered = [(r, re.compile(r.prefilter, re.MULTILINE)) for r in self.rules if r.prefilter]
        parts = [f"(?:{r.prefilter})" for r in self.rules if r.prefilter]
        self.any = re.compile("|".join(parts), re.MULTILINE) if parts and not self.always else None

    def select(self, text: str) -> list[Rule]:
        if self.any is not None and not self.any.search(text):
            return []
        return self.always + [r for r, rx in self.filtered if rx.search(text)]


def _python_syntax_error(text: str) -> "BadInput | None":
    """Python's own verdict on a text: None when it parses, else its message and position.

    Python's parser is fast and its messages and positions are precise ("'(' was never closed"
    at the parenthesis), where LibCST's often point at the next line.
    """
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning for invalid escapes etc.
            ast.parse(text)
        return None
    except SyntaxError as exc:
        return BadInput(f"syntax error: {exc.msg}", exc.lineno or 1, max(exc.offset or 1, 1))
    except ValueError as exc:  # e.g. NUL bytes after the first 8 KiB
        return BadInput(f"cannot parse: {exc}")
    except (MemoryError, RecursionError):
        return BadInput("file is too deeply nested to parse")


def parse(text: str):
    """The LibCST module of a text, or BadInput with the syntax error's position."""
    import libcst as cst

    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        py = _python_syntax_error(text)
        if py is not None:
            raise py
        msg = str(exc.message).strip()
        msg = re.sub(r"^(?:parser error: )?(?:error at \d+:\d+: )?", "", msg)
        raise BadInput(f"syntax error: {msg}", exc.raw_line, exc.raw_column + 1)
    except RecursionError:
        raise BadInput("file is too deeply nested to parse")


def check_syntax(text: str) -> None:
    """Raise BadInput when a text does not parse, without paying for a LibCST parse.

    Used for files the prefilter skips: they are not analysed, but a syntax error is still a
    problem to report. Only when Python's parser rejects the text is LibCST asked (its grammar
    may be newer than the running Python's); the file is reported only when both reject it.
    """
    if _python_syntax_error(text) is not None:
        parse(text)


def analyse(path: str, text: str, rules: Sequence[Rule], settings=None):
    """Run the rules over a text. Returns (diagnostics, suppressions) or raises BadInput."""
    import libcst as cst  # imported lazily: files skipped by the prefilter never pay for it

    from gpulint.model import ScriptModel
    from gpulint.rule import Context, make_diagnostic
    from gpulint.suppression import Suppressions

    module = parse(text)
    model = ScriptModel(module, text)
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
        except Exception as exc:  # a rule bug must not hide the other rules' results
            line = 1
            diags.append(
                engine_diagnostic(
                    path,
                    f"internal error in rule {rule.code} ({type(exc).__name__}: {exc}); please report it",
                    line,
                )
            )
    diags = sup.apply(diags, path, {r.code for r in rules})  # suppressions; GL001/GL002 when they ran
    diags.sort(key=Diagnostic.sort_key)
    return diags, sup


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


def _parses(text: str) -> bool:
    import libcst as cst

    try:
        cst.parse_module(text)
        return True
    except Exception:
        return False


@dataclass
class Outcome:
    diagnostics: list[Diagnostic]
    text: str
    applied: int = 0
    fixed: list[Diagnostic] = field(default_factory=list)  # diagnostics whose fix was applied
    dropped: list[str] = field(default_factory=list)


def run_text(path: str, text: str, rules: Sequence[Rule], opts: Options) -> Outcome:
    """Check (and fix, when asked) one decoded text. Raises BadInput for unparseable input."""
    from gpulint.suppression import might_skip_file, Suppressions

    if might_skip_file(text) and Suppressions(text).skip_file:
        return Outcome([], text)
    selected = Prefilter(rules).select(text)
    if not selected:
        check_syntax(text)  # nothing to analyse, but a file that does not parse is still reported
        return Outcome([], text)
    diags, _ = analyse(path, text, selected, opts.settings)
    if not opts.fix:
        return Outcome(diags, text)
    outcome = Outcome(diags, text)
    for _round in range(MAX_ROUNDS):
        fixes = _choose(outcome.diagnostics, opts)
        if not fixes:
            break
        new_text = apply_fixes(outcome.text, fixes)
        if not _parses(new_text):
            good = []
            for f in fixes:
                if _parses(apply_fixes(outcome.text, good + [f])):
                    good.append(f)
                else:
                    owner = next(d for d in outcome.diagnostics if d.fix is f)
                    outcome.dropped.append(f"{owner.code} fix at line {owner.line} was dropped: it would leave the file unparseable")
            fixes = good
            if not fixes:
                break
            new_text = apply_fixes(outcome.text, fixes)
        if new_text == outcome.text:
            break
        fixed_now = [d for d in outcome.diagnostics if d.fix in fixes]
        outcome.fixed.extend(fixed_now)
        outcome.applied += len(fixes)
        outcome.text = new_text
        selected = Prefilter(rules).select(new_text)
        outcome.diagnostics = analyse(path, new_text, selected, opts.settings)[0] if selected else []
    return outcome


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------


def write_atomic(path: str, text: str, encoding: str) -> bytes:
    """Replace a file's content in one step, keeping its permissions; never half-written.
    Returns the bytes written."""
    data = text.encode(encoding)
    st = os.stat(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".gpulint-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        try:
            os.chown(tmp, st.st_uid, st.st_gid)
        except (PermissionError, AttributeError):
            pass
        os.replace(tmp, path)
        return data
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def process_file(path: str, display: str, rules: Sequence[Rule], opts: Options) -> FileResult:
    """Check (and fix) one file on disk; every problem becomes a diagnostic, never an exception."""
    if path.endswith(".ipynb"):  # a notebook: its code cells as one script (gpulint/notebook.py)
        from gpulint.notebook import process_notebook

        return process_notebook(path, display, rules, opts)
    result = FileResult(display)
    try:
        src, stamp = read_source_stamped(path)
        outcome = run_text(display, src.text, rules, opts)
    except BadInput as exc:
        result.diagnostics = [engine_diagnostic(display, str(exc), exc.line, exc.col)]
        return result
    except RecursionError:
        result.diagnostics = [engine_diagnostic(display, "file is too deeply nested to analyse")]
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
                data = write_atomic(path, outcome.text, src.encoding)
                result.stamp = (os.stat(path).st_mtime_ns, len(data), digest(data))
            except FileNotFoundError:
                result.error = "file disappeared before the fixes could be written"
            except (OSError, UnicodeEncodeError) as exc:
                result.error = f"cannot write the fixed file: {exc}"
            if result.error:
                result.diagnostics.append(engine_diagnostic(display, result.error))
    return result
