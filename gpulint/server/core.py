"""What the language server knows about a document, without any LSP library.

A `Linter` turns (path, text) into an `Analysis`: the engine's diagnostics for that exact text,
plus what is needed to turn character offsets into LSP positions. Configuration is the CLI's:
the closest config file to the document (`gpulint.config.find_config`), its rule selection,
`per-file-ignores` and excludes. Settings and rule instances are cached per config file and
re-read when the file's mtime or size changes.

Nothing here imports or runs the user's code or torch: the engine is static.
"""

from __future__ import annotations

import ast
import bisect
import difflib
import functools
import os
import re
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from gpulint.diagnostics import SAFE, Diagnostic, Fix
from gpulint.notebook import BOUNDARY  # the line `gpulint check` puts between two cells
from gpulint.registry import ENGINE_CODE

_NEWLINE = re.compile(r"\r\n|\r|\n")

# LSP severities (lsprotocol's DiagnosticSeverity values), by rule kind
ERROR, WARNING, INFORMATION, HINT = 1, 2, 3, 4
SEVERITY_BY_KIND = {"crash": ERROR, "silent": ERROR, "slow": WARNING, "future": WARNING}


def docs_url(code: str) -> str:
    """The rule's section of docs/rules.md, the link the other reporters give."""
    from gpulint.reporters import rule_url

    return rule_url(code)


# ---------------------------------------------------------------------------------------------
# Positions
# ---------------------------------------------------------------------------------------------


def _units(s: str, encoding: str) -> int:
    """Length of `s` in the client's position units ("utf-8", "utf-16" or "utf-32")."""
    if encoding == "utf-32":
        return len(s)
    if encoding == "utf-8":
        return len(s.encode("utf-8", "surrogatepass"))
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


class TextIndex:
    """Line starts of a text, for offset <-> (line, character) conversion in the client's units."""

    def __init__(self, text: str, encoding: str = "utf-16") -> None:
        self.text = text
        self.encoding = encoding
        self.starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def line_text(self, line: int) -> str:
        """The text of a 0-based line, without its line ending."""
        if line >= len(self.starts):
            return ""
        start = self.starts[line]
        end = self.starts[line + 1] if line + 1 < len(self.starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    def position(self, offset: int) -> tuple[int, int]:
        """A character offset as a 0-based (line, character in client units)."""
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self.starts, offset) - 1
        col = offset - self.starts[line]
        return line, _units(self.text[self.starts[line] : self.starts[line] + col], self.encoding)

    def position_of(self, line1: int, col1: int) -> tuple[int, int]:
        """A 1-based (line, column in characters), as the engine reports them, in client units."""
        line = max(line1 - 1, 0)
        if line >= len(self.starts):
            return len(self.starts) - 1, _units(self.line_text(len(self.starts) - 1), self.encoding)
        text = self.line_text(line)
        col = min(max(col1 - 1, 0), len(text))
        return line, _units(text[:col], self.encoding)

    def offset(self, line: int, character: int) -> int:
        """A 0-based (line, character in client units) as a character offset."""
        if line >= len(self.starts):
            return len(self.text)
        text = self.line_text(max(line, 0))
        if self.encoding == "utf-32":
            col = min(character, len(text))
        else:
            col = 0
            used = 0
            for ch in text:
                if used >= character:
                    break
                used += _units(ch, self.encoding)
                col += 1
        return self.starts[max(line, 0)] + col


Range = tuple[tuple[int, int], tuple[int, int]]


def diagnostic_range(index: TextIndex, d: Diagnostic) -> Range:
    start = index.position_of(d.line, d.col)
    end = index.position_of(d.end_line, d.end_col)
    if end <= start:  # engine diagnostics are points: show at least one character when there is one
        text = index.line_text(start[0])
        chars = len(text[: d.col - 1]) if d.line - 1 == start[0] else 0
        if chars < len(text):
            end = (start[0], start[1] + _units(text[chars], index.encoding))
        else:
            end = start
    return start, end


