"""Reporters: pure functions from the sorted diagnostics to text."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Sequence

from gpulint import __version__
from gpulint.diagnostics import SAFE, Diagnostic

FORMATS = ("text", "full", "json", "sarif", "github")
INFO_URI = "https://github.com/gpulint/gpulint"
DOCS_URI = f"{INFO_URI}/blob/main/docs/rules.md"

# A rule's severity follows its kind: a crash or a silently wrong result is an error,
# performance advice and deprecations are warnings.
ERROR_KINDS = ("crash", "silent")


def rule_url(code: str) -> str:
    return f"{DOCS_URI}#{code.lower()}"


def severity_of(kind: str | None) -> str:
    return "error" if kind is None or kind in ERROR_KINDS else "warning"


def severities(rules: Sequence[type]) -> dict[str, str]:
    """code -> "error" | "warning" for the given rule classes (GL000 is always an error)."""
    out = {r.code: severity_of(getattr(r, "kind", None)) for r in rules}
    out["GL000"] = "error"
    return out


def where(d: Diagnostic) -> str:
    """`path:line:col`, or `path:cell N:line:col` in a notebook."""
    if d.cell is not None:
        return f"{d.path}:cell {d.cell}:{d.line}:{d.col}"
    return f"{d.path}:{d.line}:{d.col}"


def fix_marker(d: Diagnostic, unsafe_fixes: bool) -> str:
    if d.fix is None:
        return ""
    if d.fix.applicability == SAFE or unsafe_fixes:
        return "[*] "
    return ""


def text(diags: Sequence[Diagnostic], unsafe_fixes: bool = False) -> str:
    return "".join(f"{where(d)}: {d.code} {fix_marker(d, unsafe_fixes)}{d.message}\n" for d in diags)


# full: the source line and a caret under the reported range, and the rule's documentation ----


class _Sources:
    """Lines of the reported files, read once each (a notebook: the lines of its cells)."""

    def __init__(self) -> None:
        self.files: dict[str, dict | list | None] = {}

    def line(self, d: Diagnostic) -> str | None:
        if d.path not in self.files:
            self.files[d.path] = self._load(d.path)
        data = self.files[d.path]
        if data is None:
            return None
        if isinstance(data, dict):
            lines = data.get(d.cell)
        else:
            lines = data
        if not lines or not 1 <= d.line <= len(lines):
            return None
        return lines[d.line - 1]

    @staticmethod
    def _load(path: str):
        try:
            with open(path, "rb") as fh:
                raw = fh.read(10 * 2**20)
        except OSError:
            return None
        if path.endswith(".ipynb"):
            from gpulint.notebook import NotebookError, parse

            try:
                nb = parse(raw)
            except NotebookError:
                return None
            return {c.index + 1: c.source.splitlines() for c in nb.cells}
        try:
            from gpulint.engine import BadInput, decode

            return decode(raw).text.splitlines()
        except (BadInput, Exception):
            return None


_ANSI = {"bold": "1", "red": "31", "yellow": "33", "blue": "34", "cyan": "36", "dim": "2"}


def _paint(text: str, *styles: str, color: bool) -> str:
    if not color or not styles:
        return text
    return "\x1b[" + ";".join(_ANSI[s] for s in styles) + "m" + text + "\x1b[0m"


def full(
    diags: Sequence[Diagnostic],
    unsafe_fixes: bool = False,
    rules: Sequence[type] = (),
    color: bool = False,
) -> str:
    """Each problem with its source line, a caret under the reported range and the link to the
    rule's documentation; colour only when asked (a terminal, NO_COLOR unset)."""
    sev = severities(rules)
    sources = _Sources()
    out = []
    for d in diags:
        level = sev.get(d.code, "error")
        head = (
            _paint(where(d), "bold", color=color)
            + ": "
            + _paint(d.code, "bold", "red" if level == "error" else "yellow", color=color)
            + " "
            + (_paint("[*]", "cyan", color=color) + " " if fix_marker(d, unsafe_fixes) else "")
            + d.message
        )
        out.append(head + "\n")
        src = sources.line(d)
        if src is not None:
            src = src.expandtabs(1)
            num = str(d.line)
            pad = " " * len(num)
            start = max(d.col - 1, 0)
            end = d.end_col - 1 if d.end_line == d.line and d.end_col > d.col else len(src.rstrip())
            width = max(1, min(end, len(src)) - start)
            out.append(_paint(f"{pad} |", "blue", color=color) + "\n")
            out.append(_paint(f"{num} |", "blue", color=color) + f" {src}\n")
            out.append(
                _paint(f"{pad} |", "blue", color=color)
                + " " * (start + 1)
                + _paint("^" * width, "bold", "red" if level == "error" else "yellow", color=color)
                + "\n"
            )
        if d.code != "GL000":
            out.append(_paint(f"{' ' * len(str(d.line))} = ", "blue", color=color) + f"docs: {rule_url(d.code)}\n")
        out.append("\n")
    return "".join(out)


