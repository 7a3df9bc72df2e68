"""Running the engine over many files: parallel workers and the result cache."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Sequence

from gpulint import __version__
from gpulint.config import Settings
from gpulint.diagnostics import SAFE, Diagnostic, FileResult
from gpulint.discovery import Candidate, per_file_ignored
from gpulint.engine import Options, process_file
from gpulint.engine import digest as content_digest
from gpulint.registry import Registry

# Worker state: rule instances by code, built once per process.
_WORKER: dict = {}


def display_path(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel


def use_registry(rule_dirs: tuple[str, ...], registry: Registry) -> None:
    """Make the workers (this process, and forked ones) use the registry the caller resolved.

    Without this, a process that runs gpulint more than once (tests, an editor integration)
    kept the registry of its first run, and a rule added since was not found in it.
    """
    if _WORKER.get(rule_dirs) is not registry:
        _WORKER[rule_dirs] = registry
        _WORKER[("inst", rule_dirs)] = {}


def _rules_for(codes: tuple[str, ...], rule_dirs: tuple[str, ...]):
    key = rule_dirs
    reg = _WORKER.get(key)
    if reg is None:
        reg = Registry.load([Path(d) for d in rule_dirs])
        use_registry(key, reg)
    instances = _WORKER.setdefault(("inst", key), {})
    out = []
    for code in codes:
        inst = instances.get(code)
        if inst is None:
            rule = reg.by_code(code)
            if rule is None:
                raise RuntimeError(f"rule {code} is not in the worker's registry")
            inst = instances[code] = rule()
        out.append(inst)
    return out


def _work(item: tuple[str, str, tuple[str, ...], tuple[str, ...], Options]) -> FileResult:
    path, display, codes, rule_dirs, opts = item
    return process_file(path, display, _rules_for(codes, rule_dirs), opts)


class Cache:
    """Per-file results keyed by (mtime, size, content hash), for one settings fingerprint."""

    def __init__(self, directory: Path, fingerprint: str) -> None:
        self.file = directory / __version__ / f"{fingerprint}.json"
        self.directory = directory
        self.entries: dict[str, dict] = {}
        self.dirty = False
        try:
            with open(self.file, encoding="utf-8") as fh:
                data = json.load(fh)
            if isinstance(data, dict):
                self.entries = data
        except (OSError, ValueError):
            self.entries = {}

    digest = staticmethod(content_digest)

    def lookup(self, path: str) -> list[Diagnostic] | None:
        key = os.path.abspath(path)
        entry = self.entries.get(key)
        if entry is None:
            return None
        try:
            st = os.stat(path)
        except OSError:
            return None
        if entry["mtime"] != st.st_mtime_ns or entry["size"] != st.st_size:
            try:
                with open(path, "rb") as fh:
                    data = fh.read()
            except OSError:
                return None
            if self.digest(data) != entry["hash"]:
                return None
            entry["mtime"], entry["size"] = st.st_mtime_ns, st.st_size
            self.dirty = True
        return [Diagnostic.from_dict({**d, "path": display_path(path)}) for d in entry["diagnostics"]]

    def store(self, path: str, result: FileResult) -> None:
        if any(d.code == "GL000" for d in result.diagnostics):
            return  # unreadable / unparseable files are always re-checked
        if result.stamp is None:
            return  # not known which bytes the diagnostics belong to
        # the stamp of the bytes the engine read: reading the file again here would cost a
        # second read, and would pair these diagnostics with a newer content if it changed
        mtime, size, digest = result.stamp
        self.entries[os.path.abspath(path)] = {
            "mtime": mtime,
            "size": size,
            "hash": digest,
            "diagnostics": [d.to_dict() for d in result.diagnostics],
        }
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            gi = self.directory / ".gitignore"
            if not gi.exists():
                gi.write_text("# Created by gpulint\n*\n", encoding="utf-8")
            fd, tmp = tempfile.mkstemp(dir=self.file.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(self.entries, fh, separators=(",", ":"))
            os.replace(tmp, self.file)
        except OSError:
            pass  # a cache that cannot be written is not an error


def fingerprint(settings: Settings, codes: Sequence[str], registry: Registry) -> str:
    h = hashlib.blake2b(digest_size=12)
    h.update(__version__.encode())
    h.update(json.dumps(sorted(codes)).encode())
    h.update(json.dumps(sorted(settings.per_file_ignores.items())).encode())
    h.update(repr(getattr(settings, "torch_version", None)).encode())  # fixes depend on it
    for rule in registry.rules:  # rule sources: editing a rule invalidates the cache
        mod = sys.modules.get(rule.__module__)
        f = getattr(mod, "__file__", None)
        if f:
            try:
                h.update(Path(f).read_bytes())
            except OSError:
                pass
    # the engine's own sources, by path: which of them happen to be imported yet must not matter
    # (suppression.py is imported lazily, so the first and a later run in one process differed)
    package = Path(__file__).resolve().parent
    for f in sorted(package.rglob("*.py")):
        try:
            h.update(f.relative_to(package).as_posix().encode())
            h.update(f.read_bytes())
        except OSError:
            pass
    return h.hexdigest()


def codes_for_file(display: str, settings: Settings, enabled: Sequence[str], registry: Registry) -> tuple[str, ...]:
    ignored = per_file_ignored(display, settings)
    if not ignored:
        return tuple(enabled)
    drop = {r.code for sel in ignored for r in registry.match(sel)}
    return tuple(c for c in enabled if c not in drop)


def _needs_fixing(diags: list[Diagnostic], opts: Options) -> bool:
    return opts.fix and any(
        d.fix is not None and (d.fix.applicability == SAFE or opts.unsafe_fixes) for d in diags
    )


def run_files(
    candidates: Sequence[Candidate],
    settings: Settings,
    registry: Registry,
    enabled: Sequence[str],
    opts: Options,
    use_cache: bool = True,
    jobs: int | None = None,
) -> list[FileResult]:
    rule_dirs = tuple(str(d) for d in settings.rule_dirs)
    use_registry(rule_dirs, registry)
    cache = None
    if use_cache:
        cache_dir = settings.cache_dir or (settings.root / ".gpulint_cache")
        cache = Cache(cache_dir, fingerprint(settings, enabled, registry))
    results: list[FileResult] = []
    todo = []
    for cand in candidates:
        display = display_path(cand.path)
        codes = codes_for_file(display, settings, enabled, registry)
        if cache is not None:
            hit = cache.lookup(cand.path)
            if hit is not None and not _needs_fixing(hit, opts):
                results.append(FileResult(display, hit))
                continue
        todo.append((cand.path, display, codes, rule_dirs, opts))
    if todo:
        workers = jobs or min(os.cpu_count() or 1, len(todo))
        if workers <= 1 or len(todo) < 4:
            done = [_work(item) for item in todo]
        else:
            ctx = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else None)
            chunk = max(1, min(16, len(todo) // (workers * 4)))
            with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
                done = list(pool.map(_work, todo, chunksize=chunk))
        for item, res in zip(todo, done):
            if cache is not None:
                cache.store(item[0], res)  # a result whose fixes were not written has no stamp
            results.append(res)
    if cache is not None:
        cache.save()
    results.sort(key=lambda r: r.path)
    return results