def overlaps(a: Range, b: Range) -> bool:
    """Whether two ranges touch (an empty range at a diagnostic's edge counts)."""
    return a[0] <= b[1] and b[0] <= a[1]


# ---------------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------------


@dataclass
class Resolved:
    """What the closest configuration says for the documents under it."""

    settings: object  # gpulint.config.Settings
    registry: object  # gpulint.registry.Registry
    enabled: list[str]
    instances: dict = field(default_factory=dict)  # rule code -> rule instance

    def options(self, opts):
        """The engine options with what rules may read of the settings (`ctx.settings`: the
        target torch version...)."""
        from gpulint.config import RuleSettings

        opts.settings = RuleSettings.of(self.settings)
        return opts

    def rules(self, codes: Sequence[str]) -> list:
        out = []
        for code in codes:
            inst = self.instances.get(code)
            if inst is None:
                inst = self.instances[code] = self.registry.by_code(code)()
            out.append(inst)
        return out

    def excluded(self, path: Path) -> bool:
        """Whether `exclude`/`extend-exclude` leave the document out, as `gpulint check
        --force-exclude` does for a named file (ruff's server does the same)."""
        from gpulint.discovery import force_excluded

        return force_excluded(str(path), self.settings)


RECENT = 16


class Linter:
    """Configuration lookup and analysis for documents; thread-safe (one lock around config)."""

    def __init__(self, default_root: Path | None = None) -> None:
        # the workspace root: the CLI's "current directory", whose configuration is trusted
        self.default_root = default_root or Path.cwd()
        self._lock = threading.Lock()
        self._resolved: dict[str, Resolved] = {}  # the settings, as JSON -> Resolved
        self._registries: dict[tuple, object] = {}  # rule folders -> Registry
        # (path, text) -> Analysis, the most recent RECENT analyses
        self._recent: dict[tuple[Path | None, str], Analysis] = {}
        self.warnings: list[str] = []  # configuration warnings, each once, for the client's log

    def resolve(self, path: Path | None) -> Resolved:
        """The settings for a document at `path` (None for an unsaved document): the closest
        configuration to it, found by the CLI's config.Resolver with the workspace root as the
        current directory (so only the workspace's own configuration may name rule folders:
        opening a file of another repository never imports that repository's rule files).
        Read afresh for every analysis (a few milliseconds), so edits of any configuration
        file, `extend`ed ones included, are seen. Raises ConfigError/RuleError for a bad
        configuration, like the CLI (which exits 2)."""
        import json

        from gpulint.config import Resolver
        from gpulint.registry import Registry, RuleError
        from gpulint.suppression import set_known

        with self._lock:
            resolver = Resolver(cwd=self.default_root)
            if path is not None:
                settings = resolver.for_dir(str(path.parent))
            else:
                settings = resolver.for_dir(str(self.default_root))
            for w in resolver.warnings:
                if w not in self.warnings:
                    self.warnings.append(w)
            key = json.dumps(settings.describe(), sort_keys=True, default=str)
            hit = self._resolved.get(key)
            if hit is not None:
                return hit
            dirs = tuple(str(d) for d in settings.rule_dirs)
            registry = self._registries.get(dirs)
            if registry is None:
                registry = self._registries[dirs] = Registry.load(settings.rule_dirs)
                # the codes and names that noqa comments may name (GL001), as the CLI sets them
                set_known((r.code for r in registry.rules), {r.name: r.code for r in registry.rules})
            try:
                enabled = [r.code for r in registry.resolve(settings.select, settings.extend_select, settings.ignore)]
                for pattern, selectors in settings.per_file_ignores.items():
                    unknown = [x for x in selectors if x.strip().upper() != ENGINE_CODE and not registry.match(x)]
                    if unknown:
                        raise RuleError(f"unknown rule selector(s) in per-file-ignores for {pattern!r}: {', '.join(unknown)}")
            except RuleError as exc:
                if settings.ignored_rule_dirs:
                    raise RuleError(
                        f"{exc} (`rule-dirs` of {settings.config_path} ignored: rules are loaded only from the "
                        f"workspace's configuration)"
                    ) from exc
                raise
            resolved = Resolved(settings, registry, enabled)
            self._resolved[key] = resolved
            return resolved

    def analyse(self, path: Path | None, text: str) -> "Analysis":
        """The engine's diagnostics for one text; every problem is a GL000 diagnostic."""
        from gpulint.config import ConfigError
        from gpulint.engine import MAX_FILE_BYTES, engine_diagnostic
        from gpulint.registry import RuleError

        display = str(path) if path is not None else "untitled"
        if len(text) > MAX_FILE_BYTES:  # the CLI's limit: an editor buffer is no exception
            msg = f"file is too large to check ({len(text) / 2**20:.1f} MiB; the limit is {MAX_FILE_BYTES // 2**20} MiB)"
            return Analysis(text, [engine_diagnostic(display, msg)], None, [])
        try:
            resolved = self.resolve(path)
        except (ConfigError, RuleError) as exc:
            return Analysis(text, [engine_diagnostic(display, f"configuration error: {exc}")], None, [])
        key = (path, text)
        with self._lock:
            hit = self._recent.get(key)
        if hit is not None and hit.resolved is resolved:
            return hit  # the same text under the same configuration (a save, an undo)
        analysis = self._analyse(path, display, text, resolved)
        with self._lock:
            self._recent[key] = analysis
            while len(self._recent) > RECENT:
                self._recent.pop(next(iter(self._recent)))
        return analysis

    def _analyse(self, path: Path | None, display: str, text: str, resolved: Resolved) -> "Analysis":
        from gpulint.engine import BadInput, Options, engine_diagnostic, run_text
        from gpulint.runner import codes_for_file

        if path is not None and resolved.excluded(path):
            return Analysis(text, [], resolved, [], excluded=True)
        codes = codes_for_file(display, resolved.settings, resolved.enabled, resolved.registry)
        rules = resolved.rules(codes)
        try:
            outcome = run_text(display, text, rules, resolved.options(Options()))
            diags = outcome.diagnostics
        except BadInput as exc:
            diags = [engine_diagnostic(display, str(exc), exc.line, exc.col)]
        except RecursionError:
            diags = [engine_diagnostic(display, "file is too deeply nested to analyse")]
        except Exception as exc:  # the server must outlive an engine bug
            diags = [engine_diagnostic(display, f"internal error ({type(exc).__name__}: {exc}); please report it")]
        return Analysis(text, diags, resolved, rules)

    def fix_all(self, path: Path | None, analysis: "Analysis") -> str | None:
        """The text with every applicable fix applied (safe ones; unsafe ones too when the
        configuration says `unsafe-fixes = true`, as `gpulint fix` does), or None."""
        from gpulint.engine import BadInput, Options, run_text

        if analysis.resolved is None or not analysis.fixable(analysis.resolved.settings.unsafe_fixes):
            return None
        display = str(path) if path is not None else "untitled"
        opts = analysis.resolved.options(Options(fix=True, unsafe_fixes=analysis.resolved.settings.unsafe_fixes, write=False))
        try:
            outcome = run_text(display, analysis.text, analysis.rules, opts)
        except (BadInput, RecursionError):
            return None
        return outcome.text if outcome.text != analysis.text else None


