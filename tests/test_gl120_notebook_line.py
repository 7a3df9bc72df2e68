"""GL120's message names the shuffling loader's line; in a notebook (checked as one script of its
code cells) that line is given in the loader's own cell, not as a line of the joined script
(seventeenth precision pass: chenyuntc/pytorch-book Chapter5 said "DataLoader at line 103")."""

from __future__ import annotations

import json

from cli_support import gl, write


def cell(text: str) -> dict:
    lines = text.splitlines(keepends=True)
    lines[-1] = lines[-1].rstrip("\n")
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": lines}


def notebook(*cells: str) -> str:
    nb = {"cells": [cell(c) for c in cells], "metadata": {"language_info": {"name": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(nb, indent=1) + "\n"


LOADER = """import torch
from torch.utils.data import DataLoader, TensorDataset

ds = TensorDataset(torch.randn(16, 4), torch.randn(16))
loader = DataLoader(ds, batch_size=4, shuffle=True)
"""
SETTER = """torch.set_default_tensor_type("torch.cuda.FloatTensor")
for x, y in loader:
    print(x.sum())
"""


def gl120(tmp_path, name: str, content: str) -> str:
    write(tmp_path, {name: content})
    r = gl(["check", "--no-cache", "--select", "GL120", "--output-format", "concise", name], tmp_path)
    return r.stdout


def test_notebook_names_the_loader_line_in_its_cell(tmp_path):
    out = gl120(tmp_path, "nb.ipynb", notebook(LOADER, "n = 3\n", SETTER))
    assert "cell 3:1:1: GL120" in out
    assert "DataLoader at cell 1, line 5 draws" in out  # as the reporter names locations (`cell 1:5`)


def test_script_keeps_the_plain_line(tmp_path):
    out = gl120(tmp_path, "train.py", LOADER + SETTER)
    assert "DataLoader at line 5 draws" in out
