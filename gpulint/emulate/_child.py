"""Child processes inherit the emulated GPU (``spawn`` and ``forkserver`` start methods).

A ``spawn`` child is a fresh interpreter started as ``python -c "from multiprocessing.spawn import
spawn_main; spawn_main(...)"``; a ``forkserver`` child is forked from a server started the same way.
While ``gpulint run`` emulates, :func:`install` rewrites those command lines (in
``multiprocessing.util.spawnv_passfds``, which both start methods use) so that the child first
imports this module, turns the emulator on with the parent's settings (the ``GPULINT_EMULATE_CHILD``
environment variable), and then runs multiprocessing's own entry point unchanged: the script's
``__main__`` is re-imported as ``__mp_main__`` under emulation, as on a GPU machine.

A child that cannot be emulated (gpulint or torch cannot be imported there, or the child reaches a
feature the emulator refuses) appends one line to the report file named in that variable; the
parent's ``gpulint run`` reads it at the end and exits with status 3 instead of passing silently.

This module imports neither torch nor the engine at import time: the bootstrap line must work even
where they fail.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

ENV = "GPULINT_EMULATE_CHILD"
_SPAWN_PROG = "from multiprocessing.spawn import spawn_main; spawn_main("
_FORKSERVER_PROG = "from multiprocessing.forkserver import main; main("
_PKG_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Runs in the child before anything else: gpulint may not be importable there (a different
# interpreter, a broken environment); then the child reports why and stops with status 3.
_BOOTSTRAP = """\
import os, sys
sys.path.insert(0, {path!r})
try:
    from gpulint.emulate import _child
except BaseException as exc:
    import json
    report = json.loads(os.environ.get({env!r}, '{{}}')).get('report')
    if report:
        with open(report, 'a', encoding='utf-8') as handle:
            handle.write('a child process could not start the emulator: %s: %s\\n' % (type(exc).__name__, exc))
    sys.exit(3)
sys.path.remove({path!r})
_child.{entry}({args})
"""


def config() -> dict[str, Any] | None:
    raw = os.environ.get(ENV)
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def report(line: str) -> None:
    cfg = config() or {}
    path = cfg.get("report")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line.replace("\n", " ") + "\n")


def read_reports(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as handle:
            return [line.rstrip("\n") for line in handle if line.strip()]
    except OSError:
        return []


class _EnvRestore:
    """Restores an environment variable when the emulator's patch list unwinds."""

    def __setattr__(self, name: str, value: Any) -> None:
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _rewrite(args: list[str]) -> list[str]:
    """The child's argv with multiprocessing's ``-c`` program routed through this module."""
    if "-c" not in args:
        return args
    pos = args.index("-c") + 1
    if pos >= len(args):
        return args
    prog = args[pos]
    for prefix, entry in ((_SPAWN_PROG, "spawn_main"), (_FORKSERVER_PROG, "forkserver_main")):
        if prog.startswith(prefix) and prog.endswith(")"):
            call_args = prog[len(prefix) : -1]
            new = _BOOTSTRAP.format(path=_PKG_PARENT, env=ENV, entry=entry, args=call_args)
            return [*args[:pos], new, *args[pos + 1 :]]
    return args


def install(emu: Any, settings: dict[str, Any]) -> None:
    """Route spawn/forkserver children through the emulator (patches undone with ``emu``)."""
    import multiprocessing.util as mp_util

    emu._patches.append((_EnvRestore(), ENV, os.environ.get(ENV)))
    os.environ[ENV] = json.dumps(settings)
    orig = mp_util.spawnv_passfds

    def spawnv_passfds(path: Any, args: Any, passfds: Any) -> Any:
        return orig(path, _rewrite(list(args)), passfds)

    emu._patch(mp_util, "spawnv_passfds", spawnv_passfds)


def _start() -> Any:
    """Turn the emulator on in this (child) process with the parent's settings."""
    cfg = config() or {}
    from gpulint.emulate._engine import EmulatedCuda

    emu = EmulatedCuda(gpus=int(cfg.get("gpus", 1)), memory=cfg.get("memory"))
    emu.__enter__()
    if cfg.get("report"):
        install(emu, cfg)
    if cfg.get("default_device"):
        import torch

        torch.set_default_device(cfg["default_device"])
    return emu


def _reporting(emu: Any, main: Any) -> Any:
    def run(*args: Any, **kwargs: Any) -> Any:
        emu._forked = False  # a forkserver child: the server never ran CUDA work for it
        try:
            return main(*args, **kwargs)
        finally:
            for exc in emu.unsupported_seen[:1]:
                report(f"a child process (pid {os.getpid()}) reached {exc}")

    return run


def spawn_main(*args: Any, **kwargs: Any) -> None:
    try:
        emu = _start()
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        report(f"a child process could not start the emulator: {type(exc).__name__}: {exc}")
        sys.exit(3)
    import multiprocessing.spawn as mp_spawn

    mp_spawn._main = _reporting(emu, mp_spawn._main)
    mp_spawn.spawn_main(*args, **kwargs)


def forkserver_main(*args: Any, **kwargs: Any) -> None:
    try:
        emu = _start()
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        report(f"the forkserver process could not start the emulator: {type(exc).__name__}: {exc}")
        sys.exit(3)
    import multiprocessing.forkserver as mp_forkserver
    import multiprocessing.spawn as mp_spawn

    mp_spawn._main = _reporting(emu, mp_spawn._main)
    mp_forkserver.main(*args, **kwargs)