@dataclass
class Analysis:
    text: str
    diagnostics: list[Diagnostic]
    resolved: Resolved | None
    rules: list
    excluded: bool = False

    def fixable(self, unsafe: bool = False) -> bool:
        return any(d.fix is not None and (d.fix.applicability == SAFE or unsafe) for d in self.diagnostics)

    def rule(self, code: str):
        if self.resolved is None:
            return None
        return self.resolved.registry.by_code(code)


def severity(analysis: Analysis, d: Diagnostic) -> int:
    if d.code == ENGINE_CODE:
        return ERROR
    rule = analysis.rule(d.code)
    kind = getattr(rule, "kind", None)
    if kind is None:  # as the SARIF/GitHub reporters: a rule of no kind is an error
        return ERROR
    return SEVERITY_BY_KIND.get(kind, WARNING)


# ---------------------------------------------------------------------------------------------
# Edits
# ---------------------------------------------------------------------------------------------

TextEdit = tuple[Range, str]


def fix_edits(index: TextIndex, fix: Fix) -> list[TextEdit]:
    return [((index.position(e.start), index.position(e.end)), e.content) for e in sorted(fix.edits, key=lambda e: e.start)]


def _split_lines(text: str) -> list[str]:
    """Lines with their endings, split at the same separators as TextIndex (and LSP)."""
    out = []
    pos = 0
    for m in _NEWLINE.finditer(text):
        out.append(text[pos : m.end()])
        pos = m.end()
    if pos < len(text):
        out.append(text[pos:])
    return out


