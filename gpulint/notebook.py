"""Jupyter notebooks (nbformat 4, plain JSON): the code cells as one script, and back.

The code cells are joined, in order, into one script, so that a model moved in one cell and a
training loop in a later one are one flow for the analysis. Between two cells the script has a
boundary comment line. IPython syntax (`%magic`, `%%cell_magic`, `!shell`, `obj?`) is masked
with placeholders of the same length, so every other position holds. A position in the script
maps back to (cell, line in the cell), and a fixed script is split at the boundaries and written
back into the cells it came from, leaving outputs, metadata and the JSON formatting as they were.

Cells are numbered from 1 in the order of the notebook's `cells` list, markdown cells included
(the numbering ruff uses), so `train.ipynb:cell 5:3:7` is the fifth cell of the notebook.

`runnable_code(path)` gives the code cells as a plain script with IPython syntax commented out,
for `gpulint run`.
"""

from __future__ import annotations

import ast
import bisect
import json
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

BOUNDARY = "# --- gpulint: notebook cell boundary ---"
# cell magics whose body is Python (only the magic line is masked); others (%%bash, %%html,
# %%writefile, ...) are masked whole
_PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug", "pypy"}
_MAGIC_START = re.compile(r"^(?P<indent>[ \t]*)(?P<rest>(?:%|!|\?).*)$")
_HELP_END = re.compile(r"^(?P<indent>[ \t]*)(?P<rest>[\w.*\[\]()'\"]+\?{1,2})[ \t]*$")
# automagic (on by default): a line starting with the name of a package-manager line magic runs it
# (`pip install diffusers`); never Python (two names in a row)
_AUTOMAGIC = re.compile(
    r"^(?P<indent>[ \t]*)(?P<rest>(?:(?:pip|conda|mamba)[ \t]+\w"
    # IPython's automagic `cd some/dir` (`%cd`), never a Python expression (`cd is None`, `cd in x`)
    r"|cd[ \t]+(?!(?:is|in|and|or|if|else|not|for)\b)[\w./~\-]).*)$"
)
_ASSIGN_MAGIC = re.compile(r"^(?P<lhs>[ \t]*[\w.]+(?:[ \t]*,[ \t]*[\w.]+)*[ \t]*=[ \t]*)(?P<rest>(?:%|!)\S.*)$")


class NotebookError(Exception):
    """Not a notebook gpulint can read (the engine reports it as GL000)."""


@dataclass
class CodeCell:
    index: int  # 0-based index in the notebook's `cells` list
    source: str  # the cell's code as stored
    masked: str  # what the analysis sees
    as_list: bool  # stored as a list of lines (nbformat's usual form) or one string
    restore: list[tuple[str, str]] = field(default_factory=list)  # (masked line, original line)
    prefix: str = ""  # the leading indentation IPython removes from the whole cell (see dedent)


@dataclass
class Notebook:
    data: dict
    cells: list[CodeCell]
    script: str
    starts: list[int]  # 1-based script line where each code cell starts
    indent: int | None
    ensure_ascii: bool
    trailing_newline: bool
    python: bool = True  # False for notebooks of another language (R, Julia...): not checked
    raw: str = ""  # the notebook's text as read, when json.dumps cannot reproduce it (else "")

    def position(self, line: int) -> tuple[int, int]:
        """(1-based cell number in the notebook, 1-based line in that cell) of a script line."""
        if not self.cells:
            return 1, line
        i = max(bisect.bisect_right(self.starts, line) - 1, 0)
        return self.cells[i].index + 1, max(line - self.starts[i] + 1, 1)


# ---------------------------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------------------------


def _cell_text(cell: dict, where: str) -> tuple[str, bool]:
    src = cell.get("source", "")
    if isinstance(src, str):
        return src, False
    if isinstance(src, list) and all(isinstance(s, str) for s in src):
        return "".join(src), True
    raise NotebookError(f"{where}: `source` must be a string or a list of strings")


def _parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
        return True
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False


def _placeholder(indent: str, rest: str) -> str:
    """A line of the same length that Python accepts where the IPython line was."""
    if not indent:
        return "#" + rest[1:]  # a comment at the top level
    # inside a block a comment alone would leave the block empty: a constant statement
    return indent + ("0#" + rest[2:] if len(rest) >= 2 else "0")


