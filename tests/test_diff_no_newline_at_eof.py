"""`--diff` on a file whose last line has no newline (sfujim/BCQ discrete_BCQ/DQN.py,
huggingface/pytorch-openai-transformer-lm generate.py in the fixes13 corpus audit) printed the old last line and the
new one run together (`-old+new`) and the next file's `---` header glued to the end: not a patch
`patch`/`git apply` can read. Now each such line is followed by `\\ No newline at end of file`, as
diff and git write it, and the diff applies."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from cli_support import gl, write

NO_EOL = 'import torch\nx = torch.zeros(2)\nx.to("cpu")'
SECOND = 'import torch\ny = torch.zeros(2)\ny.to("cpu")\n'


def test_diff_marks_a_missing_final_newline(tmp_path):
    write(tmp_path, {"a.py": NO_EOL, "b.py": SECOND})
    r = gl(["fix", "--diff", "a.py", "b.py"], tmp_path)
    lines = r.stdout.splitlines()
    assert '-x.to("cpu")' in lines
    assert '+x = x.to("cpu")' in lines
    assert lines.count("\\ No newline at end of file") == 2
    assert "--- a/b.py" in lines  # the next file's header starts its own line


@pytest.mark.skipif(shutil.which("patch") is None, reason="no patch program")
def test_the_diff_applies_with_patch(tmp_path):
    write(tmp_path, {"a.py": NO_EOL})
    r = gl(["fix", "--diff", "a.py"], tmp_path)
    subprocess.run(["patch", "-p1", "-s"], input=r.stdout, text=True, cwd=tmp_path, check=True)
    assert (tmp_path / "a.py").read_text() == 'import torch\nx = torch.zeros(2)\nx = x.to("cpu")'
