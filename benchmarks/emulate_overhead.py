"""Overhead of emulated CUDA: a small CNN training loop, on the CPU vs on emulated "cuda".

    python benchmarks/emulate_overhead.py [--steps 30] [--batch 32] [--repeats 3]

It also times the emulated step in reduced precision (``torch.autocast("cuda", float16)`` and a
``.half()`` model), which runs CPU half-precision kernels unless the emulator upcasts them.

Both runs execute the same CPU kernels; the emulated run adds the dispatch-mode bookkeeping
(device checks, tagging, memory accounting) on every ATen operator, forward and backward. Prints
the best-of-N wall and process-CPU time per step for each and their ratios (CPU time is the steadier
number on a shared machine). Not a test: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch
import torch.nn.functional as F
from torch import nn


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(32)
        self.fc = nn.Linear(32 * 8 * 8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(x.flatten(1))


def train(device: str, steps: int, batch: int, precision: str = "fp32") -> tuple[float, float]:
    """(wall seconds, process CPU seconds) per training step, after two warm-up steps."""
    import contextlib

    torch.manual_seed(0)
    model = SmallCNN().to(device)
    if precision == "half":
        model = model.half()
    autocast = torch.autocast(device, dtype=torch.float16) if precision == "autocast" else contextlib.nullcontext()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    images = torch.randn(batch * 4, 3, 32, 32)
    labels = torch.randint(0, 10, (batch * 4,))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images, labels), batch_size=batch, shuffle=True)
    done = 0
    start = cpu_start = 0.0
    while done < steps + 2:
        for xb, yb in loader:
            if done == 2:
                start, cpu_start = time.perf_counter(), time.process_time()
            xb, yb = xb.to(device), yb.to(device)
            if precision == "half":
                xb = xb.half()
            with autocast:
                loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss.item()
            done += 1
            if done >= steps + 2:
                break
    return (time.perf_counter() - start) / steps, (time.process_time() - cpu_start) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (0: leave as is; default 1 for stable numbers)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    from gpulint.emulate import emulated_cuda

    plain, emulated = [], []
    for _ in range(args.repeats):
        plain.append(train("cpu", args.steps, args.batch))
        with emulated_cuda() as emu:
            emulated.append(train("cuda", args.steps, args.batch))
            peak = emu.peak_total
    wall_plain, wall_emulated = min(p[0] for p in plain), min(e[0] for e in emulated)
    cpu_plain, cpu_emulated = min(p[1] for p in plain), min(e[1] for e in emulated)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, batch {args.batch}, {args.steps} steps, best of {args.repeats}")
    print(f"cpu:           {wall_plain * 1000:8.2f} ms/step wall, {cpu_plain * 1000:8.2f} ms/step CPU time")
    print(f"emulated cuda: {wall_emulated * 1000:8.2f} ms/step wall, {cpu_emulated * 1000:8.2f} ms/step CPU time (peak emulated memory {peak / 2**20:.1f} MiB)")
    print(f"overhead ratio: {wall_emulated / wall_plain:.2f}x wall, {cpu_emulated / cpu_plain:.2f}x CPU time")
    for precision in ("autocast", "half"):
        times = []
        for _ in range(args.repeats):
            with emulated_cuda():
                times.append(train("cuda", max(args.steps // 3, 3), args.batch, precision))
        cpu_low = min(t[1] for t in times)
        print(f"emulated cuda, {precision:8s}: {cpu_low * 1000:8.2f} ms/step CPU time ({cpu_low / cpu_emulated:.2f}x the emulated fp32 step)")

if __name__ == "__main__":
    main()
