"""Run a fixture script as ``python SCRIPT`` / ``python -m MODULE ...`` in a fork of a warm interpreter.

The fixture runtime legs (tests/test_fixtures.py) start ~1,700 interpreters, and half of each one's
time is ``import torch``. Here a long-lived server process per pytest(-xdist) worker imports torch
and the emulator once (it never runs a torch operator: no intra-op threads, no RNG draws, no CUDA),
and forks once per request. The forked child turns itself into what a fresh
``python SCRIPT ARGS...`` (or ``python -m MODULE ARGS...``) would be at the point ``__main__``
starts, then runs the code the way the interpreter's own entry point does, so that exit status,
tracebacks, ``SystemExit`` codes, threads, ``atexit`` handlers and the final flush of stdout/stderr
are the interpreter's, not an imitation of them:

- stdin is /dev/null, stdout and stderr are files (fd 1 and 2 via dup2, so C-level writes and child
  processes are captured); cwd and ``os.environ`` are the request's (the environment variables read at
  interpreter start must equal the server's: see ``LATE_ENV`` and the client's check);
- a fresh process's per-process state is redone: torch's default CPU generator is seeded from the OS
  (a fresh interpreter's is, so two runs of a script without ``manual_seed`` differ), ``random``
  reseeds itself on fork, multiprocessing's authkey and ORIGINAL_DIR are reset, ``sys.orig_argv``;
- ``__main__`` is the interpreter's real ``__main__`` module, emptied back to what it holds before a
  script starts; a script runs in it as ``PyRun_SimpleFile`` runs it (``__file__``, ``__cached__``,
  a ``SourceFileLoader``; ``sys.path[0]`` the script's real directory; ``__file__`` removed after a
  run that did not call ``sys.exit``), a module as ``python -m`` runs it (``runpy._run_module_as_main``,
  ``sys.path[0]`` the cwd); so classes defined in the script pickle as ``__main__.X``, and
  multiprocessing's spawn children find the main module as they do from ``python SCRIPT``;
- an uncaught exception is printed by ``sys.excepthook`` with the frames of this module removed (the
  traceback reads as ``python SCRIPT``'s), then re-raised with a silent hook, so that the interpreter
  exits with 1 (``KeyboardInterrupt``: killed by SIGINT) after its normal finalization;
  ``SystemExit`` propagates untouched (None, ints, strings: the interpreter's own handling).

The server waits for each child (pidfd, with the request's timeout: SIGKILL, as ``subprocess.run``
does), survives a child that crashes or hangs, exits when its client goes away, and a child dies
with its server (PR_SET_PDEATHSIG). The client (``run``) returns a ``subprocess.CompletedProcess``
(``ForkedProcess``) or raises ``subprocess.TimeoutExpired``; it returns None whenever the fork path
cannot serve the request faithfully or the server broke, and the caller then starts a real
subprocess. See tests/fixture_support.run_script for when the fork path is not used at all.
"""

from __future__ import annotations

import io
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings

THIS = os.path.abspath(__file__)
# environment variables that may differ between the server and a request: read when used, not at
# interpreter start (CUDA_VISIBLE_DEVICES: at CUDA's lazy init, which the server never reaches;
# PYTEST_CURRENT_TEST: pytest sets it per test)
LATE_ENV = ("CUDA_VISIBLE_DEVICES", "PYTEST_CURRENT_TEST")
START_GRACE_S = 300  # the first request also waits for the server's imports, on a loaded machine
MAX_FAILURES = 3  # failed servers per pytest worker; after that, every request runs a subprocess


# ---------------------------------------------------------------------------------------------
# server side (runs in `python -c BOOT`)
# ---------------------------------------------------------------------------------------------

_MAIN_KEYS = ("__name__", "__doc__", "__package__", "__loader__", "__spec__", "__annotations__", "__builtins__")
_pristine: dict = {}
_libc = None


