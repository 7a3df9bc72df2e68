"""A notebook whose text json.dumps cannot reproduce (hand-edited: one cell indented differently
from the rest, upper-case `\\u001B` escapes in an output) keeps every byte outside the sources of
the cells a fix changed. diffusers' notebooks/diffusers/training_example.ipynb (fixes11 corpus
audit): a one-line GL501 fix in one cell rewrote 222 lines of the file (every cell's indentation,
the escapes) because the writer re-dumped the whole notebook."""

from __future__ import annotations

import difflib
import json

from cli_support import gl

RAW = '''{
 "cells": [
    {
      "cell_type": "code",
      "execution_count": 1,
      "metadata": {},
      "outputs": [],
      "source": [
        "%%capture\\n",
        "!pip install -U diffusers[training]"
      ]
    },
  {
   "cell_type": "code",
   "execution_count": 2,
   "metadata": {},
   "outputs": [
    {
     "name": "stdout",
     "output_type": "stream",
     "text": [
      "\\u001B[1mwarning\\u001B[0m\\n"
     ]
    }
   ],
   "source": [
    "import torch\\n",
    "import torch.nn as nn\\n",
    "\\n",
    "device = torch.device(\\"cuda\\" if torch.cuda.is_available() else \\"cpu\\")\\n",
    "model = nn.Linear(4, 2).to(device)\\n",
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\\n",
    "for step in range(3):\\n",
    "    x = torch.ones(8, 4).to(device)\\n",
    "    loss = model(x).sum()\\n",
    "    opt.zero_grad()\\n",
    "    loss.backward()\\n",
    "    opt.step()"
   ]
  },
  {
   "cell_type": "markdown",
   "metadata": {},
   "source": ["Done: caf\\u00e9."]
  }
 ],
 "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
 "nbformat": 4,
 "nbformat_minor": 5
}
'''


def test_fix_of_a_non_reproducible_notebook_changes_only_the_fixed_line(tmp_path):
    data = json.loads(RAW)
    assert json.dumps(data, indent=1) + "\n" != RAW  # the shape under test
    path = tmp_path / "training_example.ipynb"
    path.write_text(RAW, encoding="utf-8")
    gl(["fix", "--no-cache", "--select", "GL501", str(path)], tmp_path)
    out = path.read_text(encoding="utf-8")
    changed = [ln for ln in difflib.unified_diff(RAW.splitlines(), out.splitlines(), lineterm="", n=0)
               if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    assert changed == [
        '-    "    x = torch.ones(8, 4).to(device)\\n",',
        '+    "    x = torch.ones(8, 4, device=device)\\n",',
    ], changed
    fixed = json.loads(out)
    assert fixed["cells"][0] == data["cells"][0] and fixed["cells"][2] == data["cells"][2]
    assert fixed["metadata"] == data["metadata"]
