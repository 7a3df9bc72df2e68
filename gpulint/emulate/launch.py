"""``gpulint run --nproc-per-node N``: start a script like ``torchrun --nproc-per-node N`` would.

Each rank is a separate process running ``gpulint run`` with N emulated GPUs (one node with N
devices, the rank's GPU is ``cuda:LOCAL_RANK`` by convention, as on a real node) and torchrun's
environment: ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``GROUP_RANK``,
``ROLE_RANK``, ``ROLE_NAME``, ``GROUP_WORLD_SIZE``, ``ROLE_WORLD_SIZE``, ``MASTER_ADDR`` and
``MASTER_PORT`` (a free port on the loopback interface), ``TORCHELASTIC_*`` and
``OMP_NUM_THREADS=1`` unless set. As torchrun does, when one rank fails the others are stopped and
the run exits with the failed rank's status (3 when a rank reached something that cannot be
emulated).

Output: each rank's stdout and stderr come through pipes to this process, which relays them to its
own stdout and stderr a whole line at a time (one writer at a time), so lines printed by two ranks
at the same moment never tear into one another; a last line without a newline is ended with one
when the rank exits. As with torchrun's default, lines carry no rank prefix; ``rank_prefix`` (a
``string.Template`` like torchrun's ``TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE``, with ``${rank}``,
``${local_rank}`` and ``${role_name}``; ``"[${role_name}${local_rank}]:"`` is what torchrun's
``--tee`` prints) adds one. A ``\\r`` ends a piece of output too, so progress bars redraw as they
run. When this process's stdout or stderr is a terminal, the ranks run with ``PYTHONUNBUFFERED=1``
(unless it is set) so that their prints come through as promptly as on a terminal; their
``sys.stdout.isatty()`` is false.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from string import Template
from typing import BinaryIO, TextIO

__all__ = ["launch", "torchrun_env"]

_PKG_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_RUNNER = "import sys; sys.path.insert(0, {path!r}); from gpulint.emulate.__main__ import main; sys.path.pop(0); sys.exit(main(sys.argv[1:]))"
EXIT_UNSUPPORTED = 3


_OUTPUT_LOCK = threading.Lock()  # one writer at a time to this process's stdout/stderr
_MAX_PENDING = 1 << 20  # a "line" longer than this without a newline is relayed in pieces
_READ_SIZE = 1 << 16
_DRAIN_TIMEOUT = 10.0  # after the ranks exit: a grandchild may still hold a pipe open


def _say(message: str) -> None:
    with _OUTPUT_LOCK:
        sys.stderr.write(f"gpulint run: {message}\n")
        sys.stderr.flush()


def _write(stream: TextIO, data: bytes) -> None:
    """Write ``data`` to ``stream`` (the caller holds the output lock)."""
    try:
        stream.flush()
        buffer: BinaryIO | None = getattr(stream, "buffer", None)
        if buffer is not None:
            buffer.write(data)
            buffer.flush()
        else:  # a text-only stream (a test's capture): decode as the rank's interpreter encoded
            stream.write(data.decode(getattr(stream, "encoding", None) or "utf-8", errors="replace"))
            stream.flush()
    except (OSError, ValueError):  # the reader went away (a closed pipe): keep draining the rank
        pass


def _split(pending: bytes) -> int:
    """How many leading bytes of ``pending`` are whole lines (ended by ``\\n``, or a ``\\r`` not last)."""
    end = pending.rfind(b"\n") + 1
    cr = pending.rfind(b"\r", end, len(pending) - 1)  # a final \r may be the first half of \r\n
    if cr >= 0:
        end = cr + 1
    return end


def _prefixed(data: bytes, prefix: bytes) -> bytes:
    if not prefix:
        return data
    pieces = data.splitlines(keepends=True)
    return b"".join(prefix + piece for piece in pieces)


def _relay(source: BinaryIO, stream: TextIO, prefix: bytes) -> None:
    """Copy one rank's pipe to ``stream`` whole lines at a time until the rank closes it."""
    fd = source.fileno()
    pending = b""
    try:
        while True:
            try:
                chunk = os.read(fd, _READ_SIZE)
            except InterruptedError:  # pragma: no cover - retried by os.read since PEP 475
                continue
            except OSError:
                chunk = b""
            if not chunk:
                break
            pending += chunk
            end = _split(pending)
            if end == 0 and len(pending) >= _MAX_PENDING:
                end = len(pending)
                chunk_out = pending + b"\n"
            else:
                chunk_out = pending[:end]
            if end:
                pending = pending[end:]
                with _OUTPUT_LOCK:
                    _write(stream, _prefixed(chunk_out, prefix))
        if pending:
            if not pending.endswith((b"\n", b"\r")):
                pending += b"\n"
            with _OUTPUT_LOCK:
                _write(stream, _prefixed(pending, prefix))
    finally:
        source.close()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def torchrun_env(local_rank: int, nproc: int, port: int, run_id: str) -> dict[str, str]:
    """The variables torchrun (single node, static rendezvous) sets for one worker."""
    return {
        "RANK": str(local_rank),
        "LOCAL_RANK": str(local_rank),
        "GROUP_RANK": "0",
        "ROLE_RANK": str(local_rank),
        "ROLE_NAME": "default",
        "LOCAL_WORLD_SIZE": str(nproc),
        "WORLD_SIZE": str(nproc),
        "GROUP_WORLD_SIZE": "1",
        "ROLE_WORLD_SIZE": str(nproc),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        "TORCHELASTIC_RESTART_COUNT": "0",
        "TORCHELASTIC_MAX_RESTARTS": "0",
        "TORCHELASTIC_RUN_ID": run_id,
        "TORCHELASTIC_USE_AGENT_STORE": "False",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": os.environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
    }


