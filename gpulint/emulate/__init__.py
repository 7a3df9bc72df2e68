"""Emulated CUDA: run a PyTorch script on a machine without a GPU as if it had one.

``gpulint run SCRIPT`` (and ``python -m gpulint.emulate SCRIPT``) executes the script with an
emulated CUDA device: ``torch.cuda.is_available()`` is true, tensors on ``cuda`` compute on the CPU
but report their CUDA device, and device mistakes raise the errors a real GPU raises. See
``gpulint/emulate/_engine.py`` for how it works and what it cannot do, and ``docs/emulate.md``.

Importing this package does not import torch; torch is imported when emulation starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpulint.emulate._errors import EmulationUnsupported
from gpulint.emulate.sizes import format_size, parse_size

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.emulate._engine import EmulatedCuda

__all__ = [
    "EXIT_UNSUPPORTED",
    "EmulationUnsupported",
    "emulated_cuda",
    "format_size",
    "parse_size",
    "run_script",
]

#: exit code of ``gpulint run`` when the script reaches a feature that cannot be emulated
EXIT_UNSUPPORTED = 3  # same value as gpulint.emulate.runner.EXIT_UNSUPPORTED


def run_script(
    script: str,
    args: list[str] | tuple[str, ...] = (),
    gpus: int = 1,
    gpu_memory: int | None = None,
    force: bool = False,
    max_steps: int | None = None,
    max_time: float | None = None,
) -> int:
    """Run ``script`` like ``python script args...`` under emulated CUDA; return its exit code.

    Emulation is used when torch has no usable CUDA, or always with ``force=True``. ``gpu_memory``
    (bytes) makes allocations past that much live emulated memory raise CUDA's out-of-memory error.
    ``max_steps``/``max_time`` stop the script cleanly (exit 0) after that many training steps
    (every optimizer of the script stepped that many times) or seconds.
    """
    from gpulint.emulate.runner import run_script as _run

    return _run(script, list(args), gpus=gpus, gpu_memory=gpu_memory, force=force, max_steps=max_steps, max_time=max_time)


def emulated_cuda(gpus: int = 1, memory: int | None = None) -> EmulatedCuda:
    """Context manager that activates emulated CUDA in this process (imports torch)."""
    from gpulint.emulate._engine import EmulatedCuda

    return EmulatedCuda(gpus=gpus, memory=memory)
