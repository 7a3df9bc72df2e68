"""Which files to check: walk directories, honour include/exclude patterns and .gitignore.

Each folder is walked with the settings of the configuration closest to it (see config.Resolver).
`.gitignore` files are matched in-process with `pathspec` (git's wildmatch rules, the last
matching pattern wins, a deeper .gitignore wins over a shallower one, `.git/info/exclude`
included); `git` itself is never run, so a repository's hooks or `core.fsmonitor` never execute.
A folder that cannot be listed is reported, not silently skipped.

Files named explicitly on the command line are always checked, unless `force-exclude` is set
(then excludes apply to them too, as pre-commit needs).
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Iterable

from gpulint.config import Resolver, Settings

PY_SUFFIXES = (".py", ".pyi", ".ipynb")


class MissingPath(Exception):
    pass


@dataclass(frozen=True)
class Candidate:
    path: str  # path as given / walked (used for reading)
    explicit: bool
    settings: Settings | None = field(default=None, compare=False, hash=False)


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
            if pat.startswith("./"):
                pat = pat[2:]
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


class _Includer:
    """`include` patterns: a pattern without `/` matches the file's name, one with `/` its path
    relative to the configuration's folder (gitignore-style globs)."""

    def __init__(self, patterns: Iterable[str]) -> None:
        import pathspec

        pats = list(patterns)
        self.simple = all(p.startswith("*.") and not any(c in p[2:] for c in "*?[/") for p in pats)
        self.suffixes = tuple(p[1:] for p in pats) if self.simple else ()
        self.spec = None if self.simple else pathspec.GitIgnoreSpec.from_lines(pats)

    def __call__(self, name: str, root_rel: str | None) -> bool:
        if self.simple:
            return name.endswith(self.suffixes)
        return self.spec.match_file(root_rel if root_rel is not None else name)


def realpath(path: str | os.PathLike) -> str:
    """os.path.realpath that never raises (a symlink loop resolves as far as it can)."""
    try:
        return os.path.realpath(path)
    except (OSError, RuntimeError, ValueError):
        return os.path.abspath(path)


def _rel_to(path: str, root: str) -> str | None:
    real = realpath(path)
    root = root.rstrip(os.sep) or os.sep
    if real == root:
        return ""
    if real.startswith(root.rstrip(os.sep) + os.sep):
        return os.path.relpath(real, root).replace(os.sep, "/")
    return None


# ---------------------------------------------------------------------------------------------
# .gitignore, in-process
# ---------------------------------------------------------------------------------------------


def _is_repo_root(directory: str) -> bool:
    return os.path.lexists(os.path.join(directory, ".git"))


class GitIgnore:
    """.gitignore matching without git. Specs are read once per folder."""

    def __init__(self) -> None:
        self.specs: dict[str, object | None] = {}
        self.chains: dict[str, tuple] = {}
        self.repo_of: dict[str, str | None] = {}

    def _spec(self, directory: str, *names: str):
        key = os.path.join(directory, *names)
        if key not in self.specs:
            spec = None
            try:
                with open(key, "rb") as fh:
                    raw = fh.read(2**20)
                import pathspec

                lines = raw.decode("utf-8", errors="replace").splitlines()
                if any(ln.strip() and not ln.lstrip().startswith("#") for ln in lines):
                    spec = pathspec.GitIgnoreSpec.from_lines(lines)
            except (OSError, ValueError):
                spec = None
            self.specs[key] = spec
        return self.specs[key]

    def repo_root(self, directory: str) -> str | None:
        if directory not in self.repo_of:
            parent = os.path.dirname(directory)
            if _is_repo_root(directory):
                self.repo_of[directory] = directory
            elif parent == directory:
                self.repo_of[directory] = None
            else:
                self.repo_of[directory] = self.repo_root(parent)
        return self.repo_of[directory]

    def chain(self, directory: str) -> tuple:
        """((base folder, spec), ...) that apply inside a folder, deepest last; () outside a
        repository (a .gitignore means nothing to git there)."""
        directory = os.path.abspath(directory)
        if directory in self.chains:
            return self.chains[directory]
        repo = self.repo_root(directory)
        if repo is None:
            out: tuple = ()
        elif directory == repo:
            out = tuple(
                (directory, s)
                for s in (self._spec(directory, ".git", "info", "exclude"), self._spec(directory, ".gitignore"))
                if s is not None
            )
        else:
            spec = self._spec(directory, ".gitignore")
            parent = self.chain(os.path.dirname(directory))
            out = parent + (((directory, spec),) if spec is not None else ())
        self.chains[directory] = out
        return out

    def ignored(self, path: str, is_dir: bool, chain: tuple | None = None) -> bool:
        path = os.path.abspath(path)
        if chain is None:
            chain = self.chain(os.path.dirname(path))
        for base, spec in reversed(chain):  # the deepest .gitignore that has a say wins
            rel = os.path.relpath(path, base).replace(os.sep, "/")
            if is_dir:
                rel += "/"
            res = spec.check_file(rel)
            if res.include is not None:
                return bool(res.include)
        return False

    def ignored_anywhere(self, path: str) -> bool:
        """A path, or one of the folders above it (inside its repository), is ignored."""
        path = os.path.abspath(path)
        repo = self.repo_root(os.path.dirname(path))
        if repo is None:
            return False
        if self.ignored(path, os.path.isdir(path)):
            return True
        cur = os.path.dirname(path)
        while cur != repo and cur.startswith(repo):
            if self.ignored(cur, True):
                return True
            cur = os.path.dirname(cur)
        return False


# ---------------------------------------------------------------------------------------------
# the walk
# ---------------------------------------------------------------------------------------------


