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


def _say(message: str) -> None:
    sys.stderr.write(f"{PREFIX} {message}\n")
    sys.stderr.flush()


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


def _exit_code(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")
    return 1


def _execute(script: str, args: list[str]) -> int:
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
        runpy.run_path(script, run_name="__main__")
        return 0
    except SystemExit as exc:
        return _exit_code(exc)
    except KeyboardInterrupt as exc:
        _print_exception(exc)
        return 130
    except BaseException as exc:  # noqa: BLE001 - report like the interpreter does
        unsupported = _find_unsupported(exc)
        if unsupported is not None:
            _say(str(unsupported))
            return EXIT_UNSUPPORTED
        _print_exception(exc)
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
) -> int:
    """Run ``script`` with emulated CUDA unless torch has a usable GPU (or ``force``); return the exit code.

    Prints ``gpulint run: emulated cuda peak memory ...`` to stderr at the end of an emulated run, and
    ``gpulint run: <feature> cannot be emulated: ...`` (exit code 3) when the script reaches a CUDA
    feature the emulator cannot provide.
    """
    if gpus < 1:
        _say(f"--gpus must be at least 1 (got {gpus})")
        return 2
    if not os.path.exists(script):
        sys.stderr.write(f"{sys.executable}: can't open file {os.path.abspath(script)!r}: [Errno 2] No such file or directory\n")
        return 2
    import torch

    if torch.cuda.is_available() and not force:
        return _execute(script, list(args))

    from gpulint.emulate._engine import EmulatedCuda

    import tempfile

    from gpulint.emulate import _child

    emu = EmulatedCuda(gpus=gpus, memory=gpu_memory)
    fd, report = tempfile.mkstemp(prefix="gpulint-run-", suffix=".children")
    os.close(fd)
    try:
        with emu:
            _child.install(emu, {"gpus": gpus, "memory": gpu_memory, "report": report})
            code = _execute(script, list(args))
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
    sys.stderr.write(emu.peak_line() + "\n")
    sys.stderr.flush()
    return code
