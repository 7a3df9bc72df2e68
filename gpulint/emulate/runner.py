"""Run a script like ``python SCRIPT ARGS...`` with emulated CUDA (the engine of ``gpulint run``)."""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from types import TracebackType
from typing import Any

from gpulint.emulate._errors import EmulationUnsupported

__all__ = ["EXIT_UNSUPPORTED", "PREFIX", "run_script"]

EXIT_UNSUPPORTED = 3
PREFIX = "gpulint run:"
_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_HIDDEN_FILES = (_PKG_DIR + os.sep, os.path.abspath(runpy.__file__))


def _prefix() -> str:
    rank = os.environ.get("GPULINT_RUN_RANK")
    return f"gpulint run [rank {rank}]:" if rank else PREFIX


def _say(message: str) -> None:
    sys.stderr.write(f"{_prefix()} {message}\n")
    sys.stderr.flush()


class StopRun(BaseException):
    """Raised into the script when ``--max-steps``/``--max-time`` is reached (a clean stop)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _find_stop(exc: BaseException | None) -> StopRun | None:
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, StopRun):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


class _Limits:
    """``--max-steps N`` (training steps) and ``--max-time S`` (wall clock).

    A training step is counted when every optimizer of the script has stepped once more: the run
    stops when each optimizer that exists (constructed and not garbage-collected) has made N steps,
    so a GAN's generator and discriminator both finish their N-th step, and a WGAN critic stepped 5
    times per generator step does not cut the run to N/5 iterations. One optimizer: N steps of it.
    An optimizer the script builds but stops stepping (or never steps) cannot keep the run going:
    the run also stops when any one optimizer has made ``STEP_CAP_FACTOR * N`` steps.
    """

    STEP_CAP_FACTOR = 10

    def __init__(self, max_steps: int | None, max_time: float | None) -> None:
        self.max_steps = max_steps
        self.max_time = max_time
        self.steps: dict[int, int] = {}  # id(optimizer) -> steps, for optimizers still alive
        self._refs: dict[int, Any] = {}  # id(optimizer) -> weakref (drops the entry when collected)
        self._handle: Any = None
        self._old_init: Any = None
        self._old_alarm: Any = None
        self.stopped: str | None = None

    def __enter__(self) -> _Limits:
        if self.max_steps is not None:
            import torch.optim
            from torch.optim.optimizer import register_optimizer_step_post_hook

            self._handle = register_optimizer_step_post_hook(self._after_step)
            base = torch.optim.Optimizer
            old_init = self._old_init = base.__dict__["__init__"]
            limits = self

            def __init__(opt: Any, *args: Any, **kwargs: Any) -> None:
                old_init(opt, *args, **kwargs)
                limits._track(opt)

            __init__.__wrapped__ = old_init  # type: ignore[attr-defined]
            base.__init__ = __init__  # type: ignore[method-assign]
        if self.max_time is not None:
            import signal

            self._old_alarm = signal.signal(signal.SIGALRM, self._on_alarm)
            signal.setitimer(signal.ITIMER_REAL, max(self.max_time, 0.001))
        return self

    def __exit__(self, *exc: object) -> None:
        if self._handle is not None:
            self._handle.remove()
        if self._old_init is not None:
            import torch.optim

            torch.optim.Optimizer.__init__ = self._old_init  # type: ignore[method-assign]
        if self.max_time is not None:
            import signal

            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._old_alarm)

    def _track(self, optimizer: Any) -> None:
        key = id(optimizer)
        if key in self._refs:
            return
        self.steps[key] = 0
        try:
            import weakref

            def gone(_ref: Any, key: int = key) -> None:
                self.steps.pop(key, None)
                self._refs.pop(key, None)

            self._refs[key] = weakref.ref(optimizer, gone)
        except TypeError:  # not weak-referenceable: counted for the life of the run
            self._refs[key] = None

    def _after_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self._track(optimizer)
        count = self.steps.get(id(optimizer), 0) + 1
        self.steps[id(optimizer)] = count
        if self.max_steps is None or self.stopped is not None:
            return
        counts = list(self.steps.values())  # a snapshot: a collected optimizer drops out of `steps`
        done = min(counts)
        if len(counts) == 1 and done >= self.max_steps:
            self.stopped = f"stopped after {done} optimizer steps (--max-steps {self.max_steps})"
        elif done >= self.max_steps or count >= self.STEP_CAP_FACTOR * self.max_steps:
            made = ", ".join(map(str, counts))
            self.stopped = (
                f"stopped after {done} training steps (--max-steps {self.max_steps}; "
                f"the script's {len(counts)} optimizers made {made} steps)"
            )
        if self.stopped is not None:
            raise StopRun(self.stopped)

    def _on_alarm(self, signum: int, frame: Any) -> None:
        if self.stopped is None:
            self.stopped = f"stopped after {self.max_time:g} s (--max-time {self.max_time:g})"
            raise StopRun(self.stopped)


def _find_unsupported(exc: BaseException | None) -> EmulationUnsupported | None:
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, EmulationUnsupported):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def _strip_frames(tb: TracebackType | None) -> TracebackType | None:
    """Drop frames of the runner, runpy and the emulator, so tracebacks look like ``python script``."""
    frames = []
    while tb is not None:
        filename = os.path.abspath(tb.tb_frame.f_code.co_filename)
        raw = tb.tb_frame.f_code.co_filename
        if not (filename.startswith(_HIDDEN_FILES[0]) or filename == _HIDDEN_FILES[1] or raw == "<frozen runpy>"):
            frames.append(tb)
        tb = tb.tb_next
    if not frames:
        return None
    for current, nxt in zip(frames, frames[1:] + [None]):
        current.tb_next = nxt
    return frames[0]


def _print_exception(exc: BaseException) -> None:
    seen = set()
    chain: Any = exc
    while chain is not None and id(chain) not in seen:
        seen.add(id(chain))
        chain.__traceback__ = _strip_frames(chain.__traceback__)
        chain = chain.__cause__ or chain.__context__
    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    sys.stderr.flush()


_DEVICE_ERRORS = (
    "to be on the same device", "same device", "should be the same or input should be", "device type tensor to numpy",
    "indices should be either on cpu", "not at the same device", "device type for generator",
    "Cannot re-initialize CUDA in forked subprocess", "unsafe to autocast", "Attempting to unscale FP16 gradients",
    "Duplicate GPU detected", "No backend type associated with device type", "cannot pin",
)  # fmt: skip


def _user_files(exc: BaseException) -> list[tuple[str, int]]:
    """(file, line) of the traceback frames in the user's own files, innermost last."""
    import sysconfig

    skip = tuple({os.path.abspath(p) + os.sep for p in (sysconfig.get_paths()["purelib"], sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platlib"], _PKG_DIR)})
    out: list[tuple[str, int]] = []
    tb = exc.__traceback__
    while tb is not None:
        name = os.path.abspath(tb.tb_frame.f_code.co_filename)
        if name.endswith(".py") and os.path.isfile(name) and not name.startswith(skip):
            out.append((name, tb.tb_lineno))
        tb = tb.tb_next
    return out


def static_hints(exc: BaseException, limit: int = 3) -> list[str]:
    """``gpulint check``'s crash-kind findings in the files of a device error's traceback.

    Findings on a line of the traceback come first, then the other crash-kind findings of those
    files (a discarded ``x.to(device)`` crashes later, at the model call). Runs the checker in this
    process on the files only; any problem in doing so gives no hints.
    """
    text = f"{type(exc).__name__}: {exc}"
    if not any(marker in text for marker in _DEVICE_ERRORS):
        return []
    frames = _user_files(exc)
    if not frames:
        return []
    try:
        from gpulint.engine import BadInput, analyse, read_source
        from gpulint.registry import Registry

        rules = [rule() for rule in Registry.load().rules if rule.default and rule.kind == "crash"]
        lines_of: dict[str, set[int]] = {}
        for name, line in frames:
            lines_of.setdefault(name, set()).add(line)
        ranked: list[tuple[int, int, str]] = []
        for order, (name, lines) in enumerate(reversed(list(lines_of.items()))):
            try:
                diags, _ = analyse(name, read_source(name).text, rules)
            except BadInput:
                continue
            for d in diags:
                if d.code.startswith("GL0"):
                    continue
                shown = os.path.relpath(name) if not os.path.relpath(name).startswith("..") else name
                rank = 0 if d.line in lines else 1
                ranked.append((rank, order, f"hint: gpulint check reports {d.code} at {shown}:{d.line}: {d.message}"))
    except Exception:  # noqa: BLE001 - a hint must never hide the script's own error
        return []
    ranked.sort(key=lambda item: (item[0], item[1]))
    return list(dict.fromkeys(h for _, _, h in ranked))[:limit]


def _exit_code(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")
    return 1


def _run_main(script: str) -> None:
    """Run a script (or a notebook's code cells, in order) as ``__main__``."""
    if not script.endswith(".ipynb"):
        runpy.run_path(script, run_name="__main__")
        return
    import builtins
    import linecache
    import types

    from gpulint.notebook import runnable_code

    path = os.path.abspath(script)
    code = runnable_code(path)
    linecache.cache[path] = (len(code), None, code.splitlines(keepends=True), path)  # tracebacks show the cells' code
    module = types.ModuleType("__main__")
    module.__file__ = path
    module.__builtins__ = builtins  # type: ignore[attr-defined]
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    try:
        exec(compile(code, path, "exec"), module.__dict__)  # noqa: S102 - running the user's notebook is the point
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


def _execute(script: str, args: list[str], limits: _Limits | None = None, hints: bool = False) -> int:
    """Execute ``script`` as ``__main__`` with ``sys.argv``/``sys.path`` as Python sets them."""
    saved_argv = sys.argv[:]
    saved_path0 = sys.path[0] if sys.path else None
    sys.argv = [script, *args]
    script_dir = os.path.dirname(os.path.abspath(script))
    if sys.path:
        sys.path[0] = script_dir
    else:  # pragma: no cover
        sys.path.insert(0, script_dir)
    try:
        if limits is not None:
            with limits:
                _run_main(script)
        else:
            _run_main(script)
        return 0
    except SystemExit as exc:
        return _exit_code(exc)
    except StopRun as exc:
        _say(exc.why)
        return 0
    except KeyboardInterrupt as exc:
        _print_exception(exc)
        return 130
    except BaseException as exc:  # noqa: BLE001 - report like the interpreter does
        stop = _find_stop(exc)
        if stop is not None:  # wrapped by the script or a library on its way out
            _say(stop.why)
            return 0
        unsupported = _find_unsupported(exc)
        if unsupported is not None:
            _say(str(unsupported))
            return EXIT_UNSUPPORTED
        _print_exception(exc)
        if hints:
            for hint in static_hints(exc):
                _say(hint)
        return 1
    finally:
        try:
            sys.stdout.flush()
        except Exception:  # pragma: no cover
            pass
        sys.argv = saved_argv
        if saved_path0 is not None and sys.path:
            sys.path[0] = saved_path0


def run_script(
    script: str,
    args: list[str] | tuple[str, ...] = (),
    gpus: int = 1,
    gpu_memory: int | None = None,
    force: bool = False,
    max_steps: int | None = None,
    max_time: float | None = None,
) -> int:
    """Run ``script`` with emulated CUDA unless torch has a usable GPU (or ``force``); return the exit code.

    Prints a banner (``gpulint run: emulating 1 CUDA device (torch X.Y, CPU compute)``) and, at the
    end of an emulated run, the emulated device's peak memory to stderr; ``gpulint run: <feature>
    cannot be emulated: ...`` (exit code 3) when the script, or a child process of it, reaches a CUDA
    feature the emulator cannot provide. ``max_steps``/``max_time`` stop the script cleanly (exit 0)
    after that many optimizer steps or seconds.
    """
    if gpus < 1:
        _say(f"--gpus must be at least 1 (got {gpus})")
        return 2
    if not os.path.exists(script):
        sys.stderr.write(f"{sys.executable}: can't open file {os.path.abspath(script)!r}: [Errno 2] No such file or directory\n")
        return 2
    import torch

    limits = _Limits(max_steps, max_time) if max_steps is not None or max_time is not None else None
    if torch.cuda.is_available() and not force:
        return _finish(_execute(script, list(args), limits))

    import tempfile

    from gpulint.emulate import _child
    from gpulint.emulate._engine import EmulatedCuda

    if not os.environ.get("GPULINT_RUN_RANK"):
        version = ".".join(torch.__version__.split("+")[0].split(".")[:2])
        _say(f"emulating {gpus} CUDA device{'s' if gpus > 1 else ''} (torch {version}, CPU compute)")
    emu = EmulatedCuda(gpus=gpus, memory=gpu_memory)
    fd, report = tempfile.mkstemp(prefix="gpulint-run-", suffix=".children")
    os.close(fd)
    try:
        with emu:
            _child.install(emu, {"gpus": gpus, "memory": gpu_memory, "report": report})
            code = _execute(script, list(args), limits, hints=True)
        child_problems = _child.read_reports(report)
    finally:
        os.unlink(report)
    if child_problems:
        for line in dict.fromkeys(child_problems):
            _say(line)
        code = EXIT_UNSUPPORTED
    elif code == 0 and emu.unsupported_seen:
        first = emu.unsupported_seen[0]
        _say(f"note: the script caught '{first}' and went on; that part did not run as on a GPU")
    _say(emu.peak_line().split(": ", 1)[1])
    return _finish(code)


def _finish(code: int) -> int:
    if os.environ.get("GPULINT_RUN_RANK"):
        # a rank started by --nproc-per-node: leave now, as torchrun's workers are reaped; Gloo's
        # process-group teardown at interpreter exit can abort a process whose peers are gone
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    return code
