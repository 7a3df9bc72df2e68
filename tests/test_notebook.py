"""Jupyter notebooks: code cells as one flow, magics masked, cell positions, fixes written back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from cli_support import BUGGY, REPO, gl, write
from gpulint import notebook

SEED = (REPO / "examples" / "seed_tutorial.py").read_text(encoding="utf-8")
CELL_RE = r"^(?P<path>[^:]+):cell (?P<cell>\d+):(?P<line>\d+):(?P<col>\d+): (?P<code>GL\d+)"


def code_cell(lines: list[str], **extra) -> dict:
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": lines}
    cell.update(extra)
    return cell


def md(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": [text]}


def to_source(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines:
        lines[-1] = lines[-1].rstrip("\n")
    return lines


def dump(nb: dict) -> str:
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"  # Jupyter's own layout


def seed_notebook() -> tuple[dict, list[tuple[int, int]]]:
    """examples/seed_tutorial.py split into cells mid-flow (the model is moved in one cell, the
    training loop is in another), with markdown and a cell of IPython syntax between them.
    Returns the notebook and, per cell of the notebook, (first script line, last script line)
    of the code it holds (None for cells that hold no script line)."""
    lines = SEED.splitlines(keepends=True)
    cuts = [(1, 13), (14, 23), (24, 26), (27, len(lines))]  # 1-based inclusive script lines
    cells = [md("# The seed tutorial\n")]
    spans = [None]
    for i, (a, b) in enumerate(cuts):
        cells.append(code_cell(to_source("".join(lines[a - 1:b]))))
        spans.append((a, b))
        if i == 1:
            cells.append(code_cell(["%matplotlib inline\n", "!nvidia-smi\n", "%%timeit? \n"][:2]))
            spans.append(None)
            cells.append(md("Now the model.\n"))
            spans.append(None)
    nb = {
        "cells": cells,
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                     "language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return nb, spans


def _script_findings(tmp_path):
    write(tmp_path, {"seed_tutorial.py": SEED})
    out = gl(["check", "--no-cache", "seed_tutorial.py"], tmp_path).stdout
    import re

    return [(int(m[1]), int(m[2]), m[3]) for m in re.finditer(r"^seed_tutorial.py:(\d+):(\d+): (GL\d+)", out, re.M)]


def test_seed_notebook_reports_the_scripts_findings_at_cell_positions(tmp_path):
    import re

    nb, spans = seed_notebook()
    write(tmp_path, {"seed.ipynb": dump(nb)})
    expected = []
    for line, col, code in _script_findings(tmp_path):
        for cell_no, span in enumerate(spans, 1):
            if span and span[0] <= line <= span[1]:
                expected.append((cell_no, line - span[0] + 1, col, code))
    assert {"GL101", "GL102", "GL103"} <= {e[3] for e in expected}  # the loop cell's and the model cell's
    assert {e[0] for e in expected} == {6, 7}  # the model cell and the loop cell (1-based, markdown counted)
    r = gl(["check", "--no-cache", "seed.ipynb"], tmp_path)
    assert r.exit_code == 1
    got = [(int(m["cell"]), int(m["line"]), int(m["col"]), m["code"]) for m in re.finditer(CELL_RE, r.stdout, re.M)]
    assert sorted(got) == sorted(expected)
    # GL101 needs the model moved in cell 6 and the loop of cell 7: one flow
    assert any(code == "GL101" and cell == 7 for cell, _, _, code in got)
    # JSON carries the cell
    data = json.loads(gl(["check", "--no-cache", "--output-format", "json", "seed.ipynb"], tmp_path).stdout)
    assert sorted((d["cell"], d["location"]["row"], d["location"]["column"], d["code"]) for d in data) == sorted(expected)
    sarif = json.loads(gl(["check", "--no-cache", "--output-format", "sarif", "seed.ipynb"], tmp_path).stdout)
    assert sorted(r["properties"]["cell"] for r in sarif["runs"][0]["results"]) == sorted(e[0] for e in expected)


def test_directories_collect_notebooks(tmp_path):
    nb, _ = seed_notebook()
    write(tmp_path, {"nbs/seed.ipynb": dump(nb), "nbs/readme.txt": "x"})
    r = gl(["check", "--no-cache", "--show-files", "."], tmp_path)
    assert r.stdout.split() == ["nbs/seed.ipynb"]
    r = gl(["check", "--no-cache", "."], tmp_path)
    assert "nbs/seed.ipynb:cell 7:" in r.stdout


def test_fix_writes_a_valid_notebook_that_keeps_outputs_metadata_and_formatting(tmp_path):
    nb, _ = seed_notebook()
    nb["cells"][1]["outputs"] = [{"name": "stdout", "output_type": "stream", "text": ["hello é\n"]}]
    nb["cells"][1]["execution_count"] = 3
    nb["cells"][1]["metadata"] = {"tags": ["setup"], "collapsed": False}
    original = dump(nb)
    write(tmp_path, {"seed.ipynb": original})
    r = gl(["fix", "--unsafe-fixes", "--no-cache", "seed.ipynb"], tmp_path)
    assert r.exit_code == 0, r.stdout
    text = (tmp_path / "seed.ipynb").read_text(encoding="utf-8")
    fixed = json.loads(text)  # valid JSON
    assert text == dump(fixed)  # Jupyter's layout: indent 1, key order, non-ASCII kept, trailing newline
    assert fixed["nbformat"] == 4 and fixed["metadata"] == nb["metadata"]
    assert [c["cell_type"] for c in fixed["cells"]] == [c["cell_type"] for c in nb["cells"]]
    for old, new in zip(nb["cells"], fixed["cells"]):
        assert list(new) == list(old)  # key order
        assert {k: v for k, v in new.items() if k != "source"} == {k: v for k, v in old.items() if k != "source"}
        assert isinstance(new["source"], list)
    # the IPython cell and the markdown are untouched
    assert fixed["cells"][3] == nb["cells"][3] and fixed["cells"][4] == nb["cells"][4]
    # nothing left to fix, and fixing again changes nothing
    assert gl(["check", "--no-cache", "seed.ipynb"], tmp_path).exit_code == 0
    gl(["fix", "--unsafe-fixes", "--no-cache", "seed.ipynb"], tmp_path)
    assert (tmp_path / "seed.ipynb").read_text(encoding="utf-8") == text


def test_fixed_notebook_trains_when_its_cells_run_in_order(tmp_path):
    pytest.importorskip("torch")
    nb, _ = seed_notebook()
    write(tmp_path, {"seed.ipynb": dump(nb)})
    gl(["fix", "--unsafe-fixes", "--no-cache", "seed.ipynb"], tmp_path)
    code = notebook.runnable_code(tmp_path / "seed.ipynb")
    assert "# %matplotlib inline" in code and "# !nvidia-smi" in code  # IPython syntax commented out
    runner = textwrap.dedent(
        """
        import json, sys
        nb = json.load(open(sys.argv[1], encoding="utf-8"))
        ns = {"__name__": "__main__"}
        for cell in nb["cells"]:
            if cell["cell_type"] != "code":
                continue
            src = "".join(cell["source"])
            if src.lstrip().startswith(("%", "!")):
                continue  # the IPython cell
            exec(compile(src, "<cell>", "exec"), ns)
        """
    )
    p = subprocess.run([sys.executable, "-c", runner, str(tmp_path / "seed.ipynb")], capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    losses = [float(ln.rsplit(" ", 1)[1]) for ln in p.stdout.splitlines() if ln.startswith("epoch")]
    assert len(losses) == 5 and losses[-1] < losses[0]
    # runnable_code is the same program
    p2 = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert p2.returncode == 0, p2.stderr[-2000:]


def test_magics_are_masked_with_same_length_placeholders():
    src = "%load_ext autoreload\nx = !ls -la\nfor i in range(2):\n    !echo hi\n    y = i\nmodel?\n"
    masked, restore = notebook.mask(src)
    assert [len(a) for a in masked.splitlines()] == [len(b) for b in src.splitlines()]
    import ast

    ast.parse(masked)
    assert len(restore) == 4
    # a cell that is valid Python is never touched, even with a '%' line in a string
    ok = 'doc = """\n%d items\n!important\n"""\n'
    assert notebook.mask(ok) == (ok, [])
    # a non-Python cell magic masks the whole cell
    bash = "%%bash\nls -la\necho $HOME\n"
    masked, _ = notebook.mask(bash)
    assert all(ln.startswith("#") for ln in masked.splitlines())


def test_shell_line_continued_with_backslash_is_masked_whatever_its_indentation():
    # peft's token-classification notebook: `! python prep.py ... \` and an indented continuation
    src = "! python prep.py --data_dir data \\\n                 --split train \\\n    --seed 1\n\nimport torch\n"
    masked, restore = notebook.mask(src)
    import ast

    ast.parse(masked)
    assert [len(a) for a in masked.splitlines()] == [len(b) for b in src.splitlines()]
    assert len(restore) == 3 and masked.splitlines()[-1] == "import torch"


def test_automagic_wildcard_help_and_percent_operator_lines(tmp_path):
    """Shapes from real notebooks (fourth precision pass): an automagic `pip install` line
    (huggingface/notebooks diffusers), a wildcard help search (NYU-DLSP20), and a `%` operator that
    starts a continuation line inside brackets (rasbt/deeplearning-models), which is Python."""
    import ast

    src = (
        "pip install diffusers torch\n"
        "torch.*Tensor?\n"
        "%matplotlib inline\n"
        "for batch_idx in range(3):\n"
        "    print('Batch %03d'\n"
        "          %(batch_idx))\n"
        'doc = """\n%not a magic\n"""\n'
    )
    masked, restore = notebook.mask(src)
    ast.parse(masked)
    assert [len(a) for a in masked.splitlines()] == [len(b) for b in src.splitlines()]
    assert [orig for _, orig in restore] == ["pip install diffusers torch", "torch.*Tensor?", "%matplotlib inline"]
    assert "          %(batch_idx))" in masked.splitlines() and "%not a magic" in masked.splitlines()
    # `pip = 3` is Python, never masked
    assert notebook.mask("pip = 3\n%time x = pip\n")[0].splitlines()[0] == "pip = 3"
    # end to end: the notebook is checked, not GL000
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                     "source": src}], "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
          "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb))
    out = subprocess.run([sys.executable, "-m", "gpulint", "check", "--no-cache", str(path)],
                         capture_output=True, text=True, timeout=300)
    assert "GL000" not in out.stdout, out.stdout
    assert out.returncode == 0, out.stdout + out.stderr


def test_magics_are_kept_when_a_cell_is_fixed(tmp_path):
    nb = {
        "cells": [code_cell(to_source("%matplotlib inline\nimport torch\nx = torch.zeros(2)\nx.to('cpu')\n!ls\n"))],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 4,
    }
    write(tmp_path, {"m.ipynb": json.dumps(nb, indent=2)})  # another layout: indent 2, no final newline
    r = gl(["fix", "--no-cache", "m.ipynb"], tmp_path)
    assert r.exit_code == 0, r.stdout
    text = (tmp_path / "m.ipynb").read_text()
    assert not text.endswith("\n") and text.startswith('{\n  "cells"')
    assert json.loads(text)["cells"][0]["source"] == ["%matplotlib inline\n", "import torch\n", "x = torch.zeros(2)\n", "x = x.to('cpu')\n", "!ls"]


def test_bad_notebooks_are_gl000_not_tracebacks(tmp_path):
    write(tmp_path, {
        "notjson.ipynb": "{ not json",
        "v3.ipynb": json.dumps({"worksheets": [], "nbformat": 3}),
        "nocells.ipynb": "[1, 2]",
        "badsource.ipynb": json.dumps({"cells": [{"cell_type": "code", "source": 3}], "nbformat": 4}),
        "syntax.ipynb": json.dumps({"cells": [md("x"), code_cell(["x = 1\n"]), code_cell(["def f(:\n", "  pass"])], "nbformat": 4, "metadata": {}}),
    })
    r = gl(["check", "--no-cache", "."], tmp_path)
    assert r.exit_code == 1
    lines = sorted(r.stdout.splitlines()[:-1])
    assert len(lines) == 5 and all(" GL000 " in ln for ln in lines), lines
    assert any(ln.startswith("syntax.ipynb:cell 3:1:7: GL000 syntax error") for ln in lines), lines
    assert any("nbformat 3" in ln for ln in lines)


def test_other_languages_are_not_checked(tmp_path):
    nb = {"cells": [code_cell(["library(ggplot2)\n"])], "metadata": {"language_info": {"name": "R"}}, "nbformat": 4, "nbformat_minor": 4}
    write(tmp_path, {"r.ipynb": json.dumps(nb)})
    assert gl(["check", "--no-cache", "r.ipynb"], tmp_path).exit_code == 0


def test_notebook_on_stdin(tmp_path):
    nb = {"cells": [code_cell(to_source(BUGGY))], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}
    r = gl(["check", "--stdin-filename", "x.ipynb", "-"], tmp_path, input=json.dumps(nb, indent=1) + "\n")
    assert "x.ipynb:cell 1:4:7: GL103" in r.stdout
    r = gl(["fix", "--stdin-filename", "x.ipynb", "-"], tmp_path, input=json.dumps(nb, indent=1) + "\n")
    fixed = json.loads(r.stdout)
    assert "".join(fixed["cells"][0]["source"]) == BUGGY.replace('.to("cpu")', "").rstrip("\n")


def test_include_and_extend_include(tmp_path):
    write(tmp_path, {"a.py": BUGGY, "b.pyw": BUGGY, "nb.ipynb": json.dumps({"cells": [], "nbformat": 4, "metadata": {}})})
    assert gl(["check", "--show-files", "."], tmp_path).stdout.split() == ["a.py", "nb.ipynb"]
    write(tmp_path, {"pyproject.toml": '[tool.gpulint]\nextend-include = ["*.pyw"]\n'})
    assert gl(["check", "--show-files", "."], tmp_path).stdout.split() == ["a.py", "b.pyw", "nb.ipynb"]
    write(tmp_path, {"pyproject.toml": '[tool.gpulint]\ninclude = ["*.py"]\n'})
    assert gl(["check", "--show-files", "."], tmp_path).stdout.split() == ["a.py"]


def test_the_shipped_example_notebook_is_the_seed_tutorial_in_cells():
    shipped = json.loads((REPO / "examples" / "seed_tutorial.ipynb").read_text(encoding="utf-8"))
    assert shipped == seed_notebook()[0]


def test_cached_notebook_results_keep_their_cells(tmp_path):
    nb, _ = seed_notebook()
    write(tmp_path, {"seed.ipynb": dump(nb)})
    first = gl(["check", "seed.ipynb"], tmp_path).stdout
    assert list((tmp_path / ".gpulint_cache").rglob("*.json"))
    assert gl(["check", "seed.ipynb"], tmp_path).stdout == first
    assert "seed.ipynb:cell 7:" in first


def test_diff_of_a_notebook_is_per_cell(tmp_path):
    nb, _ = seed_notebook()
    write(tmp_path, {"seed.ipynb": dump(nb)})
    r = gl(["check", "--diff", "--no-cache", "seed.ipynb"], tmp_path)
    assert r.exit_code == 1
    assert "--- a/seed.ipynb:cell 6\n+++ b/seed.ipynb:cell 6\n" in r.stdout  # the GL103 fix, in the model cell
    assert "-optimizer = torch.optim.Adam(model.parameters(), lr=0.001).to('cuda')" in r.stdout
    assert "gpulint: notebook cell boundary" not in r.stdout
    assert (tmp_path / "seed.ipynb").read_text(encoding="utf-8") == dump(nb)  # nothing written


def test_json_fix_edits_of_a_notebook_are_in_cell_lines(tmp_path):
    nb, _ = seed_notebook()
    write(tmp_path, {"seed.ipynb": dump(nb)})
    data = json.loads(gl(["check", "--no-cache", "--output-format", "json", "seed.ipynb"], tmp_path).stdout)
    gl103 = next(d for d in data if d["code"] == "GL103")
    assert (gl103["cell"], gl103["location"]["row"]) == (6, 2)
    (edit,) = gl103["fix"]["edits"]
    assert edit["location"]["row"] == 2 and edit["end_location"]["row"] == 2


def test_fix_leaves_a_read_only_notebook_alone_and_writes_through_a_symlink(tmp_path):
    nb, _ = seed_notebook()
    write(tmp_path, {"real/seed.ipynb": dump(nb), "ro.ipynb": dump(nb)})
    os.symlink("real/seed.ipynb", tmp_path / "link.ipynb")
    r = gl(["fix", "--no-cache", "link.ipynb"], tmp_path)
    assert (tmp_path / "link.ipynb").is_symlink()
    assert (tmp_path / "real" / "seed.ipynb").read_text(encoding="utf-8") != dump(nb)  # the target was fixed
    os.chmod(tmp_path / "ro.ipynb", 0o444)
    r = gl(["fix", "--no-cache", "ro.ipynb"], tmp_path)
    assert r.exit_code == 1 and "read-only" in r.stdout
    assert (tmp_path / "ro.ipynb").read_text(encoding="utf-8") == dump(nb)
    assert "ro.ipynb:cell 6:2:13: GL103" in r.stdout  # still reported at its cell: nothing was fixed


def test_cell_indented_as_a_whole_is_checked_dedented_like_ipython(tmp_path):
    # mrdbourke/pytorch-deep-learning notebooks: a code cell whose every line starts with one
    # space. IPython removes the first line's indentation from every line and runs it; gpulint
    # used to report the whole notebook as GL000.
    import re

    nb = {
        "cells": [
            code_cell(["import torch\n"]),
            code_cell([" # Make sure we have a GPU\n", ' device = "cuda" if torch.cuda.is_available() else "cpu"\n',
                       " \n", ' state = torch.load("w.pt")\n', " device"]),
            code_cell(["  !ls\n", "  for i in range(2):\n", "      z = torch.ones(2).to(device)\n"]),
        ],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    }
    write(tmp_path, {"ind.ipynb": dump(nb)})
    r = gl(["check", "--no-cache", "--select", "GL110,GL501", "ind.ipynb"], tmp_path)
    got = sorted((int(m["cell"]), int(m["line"]), int(m["col"]), m["code"]) for m in re.finditer(CELL_RE, r.stdout, re.M))
    # columns are the cell's own (the indentation counted): `torch` at index 9 of ` state = torch...`
    assert got == [(2, 4, 10, "GL110"), (3, 3, 11, "GL501")], r.stdout
    r = gl(["fix", "--unsafe-fixes", "--no-cache", "--select", "GL110,GL501", "ind.ipynb"], tmp_path)
    cells = json.loads((tmp_path / "ind.ipynb").read_text())["cells"]
    # the fixed cells keep their indentation and their IPython lines
    assert "".join(cells[1]["source"]) == (
        ' # Make sure we have a GPU\n device = "cuda" if torch.cuda.is_available() else "cpu"\n'
        '\n state = torch.load("w.pt", map_location=device)\n device'
    )
    assert "".join(cells[2]["source"]) == "  !ls\n  for i in range(2):\n      z = torch.ones(2, device=device)\n"
    # `gpulint run`'s script runs the cells dedented, as IPython does
    code = notebook.runnable_code(tmp_path / "ind.ipynb")
    compile(code, "ind", "exec")
    assert "\nstate = torch.load(" in code and "\nfor i in range(2):\n    z = " in code


def test_cell_with_a_less_indented_line_is_not_dedented():
    assert notebook.dedent(" a = 1\nb = 2\n") == (" a = 1\nb = 2\n", "")
    assert notebook.dedent("\n a = 1\n") == ("\n a = 1\n", "")  # IPython looks at the first line only
    assert notebook.dedent("  if x:\n      y = 1\n\n  z = 2\n") == ("if x:\n    y = 1\n\nz = 2\n", "  ")


def test_automagic_cd_line_is_masked_and_python_named_cd_is_not():
    """graph-neural-pde's notebook (PRECISION40 P40-A2): a cell starts with `cd workspace/src/`,
    IPython's automagic `%cd`; a variable named `cd` in an expression stays Python."""
    import ast

    src = "cd workspace/graph-neural-pde/src/\nimport torch\ncd = 3\ncd is None\nprint(cd in [3])\n"
    masked, restore = notebook.mask(src)
    ast.parse(masked)
    assert [orig for _, orig in restore] == ["cd workspace/graph-neural-pde/src/"]
    assert masked.splitlines()[2:4] == ["cd = 3", "cd is None"]
