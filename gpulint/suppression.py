"""`# noqa`, `# gpulint: ignore[...]` and `# gpulint: skip-file` comments.

Only real comments count (`"# noqa"` inside a string suppresses nothing). The scan is cheap: a
regular expression finds the lines that may hold a directive, and the tokenizer runs only when
there is one (most files have none). A suppression applies to the line it is written on.

- `# noqa` (no codes) suppresses every rule on its line.
- `# noqa: GL103, GL104` / `# gpulint: ignore[GL103]` suppress those codes; rule names
  (`# noqa: hardcoded-cuda`) work too. Another tool's codes in a `# noqa` (`E501`) are left to
  that tool and never silence gpulint.
- A list that names an unknown gpulint code (`GL999`), or a near miss of a rule name
  (`# noqa: hardcoded-cudaa`), is reported (GL001 `invalid-noqa`) and is NOT a blanket
  suppression: only the valid entries of the list count. A `# noqa` comment is shared with other
  linters: its other entries that are shaped like a rule name but close to none of gpulint's
  (`# noqa: max-complexity`, written for a flake8 plugin), and an empty `# noqa:`, are reported
  only on a line where a gpulint finding shows anyway (the author meant to silence it, and the
  comment does not). Other tools' entries that are neither codes nor kebab-case names
  (`# noqa: set_linter`, `# noqa: RUF`) suppress nothing and are not reported.
- GL002 `unused-noqa` (off by default) reports suppressions that suppressed nothing (never a
  blanket `# noqa`, which other linters of the project share).
- `--add-noqa` writes `# noqa: CODES` on every line with a problem (add_noqa_to_files).
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

_CANDIDATE = re.compile(r"#[^\n\r]*?(?:noqa|gpulint\s*:)", re.IGNORECASE)
_NOQA = re.compile(r"#\s*noqa(?P<colon>\s*:\s*(?P<codes>[^#]*))?", re.IGNORECASE)
_IGNORE = re.compile(r"#\s*gpulint:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)
_SKIP_FILE = re.compile(r"#\s*gpulint:\s*skip-file\b", re.IGNORECASE)
_CODE = re.compile(r"^[A-Z]+[0-9]+$")
_NAME = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)+$")
_ALL = "*"
# a kebab-case entry this close to a rule name (difflib ratio) is a typo of it: `hardcoded-cudaa`
# 0.97, `deprecated-amp` 0.85; other tools' names stay below (pylint's `invalid-name` 0.83 against
# `invalid-noqa`, `unused-import` 0.67 against `unused-noqa`, the flake8 plugin entry
# `max-complexity` 0.36)
_TYPO_RATIO = 0.85
INVALID_NOQA = "GL001"
UNUSED_NOQA = "GL002"
OWN_PREFIX = "GL"


def might_skip_file(source: str) -> bool:
    return _SKIP_FILE.search(source) is not None


# The rule codes and names gpulint knows (set by the CLI from its registry; loaded lazily from
# the built-in rules otherwise). Only used to tell unknown entries from valid ones.
_KNOWN: dict | None = None


def set_known(codes, names: dict[str, str]) -> None:
    global _KNOWN
    _KNOWN = {"codes": set(codes), "names": dict(names)}


def _known() -> dict:
    global _KNOWN
    if _KNOWN is None:
        try:
            from gpulint.registry import Registry

            reg = Registry.load()
            _KNOWN = {"codes": {r.code for r in reg.rules}, "names": {r.name: r.code for r in reg.rules}}
        except Exception:  # pragma: no cover - a broken rule folder is reported elsewhere
            _KNOWN = {"codes": set(), "names": {}}
    return _KNOWN


@dataclass
class Directive:
    line: int
    col: int  # 1-based column of the comment
    codes: set[str]  # codes it suppresses ({"*"} for a blanket noqa)
    invalid: list[str] = field(default_factory=list)  # entries that are not valid
    # entries that may belong to another linter sharing the noqa comment (an empty list, a kebab-case
    # word close to no rule name): reported only where a gpulint finding on the line shows anyway
    foreign: list[str] = field(default_factory=list)
    used: set[str] = field(default_factory=set)
    end_col: int = 0  # 1-based column just after the directive
    entries: list[str] = field(default_factory=list)  # the list as written (noqa lists)
    kind: str = "noqa"  # "noqa" | "ignore"


def _entries(text: str) -> list[str]:
    return [e for e in re.split(r"[\s,]+", text.strip()) if e]


def _near_name(entry: str, known: dict) -> str | None:
    """The rule name `entry` is a typo of, if any."""
    import difflib

    best, ratio = None, 0.0
    for name in known["names"]:
        r = difflib.SequenceMatcher(None, entry.lower(), name).ratio()
        if r > ratio:
            best, ratio = name, r
    return best if ratio >= _TYPO_RATIO else None


def _parse_comment(comment: str, line: int, col: int, known: dict) -> list[Directive]:
    out = []
    for m in _NOQA.finditer(comment):
        d = Directive(line, col + m.start(), set(), end_col=col + m.end())
        if m.group("colon") is None:
            d.codes.add(_ALL)
        else:
            entries = _entries(m.group("codes") or "")
            d.entries = entries
            if not entries:
                d.foreign.append("(empty list)")
            for i, e in enumerate(entries):
                up = e.upper()
                if _CODE.match(up):
                    if up in known["codes"]:
                        d.codes.add(up)
                    elif up.startswith(OWN_PREFIX):
                        d.invalid.append(e)
                    else:  # another tool's code (E501), or a rule-dirs rule's own prefix
                        d.codes.add(up)
                elif e in known["names"]:
                    d.codes.add(known["names"][e])
                elif i == 0 and up.startswith(OWN_PREFIX):
                    d.invalid.append(e)  # `GL-103`: meant for gpulint, not a code
                    break
                elif i == 0 and "-" in e:
                    # shaped like a rule name, but none: a typo of one of ours, or another linter's
                    # entry (`max-complexity`, for a flake8 plugin)
                    near = _near_name(e, known)
                    if near is not None:
                        d.invalid.append(f"{e} (did you mean `{near}`?)")
                    else:
                        d.foreign.append(e)
                    break
                elif i == 0:
                    # another tool's entry: torch's own linters (the entries `set_linter`,
                    # `docstring_linter`, `GB_REGISTRY`), a code prefix (`RUF`)
                    break
                else:
                    break  # prose after the codes (`# noqa: E501 long URL`), as flake8 reads it
        out.append(d)
    for m in _IGNORE.finditer(comment):
        d = Directive(line, col + m.start(), set(), end_col=col + m.end(), kind="ignore")
        codes = m.group("codes")
        if codes is None:
            d.codes.add(_ALL)
        else:
            entries = _entries(codes)
            if not entries:
                d.invalid.append("(empty list)")
            for e in entries:
                up = e.upper()
                if up in known["codes"] or (_CODE.match(up) and not up.startswith(OWN_PREFIX)):
                    d.codes.add(up)
                elif e in known["names"]:
                    d.codes.add(known["names"][e])
                else:
                    d.invalid.append(e)
        out.append(d)
    return out


class Suppressions:
    def __init__(self, source: str, known: dict | None = None) -> None:
        self.by_line: dict[int, set[str]] = {}
        self.directives: list[Directive] = []
        self.skip_file = False
        self.source = source
        if "#" not in source or not _CANDIDATE.search(source):
            return  # the common case: no directive anywhere, nothing to tokenize
        known = known or _known()
        # the comments that may hold a directive, gathered while the tokens stream by (a list
        # of every token of a large file would take tens of MB); a file the tokenizer rejects
        # part-way has none, as before
        comments = []
        try:
            for tok in tokenize.generate_tokens(io.StringIO(source).readline):
                if tok.type == tokenize.COMMENT and _CANDIDATE.match(tok.string):
                    comments.append(tok)
        except (tokenize.TokenError, SyntaxError, IndentationError):
            comments = []
        for tok in comments:
            text = tok.string
            line = tok.start[0]
            if _SKIP_FILE.match(text):
                self.skip_file = True
            for d in _parse_comment(text, line, tok.start[1] + 1, known):
                self.directives.append(d)
                self.by_line.setdefault(line, set()).update(d.codes)

    def suppressed(self, line: int, code: str) -> bool:
        """Whether `code` is silenced on `line` (rules ask it for the sites they group into one
        finding, GL102/GL501: a silenced site is left out, so its directive counts as used)."""
        codes = self.by_line.get(line)
        if not codes or not (_ALL in codes or code in codes):
            return False
        for dr in self.directives:
            if dr.line == line and (_ALL in dr.codes or code in dr.codes):
                dr.used.add(code if code in dr.codes else _ALL)
        return True

    def apply(self, diags, path: str, ran: set[str]):
        """The diagnostics that are not suppressed, plus GL001/GL002 findings when those rules
        ran (`ran`: the codes of the rules run on this file)."""
        from gpulint.diagnostics import Diagnostic

        kept = []
        for d in diags:
            if d.code == "GL000":
                kept.append(d)
                continue
            hit = None
            for dr in self.directives:
                if dr.line == d.line and (_ALL in dr.codes or d.code in dr.codes):
                    hit = dr
                    dr.used.add(d.code if d.code in dr.codes else _ALL)
            if hit is None:
                kept.append(d)
        extra = []
        names = {INVALID_NOQA: "invalid-noqa", UNUSED_NOQA: "unused-noqa"}
        shown = {d.line for d in kept if d.code not in ("GL000", INVALID_NOQA, UNUSED_NOQA)}
        for dr in self.directives:
            # another linter's entries are gpulint's business only where a gpulint finding shows
            # on the line: the author meant to silence it, and the comment does not
            bad = dr.invalid + (dr.foreign if dr.line in shown else [])
            if INVALID_NOQA in ran and bad:
                what = ", ".join(bad)
                extra.append(
                    Diagnostic(
                        INVALID_NOQA, names[INVALID_NOQA],
                        f"suppression comment with unknown or malformed entries ({what}): they suppress nothing; "
                        f"use rule codes (`# noqa: GL103`) or rule names",
                        path, dr.line, dr.col, dr.line, dr.col + 1,
                    )
                )
            if UNUSED_NOQA in ran:
                if _ALL in dr.codes:
                    # a blanket noqa comment belongs to every linter of the project (flake8, ruff...):
                    # gpulint cannot know it is unused; its own blanket `# gpulint: ignore` it can
                    unused = [] if dr.used or dr.kind == "noqa" else ["(all)"]
                else:
                    # only codes of rules that ran here can be known to be unused
                    unused = sorted(c for c in dr.codes if c not in dr.used and c in ran)
                if unused:
                    what = "blanket `# noqa`" if unused == ["(all)"] else ", ".join(unused)
                    extra.append(
                        Diagnostic(
                            UNUSED_NOQA, names[UNUSED_NOQA],
                            f"unused suppression ({what}): no such problem on this line; remove it",
                            path, dr.line, dr.col, dr.line, dr.end_col or dr.col + 1,
                            fix=self._removal(dr, set(unused)),
                        )
                    )
        return kept + extra


    def _removal(self, dr: Directive, unused: set[str]):
        """A safe fix for an unused suppression: drop the unused codes from its list, or the whole
        directive when nothing in it is used. Offered only when the directive ends its line (no
        other comment after it) and its list holds nothing but codes."""
        from gpulint.diagnostics import SAFE, Edit, Fix

        lines = self.source.splitlines(keepends=True)
        if not 1 <= dr.line <= len(lines) or dr.invalid or dr.foreign:
            return None
        text = lines[dr.line - 1]
        body = text.rstrip("\r\n")
        start, end = dr.col - 1, dr.end_col - 1
        tail = body[end:]
        if tail.strip() and not tail.lstrip().startswith("#"):
            return None  # prose follows the directive on the line
        offset = sum(len(x) for x in lines[: dr.line - 1])
        keep = [e for e in dr.entries if e.upper() not in unused and e not in unused and _known()["names"].get(e) not in unused]
        stop = end + (len(tail) - len(tail.lstrip())) if tail.strip() else len(body)  # up to another comment
        if "(all)" in unused or not keep:
            cut = start if tail.strip() else len(body[:start].rstrip())
            new = ""
        else:
            if any(not _CODE.match(e.upper()) and e not in _known()["names"] for e in dr.entries):
                return None  # prose after the codes: leave it to the user
            cut = start
            new = ("# noqa: " if dr.kind == "noqa" else "# gpulint: ignore[") + ", ".join(keep) + ("" if dr.kind == "noqa" else "]")
            if tail.strip():
                new += "  "
        a, b = offset + cut, offset + stop
        edit = Edit(a, b, new, (dr.line, cut + 1), (dr.line, stop + 1))
        return Fix((edit,), SAFE, "Remove the unused suppression" if not new else "Remove the unused codes")


# ---------------------------------------------------------------------------------------------
# --add-noqa
# ---------------------------------------------------------------------------------------------


def _lines_that_cannot_take_a_comment(text: str) -> set[int]:
    """Lines whose end is inside a string (a multi-line string) or continued with a backslash."""
    bad: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.start[0] != tok.end[0] and tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
                if tok.type == tokenize.STRING or getattr(tokenize, "FSTRING_MIDDLE", -1) == tok.type or tok.type == getattr(tokenize, "FSTRING_START", -1):
                    bad.update(range(tok.start[0], tok.end[0]))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return set(range(1, text.count("\n") + 2))
    for i, ln in enumerate(text.splitlines(), 1):
        if ln.rstrip().endswith("\\"):
            bad.add(i)
    return bad


def add_noqa(text: str, codes_by_line: dict[int, set[str]]) -> tuple[str, int, list[int]]:
    """`# noqa: CODES` added (or merged into an existing `# noqa: ...`) on the given lines.
    Returns (new text, directives added or extended, lines that had to be left alone)."""
    sup = Suppressions(text)
    bad = _lines_that_cannot_take_a_comment(text)
    lines = text.splitlines(keepends=True)
    added = 0
    skipped = []
    for line, codes in sorted(codes_by_line.items()):
        if not 1 <= line <= len(lines):
            continue
        have = sup.by_line.get(line, set())
        if _ALL in have:
            continue
        missing = sorted(c for c in codes if c not in have)
        if not missing:
            continue
        if line in bad:
            skipped.append(line)
            continue
        raw = lines[line - 1]
        body = raw.rstrip("\r\n")
        end = raw[len(body):]
        m = next((d for d in sup.directives if d.line == line and _ALL not in d.codes), None)
        noqa = _NOQA.search(body[m.col - 1:]) if m is not None else None
        if m is not None and noqa is not None and noqa.group("colon"):
            # extend the existing list
            start = m.col - 1 + noqa.end("codes")
            existing = body[m.col - 1 + noqa.start("codes"):start].rstrip()
            stop = m.col - 1 + noqa.start("codes") + len(existing)
            body = body[:stop] + ", " + ", ".join(missing) + body[stop:]
        else:
            body = body.rstrip() + "  # noqa: " + ", ".join(missing)
        lines[line - 1] = body + end
        added += 1
    return "".join(lines), added, skipped


def add_noqa_to_files(results) -> tuple[int, list[str]]:
    """--add-noqa over the results of a check: every file with problems gets its directives.
    Returns (directives added, notes for what was left alone)."""
    from gpulint.engine import BadInput, read_source, write_atomic

    total = 0
    notes: list[str] = []
    for r in results:
        by_line: dict[int, set[str]] = {}
        for d in r.diagnostics:
            if d.code in ("GL000", INVALID_NOQA, UNUSED_NOQA):
                continue
            if d.cell is not None:
                notes.append(f"{r.path}: notebooks are left alone by --add-noqa")
                by_line = {}
                break
            by_line.setdefault(d.line, set()).add(d.code)
        if not by_line:
            continue
        try:
            src = read_source(r.path)
        except BadInput as exc:
            notes.append(f"{r.path}: {exc}")
            continue
        new, added, skipped = add_noqa(src.text, by_line)
        for line in skipped:
            notes.append(f"{r.path}:{line}: a comment cannot go on this line (inside a string or after a backslash)")
        if added:
            try:
                write_atomic(r.path, new, src.encoding)
            except (OSError, UnicodeEncodeError) as exc:
                notes.append(f"{r.path}: cannot write: {exc}")
                continue
            total += added
    return total, notes
