"""Child processes under ``gpulint run``: spawn/forkserver children see the same emulated GPU.

On a GPU machine spawn and forkserver children can use CUDA (a forked child of a process that used
CUDA cannot); a run whose child cannot be emulated must not pass: it exits 3 with the reason.
"""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the emulator's child processes")

HOGWILD = r'''
import sys
import torch, torch.nn as nn, torch.nn.functional as F, torch.multiprocessing as mp

def train(rank, model, device, queue):
    torch.manual_seed(rank)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        x, y = torch.randn(8, 4).to(device), torch.randint(0, 2, (8,)).to(device)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
    t = torch.full((2,), float(rank), device=device)
    queue.put((rank, str(next(model.parameters()).device), str(t.device), t.tolist()))

if __name__ == "__main__":
    assert torch.cuda.is_available()
    ctx = mp.get_context(sys.argv[1])
    device = torch.device("cuda")
    model = nn.Linear(4, 2).to(device)
    model.share_memory()
    before = model.weight.detach().clone()
    queue = ctx.Queue()
    procs = [ctx.Process(target=train, args=(r, model, device, queue)) for r in range(2)]
    for p in procs: p.start()
    results = sorted(queue.get() for _ in procs)
    for p in procs: p.join()
    for rank, dev, tdev, values in results:
        print("rank", rank, dev, tdev, values)
    print("exitcodes", [p.exitcode for p in procs], "shared", bool((model.weight.detach() != before).any()))
'''


def test_hogwild_children_train_on_the_emulated_gpu(run_gpulint, method="spawn"):
    """Hogwild: children get the shared CUDA model, train it on cuda:0 and the parent sees the updates."""
    proc = run_gpulint(HOGWILD, method)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "rank 0 cuda:0 cuda:0 [0.0, 0.0]" in out
    assert "rank 1 cuda:0 cuda:0 [1.0, 1.0]" in out
    assert "exitcodes [0, 0] shared True" in out


LOADER = r'''
import torch
from torch.utils.data import DataLoader, Dataset

class Data(Dataset):
    def __len__(self):
        return 8
    def __getitem__(self, i):
        assert torch.cuda.is_available()  # the worker sees the GPU, as on a GPU machine
        return torch.full((3,), float(i)), i

if __name__ == "__main__":
    loader = DataLoader(Data(), batch_size=4, num_workers=2, multiprocessing_context="spawn", pin_memory=True)
    total = 0.0
    for x, y in loader:
        x = x.cuda(non_blocking=True)
        total += x.sum().item()
    print("total", total, x.device)
'''


def test_dataloader_spawn_workers(run_gpulint):
    proc = run_gpulint(LOADER)
    assert proc.returncode == 0, proc.stderr
    assert "total 84.0 cuda:0" in proc.stdout


CHILD_REFUSED = r'''
import sys
import torch, torch.multiprocessing as mp

def work(rank):
    torch.compile(torch.nn.Linear(2, 2).cuda())

if __name__ == "__main__":
    p = mp.get_context(sys.argv[1]).Process(target=work, args=(0,))
    p.start(); p.join()
    print("parent finished, child exit code", p.exitcode)
'''


def test_child_reaching_an_unsupported_feature_fails_the_run(run_gpulint, method="forkserver"):
    """The parent ignores its child's exit code, but the run must not pass: exit 3 with the reason."""
    proc = run_gpulint(CHILD_REFUSED, method)
    assert "parent finished, child exit code 1" in proc.stdout
    assert proc.returncode == 3, proc.stderr
    assert "gpulint run: a child process (pid " in proc.stderr
    assert "reached torch.compile cannot be emulated" in proc.stderr


CHILD_CANNOT_START = r'''
import json, os
import torch.multiprocessing as mp

def work():
    pass

if __name__ == "__main__":
    cfg = json.loads(os.environ["GPULINT_EMULATE_CHILD"])
    cfg["gpus"] = 0  # the child's emulator refuses to start
    os.environ["GPULINT_EMULATE_CHILD"] = json.dumps(cfg)
    p = mp.get_context("spawn").Process(target=work)
    p.start(); p.join()
    print("child exit code", p.exitcode)
'''


def test_child_that_cannot_start_the_emulator_fails_the_run(run_gpulint):
    proc = run_gpulint(CHILD_CANNOT_START)
    assert "child exit code 3" in proc.stdout
    assert proc.returncode == 3
    assert "gpulint run: a child process could not start the emulator: ValueError: gpus must be >= 1" in proc.stderr


FORKED = r'''
import torch, torch.multiprocessing as mp

def work():
    torch.ones(1, device="cuda")

if __name__ == "__main__":
    torch.zeros(1, device="cuda")
    p = mp.get_context("fork").Process(target=work)
    p.start(); p.join()
    print("child exit code", p.exitcode)
'''


def test_fork_children_still_refuse_cuda(run_gpulint):
    """A forked child of a process that used CUDA cannot use CUDA (the GPU's own error)."""
    proc = run_gpulint(FORKED)
    assert "child exit code 1" in proc.stdout
    assert "Cannot re-initialize CUDA in forked subprocess" in proc.stderr
    assert proc.returncode == 0
