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
import os
import re
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Sequence

from gpulint.diagnostics import SAFE, Diagnostic, Fix
from gpulint.registry import ENGINE_CODE

_NEWLINE = re.compile(r"\r\n|\r|\n")

# LSP severities (lsprotocol's DiagnosticSeverity values), by rule kind
ERROR, WARNING, INFORMATION, HINT = 1, 2, 3, 4
SEVERITY_BY_KIND = {"crash": ERROR, "silent": ERROR, "slow": WARNING, "future": WARNING}


def docs_url(code: str) -> str:
    from gpulint.reporters import INFO_URI

    return f"{INFO_URI}/blob/main/docs/rules.md#{code.lower()}"


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
    excluder: object = None

    def rules(self, codes: Sequence[str]) -> list:
        out = []
        for code in codes:
            inst = self.instances.get(code)
            if inst is None:
                inst = self.instances[code] = self.registry.by_code(code)()
            out.append(inst)
        return out

    def excluded(self, path: Path) -> bool:
        """Whether `exclude`/`extend-exclude` name the document or a folder above it (relative
        to the config's folder), as `gpulint check DIR` would skip it when walking."""
        from gpulint.discovery import _rel_to_root

        rel = _rel_to_root(path, self.settings.root)
        if rel is None:
            return False
        parts = PurePosixPath(rel).parts
        for i, name in enumerate(parts):
            sub = "/".join(parts[: i + 1])
            if self.excluder(name, sub, sub):
                return True
        return False


class Linter:
    """Configuration lookup and analysis for documents; thread-safe (one lock around config)."""

    def __init__(self, default_root: Path | None = None) -> None:
        self.default_root = default_root or Path.cwd()
        self._lock = threading.Lock()
        # config path (or None) -> (stamp, Resolved)
        self._resolved: dict[Path | None, tuple[object, Resolved]] = {}

    def resolve(self, path: Path | None) -> Resolved:
        """The settings for a document at `path` (None for an unsaved document). Raises
        ConfigError/RuleError for a bad configuration, like the CLI (which exits 2)."""
        from gpulint.config import find_config, load_settings
        from gpulint.discovery import _Excluder
        from gpulint.registry import Registry

        start = path.parent if path is not None else self.default_root
        config = find_config(start)
        stamp = None
        if config is not None:
            try:
                st = config.stat()
                stamp = (st.st_mtime_ns, st.st_size)
            except OSError:
                stamp = None
        with self._lock:
            hit = self._resolved.get(config)
            if hit is not None and hit[0] == stamp:
                return hit[1]
            settings = load_settings(config, start)
            if config is None:
                settings.root = start.resolve()
            registry = Registry.load(settings.rule_dirs)
            enabled = [r.code for r in registry.resolve(settings.select, settings.extend_select, settings.ignore)]
            for pattern, selectors in settings.per_file_ignores.items():
                unknown = [s for s in selectors if s.strip().upper() != ENGINE_CODE and not registry.match(s)]
                if unknown:
                    from gpulint.registry import RuleError

                    raise RuleError(f"unknown rule selector(s) in per-file-ignores for {pattern!r}: {', '.join(unknown)}")
            resolved = Resolved(settings, registry, enabled, excluder=_Excluder(settings.all_excludes))
            self._resolved[config] = (stamp, resolved)
            return resolved

    def analyse(self, path: Path | None, text: str) -> "Analysis":
        """The engine's diagnostics for one text; every problem is a GL000 diagnostic."""
        from gpulint.config import ConfigError
        from gpulint.engine import MAX_FILE_BYTES, BadInput, Options, engine_diagnostic, run_text
        from gpulint.registry import RuleError
        from gpulint.runner import codes_for_file

        display = str(path) if path is not None else "untitled"
        if len(text) > MAX_FILE_BYTES:  # the CLI's limit: an editor buffer is no exception
            msg = f"file is too large to check ({len(text) / 2**20:.1f} MiB; the limit is {MAX_FILE_BYTES // 2**20} MiB)"
            return Analysis(text, [engine_diagnostic(display, msg)], None, [])
        try:
            resolved = self.resolve(path)
        except (ConfigError, RuleError) as exc:
            return Analysis(text, [engine_diagnostic(display, f"configuration error: {exc}")], None, [])
        if path is not None and resolved.excluded(path):
            return Analysis(text, [], resolved, [], excluded=True)
        codes = codes_for_file(display, resolved.settings, resolved.enabled, resolved.registry)
        rules = resolved.rules(codes)
        try:
            outcome = run_text(display, text, rules, Options())
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
        opts = Options(fix=True, unsafe_fixes=analysis.resolved.settings.unsafe_fixes, write=False)
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
    return SEVERITY_BY_KIND.get(getattr(rule, "kind", ""), WARNING)


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