def _preimport() -> None:
    try:
        import torch  # noqa: F401
    except Exception:  # noqa: BLE001 - the child imports it again and reports what a script would see
        return
    import warnings

    filters = list(warnings.filters)
    try:
        # torch.optim.Optimizer.__init__ imports torch._dynamo (about 1 s, most of a fixture's run);
        # importing it reads no device state and starts no thread, so a child that imports it
        # again finds it loaded, as it would find it in a process that had built an optimizer
        import torch._dynamo  # noqa: F401
    except Exception:  # noqa: BLE001
        pass
    # The one trace it leaves before the script asks for it: sympy (imported with it) puts a
    # "once" filter for SymPyDeprecationWarning in front of `warnings.filters`. A fresh interpreter
    # has the script's own filters until it builds an optimizer, so the server drops that filter;
    # the difference left is that, in a child, sympy's deprecation warnings after that point are
    # shown each time instead of once.
    if warnings.filters != filters:
        warnings.filters[:] = filters
        warnings._filters_mutated()
    try:
        import gpulint.emulate._child  # noqa: F401
        import gpulint.emulate._engine  # noqa: F401
        import gpulint.emulate.runner  # noqa: F401
    except Exception:  # noqa: BLE001
        pass


def main(fd: int) -> None:
    """The server's entry point (BOOT); returns only in a forked child, after running its request."""
    global _libc
    sys.path.remove(os.path.dirname(THIS))
    main_dict = sys.modules["__main__"].__dict__
    _pristine.update({k: main_dict[k] for k in _MAIN_KEYS if k in main_dict})
    _preimport()
    import ctypes
    import gc

    _libc = ctypes.CDLL(None, use_errno=True)
    sock = socket.socket(fileno=fd)
    gc.collect()
    gc.freeze()  # the children never collect the server's objects: fewer copy-on-write faults
    req = _serve(sock)
    _execute(req)


def _recv(sock: socket.socket, buf: bytearray) -> dict | None:
    while b"\n" not in buf:
        chunk = sock.recv(1 << 16)
        if not chunk:
            return None
        buf += chunk
    line, _, rest = bytes(buf).partition(b"\n")
    buf[:] = rest
    return json.loads(line)


def _serve(sock: socket.socket) -> dict:
    buf = bytearray()
    while True:
        req = _recv(sock, buf)
        if req is None:  # the client went away
            os._exit(0)
        sys.stdout.flush()
        sys.stderr.flush()
        _libc.fflush(None)  # nothing buffered in C stdio may reach the child's output
        pid = os.fork()
        if pid == 0:
            sock.close()
            req["server_pid"] = os.getppid()
            return req
        reply = _wait(pid, float(req["timeout"]), sock)
        sock.sendall(json.dumps(reply).encode() + b"\n")


def _wait(pid: int, timeout: float, sock: socket.socket) -> dict:
    deadline = time.monotonic() + timeout
    pidfd = os.pidfd_open(pid)
    watch = [pidfd, sock]
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return {"timeout": True}
            ready, _, _ = select.select(watch, [], [], left)
            if pidfd in ready:
                _, status = os.waitpid(pid, 0)
                return {"returncode": os.waitstatus_to_exitcode(status)}
            if sock in ready:
                if not sock.recv(1, socket.MSG_PEEK):  # client gone: stop everything
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    os._exit(0)
                watch = [pidfd]  # data before the reply was sent: read with the next request
    finally:
        os.close(pidfd)


# ---------------------------------------------------------------------------------------------
# the forked child: become `python ARGS...` and run
# ---------------------------------------------------------------------------------------------


