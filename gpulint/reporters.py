"""Reporters: pure functions from the sorted diagnostics to text."""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path
from typing import Sequence

from gpulint import __version__
from gpulint.diagnostics import SAFE, Diagnostic

FORMATS = ("text", "json", "sarif", "github")
INFO_URI = "https://github.com/gpulint/gpulint"


def fix_marker(d: Diagnostic, unsafe_fixes: bool) -> str:
    if d.fix is None:
        return ""
    if d.fix.applicability == SAFE or unsafe_fixes:
        return "[*] "
    return ""


def text(diags: Sequence[Diagnostic], unsafe_fixes: bool = False) -> str:
    return "".join(
        f"{d.path}:{d.line}:{d.col}: {d.code} {fix_marker(d, unsafe_fixes)}{d.message}\n" for d in diags
    )


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


def statistics(diags: Sequence[Diagnostic], unsafe_fixes: bool = False) -> str:
    counts = Counter((d.code, d.name) for d in diags)
    fixable = Counter(d.code for d in diags if fix_marker(d, unsafe_fixes))
    lines = []
    for (code, name), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        mark = "[*]" if fixable[code] == n else "[ ]" if not fixable[code] else "[-]"
        lines.append(f"{n:>5}\t{code}\t{mark} {name}\n")
    return "".join(lines)


def _location(row_col: tuple[int, int]) -> dict:
    return {"row": row_col[0], "column": row_col[1]}


def to_json(diags: Sequence[Diagnostic]) -> str:
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
                "location": {"row": d.line, "column": d.col},
                "end_location": {"row": d.end_line, "column": d.end_col},
                "fix": fix,
            }
        )
    return json.dumps(items, indent=2) + "\n"


# GitHub Actions workflow commands ---------------------------------------------------------------


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def github(diags: Sequence[Diagnostic]) -> str:
    out = []
    for d in diags:
        props = ",".join(
            [
                f"file={_escape_property(d.path)}",
                f"line={d.line}",
                f"col={d.col}",
                f"endLine={d.end_line}",
                f"endColumn={d.end_col}",
                f"title={_escape_property(f'gpulint ({d.code})')}",
            ]
        )
        out.append(f"::error {props}::{_escape_data(f'{d.code} {d.message}')}\n")
    return "".join(out)


# SARIF 2.1.0 --------------------------------------------------------------------------------------

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def repo_root(start: Path) -> Path:
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return start


def _uri(path: str, root: Path) -> str:
    p = Path(path).resolve()
    try:
        return p.relative_to(root).as_posix()
    except ValueError:
        return p.as_uri()


def sarif(diags: Sequence[Diagnostic], rules: Sequence[type], root: Path | None = None) -> str:
    root = (root or repo_root(Path.cwd())).resolve()
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

        rule_list = [_Engine, *rule_list]
    index = {r.code: i for i, r in enumerate(rule_list)}
    driver_rules = [
        {
            "id": r.code,
            "name": r.name,
            "shortDescription": {"text": r.summary},
            "fullDescription": {"text": r.summary},
            "help": {"text": r.explanation.strip() or r.summary, "markdown": r.explanation.strip() or r.summary},
            "helpUri": f"{INFO_URI}/blob/main/docs/rules.md#{r.code.lower()}",
            "defaultConfiguration": {"level": "error"},
            "properties": {"fix": r.fix_safety, "default": bool(r.default)},
        }
        for r in rule_list
    ]
    results = []
    seen: Counter = Counter()
    for d in diags:
        uri = _uri(d.path, root)
        line_text = _line_text(d.path, d.line)
        key = f"{d.code}:{uri}:{line_text.strip()}"
        seen[key] += 1
        fingerprint = hashlib.sha256(f"{key}:{seen[key]}".encode("utf-8", "surrogateescape")).hexdigest()[:32]
        res = {
            "ruleId": d.code,
            "level": "error",
            "message": {"text": d.message},
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
                "originalUriBaseIds": {"%SRCROOT%": {"uri": root.as_uri() + "/"}},
                "results": results,
            }
        ],
    }
    return json.dumps(doc, indent=2) + "\n"


def _line_text(path: str, line: int) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for i, text in enumerate(fh, 1):
                if i == line:
                    return text
    except OSError:
        pass
    return ""


def render(fmt: str, diags: Sequence[Diagnostic], rules: Sequence[type], unsafe_fixes: bool = False) -> str:
    if fmt == "json":
        return to_json(diags)
    if fmt == "sarif":
        return sarif(diags, rules)
    if fmt == "github":
        return github(diags)
    return text(diags, unsafe_fixes)


def rel(path: str) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return path