def _as_resolver(settings: Settings | Resolver) -> Resolver:
    if isinstance(settings, Resolver):
        return settings
    r = Resolver.__new__(Resolver)  # one fixed Settings for everything (API compatibility)
    r.explicit = settings.config_path or Path("<settings>")
    r.trusted = settings
    r.warnings = []
    r.problems = []
    return r


_EXCLUDERS: dict[int, tuple] = {}


def _tools(s: Settings) -> tuple[_Excluder, _Includer, str]:
    key = id(s)
    got = _EXCLUDERS.get(key)
    if got is None or got[3] is not s:
        got = (_Excluder(s.all_excludes), _Includer(s.all_includes), realpath(s.root), s)
        _EXCLUDERS[key] = got
    return got[0], got[1], got[2]


def force_excluded(path: str, s: Settings, git: GitIgnore | None = None) -> bool:
    """An explicitly named path that `exclude`/`extend-exclude` (or .gitignore) would have left
    out of a walk: its own name, a folder above it below the config's folder, or its path."""
    excluded, _, root = _tools(s)
    rel = _rel_to(path, root)
    parts = (rel.split("/") if rel else []) if rel is not None else [os.path.basename(os.path.abspath(path))]
    for i, name in enumerate(parts):
        sub = "/".join(parts[: i + 1])
        if excluded(name, sub, sub if rel is not None else None):
            return True
    if s.respect_gitignore and git is not None and git.ignored_anywhere(path):
        return True
    return False


def discover(paths: Iterable[str], settings: Settings | Resolver, problems: list[str] | None = None) -> list[Candidate]:
    """The files to check, each with its settings. A directory named on the command line is
    walked even when an exclude pattern matches it (only what is below it is matched); a named
    file is always checked unless `force-exclude` is on. Folders that cannot be listed are
    added to `problems` (by default the resolver's `problems` list)."""
    resolver = _as_resolver(settings)
    if problems is None:
        problems = getattr(resolver, "problems", None)
    paths = list(paths)
    git = GitIgnore()
    out: list[Candidate] = []
    for p in paths:
        try:
            os.lstat(p)
        except (FileNotFoundError, NotADirectoryError):
            raise MissingPath(p)
        except OSError:
            # it may exist but cannot be looked at (a folder above it without search
            # permission): the engine reports it as GL000 like any unreadable file
            out.append(Candidate(p, True, resolver.for_path(p)))
            continue
        if os.path.isdir(p):
            top = resolver.for_path(p)
            if top.force_exclude and force_excluded(p, top, git):
                continue
            out.extend(_walk(p, resolver, git, problems))
        else:
            s = resolver.for_path(p)
            if s.force_exclude and force_excluded(p, s, git):
                continue
            out.append(Candidate(p, True, s))
    if len(paths) == 1:
        return out  # one path: every candidate is already unique
    seen = set()
    unique = []
    for c in out:
        key = realpath(c.path)
        if key in seen:
            continue
        seen.add(key)
        unique.append(c)
    return unique


def _walk(top: str, resolver: Resolver, git: GitIgnore, problems: list[str] | None) -> list[Candidate]:
    found: list[Candidate] = []

    def onerror(exc: OSError) -> None:
        if problems is not None:
            where = exc.filename or top
            problems.append(f"{where}: cannot list folder: {exc.strerror or exc}")

    for dirpath, dirnames, filenames in os.walk(top, onerror=onerror):
        s = resolver.for_dir(dirpath)
        excluded, included, root = _tools(s)
        rel_dir = os.path.relpath(dirpath, top)
        prefix = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
        top_rel = _rel_to(dirpath, root)
        root_prefix = None if top_rel is None else (top_rel + "/" if top_rel else "")
        chain = git.chain(dirpath) if s.respect_gitignore else ()
        keep = []
        for d in sorted(dirnames):
            if d == ".git":
                continue
            if excluded(d, prefix + d, None if root_prefix is None else root_prefix + d):
                continue
            if chain and git.ignored(os.path.join(dirpath, d), True, chain):
                continue
            keep.append(d)
        dirnames[:] = keep
        for f in sorted(filenames):
            rr = None if root_prefix is None else root_prefix + f
            if not included(f, rr):
                continue
            if excluded(f, prefix + f, rr):
                continue
            full = os.path.join(dirpath, f)
            if chain and git.ignored(full, False, chain):
                continue
            found.append(Candidate(full, False, s))
    return found


def per_file_ignored(display_path: str, settings: Settings) -> list[str]:
    """Selectors ignored for one file by `per-file-ignores`: gitignore-style globs (pathspec)
    relative to the config's folder; a pattern starting with `!` applies to the files it does
    NOT match (ruff's negation)."""
    if not settings.per_file_ignores:
        return []
    import pathspec

    rel = _rel_to(display_path, realpath(settings.root))
    if rel is None:
        rel = PurePosixPath(display_path.replace(os.sep, "/")).as_posix()
    out: list[str] = []
    for pat, codes in settings.per_file_ignores.items():
        negate = pat.startswith("!")
        body = pat[1:] if negate else pat
        spec = _PFI_SPECS.get(body)
        if spec is None:
            spec = _PFI_SPECS[body] = pathspec.GitIgnoreSpec.from_lines([body])
        hit = spec.match_file(rel)
        if hit != negate:
            out.extend(codes)
    return out


_PFI_SPECS: dict[str, object] = {}


def _rel_to_root(path: Path, root: Path) -> str | None:
    """A path relative to a folder (resolved, symlink loops tolerated), or None when outside."""
    return _rel_to(str(path), realpath(root))