def _execute(req: dict) -> None:
    _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the server (not inherited by forks)
    if os.getppid() != req["server_pid"]:
        os._exit(70)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    for target, path in ((1, req["stdout"]), (2, req["stderr"])):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    _fresh_process_state(req["cmd"])

    args = req["cmd"][1:]
    main_dict = sys.modules["__main__"].__dict__
    main_dict.clear()
    main_dict.update(_pristine)
    main_dict["__annotations__"] = {}
    if args[0] == "-m":
        import runpy

        sys.argv = ["-m", *args[2:]]
        sys.path[0] = os.getcwd()
        try:
            runpy._run_module_as_main(args[1])  # what `python -m` calls
        except SystemExit:
            raise
        except BaseException as exc:  # noqa: BLE001 - reported like the interpreter does
            _uncaught(exc)
        return
    script = args[0]
    sys.argv = list(args)
    sys.path[0] = os.path.dirname(os.path.realpath(script))
    from importlib.machinery import SourceFileLoader

    main_dict["__file__"] = script
    main_dict["__cached__"] = None
    main_dict["__loader__"] = SourceFileLoader("__main__", script)
    try:
        with io.open_code(script) as handle:
            source = handle.read()
        code = compile(source, script, "exec", dont_inherit=True)
        del source
        exec(code, main_dict)  # noqa: S102 - running the script is the point
    except SystemExit:
        _flush_io()
        raise  # PyErr_Print -> handle_system_exit: exits before __file__ is removed
    except BaseException as exc:  # noqa: BLE001
        _flush_io()
        _uncaught(exc, main_dict)
    _flush_io()
    main_dict.pop("__file__", None)
    main_dict.pop("__cached__", None)


def _fresh_process_state(cmd: list[str]) -> None:
    sys.orig_argv = list(cmd)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.default_generator.seed()  # a fresh interpreter's default generator is seeded from the OS
    mp_process = sys.modules.get("multiprocessing.process")
    if mp_process is not None:
        mp_process.ORIGINAL_DIR = os.path.abspath(os.getcwd())
        mp_process.current_process().authkey = os.urandom(32)
    np_random = sys.modules.get("numpy.random")
    if np_random is not None:  # pragma: no cover - torch does not import it
        np_random.seed()


def _flush_io() -> None:
    for stream in (sys.stderr, sys.stdout):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - as the interpreter's flush_io(): errors are cleared
            pass


def _strip(tb):
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) == THIS:
        tb = tb.tb_next
    return tb


def _uncaught(exc: BaseException, main_dict: dict | None = None) -> None:
    """Print ``exc`` as the interpreter does, then leave through the interpreter's own exit path."""
    tb = _strip(exc.__traceback__)
    exc.__traceback__ = tb
    sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, tb
    try:
        sys.excepthook(type(exc), exc, tb)
    except BaseException:  # noqa: BLE001 - the interpreter falls back to its own printing
        sys.__excepthook__(type(exc), exc, tb)
    if main_dict is not None:
        main_dict.pop("__file__", None)
        main_dict.pop("__cached__", None)
    sys.excepthook = _silent
    raise exc  # exit status 1 (KeyboardInterrupt: SIGINT), after threads, atexit and the final flush


def _silent(*_args) -> None:
    pass


# ---------------------------------------------------------------------------------------------
# client side (the pytest worker)
# ---------------------------------------------------------------------------------------------


class ForkedProcess(subprocess.CompletedProcess):
    """A ``CompletedProcess`` of a script run in a fork of the server (``via`` tells the path)."""

    via = "fork"


def _text(data: bytes) -> str:
    # what subprocess.run(text=True) returns: the locale's encoding, universal newlines
    encoding = io.TextIOWrapper(io.BytesIO()).encoding
    return data.decode(encoding).replace("\r\n", "\n").replace("\r", "\n")


def _boot(fd: int) -> str:
    return f"__import__('sys').path.insert(0, {os.path.dirname(THIS)!r}); __import__('forkrun').main({fd})"


