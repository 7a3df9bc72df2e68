"""In a notebook (checked as one script of its code cells) a message that names another line names
it as the reporter names locations: the cell's number in the notebook (markdown cells counted) and
the line in that cell, `cell 15, line 61`, never a line of the joined script (seventeenth precision
pass, PRECISION17.md N3: GL112, GL114, GL115, GL118, GL119, GL201, GL204, GL207, GL301, GL304,
GL401, GL404 and GL502 formatted `ctx.line_of(...)` of the joined script into their messages).

Every positive fixture of the rules whose messages name lines is rebuilt as a notebook: one code
cell per top-level statement, a markdown cell before each. Each line a message names there must map
back to the line the same message names in the `.py` fixture."""

from __future__ import annotations

import ast
import json
import re

import pytest
from fixture_support import FIXTURES, rules_for

from gpulint.engine import Options, run_text
from gpulint.notebook import process_notebook

CODES = ("GL102", "GL112", "GL114", "GL115", "GL118", "GL119", "GL120", "GL201", "GL204", "GL207",
         "GL301", "GL304", "GL401", "GL404", "GL501", "GL502")

PY_REF = re.compile(r"\blines? (\d+(?:, \d+)*)")
NB_REF = re.compile(r"\bcell (\d+), lines? (\d+(?:, \d+)*)")


def positives():
    out = []
    for code in CODES:
        for p in sorted((FIXTURES / code).glob("*.py")):
            if p.name.startswith("ok_") or p.name.endswith(".fixed.py"):
                continue
            out.append((code, p))
    return out


def as_notebook(text: str) -> tuple[str, dict[int, int]]:
    """The script as a notebook: a markdown cell, then a code cell, for each top-level statement;
    and the 1-based notebook cell number -> the script line its code cell starts at."""
    lines = text.splitlines(keepends=True)
    starts = []
    for stmt in ast.parse(text).body:
        starts.append(min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])]))
    starts[0] = 1  # the header comments go with the first statement
    cells, first_line = [], {}
    for i, s in enumerate(starts):
        end = starts[i + 1] - 1 if i + 1 < len(starts) else len(lines)
        src = lines[s - 1:end]
        while len(src) > 1 and not src[-1].strip():
            src.pop()
        src[-1] = src[-1].rstrip("\n")
        cells.append({"cell_type": "markdown", "metadata": {}, "source": [f"Step {i + 1}"]})
        cells.append({"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": src})
        first_line[len(cells)] = s
    nb = {"cells": cells, "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(nb, indent=1) + "\n", first_line


def script_lines(message: str, first_line: dict[int, int]) -> list[set[int]]:
    return [{first_line[int(c)] + int(x) - 1 for x in ats.split(", ")} for c, ats in NB_REF.findall(message)]


CASES = positives()


@pytest.mark.parametrize("code,path", CASES, ids=[f"{c}/{p.name}" for c, p in CASES])
def test_lines_named_in_a_notebook_are_cell_lines(code, path, tmp_path):
    text = path.read_text(encoding="utf-8")
    rules = rules_for([code])
    py = sorted((d.code, d.message) for d in run_text(str(path.name), text, rules, Options()).diagnostics
                if d.code == code)
    raw, first_line = as_notebook(text)
    nb_path = tmp_path / (path.stem + ".ipynb")
    nb_path.write_text(raw, encoding="utf-8")
    res = process_notebook(str(nb_path), str(nb_path), rules, Options())
    got = [d.message for d in res.diagnostics if d.code == code]
    assert len(got) == len(py)
    for msg in got:
        assert "code cell #" not in msg
        # every line the message names comes with its cell
        assert len(PY_REF.findall(msg)) == len(NB_REF.findall(msg)), msg
    # the lines named are the lines the .py messages name
    py_refs = sorted(sorted({int(x) for ats in PY_REF.findall(m) for x in ats.split(", ")}) for _, m in py)
    nb_refs = sorted(sorted(set().union(*script_lines(m, first_line))) if NB_REF.search(m) else [] for m in got)
    assert nb_refs == py_refs


def test_the_fixtures_exercise_cell_references():
    """Not vacuous: the rebuilt notebooks name lines of other cells for most of these rules."""
    seen = set()
    for code, path in CASES:
        text = path.read_text(encoding="utf-8")
        rules = rules_for([code])
        if any(PY_REF.search(d.message) for d in run_text(path.name, text, rules, Options()).diagnostics):
            seen.add(code)
    assert len(seen) >= 8, seen


def test_a_py_file_keeps_line_numbers(tmp_path):
    from gpulint import sites

    class Ctx:
        path = "train.py"
        source = "a = 1\nb = 2\nc = 3\n"

        @staticmethod
        def line_of(n):
            return n

    assert sites.line_ref(Ctx, 2) == "line 2"
    assert sites.line_refs(Ctx, [3, 1]) == "line 3, 1"


def test_code_cell_references_become_notebook_cell_numbers():
    from gpulint.notebook import cell_numbers, parse

    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# title"]},
             {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": ["x = 1"]},
             {"cell_type": "markdown", "metadata": {}, "source": ["text"]},
             {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": ["y = 2"]}]
    nb = parse(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode())
    assert cell_numbers(nb, "on code cell #2, line 1 and code cell #1, lines 1, 2") == \
        "on cell 4, line 1 and cell 2, lines 1, 2"
    assert cell_numbers(nb, "code cell #9, line 1") == "code cell #9, line 1"  # no such cell: left as it is