def mask(text: str) -> tuple[str, list[tuple[str, str]]]:
    """IPython syntax replaced by same-length placeholders; and the (masked, original) lines.

    A cell that Python already parses is left alone (a `%` or `!` at the start of a line inside
    a string is not a magic)."""
    if _parses(text):
        return text, []
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    restore: list[tuple[str, str]] = []

    def body(line: str) -> tuple[str, str]:
        stripped = line.rstrip("\r\n")
        return stripped, line[len(stripped):]

    first = next((i for i, ln in enumerate(lines) if ln.strip()), None)
    whole_cell = False
    if first is not None and lines[first].lstrip().startswith("%%"):
        name = re.match(r"%%(\w*)", lines[first].lstrip()).group(1)
        whole_cell = name not in _PYTHON_CELL_MAGICS
    continued = False
    scan = _BracketScan()
    for i, line in enumerate(lines):
        code, end = body(line)
        new = None
        inside = scan.depth > 0 or scan.quote is not None  # IPython escapes start a logical line only
        if inside and not whole_cell and not continued:
            scan.feed(code)
            out.append(line)
            continue
        if whole_cell and i >= (first or 0) and code.strip():
            m = re.match(r"^([ \t]*)(.*)$", code)
            new = m.group(1) + "#" + m.group(2)[1:]
        elif continued:
            # a continuation line of a magic or shell command: a comment of the same length (its
            # own indentation is the command's layout, not Python's block structure)
            m = re.match(r"^([ \t]*)(.*)$", code)
            new = m.group(1) + "#" + m.group(2)[1:] if m.group(2) else code
        else:
            m = _MAGIC_START.match(code) or _HELP_END.match(code) or _AUTOMAGIC.match(code)
            if m:
                new = _placeholder(m.group("indent"), m.group("rest"))
            else:
                a = _ASSIGN_MAGIC.match(code)
                if a:
                    rest = a.group("rest")
                    new = a.group("lhs") + "0" + (("#" + rest[2:]) if len(rest) >= 2 else "")
        if new is not None and new != code:
            continued = code.endswith("\\") and not whole_cell
            restore.append((new, code))
            out.append(new + end)
        else:
            continued = False
            out.append(line)
            scan.feed(code)
    return "".join(out), restore


class _BracketScan:
    """How many brackets the lines read so far leave open, and whether they end inside a
    triple-quoted string (strings and comments skipped): a line read while either holds continues a
    statement, where `%` is an operator, not a magic."""

    __slots__ = ("depth", "quote")

    def __init__(self) -> None:
        self.depth = 0
        self.quote: str | None = None  # the open triple quote

    def feed(self, line: str) -> None:
        i, n = 0, len(line)
        while i < n:
            if self.quote is not None:
                j = line.find(self.quote, i)
                if j < 0:
                    return
                i = j + 3
                self.quote = None
                continue
            c = line[i]
            if c == "#":
                return
            if c in "\"'":
                if line.startswith(c * 3, i):
                    self.quote = c * 3
                    i += 3
                    continue
                j = i + 1
                while j < n and line[j] != c:
                    j += 2 if line[j] == "\\" else 1
                i = j + 1
                continue
            if c in "([{":
                self.depth += 1
            elif c in ")]}" and self.depth > 0:
                self.depth -= 1
            i += 1


def dedent(text: str) -> tuple[str, str]:
    """IPython's `leading_indent` input transformation: when a cell's first line starts with
    spaces or tabs, that whitespace is removed from every line that starts with it, and the
    cell runs. Returns (the dedented text, the prefix), or (text, "") when the cell is not of
    that form or does not parse dedented either. Only cells whose every non-blank line has the
    prefix are dedented, so the fixed cell can be indented back (`_indent`)."""
    lines = text.splitlines(keepends=True)
    if not lines:
        return text, ""
    m = re.match(r"[ \t]+", lines[0])
    if m is None or not lines[0].strip():
        return text, ""
    prefix = m.group(0)
    out = []
    for ln in lines:
        if ln.startswith(prefix):
            out.append(ln[len(prefix):])
        elif ln.strip():
            return text, ""  # a line with less indentation: not the shape this handles
        else:
            out.append(ln)
    new = "".join(out)
    if not _parses(new):
        return text, ""
    return new, prefix