def diff_edits(index: TextIndex, new: str) -> list[TextEdit]:
    """Line-level edits turning index.text into `new` (so the cursor and folds elsewhere stay)."""
    old_lines = _split_lines(index.text)
    new_lines = _split_lines(new)
    offsets = [0]
    for line in old_lines:
        offsets.append(offsets[-1] + len(line))
    edits: list[TextEdit] = []
    sm = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        edits.append(((index.position(offsets[i1]), index.position(offsets[i2])), "".join(new_lines[j1:j2])))
    return edits


_NOQA_CODES = re.compile(r"#\s*noqa:\s*[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*", re.IGNORECASE)


def noqa_edit(index: TextIndex, d: Diagnostic) -> TextEdit | None:
    """An edit adding `# noqa: CODE` to the diagnostic's line (where suppressions are read), or
    None when the result would not parse the same way (e.g. the line ends inside a string)."""
    line = d.line - 1
    text = index.line_text(line)
    start = index.starts[line]
    m = _NOQA_CODES.search(text)
    if m is not None:
        at, insert = start + m.end(), f", {d.code}"
    else:
        stripped = text.rstrip()
        at, insert = start + len(stripped), f"  # noqa: {d.code}"
    new = index.text[:at] + insert + index.text[at:]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            before = ast.dump(ast.parse(index.text))
            after = ast.dump(ast.parse(new))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if before != after:  # the text landed inside a string literal
        return None
    pos = index.position(at)
    return ((pos, pos), insert)


def path_of_uri(uri: str) -> Path | None:
    """The file system path of a `file:` URI, else None."""
    from urllib.parse import unquote, urlparse

    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = unquote(parsed.path)
    if os.name == "nt" and re.match(r"^/[A-Za-z]:", path):  # pragma: no cover
        path = path[1:]
    return Path(path)


# ---------------------------------------------------------------------------------------------
# Notebooks (LSP 3.17 notebook documents): the code cells joined into one script
# ---------------------------------------------------------------------------------------------

def mask_cell(text: str) -> tuple[str, set[int]]:
    """The cell as `gpulint check` analyses it (gpulint.notebook.mask: IPython syntax replaced by
    placeholders of the same length, line by line), and its 0-based masked lines."""
    from gpulint.notebook import mask

    masked = mask(text)[0]
    new, old = _split_lines(masked), _split_lines(text)
    if len(new) != len(old):  # pragma: no cover - mask keeps lines; never edit such a cell
        return masked, set(range(max(len(new), len(old))))
    return masked, {i for i, (a, b) in enumerate(zip(new, old)) if a != b}


@dataclass
class Cell:
    uri: str
    text: str  # the cell's own text
    masked: str  # the text the analysis saw
    masked_lines: set[int]
    index: TextIndex  # over `text`, in the client's units
    line0: int  # the cell's first line in the script (0-based)
    start: int  # the cell's offset in the script
    end: int  # the end of the cell's text in the script
    n_lines: int

    @functools.cached_property
    def masked_index(self) -> TextIndex:
        return TextIndex(self.masked, "utf-32")

    def local(self, offset: int) -> tuple[int, int] | None:
        """A script offset inside this cell as a 0-based (line, character) of the cell's text,
        or None when it is outside the cell or on a masked line."""
        if not (self.start <= offset <= self.end):
            return None
        line, col = self.masked_index.position(offset - self.start)
        if line in self.masked_lines:
            return None
        return line, col


