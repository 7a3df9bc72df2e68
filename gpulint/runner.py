"""Running the engine over many files: parallel workers and the result cache."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Sequence

from gpulint import __version__
from gpulint.config import Settings
from gpulint.diagnostics import SAFE, Diagnostic, FileResult
from gpulint.discovery import Candidate, per_file_ignored
from gpulint import engine
from gpulint.engine import Options, engine_diagnostic, process_file
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
    try:
        return process_file(path, display, _rules_for(codes, rule_dirs), opts)
    except Exception as exc:  # a bug: reported on the file, never a traceback for the whole run
        return FileResult(display, [engine_diagnostic(display, f"internal error ({type(exc).__name__}: {exc}); please report it")])


# ---------------------------------------------------------------------------------------------
# Worker processes
# ---------------------------------------------------------------------------------------------

# wall seconds one file may take in a worker before the worker is killed: the engine's own guard
# stops an analysis past MAX_FILE_SECONDS of CPU time; this catches native code that holds the
# interpreter lock past it (generous: wall time on a loaded machine is several times CPU time)
WORKER_FILE_WALL_SECONDS = 600.0


class _Terminated(BaseException):
    """SIGTERM in a worker that is processing a file: unwind (removing a temporary file)."""


_BUSY = [False]


def _on_sigterm(signum, frame):  # pragma: no cover - runs in worker processes
    if _BUSY[0]:
        raise _Terminated()
    os._exit(128 + signum)


def _die_with_parent(parent: int) -> None:
    """Make this worker process end when the process that started it ends (SIGKILL included).

    Linux: prctl(PR_SET_PDEATHSIG, SIGTERM). Elsewhere (and as a fallback): a daemon thread that
    notices the parent is gone (the worker's parent id changes) and sends SIGTERM to this process.
    Both end in `_on_sigterm`, which lets a write in progress remove its temporary file.
    """
    import signal

    signal.signal(signal.SIGTERM, _on_sigterm)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C: the parent stops the workers
    if hasattr(signal, "pthread_sigmask"):  # blocked by the parent around the fork (see _Worker)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    done = False
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            done = libc.prctl(1, int(signal.SIGTERM), 0, 0, 0) == 0  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            done = False
    if os.getppid() != parent:  # the parent died before the watch was in place
        os._exit(143)
    if not done:
        import threading
        import time

        def watch() -> None:
            while True:
                time.sleep(0.5)
                if os.getppid() != parent:
                    os.kill(os.getpid(), signal.SIGTERM)
                    return

        threading.Thread(target=watch, name="gpulint-parent-watch", daemon=True).start()


def _worker_main(conn, parent: int) -> None:  # pragma: no cover - runs in worker processes
    _die_with_parent(parent)
    try:
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                break
            if msg is None:
                break
            idx, item = msg
            _BUSY[0] = True
            try:
                res = _work(item)
            except _Terminated:
                os._exit(143)
            finally:
                _BUSY[0] = False
            try:
                conn.send((idx, res))
            except (OSError, ValueError):
                break
    except KeyboardInterrupt:
        pass
    os._exit(0)


class _Worker:
    def __init__(self, ctx) -> None:
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, os.getpid()), daemon=True)
        # A Ctrl-C in the instant between the fork and the worker ignoring SIGINT would raise
        # KeyboardInterrupt in the new worker (a traceback on the terminal): SIGINT is blocked
        # across the fork; the parent receives a pending one when it unblocks, the worker
        # discards it once it ignores the signal.
        import signal

        masked = hasattr(signal, "pthread_sigmask") and ctx.get_start_method() == "fork"
        if masked:
            old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            self.proc.start()
        finally:
            if masked and signal.SIGINT not in old:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        child.close()
        self.current: int | None = None
        self.started = 0.0

    def stop(self, kill: bool = False) -> None:
        try:
            if kill:
                self.proc.kill()
            elif self.proc.is_alive():
                self.proc.terminate()
        except (OSError, AttributeError):
            pass


def _crash_message(worker: _Worker, timed_out: bool) -> str:
    if timed_out:
        return f"the analysis did not finish in {WORKER_FILE_WALL_SECONDS:g} s and its worker was stopped; file not checked"
    code = worker.proc.exitcode
    how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit status {code}"
    return f"the worker process analysing this file died ({how}); file not checked, the other files were"


def run_parallel(todo: list, workers: int) -> list[FileResult]:
    """Process the items in worker processes, one file per message.

    A worker that dies (a crash in native code, the out-of-memory killer) or stays too long on
    one file is replaced, its file reported as a GL000 and any temporary file it was writing
    removed; the other files are processed as usual. Workers end with this process (see
    `_die_with_parent`); on Ctrl-C they are stopped and their temporary files removed.
    """
    import multiprocessing  # imported here: a run over one file or with -j 1 never needs it
    import time
    from multiprocessing.connection import wait

    ctx = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else None)
    results: list[FileResult | None] = [None] * len(todo)
    queue = list(range(len(todo) - 1, -1, -1))  # popped from the end: source order
    pool: list[_Worker] = []

    def assign(w: _Worker) -> bool:
        if not queue:
            return False
        idx = queue.pop()
        w.current, w.started = idx, time.monotonic()
        try:
            w.conn.send((idx, todo[idx]))
        except (OSError, ValueError):
            queue.append(idx)
            w.current = None
            return False
        return True

    def retire(w: _Worker, timed_out: bool = False) -> None:
        w.stop(kill=True)
        w.proc.join(5)
        idx = w.current
        if idx is not None:
            item = todo[idx]
            engine.remove_stale_temps([os.path.dirname(os.path.realpath(item[0]))], w.proc.pid)
            results[idx] = FileResult(item[1], [engine_diagnostic(item[1], _crash_message(w, timed_out))])
        pool.remove(w)
        try:
            w.conn.close()
        except OSError:
            pass

    try:
        for _ in range(min(workers, len(todo))):
            w = _Worker(ctx)
            pool.append(w)
            assign(w)
        while any(w.current is not None for w in pool):
            busy = [w for w in pool if w.current is not None]
            ready = wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=1.0)
            for w in busy:
                if w.conn in ready:
                    try:
                        idx, res = w.conn.recv()
                    except (EOFError, OSError):
                        retire(w)
                    else:
                        results[idx] = res
                        w.current = None
                        assign(w)
                elif w.proc.sentinel in ready:
                    retire(w)
                elif time.monotonic() - w.started > WORKER_FILE_WALL_SECONDS:
                    retire(w, timed_out=True)
            while queue and sum(1 for w in pool if w.current is not None) < workers:
                idle = next((w for w in pool if w.current is None), None)
                if idle is None:
                    idle = _Worker(ctx)  # a replacement for a worker that died
                    pool.append(idle)
                if not assign(idle):
                    break
    except BaseException:
        # Ctrl-C or an error here: stop the workers, let a write in progress clean up
        for w in pool:
            w.stop()
        deadline = time.monotonic() + 3
        for w in pool:
            w.proc.join(max(0.0, deadline - time.monotonic()))
            if w.proc.is_alive():
                w.stop(kill=True)
                w.proc.join(1)
            if w.current is not None:
                engine.remove_stale_temps([os.path.dirname(os.path.realpath(todo[w.current][0]))], w.proc.pid)
        raise
    for w in pool:
        try:
            w.conn.send(None)
        except (OSError, ValueError):
            pass
    for w in pool:
        w.proc.join(2)
        if w.proc.is_alive():
            w.stop(kill=True)
    return results  # type: ignore[return-value]


class _sigterm_unwinds:
    """While files are processed, SIGTERM (a CI timeout, an editor stopping the linter) unwinds
    like Ctrl-C does, exiting 143: workers are stopped and a write in progress removes its
    temporary file. Only in the main thread (signal handlers can only be set there)."""

    def __enter__(self):
        import signal
        import threading

        self.old = None
        if threading.current_thread() is threading.main_thread():
            def handler(signum, frame):
                raise SystemExit(128 + signum)

            try:
                self.old = signal.signal(signal.SIGTERM, handler)
            except (ValueError, OSError):  # pragma: no cover
                self.old = None
        return self

    def __exit__(self, *exc):
        import signal

        if self.old is not None:
            signal.signal(signal.SIGTERM, self.old)
        return False


def default_jobs(n_files: int) -> int:
    """Workers for n files when -j is not given: one per usable core that is not already busy
    (the load average), and no more than one per 8 files (a worker costs a process start-up and
    its own rule set). Results do not depend on it."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        idle = cores - os.getloadavg()[0]
    except (AttributeError, OSError):
        idle = cores
    return max(1, min(cores, int(idle + 0.5), -(-n_files // 8)))


class Cache:
    """Per-file results keyed by (mtime, size, content hash), for one settings fingerprint."""

    def __init__(self, directory: Path, fingerprint: str) -> None:
        self.file = directory / __version__ / f"{fingerprint}.json"
        self.directory = directory
        self.entries: dict[str, dict] = {}
        self.dirty = False
        import json  # the cache's modules are imported only when a cache is used

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
        if not _valid_entry(entry):  # a cache file of another shape (hand-edited, another tool)
            del self.entries[key]
            self.dirty = True
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
        try:
            return [Diagnostic.from_dict({**d, "path": display_path(path)}) for d in entry["diagnostics"]]
        except (TypeError, KeyError, ValueError, AttributeError):
            del self.entries[key]
            self.dirty = True
            return None

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
        import json
        import tempfile

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


def _valid_entry(entry: object) -> bool:
    return (
        isinstance(entry, dict)
        and type(entry.get("mtime")) is int
        and type(entry.get("size")) is int
        and isinstance(entry.get("hash"), str)
        and isinstance(entry.get("diagnostics"), list)
        and all(isinstance(d, dict) for d in entry["diagnostics"])
    )


def fingerprint(settings: Settings, codes: Sequence[str], registry: Registry) -> str:
    import json

    from gpulint._startup import blake2b

    h = blake2b(digest_size=12)
    h.update(__version__.encode())
    h.update(json.dumps(sorted(codes)).encode())
    h.update(json.dumps(sorted(settings.per_file_ignores.items())).encode())
    h.update(repr(getattr(settings, "torch_version", None)).encode())  # fixes depend on it
    h.update(repr(getattr(settings, "cuda_default_from", None) is not None).encode())  # so do findings
    for rule in registry.rules:  # rule sources: editing a rule invalidates the cache
        # a lazy built-in rule (gpulint.registry.LazyRule) names its file; its module may not be imported
        f = rule.__dict__.get("_gl_file") or getattr(sys.modules.get(rule.__module__), "__file__", None)
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
        workers = min(jobs, len(todo)) if jobs else default_jobs(len(todo))
        with _sigterm_unwinds():
            if workers <= 1 or len(todo) < 2:
                done = [_work(item) for item in todo]
            else:
                done = run_parallel(todo, workers)
        for item, res in zip(todo, done):
            if cache is not None:
                cache.store(item[0], res)  # a result whose fixes were not written has no stamp
            results.append(res)
    if cache is not None:
        cache.save()
    results.sort(key=lambda r: r.path)
    return results
