"""``gpulint run --nproc-per-node N``: torchrun-style ranks on N emulated GPUs, NCCL served by Gloo.

A DDP script written for a GPU cluster (``init_process_group("nccl")``, one GPU per ``LOCAL_RANK``)
trains unchanged; pinning every rank to GPU 0 fails with NCCL's duplicate-GPU error, and a pure
NCCL group refuses CPU tensors, as on a cluster.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the emulated launcher")

DDP_SCRIPT = r'''
import json, os, sys
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

def main():
    dist.init_process_group(backend="nccl")
    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    env = {k: os.environ[k] for k in ("WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "GROUP_RANK", "ROLE_RANK", "TORCHELASTIC_RUN_ID")}
    if "--pin-gpu0" in sys.argv:
        local_rank = 0
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    torch.manual_seed(rank)  # different initial weights: DDP must broadcast rank 0's
    model = DDP(nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2)).to(device), device_ids=[local_rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = TensorDataset(torch.randn(32, 4), torch.randint(0, 2, (32,)))
    sampler = DistributedSampler(data)
    for x, y in DataLoader(data, batch_size=8, sampler=sampler):
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
    w = model.module[0].weight.detach()
    gathered = [torch.zeros_like(w) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, w)
    dist.barrier()
    print("RESULT " + json.dumps({"rank": rank, "device": str(w.device), "in_sync": all(torch.equal(gathered[0], g) for g in gathered),
                                  "backend": dist.get_backend(), "count": torch.cuda.device_count(), "env": env}), flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
'''


def _run(tmp_path, source: str, *args: str, nproc: int = 2) -> subprocess.CompletedProcess:
    script = tmp_path / "train_ddp.py"
    script.write_text(source)
    env = dict(os.environ, PYTHONPATH=REPO_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("OMP_NUM_THREADS", None)
    return subprocess.run(
        [sys.executable, "-m", "gpulint.emulate", "--nproc-per-node", str(nproc), str(script), *args],
        capture_output=True, text=True, cwd=str(tmp_path), env=env, timeout=900, check=False,
    )  # fmt: skip


def test_nccl_ddp_script_trains_on_two_emulated_gpus(tmp_path):
    import json

    proc = _run(tmp_path, DDP_SCRIPT)
    assert proc.returncode == 0, proc.stderr
    results = sorted((json.loads(l[len("RESULT ") :]) for l in proc.stdout.splitlines() if l.startswith("RESULT ")), key=lambda r: r["rank"])
    assert [r["rank"] for r in results] == [0, 1]
    assert [r["device"] for r in results] == ["cuda:0", "cuda:1"]
    assert all(r["in_sync"] and r["backend"] == "nccl" and r["count"] == 2 for r in results)
    run_ids = {r["env"]["TORCHELASTIC_RUN_ID"] for r in results}
    assert len(run_ids) == 1
    for r in results:
        assert r["env"]["WORLD_SIZE"] == "2" and r["env"]["LOCAL_WORLD_SIZE"] == "2"
        assert r["env"]["MASTER_ADDR"] == "127.0.0.1" and r["env"]["GROUP_RANK"] == "0"
        assert r["env"]["ROLE_RANK"] == str(r["rank"])
    assert proc.stderr.startswith("gpulint run: emulating 2 CUDA devices on one node, 2 ranks")
    assert "gpulint run [rank 1]: emulated cuda peak memory" in proc.stderr


def test_every_rank_pinned_to_gpu0_fails_like_nccl(tmp_path):
    proc = _run(tmp_path, DDP_SCRIPT, "--pin-gpu0")
    assert proc.returncode == 1
    assert "torch.distributed.DistBackendError" in proc.stderr
    assert "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device" in proc.stderr
    assert "RESULT" not in proc.stdout


@pytest.fixture
def single_rank_nccl(tmp_path):
    import torch.distributed as dist

    from gpulint.emulate import emulated_cuda

    with emulated_cuda() as emu:
        store = dist.FileStore(str(tmp_path / "store"), 1)
        dist.init_process_group("nccl", store=store, rank=0, world_size=1)
        try:
            yield emu
        finally:
            dist.destroy_process_group()


def test_pure_nccl_group_refuses_cpu_tensors(single_rank_nccl):
    import torch.distributed as dist

    assert dist.get_backend() == "nccl"
    t = torch.ones(3, device="cuda")
    dist.all_reduce(t)
    assert t.device.type == "cuda" and t.tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(RuntimeError, match="No backend type associated with device type cpu"):
        dist.all_reduce(torch.ones(3))
    objs = [None]
    dist.all_gather_object(objs, {"a": 1})  # torch's helper picks the GPU itself
    assert objs == [{"a": 1}]
