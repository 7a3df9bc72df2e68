"""nn.DataParallel trains on two devices: forward (replicate/scatter/parallel_apply/gather) and
backward (Broadcast's backward is ReduceAddCoalesced: ``comm.reduce_add`` of every replica's
gradients on device_ids[0]).

On a real GPU the autograd engine materializes the gradient of a custom Function's output that the
loss does not reach as zeros *on that output's device*; DataParallel's Broadcast backward receives
such zeros for every parameter of a head whose output is dropped (``logits, _ = model(x)``), and
``reduce_add`` requires them all on GPUs. Written against real CUDA (see conftest.py).
"""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F
from torch import nn

REAL_CUDA = torch.cuda.is_available()
CUDA0 = torch.device("cuda", 0)
CUDA1 = torch.device("cuda", 1)


class TwoHeads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU())
        self.cls = nn.Linear(8, 3)
        self.aux = nn.Linear(8, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.body(x)
        return self.cls(h), self.aux(h)


class _TwoOutputs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):  # type: ignore[no-untyped-def]
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, g_used, g_unused):  # type: ignore[no-untyped-def]
        ctx.seen = (g_used.device, g_unused.device, g_unused.type(), float(g_unused.abs().sum()))
        return g_used * 2 + g_unused * 3


@pytest.mark.gpus(2)
@pytest.mark.parametrize("device", [CUDA0, CUDA1])
def test_materialized_zero_gradient_is_on_the_output_device(cuda_env, device):
    """A custom Function's backward gets zeros for an output the loss does not use, on that
    output's device (a CUDA tensor of the CUDA type), not on the CPU."""
    x = torch.randn(4, device=device, requires_grad=True)
    used, _unused = _TwoOutputs.apply(x)
    used.sum().backward()
    seen = used.grad_fn.seen
    assert seen == (device, device, "torch.cuda.FloatTensor", 0.0)
    assert x.grad.device == device
    assert torch.allclose(x.grad.cpu(), torch.full((4,), 2.0))


@pytest.mark.gpus(2)
def test_data_parallel_backward_with_an_unused_output(cuda_env):
    """`logits, _ = dp(x)` then backward: the dropped head's replicas get zero gradients, which
    reduce_add sums on cuda:0; every parameter's gradient is on cuda:0 (the dropped head's is zeros,
    not None) and the used head's matches the single-device gradient."""
    torch.manual_seed(0)
    net = TwoHeads().cuda()
    dp = nn.DataParallel(net)
    x = torch.randn(8, 4, device="cuda")
    y = torch.randint(0, 3, (8,), device="cuda")
    logits, _ = dp(x)
    F.cross_entropy(logits, y).backward()
    for name, param in net.named_parameters():
        assert param.grad is not None and param.grad.device == CUDA0, name
    assert float(net.aux.weight.grad.abs().sum()) == 0.0
    assert float(net.cls.weight.grad.abs().sum()) > 0.0


@pytest.mark.gpus(2)
def test_parallel_apply_from_the_package(cuda_env):
    """`from torch.nn.parallel import replicate, scatter, parallel_apply, gather` (a DataParallel
    written by hand) runs each replica on its device and gathers on cuda:0; the gradient reaches the
    module's parameters through reduce_add."""
    from torch.nn.parallel import gather, parallel_apply, replicate, scatter

    torch.manual_seed(0)
    net = nn.Linear(3, 2).cuda()
    x = torch.randn(4, 3, device="cuda")
    replicas = replicate(net, [0, 1])
    assert [r.weight.device for r in replicas] == [CUDA0, CUDA1]
    inputs = scatter(x, [0, 1])
    outputs = parallel_apply(replicas, inputs, devices=[0, 1])
    assert [o.device for o in outputs] == [CUDA0, CUDA1]
    out = gather(outputs, 0)
    assert out.device == CUDA0 and torch.allclose(out.detach().cpu(), net(x).detach().cpu(), atol=1e-6)
    out.sum().backward()
    assert net.weight.grad.device == CUDA0
    assert torch.allclose(net.weight.grad.cpu(), x.sum(0).cpu().expand(2, 3), atol=1e-5)


@pytest.mark.gpus(2)
def test_comm_reduce_add_and_broadcast(cuda_env):
    """torch.nn.parallel.comm: reduce_add sums on the destination GPU and refuses a CPU input;
    broadcast_coalesced puts a copy of each tensor on each device."""
    from torch.nn.parallel import comm

    a = torch.ones(3, device="cuda:0")
    b = torch.full((3,), 2.0, device="cuda:1")
    total = comm.reduce_add([a, b], destination=1)
    assert total.device == CUDA1 and total.tolist() == [3.0, 3.0, 3.0]
    summed = comm.reduce_add_coalesced([[a, a[:2]], [b, b[:2]]], destination=0)
    assert [t.device for t in summed] == [CUDA0, CUDA0]
    copies = comm.broadcast_coalesced([a, a * 2], [0, 1])
    assert [[t.device for t in group] for group in copies] == [[CUDA0, CUDA0], [CUDA1, CUDA1]]
    with pytest.raises(AssertionError, match="reduce_add expects all inputs to be on GPUs, but input 0 is on CPU"):
        comm.reduce_add([torch.ones(3), b])


DP_TRAIN = r'''
import json
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.1))
        self.cls = nn.Linear(16, 3)
        self.aux = nn.Linear(16, 1)

    def forward(self, x, scale=1.0):
        h = self.body(x) * scale
        return self.cls(h), self.aux(h)


torch.manual_seed(0)
device = torch.device("cuda")
model = nn.DataParallel(Net().to(device))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(64, 8)
y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
first = last = None
for epoch in range(15):
    model.train()
    for i in range(0, 64, 16):
        xb, yb = x[i:i + 16].to(device), y[i:i + 16].to(device)
        logits, _ = model(xb, scale=1.0)
        loss = F.cross_entropy(logits, yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
        last = loss.item()
model.eval()
with torch.no_grad():
    acc = (model(x.to(device))[0].argmax(1).cpu() == y).float().mean().item()
print("GPULINT-TRAIN " + json.dumps({"first_loss": first, "last_loss": last, "acc": acc,
      "gpus": torch.cuda.device_count(), "grad": str(model.module.aux.weight.grad.device)}))
'''


def test_data_parallel_script_trains_on_two_gpus(run_gpulint):
    """`gpulint run --gpus 2` of a DataParallel training script (a two-head model whose second head
    is dropped, BatchNorm, Adam, eval under no_grad) trains to completion like on two GPUs."""
    if REAL_CUDA and torch.cuda.device_count() < 2:
        pytest.skip("needs 2 CUDA devices")
    proc = run_gpulint(DP_TRAIN, options=("--gpus", "2"))
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("GPULINT-TRAIN ")]
    result = json.loads(lines[-1][len("GPULINT-TRAIN ") :])
    assert result["gpus"] == 2 and result["grad"] == "cuda:0"
    assert result["last_loss"] < 0.7 * result["first_loss"]
    if not REAL_CUDA:
        assert "(cuda:0 " in proc.stderr and "cuda:1 " in proc.stderr