def _indent(text: str, prefix: str) -> str:
    """The dedented cell's text indented back: the prefix before every non-blank line."""
    if not prefix:
        return text
    return "".join(prefix + ln if ln.strip() else ln for ln in text.splitlines(keepends=True))


def _format_of(raw: str, data: dict) -> tuple[int | None, bool, bool, bool]:
    """The json.dumps settings that reproduce a notebook's text (Jupyter writes indent=1), and
    whether they reproduce it exactly."""
    trailing = raw.endswith("\n")
    m = re.match(r"\{\r?\n([ \t]+)\"", raw)
    guesses = [len(m.group(1))] if m else [None]
    for indent in (*guesses, 1, 2, 4, None):
        for ensure_ascii in (False, True):
            out = json.dumps(data, indent=indent, ensure_ascii=ensure_ascii)
            if out + ("\n" if trailing else "") == raw:
                return indent, ensure_ascii, trailing, True
    return guesses[0] if m else 1, False, trailing, False


def is_python(data: dict) -> bool:
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    info = meta.get("language_info") if isinstance(meta.get("language_info"), dict) else {}
    lang = info.get("name")
    if not lang:
        ks = meta.get("kernelspec") if isinstance(meta.get("kernelspec"), dict) else {}
        lang = ks.get("language")
    return not isinstance(lang, str) or lang.lower() in ("python", "python3", "ipython", "")


