"""Which files to check: walk directories, honour excludes and .gitignore.

Files named explicitly on the command line are always checked.
"""

from __future__ import annotations

import fnmatch
import os
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


def _excluded(
    rel_parts: tuple[str, ...], rel: str, root_rel: str | None, patterns: list[str], top_depth: int = 0
) -> bool:
    """Name patterns (`build`) match any component below the walked directory; path patterns
    (`tests/fixtures`) match the path, or one of its folders below the walked directory, relative
    to the walked directory or to the config's folder. A directory named on the command line is
    walked even when it is itself excluded (`top_depth`: its depth below the config's folder)."""
    for pat in patterns:
        pat = pat.rstrip("/")
        if "/" in pat:
            if fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(rel, pat + "/*"):
                return True
            if root_rel is not None:
                parts = root_rel.split("/")
                for depth in range(max(top_depth, 0) + 1, len(parts) + 1):
                    if fnmatch.fnmatch("/".join(parts[:depth]), pat):
                        return True
        elif any(fnmatch.fnmatch(part, pat) for part in rel_parts):
            return True
    return False


def _rel_to_root(path: Path, root: Path) -> str | None:
    try:
        return PurePosixPath(path.resolve().relative_to(root)).as_posix()
    except ValueError:
        return None


def discover(paths: Iterable[str], settings: Settings) -> list[Candidate]:
    patterns = settings.all_excludes
    out: list[Candidate] = []
    walked: list[str] = []
    for p in paths:
        if not os.path.lexists(p):
            raise MissingPath(p)
        if os.path.isdir(p):
            top = _rel_to_root(Path(p), settings.root)
            top_depth = 0 if top in (None, ".", "") else len(top.split("/"))
            for dirpath, dirnames, filenames in os.walk(p):
                rel_dir = os.path.relpath(dirpath, p)
                base_parts = () if rel_dir == "." else tuple(Path(rel_dir).parts)
                keep = []
                for d in sorted(dirnames):
                    parts = base_parts + (d,)
                    root_rel = _rel_to_root(Path(dirpath) / d, settings.root)
                    if _excluded(parts, "/".join(parts), root_rel, patterns, top_depth):
                        continue
                    keep.append(d)
                dirnames[:] = keep
                for f in sorted(filenames):
                    if not f.endswith(PY_SUFFIXES):
                        continue
                    parts = base_parts + (f,)
                    full = os.path.join(dirpath, f)
                    root_rel = _rel_to_root(Path(full), settings.root)
                    if _excluded(parts, "/".join(parts), root_rel, patterns, top_depth):
                        continue
                    walked.append(full)
        else:
            out.append(Candidate(p, True))
    if walked and settings.respect_gitignore:
        ignored = _git_ignored(walked)
        walked = [w for w in walked if w not in ignored]
    out.extend(Candidate(w, False) for w in walked)
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


def _git_ignored(files: list[str]) -> set[str]:
    """The subset of files git ignores (empty when git or a repository is not there)."""
    if shutil.which("git") is None:
        return set()
    groups: dict[str, list[str]] = {}
    for f in files:
        groups.setdefault(os.path.dirname(os.path.abspath(f)), []).append(f)
    # one git call per repository: find each group's work tree
    ignored: set[str] = set()
    by_top: dict[str, list[str]] = {}
    tops: dict[str, str | None] = {}
    for d, fs in groups.items():
        top = tops.get(d)
        if d not in tops:
            try:
                res = subprocess.run(
                    ["git", "-C", d, "rev-parse", "--show-toplevel"],
                    capture_output=True, text=True, timeout=10,
                )
                top = res.stdout.strip() if res.returncode == 0 else None
            except (OSError, subprocess.SubprocessError):
                top = None
            tops[d] = top
        if top:
            by_top.setdefault(top, []).extend(fs)
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