def launch(
    script: str, args: list[str], nproc: int, runner_options: list[str] | None = None, rank_prefix: str | None = None
) -> int:
    """Run ``nproc`` ranks of ``script``; return the run's exit status (the first failure's).

    ``rank_prefix``: a template put before each line a rank prints (none by default, as torchrun).
    """
    if nproc < 1:
        _say(f"--nproc-per-node must be at least 1 (got {nproc})")
        return 2
    try:
        from importlib.metadata import version

        torch_version = ".".join(version("torch").split("+")[0].split(".")[:2])
    except Exception:  # pragma: no cover
        torch_version = "?"
    _say(
        f"emulating {nproc} CUDA device{'s' if nproc > 1 else ''} on one node, {nproc} rank{'s' if nproc > 1 else ''} "
        f"as torchrun --nproc-per-node {nproc} would start them (torch {torch_version}, CPU compute)"
    )
    port = _free_port()
    run_id = uuid.uuid4().hex[:12]
    code = _RUNNER.format(path=_PKG_PARENT)
    procs: list[subprocess.Popen[bytes]] = []
    relays: list[threading.Thread] = []
    unbuffered = "PYTHONUNBUFFERED" not in os.environ and _is_terminal(sys.stdout, sys.stderr)
    for local_rank in range(nproc):
        env = dict(os.environ)
        env.update(torchrun_env(local_rank, nproc, port, run_id))
        env["GPULINT_RUN_RANK"] = str(local_rank)  # the rank's runner labels its messages, no banner
        if unbuffered:
            env["PYTHONUNBUFFERED"] = "1"
        cmd = [sys.executable, "-c", code, "--gpus", str(nproc), *(runner_options or []), script, *args]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        procs.append(proc)
        prefix = b""
        if rank_prefix:
            text = Template(rank_prefix).safe_substitute(rank=local_rank, local_rank=local_rank, role_name="default")
            prefix = text.encode("utf-8", errors="replace")
        for source, stream in ((proc.stdout, sys.stdout), (proc.stderr, sys.stderr)):
            assert source is not None
            thread = threading.Thread(target=_relay, args=(source, stream, prefix), name=f"gpulint-rank{local_rank}-relay", daemon=True)
            thread.start()
            relays.append(thread)
    status = 0
    failed: int | None = None
    try:
        while True:
            running = False
            for rank, proc in enumerate(procs):
                rc = proc.poll()
                if rc is None:
                    running = True
                elif rc != 0 and failed is None:
                    failed, status = rank, rc
            if failed is not None or not running:
                break
            time.sleep(0.05)
    except KeyboardInterrupt:
        status = 130
    if failed is not None:
        others = [p for p in procs if p.poll() is None]
        if others:
            _say(f"rank {failed} exited with status {status}; stopping the other ranks (as torchrun does)")
        _stop(others)
        if any(p.returncode == EXIT_UNSUPPORTED for p in procs):
            status = EXIT_UNSUPPORTED
    elif status == 130:
        _stop(procs)
    deadline = time.monotonic() + _DRAIN_TIMEOUT
    for thread in relays:
        thread.join(timeout=max(deadline - time.monotonic(), 0.1))
    return status


def _is_terminal(*streams: TextIO) -> bool:
    for stream in streams:
        try:
            if stream.isatty():
                return True
        except (AttributeError, ValueError):
            continue
    return False


def _stop(procs: list[subprocess.Popen[bytes]], grace: float = 10.0) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for proc in procs:
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
