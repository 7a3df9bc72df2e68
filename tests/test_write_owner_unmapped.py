"""The atomic writer gives the temporary file the original owner (best effort). The fixes13 bad-input
run, under a user namespace where the files' owner has no id (as in rootless containers, where such
files show as `nobody`), found every fix refused with `GL000 cannot write the fixed file: [Errno 22]
Invalid argument`: os.chown raises EINVAL there, and only PermissionError was tolerated. Any OSError
of the ownership copy is now ignored; the content and the permission bits are still written.

The same run showed a FIFO named `.ipynb` reported as "not a regular file" while a FIFO `.py` got
"is not a regular file (a FIFO); not read": the notebook reader had its own stat-then-open (a FIFO
swapped in between would block the blocking open). Notebooks now go through the .py reader."""

from __future__ import annotations

import errno
import stat

import gpulint.engine
from cli_support import MOVE, MOVE_FIXED, gl, write


def test_fix_is_written_when_chown_raises_einval(tmp_path, monkeypatch):
    write(tmp_path, {"a.py": MOVE})
    (tmp_path / "a.py").chmod(0o640)

    def unmapped(*a, **k):
        raise OSError(errno.EINVAL, "Invalid argument")

    monkeypatch.setattr(gpulint.engine.os, "chown", unmapped)
    r = gl(["fix", "--no-cache", "-j", "1", "."], tmp_path)
    assert " GL000 " not in r.stdout, r.stdout
    assert (tmp_path / "a.py").read_text() == MOVE_FIXED
    assert stat.S_IMODE((tmp_path / "a.py").stat().st_mode) == 0o640
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".gpulint-")]


def test_a_fifo_notebook_gets_the_same_report_as_a_fifo_script(tmp_path):
    import os

    os.mkfifo(tmp_path / "pipe.ipynb")
    os.mkfifo(tmp_path / "pipe.py")
    r = gl(["check", "--no-cache", "-j", "1", "pipe.ipynb", "pipe.py"], tmp_path)
    lines = [ln for ln in r.stdout.splitlines() if " GL000 " in ln]
    assert len(lines) == 2, r.stdout
    assert all(ln.endswith("is not a regular file (a FIFO); not read") for ln in lines), lines


def test_a_dangling_symlink_is_named_as_such(tmp_path):
    import os

    os.symlink(tmp_path / "missing.py", tmp_path / "broken.py")
    r = gl(["check", "--no-cache", "-j", "1", "broken.py"], tmp_path)
    assert "GL000 is a broken symbolic link (its target does not exist); not read" in r.stdout, r.stdout