class Server:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = dict(env)
        self.dir = tempfile.mkdtemp(prefix="gpulint-forkrun-")
        self.count = 0
        ours, theirs = socket.socketpair()
        try:
            with open(os.path.join(self.dir, "server.log"), "ab") as log:
                self.proc = subprocess.Popen(
                    [sys.executable, "-c", _boot(theirs.fileno())],
                    cwd=self.dir,
                    env=self.env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    pass_fds=(theirs.fileno(),),
                )
        finally:
            theirs.close()
        self.sock = ours
        self.buf = bytearray()
        self.first = True
        self.failure = ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self) -> str:
        try:
            with open(os.path.join(self.dir, "server.log"), "rb") as handle:
                return handle.read()[-2000:].decode(errors="replace")
        except OSError:
            return ""

    def run(self, cmd: list[str], cwd, env: dict[str, str], timeout: float | None):
        """A ForkedProcess; raises TimeoutExpired; None if the server failed (then it is closed)."""
        self.count += 1
        out = os.path.join(self.dir, f"{self.count}.out")
        err = os.path.join(self.dir, f"{self.count}.err")
        limit = 10**7 if timeout is None else timeout
        req = {"cmd": cmd, "cwd": os.path.abspath(cwd), "env": env, "timeout": limit, "stdout": out, "stderr": err}
        try:
            self.sock.sendall(json.dumps(req).encode() + b"\n")
            reply = self._reply(limit + 60 + (START_GRACE_S if self.first else 0))
        except OSError:
            reply = None
        self.first = False
        try:
            stdout, stderr = (self._read(p) for p in (out, err))
        finally:
            for p in (out, err):
                try:
                    os.unlink(p)
                except OSError:
                    pass
        if reply is None:
            self.failure = self.log_tail()
            self.close()
            return None
        if reply.get("timeout"):
            raise subprocess.TimeoutExpired(cmd, timeout, output=_text(stdout), stderr=_text(stderr))
        return ForkedProcess(cmd, reply["returncode"], _text(stdout), _text(stderr))

    @staticmethod
    def _read(path: str) -> bytes:
        try:
            with open(path, "rb") as handle:
                return handle.read()
        except FileNotFoundError:
            return b""

    def _reply(self, wait: float) -> dict | None:
        deadline = time.monotonic() + wait
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.sock], [], [], left)
            if not ready:
                continue
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                return None
            self.buf += chunk
        line, _, rest = bytes(self.buf).partition(b"\n")
        self.buf[:] = rest
        return json.loads(line)

    def close(self) -> None:
        try:
            self.sock.close()  # the server sees EOF and exits (killing a running child)
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        try:
            import shutil

            shutil.rmtree(self.dir, ignore_errors=True)
        except Exception:  # noqa: BLE001 - pragma: no cover
            pass


_server: Server | None = None
_failures = 0
_pid = None


def supported(cmd: list[str], env_extra: dict | None = None) -> bool:
    """Whether a fork of the server can stand for ``cmd`` (a plain ``python SCRIPT.py`` or
    ``python -m MODULE``, env overrides only of variables read after start, on Linux)."""
    if not sys.platform.startswith("linux") or not hasattr(os, "pidfd_open"):
        return False
    if len(cmd) < 2 or cmd[0] != sys.executable:
        return False
    if cmd[1] == "-m":
        if len(cmd) < 3:
            return False
    elif cmd[1].startswith("-") or not cmd[1].endswith(".py"):
        return False
    return all(key in LATE_ENV for key in env_extra or {})


def run(cmd: list[str], cwd, base_env: dict[str, str], env_extra: dict | None = None, timeout: float | None = None):
    """Run ``cmd`` (``[sys.executable, ...]``) in a fork of this worker's server.

    ``base_env`` is the environment the interpreter would start with apart from ``env_extra``; the
    server runs with it (a changed base restarts the server). Returns a ForkedProcess, raises
    TimeoutExpired like ``subprocess.run``, or returns None: run a real subprocess instead.
    """
    global _server, _failures, _pid
    if not supported(cmd, env_extra):
        return None
    if _pid != os.getpid():  # a forked pytest process does not share its parent's server
        _server, _failures, _pid = None, 0, os.getpid()
    base = {k: v for k, v in base_env.items() if k not in LATE_ENV}  # the server's; requests set theirs
    if _server is not None and not _server.alive():
        _failures += 1
        _server.close()
        _server = None
    if _server is not None and _server.env != base:  # the environment changed: start a new one
        _server.close()
        _server = None
    if _server is None:
        if _failures >= MAX_FAILURES:
            return None
        _server = Server(base)
    env = dict(base_env)
    env.update(env_extra or {})
    proc = _server.run(list(cmd), cwd, env, timeout)
    if proc is None:
        warnings.warn(
            f"the fixture fork server stopped (a real subprocess runs instead); its log ends:\n{_server.failure}",
            RuntimeWarning,
            stacklevel=2,
        )
        _failures += 1
        _server = None
    return proc


def shutdown() -> None:
    global _server
    if _server is not None and _pid == os.getpid():
        _server.close()
    _server = None
