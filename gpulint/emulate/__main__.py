"""``python -m gpulint.emulate [--gpus N] [--gpu-memory SIZE] [--force] SCRIPT [ARGS]...``"""

from __future__ import annotations

import argparse
import sys

from gpulint.emulate.sizes import parse_size


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gpulint.emulate",
        description="Run a PyTorch script with an emulated CUDA device (when torch has no usable GPU).",
    )
    parser.add_argument("--gpus", type=int, default=1, help="number of emulated CUDA devices (default 1)")
    parser.add_argument("--gpu-memory", type=_size, default=None, metavar="SIZE", help="memory per device, e.g. 16GiB; allocations past it raise CUDA out-of-memory")
    parser.add_argument("--force", action="store_true", help="emulate even when a real GPU is available")
    parser.add_argument("script", help="the Python script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    ns = parser.parse_args(argv)

    from gpulint.emulate.runner import run_script

    return run_script(ns.script, ns.args, gpus=ns.gpus, gpu_memory=ns.gpu_memory, force=ns.force)


if __name__ == "__main__":
    sys.exit(main())