def parse(raw: bytes) -> Notebook:
    """A notebook's code cells as one script. Raises NotebookError for what is not nbformat 4."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NotebookError(f"notebook is not valid UTF-8: byte 0x{raw[exc.start]:02x} at offset {exc.start}")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise NotebookError(f"not a Jupyter notebook: invalid JSON ({exc})")
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        if isinstance(data, dict) and "worksheets" in data:
            raise NotebookError("nbformat 3 notebooks are not supported (open and save it with Jupyter to convert it to nbformat 4)")
        raise NotebookError("not a Jupyter notebook: no `cells` list (nbformat 4)")
    major = data.get("nbformat", 4)
    if major != 4:
        raise NotebookError(f"nbformat {major} notebooks are not supported (nbformat 4 is)")
    cells: list[CodeCell] = []
    parts: list[str] = []
    starts: list[int] = []
    line = 1
    for i, cell in enumerate(data["cells"]):
        if not isinstance(cell, dict):
            raise NotebookError(f"cell {i + 1}: not a JSON object")
        if cell.get("cell_type") != "code":
            continue
        src, as_list = _cell_text(cell, f"cell {i + 1}")
        masked, restore = mask(src)
        prefix = ""
        if masked[:1] in (" ", "\t") and not _parses(masked):
            masked, prefix = dedent(masked)  # a cell indented as a whole: IPython runs it dedented
        cells.append(CodeCell(i, src, masked, as_list, restore, prefix))
        segment = masked if masked.endswith(("\n", "\r")) else masked + "\n"
        if parts:
            parts.append(BOUNDARY + "\n")
            line += 1
        starts.append(line)
        parts.append(segment)
        line += segment.count("\n") if "\n" in segment else segment.count("\r")
    indent, ensure_ascii, trailing, exact = _format_of(text, data)
    return Notebook(
        data, cells, "".join(parts), starts, indent, ensure_ascii, trailing, is_python(data), "" if exact else text
    )


# ---------------------------------------------------------------------------------------------
# writing back
# ---------------------------------------------------------------------------------------------


def _split(script: str, n: int) -> list[str]:
    lines = script.splitlines(keepends=True)
    segments: list[list[str]] = [[]]
    for ln in lines:
        if ln.rstrip("\r\n") == BOUNDARY:
            segments.append([])
        else:
            segments[-1].append(ln)
    if len(segments) != n:
        raise NotebookError("the fixes moved a cell boundary; the notebook was left unchanged")
    return ["".join(s) for s in segments]


def _unmask(text: str, restore: Sequence[tuple[str, str]]) -> str:
    if not restore:
        return text
    lines = text.splitlines(keepends=True)
    pos = 0
    for masked, original in restore:
        for j in range(pos, len(lines)):
            code = lines[j].rstrip("\r\n")
            if code == masked:
                lines[j] = original + lines[j][len(code):]
                pos = j + 1
                break
        else:
            raise NotebookError("the fixes changed a line of IPython syntax; the notebook was left unchanged")
    return "".join(lines)


def fixed_sources(nb: Notebook, script: str) -> list[str]:
    """The new source of every code cell, from a fixed script."""
    out = []
    for cell, seg in zip(nb.cells, _split(script, len(nb.cells))):
        if seg == (cell.masked if cell.masked.endswith(("\n", "\r")) else cell.masked + "\n"):
            out.append(cell.source)
            continue
        if not cell.source.endswith(("\n", "\r")) and seg.endswith("\n"):
            seg = seg[:-2] if seg.endswith("\r\n") else seg[:-1]
        out.append(_unmask(_indent(seg, cell.prefix), cell.restore))
    return out


def dumps(nb: Notebook) -> str:
    text = json.dumps(nb.data, indent=nb.indent, ensure_ascii=nb.ensure_ascii)
    return text + ("\n" if nb.trailing_newline else "")


def write_back(nb: Notebook, script: str) -> str:
    """The notebook's JSON text with the fixed script's code in its cells."""
    changed = {}
    for cell, new in zip(nb.cells, fixed_sources(nb, script)):
        if new == cell.source:
            continue
        target = nb.data["cells"][cell.index]
        target["source"] = new.splitlines(keepends=True) if cell.as_list else new
        changed[cell.index] = target["source"]
    if nb.raw and changed:
        # a notebook json.dumps does not reproduce (hand-edited indentation, upper-case escapes):
        # replace the changed cells' sources in its text, leave every other byte as it was
        spliced = _splice_sources(nb.raw, changed)
        if spliced is not None:
            return spliced
    return dumps(nb)


def _value_end(s: str, i: int) -> int:
    """End offset of the JSON value starting at s[i]."""
    c = s[i]
    if c == '"':
        return json.decoder.scanstring(s, i + 1)[1]
    if c in "[{":
        depth, j = 0, i
        while True:
            ch = s[j]
            if ch == '"':
                j = json.decoder.scanstring(s, j + 1)[1]
                continue
            if ch in "[{":
                depth += 1
            elif ch in "]}":
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
    m = re.compile(r"[^,\]\}\s]+").match(s, i)
    if m is None:
        raise ValueError(i)
    return m.end()


_WS = re.compile(r"\s*")


def _members(s: str, i: int):
    """(key, value start, value end) of the JSON object starting at s[i]."""
    assert s[i] == "{"
    i = _WS.match(s, i + 1).end()
    while s[i] != "}":
        key, i = json.decoder.scanstring(s, i + 1)
        i = _WS.match(s, i).end()
        assert s[i] == ":"
        start = _WS.match(s, i + 1).end()
        end = _value_end(s, start)
        yield key, start, end
        i = _WS.match(s, end).end()
        if s[i] == ",":
            i = _WS.match(s, i + 1).end()


def _elements(s: str, i: int):
    """(start, end) of each value of the JSON array starting at s[i]."""
    assert s[i] == "["
    i = _WS.match(s, i + 1).end()
    while s[i] != "]":
        end = _value_end(s, i)
        yield i, end
        i = _WS.match(s, end).end()
        if s[i] == ",":
            i = _WS.match(s, i + 1).end()


def _splice_sources(raw: str, changed: dict) -> str | None:
    """`raw` with the `source` of the cells in `changed` (index -> new source) replaced, in the
    layout the old value had; None when the text is not laid out as expected."""
    try:
        top = _WS.match(raw).end()
        spans = {}
        for key, start, _end in _members(raw, top):
            if key != "cells":
                continue
            for index, (c_start, _c_end) in enumerate(_elements(raw, start)):
                if index in changed:
                    spans[index] = next((a, b) for k, a, b in _members(raw, c_start) if k == "source")
        if set(spans) != set(changed):
            return None
        ascii_only = all(ord(ch) < 128 for ch in raw)
        out, pos = [], 0
        for index in sorted(spans):
            a, b = spans[index]
            new = changed[index]
            old = raw[a:b]
            if isinstance(new, str):
                text = json.dumps(new, ensure_ascii=ascii_only)
            else:
                m_open = re.match(r"\[(\s*)", old)
                m_close = re.search(r"(\s*)\]$", old)
                if not new:
                    text = "[]"
                elif old.strip("[] \t\r\n") == "":
                    return None  # no layout to follow
                else:
                    sep = m_open.group(1)
                    between = "," + sep if "\n" in sep else (", " if '", "' in old else ",")
                    text = "[" + sep + between.join(json.dumps(x, ensure_ascii=ascii_only) for x in new) + m_close.group(1) + "]"
            out.append(raw[pos:a])
            out.append(text)
            pos = b
        out.append(raw[pos:])
        result = "".join(out)
        data = json.loads(result)
        if any(data["cells"][i]["source"] != new for i, new in changed.items()):
            return None
        return result
    except (ValueError, AssertionError, IndexError, KeyError, StopIteration, TypeError):
        return None


# ---------------------------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------------------------


def runnable_code(path: str | os.PathLike) -> str:
    """The code cells of a notebook, in order, as one Python script with the IPython syntax
    (`%magic`, `!shell`, `obj?`, non-Python `%%cell` magics) commented out. Raises
    NotebookError when the file is not an nbformat-4 notebook."""
    nb = parse(Path(path).read_bytes())
    out = []
    for cell in nb.cells:
        if not cell.restore:
            src = cell.masked if cell.prefix else cell.source  # a cell indented as a whole runs dedented
            out.append(src if src.endswith("\n") or not src else src + "\n")
            continue
        originals = dict(cell.restore)
        lines = []
        for ln in _indent(cell.masked, cell.prefix).splitlines(keepends=True):
            code = ln.rstrip("\r\n")
            if code in originals:
                orig = originals[code]
                indent = orig[: len(orig) - len(orig.lstrip())]
                ln = (indent + ("pass  # " if indent else "# ") + orig.lstrip()) + ln[len(code):]
            lines.append(ln)
        text = "".join(lines)
        if cell.prefix:
            text = "".join(ln[len(cell.prefix):] if ln.startswith(cell.prefix) else ln for ln in text.splitlines(keepends=True))
        out.append(text if text.endswith("\n") else text + "\n")
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# the engine's entry point for a .ipynb file
# ---------------------------------------------------------------------------------------------


def read_notebook_bytes(path: str, limit: int) -> bytes:
    """The notebook's bytes, read as a .py file is (never blocking on a FIFO swapped in after the
    check, the same GL000 messages)."""
    from gpulint.engine import read_regular_bytes

    return read_regular_bytes(path, limit)[0]


def starts_of(script: str) -> list[int]:
    """The 1-based script line where each cell starts, from the boundary lines of a script."""
    starts = [1]
    for i, ln in enumerate(script.splitlines(), 1):
        if ln == BOUNDARY:
            starts.append(i + 1)
    return starts


_CODE_CELL_REF = re.compile(r"code cell #(\d+)\b")


def cell_numbers(nb: Notebook, message: str) -> str:
    """A message's `code cell #K` references (gpulint.sites.line_ref: the K-th code cell of the
    script) as the notebook's own cell numbers, `cell 15`, the numbering of the locations."""
    return renumber_cells(message, [c.index + 1 for c in nb.cells])