def summary(diags: Sequence[Diagnostic], unsafe_fixes: bool = False, fixed: int = 0) -> str:
    n = len(diags)
    if n == 0 and fixed == 0:
        return "All checks passed!\n"
    if fixed:
        word = "problem" if n + fixed == 1 else "problems"
        out = f"Found {n + fixed} {word} ({fixed} fixed, {n} remaining).\n"
    else:
        word = "problem" if n == 1 else "problems"
        safe = sum(1 for d in diags if d.fix is not None and d.fix.applicability == SAFE)
        unsafe = sum(1 for d in diags if d.fix is not None and d.fix.applicability != SAFE)
        if unsafe_fixes:
            safe, unsafe = safe + unsafe, 0
        extra = []
        if safe:
            extra.append(f"{safe} fixable with 'gpulint fix'")
        if unsafe:
            extra.append(f"{unsafe} more with --unsafe-fixes" if safe else f"{unsafe} fixable with 'gpulint fix --unsafe-fixes'")
        out = f"Found {n} {word}" + (f" ({', '.join(extra)})" if extra else "") + ".\n"
    return out


def statistics_rows(diags: Sequence[Diagnostic], unsafe_fixes: bool = False) -> list[dict]:
    counts = Counter((d.code, d.name) for d in diags)
    fixable = Counter(d.code for d in diags if fix_marker(d, unsafe_fixes))
    return [
        {"code": code, "name": name, "count": n, "fixable": fixable[code]}
        for (code, name), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def statistics(diags: Sequence[Diagnostic], unsafe_fixes: bool = False) -> str:
    lines = []
    rows = statistics_rows(diags, unsafe_fixes)
    for row in rows:
        n, fixable = row["count"], row["fixable"]
        mark = "[*]" if fixable == n else "[ ]" if not fixable else "[-]"
        lines.append(f"{n:>5}\t{row['code']}\t{mark} {row['name']}\n")
    if rows:
        fixable = sum(r["fixable"] for r in rows)
        files = len({d.path for d in diags})
        lines.append(
            f"{len(diags):>5}\ttotal\t{len(diags)} problem{'s' if len(diags) != 1 else ''} in {files} "
            f"file{'s' if files != 1 else ''}, {fixable} fixable\n"
        )
    return "".join(lines)


def statistics_json(diags: Sequence[Diagnostic], unsafe_fixes: bool = False) -> str:
    rows = statistics_rows(diags, unsafe_fixes)
    doc = {
        "rules": rows,
        "total": len(diags),
        "fixable": sum(r["fixable"] for r in rows),
        "files": len({d.path for d in diags}),
    }
    return json.dumps(doc, indent=2) + "\n"


def _location(row_col: tuple[int, int]) -> dict:
    return {"row": row_col[0], "column": row_col[1]}


def to_json(diags: Sequence[Diagnostic], rules: Sequence[type] = ()) -> str:
    sev = severities(rules)
    items = []
    for d in diags:
        fix = None
        if d.fix is not None:
            fix = {
                "applicability": d.fix.applicability,
                "message": d.fix.message or None,
                "edits": [
                    {"content": e.content, "location": _location(e.location), "end_location": _location(e.end_location)}
                    for e in d.fix.edits
                ],
            }
        items.append(
            {
                "code": d.code,
                "name": d.name,
                "message": d.message,
                "filename": d.path,
                "cell": d.cell,
                "location": {"row": d.line, "column": d.col},
                "end_location": {"row": d.end_line, "column": d.end_col},
                "fix": fix,
                "severity": sev.get(d.code, "error"),
                "url": None if d.code == "GL000" else rule_url(d.code),
            }
        )
    return json.dumps(items, indent=2) + "\n"


# GitHub Actions workflow commands ---------------------------------------------------------------


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def repo_relative(path: str, cache: dict | None = None) -> str:
    """A path relative to its repository's root (the nearest folder above it with a `.git`,
    found without running git), as GitHub wants annotation paths; relative to the current
    directory when it is in no repository."""
    absolute = os.path.abspath(path)
    directory = os.path.dirname(absolute)
    cache = {} if cache is None else cache
    if directory not in cache:
        root = None
        for d in (Path(directory), *Path(directory).parents):
            if (d / ".git").exists():
                root = d
                break
        cache[directory] = root
    root = cache[directory]
    if root is None:
        return path
    return Path(absolute).relative_to(root).as_posix()


def github(diags: Sequence[Diagnostic], rules: Sequence[type] = ()) -> str:
    sev = severities(rules)
    roots: dict = {}
    out = []
    for d in diags:
        cell = f"cell {d.cell}: " if d.cell is not None else ""
        props = ",".join(
            [
                f"file={_escape_property(repo_relative(d.path, roots))}",
                f"line={d.line}",
                f"col={d.col}",
                f"endLine={d.end_line}",
                f"endColumn={d.end_col}",
                f"title={_escape_property(f'gpulint ({d.code})')}",
            ]
        )
        out.append(f"::{sev.get(d.code, 'error')} {props}::{_escape_data(f'{cell}{d.code} {d.message}')}\n")
    return "".join(out)


# SARIF 2.1.0 --------------------------------------------------------------------------------------

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def repo_root(start: Path) -> Path:
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return start


def _uri(path: str, root: Path) -> str:
    """A percent-encoded URI reference: relative to the root, else an absolute file URI."""
    from urllib.parse import quote

    try:
        p = Path(os.path.realpath(path))
    except (OSError, RuntimeError, ValueError):  # e.g. a symlink loop
        p = Path(os.path.abspath(path))
    try:
        rel = p.relative_to(root).as_posix()
    except ValueError:
        return "file://" + quote(p.as_posix(), safe="/", errors="surrogateescape")
    return quote(rel, safe="/", errors="surrogateescape")


def sarif(diags: Sequence[Diagnostic], rules: Sequence[type], root: Path | None = None) -> str:
    root = Path(os.path.realpath(root or repo_root(Path.cwd())))
    rule_list = list(rules)
    if any(d.code == "GL000" for d in diags):
        from gpulint.registry import ENGINE_CODE

        class _Engine:
            code = ENGINE_CODE
            name = "engine-error"
            summary = "The file could not be read, decoded or parsed."
            explanation = "gpulint reports files it cannot read, decode or parse as GL000."
            default = True
            fix_safety = "none"
            kind = "crash"

        rule_list = [_Engine, *rule_list]
    sev = severities(rule_list)
    index = {r.code: i for i, r in enumerate(rule_list)}
    driver_rules = [
        {
            "id": r.code,
            "name": r.name,
            "shortDescription": {"text": r.summary},
            "fullDescription": {"text": r.summary},
            "help": {"text": r.explanation.strip() or r.summary, "markdown": r.explanation.strip() or r.summary},
            "helpUri": rule_url(r.code),
            "defaultConfiguration": {"level": sev.get(r.code, "error")},
            "properties": {"fix": r.fix_safety, "default": bool(r.default), "kind": getattr(r, "kind", "crash")},
        }
        for r in rule_list
    ]
    results = []
    seen: Counter = Counter()
    for d in diags:
        uri = _uri(d.path, root)
        line_text = _line_text(d.path, d.line) if d.cell is None else f"cell {d.cell}:{d.line}"
        key = f"{d.code}:{uri}:{line_text.strip()}"
        seen[key] += 1
        fingerprint = _sha256(f"{key}:{seen[key]}".encode("utf-8", "surrogateescape")).hexdigest()[:32]
        res = {
            "ruleId": d.code,
            "level": sev.get(d.code, "error"),
            "message": {"text": (f"cell {d.cell}: " if d.cell is not None else "") + d.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": uri, **({"uriBaseId": "%SRCROOT%"} if not uri.startswith("file:") else {})},
                        "region": {
                            "startLine": d.line,
                            "startColumn": d.col,
                            "endLine": d.end_line,
                            "endColumn": d.end_col,
                        },
                    }
                }
            ],
            "partialFingerprints": {"primaryLocationLineHash": fingerprint},
        }
        if d.code in index:
            res["ruleIndex"] = index[d.code]
        if d.cell is not None:
            res["properties"] = {"cell": d.cell}
        results.append(res)
    doc = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "gpulint",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": INFO_URI,
                        "rules": driver_rules,
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": "file://" + _quote_path(root.as_posix()).rstrip("/") + "/"}},
                "results": results,
            }
        ],
    }
    return json.dumps(doc, indent=2) + "\n"


def _sha256(data: bytes):
    import hashlib  # only SARIF needs it (its import loads OpenSSL)

    return hashlib.sha256(data)


def _quote_path(p: str) -> str:
    from urllib.parse import quote

    return quote(p, safe="/", errors="surrogateescape")


def _line_text(path: str, line: int) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for i, text in enumerate(fh, 1):
                if i == line:
                    return text
    except OSError:
        pass
    return ""


def render(
    fmt: str, diags: Sequence[Diagnostic], rules: Sequence[type], unsafe_fixes: bool = False, color: bool = False
) -> str:
    if fmt == "json":
        return to_json(diags, rules)
    if fmt == "sarif":
        return sarif(diags, rules)
    if fmt == "github":
        return github(diags, rules)
    if fmt == "full":
        return full(diags, unsafe_fixes, rules, color)
    return text(diags, unsafe_fixes)


def rel(path: str) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return path
