"""GL102's fix introduces `device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`
after the file's leading imports. `torch` must be bound THERE: the fix imports it itself when the
only `import torch` of the file is inside `if __name__ == "__main__":` (nnUNet's
nnunetv2/inference/examples.py), further down after other statements (pytorch/examples'
distributed/rpc/batch/reinforce.py: `warnings.filterwarnings(...)` between the stdlib imports and
`import torch`), or in a later notebook cell (glow-tts inference.ipynb, taming-transformers.ipynb:
the first cell imports `sys` and calls `sys.path.append` before `import torch`). fixes11 found all
four writing a header that raises NameError on its first line."""

from __future__ import annotations

import ast

import pytest

from fixture_support import fix


def _fixed(text: str) -> str:
    out = fix(text, {"GL102"}, unsafe=True).text
    assert out != text, "GL102 offered no fix"
    compile(out, "fixed.py", "exec")
    return out


def _torch_bound_before_header(out: str) -> bool:
    """Every module-level statement before the header's line: does one bind `torch`?"""
    tree = ast.parse(out)
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and "cuda.is_available()" in ast.unparse(stmt.value):
            return False
        if isinstance(stmt, ast.Import) and any(a.asname is None and a.name.split(".")[0] == "torch" for a in stmt.names):
            return True
    raise AssertionError("no header")


IMPORT_UNDER_MAIN = '''if __name__ == '__main__':
    import torch
    from torch import nn

    model = nn.Linear(4, 2).cuda()
    for step in range(2):
        out = model(torch.randn(3, 4).cuda())
        print(out.sum().item())
'''

IMPORT_AFTER_STATEMENTS = '''import argparse
import os
import warnings

warnings.filterwarnings("ignore", message="a deprecated thing")

import torch
import torch.nn as nn

model = nn.Linear(4, 2).cuda()
for step in range(2):
    out = model(torch.randn(3, 4).cuda())
    print(out.sum().item())
'''

ALREADY_BOUND = '''import sys
import torch as th
import torch.nn as nn

model = nn.Linear(4, 2).cuda()
for step in range(2):
    out = model(th.randn(3, 4).cuda())
    print(out.sum().item())
'''


@pytest.mark.parametrize("text", [IMPORT_UNDER_MAIN, IMPORT_AFTER_STATEMENTS], ids=["under-main", "after-statements"])
def test_header_imports_torch_when_the_file_binds_it_only_later(text):
    out = _fixed(text)
    assert _torch_bound_before_header(out), out
    # the rest of the file is unchanged apart from the routed sites
    assert out.count(".to(device)") == 2 and ".cuda()" not in out


@pytest.mark.parametrize("text", [IMPORT_UNDER_MAIN, IMPORT_AFTER_STATEMENTS], ids=["under-main", "after-statements"])
def test_fixed_file_runs_on_a_cpu_machine(text):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("the point is the CPU fallback")
    exec(compile(_fixed(text), "fixed.py", "exec"), {"__name__": "__main__"})


def test_torch_bound_by_the_leading_imports_is_reused_under_its_alias():
    out = _fixed(ALREADY_BOUND)
    assert 'device = th.device("cuda" if th.cuda.is_available() else "cpu")' in out
    assert "import torch\n" not in out


def test_notebook_whose_first_code_cell_imports_torch_late(tmp_path):
    import json

    from cli_support import gl

    cells = [
        "import sys\n\nsys.path.append('./waveglow/')\n\nimport numpy as np\nimport torch\n\nmodel = torch.nn.Linear(4, 2)\n_ = model.cuda().eval()",
        "x = torch.randn(3, 4).cuda()\nfor _ in range(2):\n    print(model(x).sum().item())",
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
    path = tmp_path / "inference.ipynb"
    path.write_text(json.dumps(nb, indent=1) + "\n", encoding="utf-8")
    gl(["fix", "--no-cache", "--unsafe-fixes", "--select", "GL102", str(path)], tmp_path)
    fixed = json.loads(path.read_text(encoding="utf-8"))
    first = "".join(fixed["cells"][0]["source"])
    assert "import sys\n\nimport torch\ndevice = torch.device(" in first, first
    assert first.index("device = torch.device(") < first.index(".to(device)")
    source = "\n".join("".join(c["source"]) for c in fixed["cells"])
    compile(source, "nb.py", "exec")


DOCSTRING_FIRST = '''"""Train a tiny model."""
if __name__ == "__main__":
    import torch

    model = torch.nn.Linear(4, 2).cuda()
    for step in range(2):
        print(model(torch.randn(3, 4).cuda()).sum().item())
'''


def test_module_docstring_stays_first():
    out = _fixed(DOCSTRING_FIRST)
    assert out.startswith('"""Train a tiny model."""\n')
    assert ast.get_docstring(ast.parse(out)) == "Train a tiny model."
    assert _torch_bound_before_header(out), out