def renumber_cells(message: str, numbers: Sequence[int]) -> str:
    """`code cell #K` -> `cell N` with N = numbers[K - 1], the notebook's 1-based number of the K-th
    cell of the script (left as it is when there is no such cell)."""
    if "code cell #" not in message:
        return message

    def number(m: re.Match) -> str:
        k = int(m.group(1))
        return f"cell {numbers[k - 1]}" if 1 <= k <= len(numbers) else m.group(0)

    return _CODE_CELL_REF.sub(number, message)


def _to_cells(nb: Notebook, diags, script: str | None = None) -> None:
    """Diagnostics of a (possibly fixed) script moved to (cell, line in cell) positions."""
    if not nb.cells:
        return
    starts = starts_of(script) if script is not None else nb.starts
    if len(starts) != len(nb.cells):
        starts = nb.starts

    def where(line: int) -> tuple[int, int]:
        i = max(bisect.bisect_right(starts, line) - 1, 0)
        return nb.cells[i].index + 1, max(line - starts[i] + 1, 1)

    shift = {c.index + 1: len(c.prefix) for c in nb.cells if c.prefix}  # columns of dedented cells

    from dataclasses import replace

    for d in diags:
        d.message = cell_numbers(nb, d.message)
        cell, line = where(d.line)
        end_cell, end_line = where(d.end_line)
        d.cell, d.line = cell, line
        d.col += shift.get(cell, 0)
        if end_cell == cell:
            d.end_line = end_line
            d.end_col += shift.get(cell, 0)
        else:
            d.end_line, d.end_col = line, d.col
        if d.fix is not None:  # edit positions for reporters, in the cell's lines too
            d.fix = replace(
                d.fix,
                edits=tuple(
                    replace(e, location=(where(e.location[0])[1], e.location[1] + shift.get(where(e.location[0])[0], 0)),
                            end_location=(where(e.end_location[0])[1], e.end_location[1] + shift.get(where(e.end_location[0])[0], 0)))
                    if e.location[0] else e
                    for e in d.fix.edits
                ),
            )


