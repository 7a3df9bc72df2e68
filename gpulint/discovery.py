"""Which files to check: walk directories, honour excludes and .gitignore.

Files named explicitly on the command line are always checked.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterable

from gpulint.config import Settings

PY_SUFFIXES = (".py", ".pyi")


class MissingPath(Exception):
    pass


@dataclass(frozen=True)
class Candidate:
    path: str  # path as given / walked (used for reading)
    explicit: bool


class _Excluder:
    """Exclude patterns compiled once. Name patterns (`build`, `*.egg-info`) match a file's or a
    folder's own name; path patterns (`tests/fixtures`) match its path relative to the walked
    directory or to the config's folder. Folders are pruned during the walk, so whatever is below
    an excluded folder is never looked at, and each entry only needs its own name and path tested.
    """

    def __init__(self, patterns: Iterable[str]) -> None:
        self.names: set[str] = set()
        name_globs: list[str] = []
        path_globs: list[str] = []
        for pat in patterns:
            pat = pat.rstrip("/")
            if not pat:
                continue
            if "/" in pat:
                path_globs.append(fnmatch.translate(pat))
            elif any(ch in pat for ch in "*?["):
                name_globs.append(fnmatch.translate(pat))
            else:
                self.names.add(pat)
        self.name_rx = re.compile("|".join(name_globs)) if name_globs else None
        self.path_rx = re.compile("|".join(path_globs)) if path_globs else None

    def __call__(self, name: str, rel: str, root_rel: str | None) -> bool:
        if name in self.names or (self.name_rx is not None and self.name_rx.match(name)):
            return True
        if self.path_rx is not None:
            if self.path_rx.match(rel) or (root_rel is not None and self.path_rx.match(root_rel)):
                return True
        return False


def _rel_to_root(path: Path, root: Path) -> str | None:
    try:
        return PurePosixPath(path.resolve().relative_to(root)).as_posix()
    except ValueError:
        return None


def _top_rel(directory: str, root: str) -> str | None:
    """A walked directory's path relative to the config's folder ('' for the folder itself)."""
    real = os.path.realpath(directory)
    if real == root:
        return ""
    if real.startswith(root.rstrip(os.sep) + os.sep):
        return os.path.relpath(real, root).replace(os.sep, "/")
    return None


def discover(paths: Iterable[str], settings: Settings) -> list[Candidate]:
    """The files to check. A directory named on the command line is walked even when an exclude
    pattern matches it (only what is below it is matched); a named file is always checked."""
    paths = list(paths)
    excluded = _Excluder(settings.all_excludes)
    root = os.path.realpath(settings.root)
    out: list[Candidate] = []
    walked: list[str] = []
    for p in paths:
        if not os.path.lexists(p):
            raise MissingPath(p)
        if os.path.isdir(p):
            top_rel = _top_rel(p, root)
            for dirpath, dirnames, filenames in os.walk(p):
                rel_dir = os.path.relpath(dirpath, p)
                prefix = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
                root_prefix = None if top_rel is None else (top_rel + "/" if top_rel else "") + prefix
                keep = []
                for d in sorted(dirnames):
                    if excluded(d, prefix + d, None if root_prefix is None else root_prefix + d):
                        continue
                    keep.append(d)
                dirnames[:] = keep
                for f in sorted(filenames):
                    if not f.endswith(PY_SUFFIXES):
                        continue
                    if excluded(f, prefix + f, None if root_prefix is None else root_prefix + f):
                        continue
                    walked.append(os.path.join(dirpath, f))
        else:
            out.append(Candidate(p, True))
    if walked and settings.respect_gitignore:
        ignored = _git_ignored(walked)
        if ignored:
            walked = [w for w in walked if w not in ignored]
    out.extend(Candidate(w, False) for w in walked)
    if len(paths) == 1 and len(out) == len(walked):
        return out  # one directory walked: every path is already unique
    # de-duplicate, keep order
    seen = set()
    unique = []
    for c in out:
        key = os.path.realpath(c.path)
        if key in seen:
            continue
        seen.add(key)
        unique.append(c)
    return unique


def _show_toplevel(directory: str) -> str | None:
    try:
        res = subprocess.run(
            ["git", "-C", directory, "rev-parse", "--show-toplevel"],
            capture_output=True, text=True, timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip() or None if res.returncode == 0 else None


def _git_ignored(files: list[str]) -> set[str]:
    """The subset of files git ignores (empty when git or a repository is not there)."""
    if shutil.which("git") is None:
        return set()
    # One `git rev-parse` per repository, not per folder: a folder without a `.git` entry is in
    # the same work tree as its parent.
    tops: dict[str, str | None] = {}

    def top_of(d: str) -> str | None:
        chain = []
        cur = d
        while cur not in tops:
            chain.append(cur)
            parent = os.path.dirname(cur)
            if parent == cur or os.path.lexists(os.path.join(cur, ".git")):
                tops[cur] = _show_toplevel(cur)
                chain.pop()
                break
            cur = parent
        top = tops[cur]
        for c in chain:
            tops[c] = top
        return top

    by_top: dict[str, list[str]] = {}
    for f in files:
        top = top_of(os.path.dirname(os.path.abspath(f)))
        if top:
            by_top.setdefault(top, []).append(f)
    ignored: set[str] = set()
    for top, fs in by_top.items():
        absolute = {os.path.abspath(f): f for f in fs}
        try:
            res = subprocess.run(
                ["git", "-C", top, "check-ignore", "--stdin", "-z"],
                input="\0".join(absolute) + "\0",
                capture_output=True, text=True, timeout=60,
            )
        except (OSError, subprocess.SubprocessError):
            continue
        if res.returncode not in (0, 1):
            continue
        for item in res.stdout.split("\0"):
            if item:
                original = absolute.get(os.path.abspath(os.path.join(top, item))) or absolute.get(item)
                if original:
                    ignored.add(original)
    return ignored


def per_file_ignored(display_path: str, settings: Settings) -> list[str]:
    """Selectors ignored for one file by `per-file-ignores` (globs relative to the config's folder)."""
    if not settings.per_file_ignores:
        return []
    rel = _rel_to_root(Path(display_path), settings.root) or PurePosixPath(display_path).as_posix()
    base = os.path.basename(rel)
    out: list[str] = []
    for pat, codes in settings.per_file_ignores.items():
        if fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(base, pat) or fnmatch.fnmatch(rel, pat.rstrip("/") + "/*"):
            out.extend(codes)
    return out
