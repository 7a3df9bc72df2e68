"""GL104 in notebooks: an expression that ends a cell is displayed by IPython, so its value is
not thrown away (third precision pass, benchmarks/PRECISION3.md: `y_preds.cpu()` alone in a
cell of mrdbourke/pytorch-deep-learning). The same expression inside a cell, or followed by `;`,
or in a plain script, is still reported, and so is a move to the device that ends a cell."""

from __future__ import annotations

import json
import re

from cli_support import gl, write

CELL_RE = r"^(?P<path>[^:]+):cell (?P<cell>\d+):(?P<line>\d+):(?P<col>\d+): (?P<code>GL\d+)"

SETUP = """import torch
import torch.nn as nn

device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Linear(1, 1).to(device)
x = torch.arange(10.0).unsqueeze(1).to(device)
with torch.inference_mode():
    y_preds = model(x)
"""


def cell(text: str) -> dict:
    lines = text.splitlines(keepends=True)
    lines[-1] = lines[-1].rstrip("\n")
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": lines}


def notebook(*cells: str) -> str:
    nb = {"cells": [cell(c) for c in cells], "metadata": {"language_info": {"name": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(nb, indent=1) + "\n"


def gl104(tmp_path, name: str, content: str) -> list[tuple[int, int]]:
    write(tmp_path, {name: content})
    r = gl(["check", "--no-cache", "--select", "GL104", name], tmp_path)
    if name.endswith(".py"):
        return [(0, int(m.group(1))) for m in re.finditer(r"^[^:]+:(\d+):\d+: GL104", r.stdout, re.MULTILINE)]
    return [(int(m["cell"]), int(m["line"])) for m in re.finditer(CELL_RE, r.stdout, re.MULTILINE)]


def test_move_that_ends_a_cell_is_displayed_not_discarded(tmp_path):
    assert gl104(tmp_path, "a.ipynb", notebook(SETUP, "y_preds.cpu()")) == []
    # comments and blank lines after it do not change what IPython shows
    assert gl104(tmp_path, "b.ipynb", notebook(SETUP, "y_preds.cpu()\n# on the host now\n\n")) == []
    # the last cell of the notebook too, and a move that is the last statement of a longer cell
    assert gl104(tmp_path, "c.ipynb", notebook(SETUP + "y_preds.cpu()")) == []


def test_move_inside_a_cell_or_silenced_is_still_reported(tmp_path):
    assert gl104(tmp_path, "d.ipynb", notebook(SETUP, "y_preds.cpu()\nprint(y_preds)")) == [(2, 1)]
    assert gl104(tmp_path, "e.ipynb", notebook(SETUP, "y_preds.cpu();", "print(1)")) == [(2, 1)]
    # inside a loop at the end of the cell: nothing is displayed
    assert gl104(tmp_path, "f.ipynb", notebook(SETUP, "for _ in range(2):\n    y_preds.cpu()")) == [(2, 2)]
    # a move to the device that ends a cell is the bug, displayed or not
    assert gl104(tmp_path, "h.ipynb", notebook(SETUP, "x.to(device)")) == [(2, 1)]
    # a plain script has no display
    assert gl104(tmp_path, "g.py", SETUP + "y_preds.cpu()\n") == [(0, 9)]
