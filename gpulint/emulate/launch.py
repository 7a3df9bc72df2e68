"""``gpulint run --nproc-per-node N``: start a script like ``torchrun --nproc-per-node N`` would.

Each rank is a separate process running ``gpulint run`` with N emulated GPUs (one node with N
devices, the rank's GPU is ``cuda:LOCAL_RANK`` by convention, as on a real node) and torchrun's
environment: ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``GROUP_RANK``,
``ROLE_RANK``, ``ROLE_NAME``, ``GROUP_WORLD_SIZE``, ``ROLE_WORLD_SIZE``, ``MASTER_ADDR`` and
``MASTER_PORT`` (a free port on the loopback interface), ``TORCHELASTIC_*`` and
``OMP_NUM_THREADS=1`` unless set. As torchrun does, when one rank fails the others are stopped and
the run exits with the failed rank's status (3 when a rank reached something that cannot be
emulated).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid

__all__ = ["launch", "torchrun_env"]

_PKG_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_RUNNER = "import sys; sys.path.insert(0, {path!r}); from gpulint.emulate.__main__ import main; sys.path.pop(0); sys.exit(main(sys.argv[1:]))"
EXIT_UNSUPPORTED = 3


def _say(message: str) -> None:
    sys.stderr.write(f"gpulint run: {message}\n")
    sys.stderr.flush()


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


def launch(script: str, args: list[str], nproc: int, runner_options: list[str] | None = None) -> int:
    """Run ``nproc`` ranks of ``script``; return the run's exit status (the first failure's)."""
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
    for local_rank in range(nproc):
        env = dict(os.environ)
        env.update(torchrun_env(local_rank, nproc, port, run_id))
        env["GPULINT_RUN_RANK"] = str(local_rank)  # the rank's runner labels its messages, no banner
        cmd = [sys.executable, "-c", code, "--gpus", str(nproc), *(runner_options or []), script, *args]
        procs.append(subprocess.Popen(cmd, env=env))
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
    return status


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
