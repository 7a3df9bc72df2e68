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
    parser.add_argument("--nproc-per-node", type=int, default=None, metavar="N", help="start N ranks like torchrun, each with N emulated GPUs")
    parser.add_argument(
        "--rank-prefix",
        default=None,
        metavar="TEMPLATE",
        help="with --nproc-per-node: put TEMPLATE before each line a rank prints, e.g. '[${role_name}${local_rank}]:' (torchrun --tee's); none by default",
    )
    parser.add_argument("--max-steps", type=int, default=None, metavar="N", help="stop cleanly after N training steps: every optimizer has stepped N times, or one 10 x N times (counts as success)")
    parser.add_argument("--max-time", type=float, default=None, metavar="S", help="stop cleanly after S seconds (counts as success)")
    parser.add_argument("script", help="the Python script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    ns = parser.parse_args(argv)

    if ns.nproc_per_node is not None:
        from gpulint.emulate.launch import launch

        options = ["--force"] if ns.force else []
        if ns.gpu_memory is not None:
            options += ["--gpu-memory", str(ns.gpu_memory)]
        if ns.max_steps is not None:
            options += ["--max-steps", str(ns.max_steps)]
        if ns.max_time is not None:
            options += ["--max-time", str(ns.max_time)]
        return launch(ns.script, ns.args, ns.nproc_per_node, options, rank_prefix=ns.rank_prefix)

    from gpulint.emulate.runner import run_script

    return run_script(
        ns.script, ns.args, gpus=ns.gpus, gpu_memory=ns.gpu_memory, force=ns.force, max_steps=ns.max_steps, max_time=ns.max_time
    )


if __name__ == "__main__":
    sys.exit(main())
