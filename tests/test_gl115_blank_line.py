"""GL115 moves `os.environ["CUDA_VISIBLE_DEVICES"] = ...` above `import torch`. When the statement
opened a paragraph (the file's first line, after a blank line, or a notebook cell's first line), the
blank line that followed it goes with it: Autoformer's predict.ipynb (fixes11 corpus audit) had
its fifth cell left starting with a blank line. A statement inside a paragraph leaves the lines
around it alone."""

from __future__ import annotations

import json

from cli_support import gl
from fixture_support import fix

SCRIPT = '''import os
import torch

print(torch.cuda.is_available())

os.environ["CUDA_VISIBLE_DEVICES"] = "0"

model = torch.nn.Linear(4, 2)
'''


def test_paragraph_statement_takes_its_blank_line():
    out = fix(SCRIPT, {"GL115"}, unsafe=True).text
    assert out == '''import os
os.environ["CUDA_VISIBLE_DEVICES"] = "0"
import torch

print(torch.cuda.is_available())

model = torch.nn.Linear(4, 2)
''', out


def test_statement_inside_a_paragraph_leaves_the_lines_around_it():
    text = SCRIPT.replace('print(torch.cuda.is_available())\n\nos.environ', 'print(torch.cuda.is_available())\nos.environ')
    out = fix(text, {"GL115"}, unsafe=True).text
    assert 'print(torch.cuda.is_available())\n\nmodel = ' in out, out


def test_notebook_cell_does_not_start_blank(tmp_path):
    cells = [
        "import os\nimport torch\nprint(torch.cuda.is_available())",
        'os.environ["CUDA_VISIBLE_DEVICES"] = "0"\n\nfor i in range(2):\n    print(i)',
    ]
    nb = {
        "cells": [
            {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": c.splitlines(True)}
            for c in cells
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 4,
    }
    path = tmp_path / "predict.ipynb"
    path.write_text(json.dumps(nb, indent=1) + "\n", encoding="utf-8")
    gl(["fix", "--no-cache", "--unsafe-fixes", "--select", "GL115", str(path)], tmp_path)
    fixed = json.loads(path.read_text(encoding="utf-8"))
    first = "".join(fixed["cells"][0]["source"])
    second = "".join(fixed["cells"][1]["source"])
    assert first.startswith('import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\nimport torch\n'), first
    assert second == "for i in range(2):\n    print(i)", repr(second)
