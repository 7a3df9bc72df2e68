"""Facts about the set of files one run checks, read from their text before any file is analysed.

Only a byte search: nothing is parsed, imported or run. Today one fact: a file of the run sets a
default tensor type or device that may be CUDA (`torch.set_default_tensor_type(
'torch.cuda.FloatTensor')` in a project's launcher, `torch.set_default_device(device)`), which
makes the factories of every other module of the project build tensors there (ALAE's `launcher.run`,
NeuS, aster: PRECISION26 A1, P33-A1). The engine already honours such a call within one file.
"""

from __future__ import annotations

import os
import re
import stat

_CALL = re.compile(rb"set_default_(?:tensor_type|device)\s*\(\s*([^)\n]*)")
# an argument that names the host whatever runs it: a CPU tensor type or the "cpu" device, written out
_HOST_ARG = re.compile(
    rb"""^(?:["']?(?:torch\.)?(?:float|double|half|bfloat16|long|int|short|byte|char|bool)tensor["']?"""
    rb"""|["']cpu["']|torch\.device\(\s*["']cpu["']\s*\))\s*$"""
)
_MAX_BYTES = 8 * 1024 * 1024


def _read_regular(path) -> bytes | None:
    """The first bytes of a regular file; None for anything else (a FIFO, a device, a folder: never
    waited on, since the file is opened without blocking and checked before it is read) or when it
    cannot be read. Its own check reports such a file."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(_MAX_BYTES)
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


def names_host(arg: bytes | str) -> bool:
    """`arg`, the source text of the argument of a `set_default_tensor_type`/`set_default_device`
    call, names the host whatever runs it: a written-out CPU tensor type or the "cpu" device."""
    if isinstance(arg, str):
        arg = arg.encode("utf-8", "replace")
    return bool(_HOST_ARG.match(arg.strip().rstrip(b",").strip().lower()))


def cuda_default_setter(paths) -> str | None:
    """The first of `paths` whose code calls `set_default_tensor_type`/`set_default_device` with an
    argument that may name CUDA (anything but a written-out CPU type or device), outside comments;
    None when none does. Unreadable files are skipped (their own check reports them)."""
    for path in paths:
        raw = _read_regular(path)
        if raw is None:
            continue
        if b"set_default_" not in raw:
            continue
        for found in _CALL.finditer(raw):
            start = raw.rfind(b"\n", 0, found.start()) + 1
            if b"#" in raw[start:found.start()]:
                continue  # commented out
            if names_host(found.group(1)):
                continue
            return str(path)
    return None


# files and folders that mark the root of a project (a repository, a package, a script folder)
_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "environment.yml",
            "README.md", "README.rst", "README.txt", "README")


def project_root(path: str, cache: dict | None = None) -> str:
    """The nearest folder above `path` (a file) that holds a project marker (`.git`,
    `pyproject.toml`, `setup.py`, a README, ...); the file's own folder when none does.
    `cache` keeps, per folder, whether it holds a marker."""
    cache = {} if cache is None else cache
    start = os.path.dirname(os.path.abspath(path))
    d = start
    while True:
        marked = cache.get(d)
        if marked is None:
            try:
                names = set(os.listdir(d))
            except OSError:
                names = set()
            marked = cache[d] = any(m in names for m in _MARKERS)
        if marked:
            return d
        up = os.path.dirname(d)
        if up == d:
            return start
        d = up


def cuda_default_projects(paths, cache: dict | None = None) -> dict[str, str]:
    """{project root: a file of that project, among `paths`, that may set a CUDA default tensor
    type}: the fact holds for the files of the same project only (a folder of unrelated
    repositories checked in one run keeps them apart). `cache` is `project_root`'s, which the
    caller may reuse to find the roots of the other files."""
    cache = {} if cache is None else cache
    out: dict[str, str] = {}
    for path in paths:
        path = str(path)
        if cuda_default_setter([path]) is not None:
            out.setdefault(project_root(path, cache), path)
    return out