def check_text(display: str, raw: bytes, rules, opts, nb: Notebook | None = None):
    """(Notebook, Outcome) for a notebook's bytes; raises BadInput / NotebookError (a BadInput
    raised for the script carries the parsed notebook as `.notebook`, for its cell position)."""
    from gpulint.engine import BadInput, run_text

    nb = nb or parse(raw)
    if not nb.python:
        return nb, None
    try:
        return nb, run_text(display, nb.script, rules, opts)
    except BadInput as exc:
        exc.notebook = nb
        raise


def process_notebook(path: str, display: str, rules, opts):
    """Check (and fix) one notebook on disk, like engine.process_file does a .py file."""
    from gpulint.diagnostics import FileResult
    from gpulint.engine import MAX_FILE_BYTES, BadInput, digest, engine_diagnostic, write_atomic

    result = FileResult(display)
    nb = None
    try:
        raw = read_notebook_bytes(path, MAX_FILE_BYTES)
        nb = parse(raw)
        outcome = check_text(display, raw, rules, opts, nb)[1]
    except NotebookError as exc:
        result.diagnostics = [engine_diagnostic(display, str(exc))]
        return result
    except BadInput as exc:
        d = engine_diagnostic(display, str(exc), exc.line, exc.col)
        if nb is not None:
            _to_cells(nb, [d])
        result.diagnostics = [d]
        return result
    except RecursionError:
        result.diagnostics = [engine_diagnostic(display, "notebook is too deeply nested to analyse")]
        return result
    st = os.stat(path)
    result.stamp = (st.st_mtime_ns, len(raw), digest(raw))
    if outcome is None:
        return result
    result.diagnostics = outcome.diagnostics
    result.applied = outcome.applied
    result.fixed = [d.code for d in outcome.fixed]
    result.notes = outcome.dropped
    _to_cells(nb, result.diagnostics, outcome.text)
    if outcome.text != nb.script:
        result.original_source = nb.script
        result.fixed_source = outcome.text
        result.cell_numbers = [c.index + 1 for c in nb.cells]  # for --diff headers
        result.stamp = None
        try:
            new_text = write_back(nb, outcome.text)
        except NotebookError as exc:
            result.fixed, result.applied, result.fixed_source = [], 0, None
            result.diagnostics.append(engine_diagnostic(display, str(exc)))
            return result
        if opts.write:
            import gpulint.engine as engine

            refused = getattr(engine, "WriteRefused", ())
            try:
                try:
                    data = write_atomic(path, new_text, "utf-8", expected=raw)  # unchanged since read?
                except TypeError:  # pragma: no cover - an engine without the content check
                    data = write_atomic(path, new_text, "utf-8")
                result.stamp = (os.stat(path).st_mtime_ns, len(data), digest(data))
            except FileNotFoundError:
                result.error = "file disappeared before the fixes could be written"
            except refused as exc:
                result.error = str(exc)
            except (OSError, UnicodeEncodeError) as exc:
                result.error = f"cannot write the fixed file: {exc}"
            if result.error:
                # nothing was written: the notebook still has every problem found in it at first
                initial = list(getattr(outcome, "initial", None) or [])
                _to_cells(nb, initial)
                result.diagnostics = initial + [engine_diagnostic(display, result.error)]
                result.fixed, result.applied, result.fixed_source = [], 0, None
    return result
