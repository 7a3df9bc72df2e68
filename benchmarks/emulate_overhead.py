"""Overhead of emulated CUDA: a small CNN training loop, on the CPU vs on emulated "cuda".

    python benchmarks/emulate_overhead.py [--steps 30] [--batch 32] [--repeats 3]

Both runs execute the same CPU kernels; the emulated run adds the dispatch-mode bookkeeping
(device checks, tagging, memory accounting) on every ATen operator, forward and backward. Prints
the best-of-N time per step for each and their ratio. Not a test: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


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


def train(device: str, steps: int, batch: int) -> float:
    """Seconds per training step (after two warm-up steps)."""
    torch.manual_seed(0)
    model = SmallCNN().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    images = torch.randn(batch * 4, 3, 32, 32)
    labels = torch.randint(0, 10, (batch * 4,))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images, labels), batch_size=batch, shuffle=True)
    done = 0
    start = 0.0
    while done < steps + 2:
        for xb, yb in loader:
            if done == 2:
                start = time.perf_counter()
            xb, yb = xb.to(device), yb.to(device)
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss.item()
            done += 1
            if done >= steps + 2:
                break
    return (time.perf_counter() - start) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: leave as is)")
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
    best_plain, best_emulated = min(plain), min(emulated)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, batch {args.batch}, {args.steps} steps, best of {args.repeats}")
    print(f"cpu:           {best_plain * 1000:8.2f} ms/step")
    print(f"emulated cuda: {best_emulated * 1000:8.2f} ms/step (peak emulated memory {peak / 2**20:.1f} MiB)")
    print(f"overhead ratio: {best_emulated / best_plain:.2f}x")


if __name__ == "__main__":
    main()