def join_cells(cells: Sequence[tuple[str, str]], encoding: str) -> tuple[str, list[Cell]]:
    """One script from (uri, text) code cells, and where each cell is in it: the cells joined as
    `gpulint check` joins a notebook's (a boundary comment line between two cells), so that a
    model moved in one cell and a loop in a later one are one flow."""
    parts: list[str] = []
    out: list[Cell] = []
    offset = 0
    line0 = 0
    for n, (uri, text) in enumerate(cells):
        if n:
            sep = BOUNDARY + "\n"
            parts.append(sep)
            offset += len(sep)
            line0 += 1
        masked, masked_lines = mask_cell(text)
        n_lines = len(_split_lines(masked)) or 1
        out.append(Cell(uri, text, masked, masked_lines, TextIndex(text, encoding), line0, offset, offset + len(masked), n_lines))
        parts.append(masked)
        offset += len(masked)
        if not masked.endswith(("\n", "\r")):
            parts.append("\n")
            offset += 1
            line0 += n_lines
        else:
            line0 += n_lines
    return "".join(parts), out


def cell_at_line(cells: Sequence[Cell], line0: int) -> int:
    """The index of the cell holding a 0-based script line (a boundary line: the cell before)."""
    i = bisect.bisect_right([c.line0 for c in cells], line0) - 1
    return max(i, 0)


def local_diagnostic(cell: Cell, d: Diagnostic) -> Diagnostic:
    """A script diagnostic in the coordinates of its cell (its end clamped to the cell)."""
    from dataclasses import replace

    line = d.line - cell.line0
    end_line, end_col = d.end_line - cell.line0, d.end_col
    if end_line > cell.n_lines:
        end_line = cell.n_lines
        end_col = len(cell.index.line_text(end_line - 1)) + 1
    return replace(d, line=max(line, 1), end_line=max(end_line, 1), end_col=end_col)


def cell_fix_edits(cells: Sequence[Cell], fix: Fix) -> dict[str, list[TextEdit]] | None:
    """A script fix as edits of the cells' texts, or None when an edit leaves a cell or touches a
    masked (IPython) line."""
    out: dict[str, list[TextEdit]] = {}
    for e in sorted(fix.edits, key=lambda e: e.start):
        for cell in cells:
            a = cell.local(e.start)
            b = cell.local(e.end)
            if a is not None and b is not None:
                sa = cell.index.starts[a[0]] + a[1] if a[0] < len(cell.index.starts) else len(cell.text)
                sb = cell.index.starts[b[0]] + b[1] if b[0] < len(cell.index.starts) else len(cell.text)
                out.setdefault(cell.uri, []).append(((cell.index.position(sa), cell.index.position(sb)), e.content))
                break
        else:
            return None
    return out


def split_fixed(cells: Sequence[Cell], fixed: str) -> dict[str, str] | None:
    """The fixed script cut back into cells (uri -> new cell text, changed cells only), or None
    when the boundaries moved or a fix touched a masked line."""
    chunks: list[list[str]] = [[]]
    for line in _split_lines(fixed):
        if line.rstrip("\r\n") == BOUNDARY:
            chunks.append([])
        else:
            chunks[-1].append(line)
    if len(chunks) != len(cells):
        return None
    out: dict[str, str] = {}
    for cell, chunk in zip(cells, chunks):
        new_masked = "".join(chunk)
        if not cell.masked.endswith(("\n", "\r")) and new_masked.endswith("\n"):
            new_masked = new_masked[:-1]  # the newline join_cells added
        if new_masked == cell.masked:
            continue
        old_lines = _split_lines(cell.masked)
        new_lines = _split_lines(new_masked)
        orig_lines = _split_lines(cell.text)
        if len(orig_lines) != len(old_lines):
            return None
        result: list[str] = []
        sm = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag == "equal":
                result.extend(orig_lines[i1:i2])
                continue
            if any(i in cell.masked_lines for i in range(i1, i2)):
                return None
            result.extend(new_lines[j1:j2])
        out[cell.uri] = "".join(result)
    return out
