"""The ``cuda_env`` fixture: real CUDA when this machine has it, emulated CUDA otherwise.

Every fidelity test is written against real CUDA behaviour. On a machine where
``torch.cuda.is_available()`` is true without emulation, the fixture hands out the real device and
the emulator is not involved; elsewhere it activates ``gpulint.emulate.emulated_cuda`` in-process
for the duration of the test. Tests that need N devices say so with ``@pytest.mark.gpus(N)`` (they
are skipped on a real machine with fewer GPUs); ``@pytest.mark.gpu_memory(bytes)`` limits the
emulated device (a real device keeps its own capacity).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

torch = pytest.importorskip("torch")

REAL_CUDA = torch.cuda.is_available()
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "gpus(n): the test needs n CUDA devices (emulated or real)")
    config.addinivalue_line("markers", "gpu_memory(nbytes): memory of each emulated device")


@dataclass
class CudaEnv:
    emulated: bool
    gpus: int
    emulator: Any = None


@pytest.fixture
def cuda_env(request: pytest.FixtureRequest) -> Iterator[CudaEnv]:
    marker = request.node.get_closest_marker("gpus")
    gpus = marker.args[0] if marker else 1
    mem_marker = request.node.get_closest_marker("gpu_memory")
    memory = mem_marker.args[0] if mem_marker else None
    if REAL_CUDA:
        if torch.cuda.device_count() < gpus:
            pytest.skip(f"needs {gpus} CUDA devices")
        torch.cuda.set_device(0)
        yield CudaEnv(emulated=False, gpus=torch.cuda.device_count())
        torch.cuda.synchronize()
        return
    from gpulint.emulate import emulated_cuda

    with emulated_cuda(gpus=gpus, memory=memory) as emu:
        yield CudaEnv(emulated=True, gpus=gpus, emulator=emu)


@pytest.fixture
def run_gpulint(tmp_path: Any):
    """Run ``python -m gpulint.emulate [opts] script [args]`` in a subprocess; returns CompletedProcess."""
    import subprocess

    def run(source: str, *args: str, options: tuple[str, ...] = (), stdin: str | None = None, timeout: float = 900):
        script = tmp_path / "script.py"
        script.write_text(source)
        env = dict(os.environ)
        env["PYTHONPATH"] = REPO_ROOT + os.pathsep + env.get("PYTHONPATH", "")
        env.setdefault("OMP_NUM_THREADS", "1")
        return subprocess.run(  # noqa: PLW1510 - the exit code is what the tests look at
            [sys.executable, "-m", "gpulint.emulate", *options, str(script), *args],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=str(tmp_path),
            env=env,
            timeout=timeout,
        )

    return run
