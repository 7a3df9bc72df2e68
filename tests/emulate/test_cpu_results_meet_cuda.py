"""CPU results of composite operators meeting CUDA tensors: each test asserts what a real GPU does.

``pad_sequence`` and ``F.one_hot`` build their result in C++ with a factory that takes the input's
``options()``; the emulator cannot see which tensor those came from, so it decides the device from
the first tensor written into the buffer. ``torch.stack`` has no CUDA kernel of its own: it
unsqueezes every tensor and calls ``cat``, whose CUDA check refuses even a 0-dim CPU tensor. The
CPU-scalar rules real CUDA does have still hold: a 0-dim CPU tensor combines with CUDA tensors in
pointwise operators, and a CUDA tensor may be indexed with CPU indices (not the reverse).
Runs unchanged on a machine with CUDA (``cuda_env``).
"""

from __future__ import annotations

import gc
import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pad_sequence

CUDA = torch.device("cuda", 0)
POINTWISE = re.escape("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!")
SAME_DEVICE = "Expected all tensors to be on the same device"
CPU_INDEXED = re.escape("indices should be either on cpu or on the same device as the indexed tensor (cpu)")


def _cpu_sequences():
    return [torch.ones(3, 4), torch.ones(2, 4), torch.ones(1, 4)]


# --- pad_sequence -----------------------------------------------------------------------------------


def test_pad_sequence_of_cpu_sequences_is_a_cpu_tensor(cuda_env):
    """pad_sequence of CPU tensors is a CPU tensor; adding it to a CUDA tensor fails (pointwise)."""
    padded = pad_sequence(_cpu_sequences(), batch_first=True)
    assert padded.device.type == "cpu" and not padded.is_cuda
    with pytest.raises(RuntimeError, match=POINTWISE):
        padded + torch.zeros(3, 3, 4, device="cuda")
    with pytest.raises(RuntimeError, match=POINTWISE):
        torch.zeros(3, 3, 4, device="cuda").add_(padded)


def test_cpu_padded_batch_into_a_cuda_model_fails(cuda_env):
    """A padded CPU batch fed to a model on CUDA fails in the first layer (linear/matmul check)."""
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).cuda()
    padded = pad_sequence(_cpu_sequences(), batch_first=True)
    with pytest.raises(RuntimeError, match=SAME_DEVICE):
        model(padded)
    with pytest.raises(RuntimeError, match=SAME_DEVICE):
        padded @ torch.ones(4, 4, device="cuda")


def test_pad_sequence_moved_or_built_on_cuda_passes(cuda_env):
    """Moving the padded batch (or padding CUDA sequences) gives a CUDA tensor that trains."""
    model = nn.Linear(4, 2).cuda()
    moved = pad_sequence(_cpu_sequences(), batch_first=True).to("cuda")
    built = pad_sequence([s.cuda() for s in _cpu_sequences()], batch_first=True, padding_value=-1.0)
    assert moved.device == CUDA and built.device == CUDA
    assert built[2, 1:].eq(-1).all().item() is True
    model(moved).sum().backward()
    assert model.weight.grad.device == CUDA
    assert (model(built) + model(moved)).device == CUDA


def test_cpu_padded_batch_stays_cpu_after_copying_cuda_data_into_it(cuda_env):
    """copy_ may cross devices: copying CUDA data into the CPU buffer leaves it a CPU tensor."""
    padded = pad_sequence(_cpu_sequences())
    padded.copy_(torch.full(padded.shape, 2.0, device="cuda"))
    assert padded.device.type == "cpu" and padded.sum().item() == 2.0 * padded.numel()
    with pytest.raises(RuntimeError, match=POINTWISE):
        torch.ones(padded.shape, device="cuda") * padded


def test_pad_packed_sequence_of_a_cpu_lstm_is_a_cpu_tensor(cuda_env):
    """An LSTM left on the CPU returns a CPU packed sequence; pad_packed_sequence of it is a CPU
    tensor that a CUDA head refuses. With the LSTM on CUDA the padded output is CUDA."""
    x = torch.randn(4, 2, 3)
    lstm, head = nn.LSTM(3, 5), nn.Linear(5, 2).cuda()
    out, _ = lstm(nn.utils.rnn.pack_padded_sequence(x, torch.tensor([4, 2])))
    padded, lengths = nn.utils.rnn.pad_packed_sequence(out)
    assert padded.device.type == "cpu" and lengths.tolist() == [4, 2]
    with pytest.raises(RuntimeError, match=SAME_DEVICE):
        head(padded)
    lstm.cuda()
    out, _ = lstm(nn.utils.rnn.pack_padded_sequence(x.cuda(), torch.tensor([4, 2])))
    padded, _ = nn.utils.rnn.pad_packed_sequence(out)
    assert padded.device == CUDA and head(padded).device == CUDA


# --- one_hot ----------------------------------------------------------------------------------------


def test_one_hot_of_cpu_labels_against_cuda_logits_fails(cuda_env):
    """F.one_hot of CPU labels is a CPU tensor: a loss computed from it and CUDA logits fails."""
    logits = torch.randn(4, 3, device="cuda")
    target = F.one_hot(torch.tensor([0, 2, 1, 1]), 3)
    assert target.device.type == "cpu"
    with pytest.raises(RuntimeError, match=POINTWISE):
        logits - target.float()
    with pytest.raises(RuntimeError, match=POINTWISE):
        (target * logits.log_softmax(-1)).sum()
    with pytest.raises(RuntimeError, match=SAME_DEVICE):
        F.mse_loss(logits, target.float())
    with pytest.raises(RuntimeError, match=CPU_INDEXED):
        target[torch.tensor([0, 1], device="cuda")]


def test_one_hot_moved_or_of_cuda_labels_passes(cuda_env):
    """one_hot of CUDA labels is CUDA; one_hot of CPU labels moved with .to(logits.device) works; a
    CUDA tensor may be indexed by the CPU one-hot mask."""
    logits = torch.randn(4, 3, device="cuda", requires_grad=True)
    labels = torch.tensor([0, 2, 1, 1])
    on_gpu = F.one_hot(labels.to(logits.device), 3)
    moved = F.one_hot(labels, 3).to(logits.device)
    assert on_gpu.device == CUDA and moved.device == CUDA
    loss = -(moved * logits.log_softmax(-1)).sum() - (on_gpu * logits).sum()
    loss.backward()
    assert logits.grad.device == CUDA
    picked = logits.detach()[F.one_hot(labels, 3).bool()]
    assert picked.device == CUDA and picked.shape == (4,)


# --- stack and 0-dim CPU tensors --------------------------------------------------------------------


def test_stack_refuses_a_0dim_cpu_tensor_beside_cuda_ones(cuda_env):
    """torch.stack goes through cat's CUDA check: a 0-dim CPU tensor among CUDA ones fails there
    (it is not a scalar to cat), whichever comes first."""
    gpu, cpu = torch.tensor(1.0, device="cuda"), torch.tensor(2.0)
    with pytest.raises(RuntimeError, match=re.escape("but got tensors is on cpu, different from other tensors on cuda:0")):
        torch.stack([gpu, cpu])
    with pytest.raises(RuntimeError, match=re.escape("but got tensors is on cuda:0, different from other tensors on cpu")):
        torch.stack([cpu, gpu])
    with pytest.raises(RuntimeError, match=re.escape("but got tensors is on cpu, different from other tensors on cuda:0")):
        torch.stack([torch.ones(2, device="cuda"), torch.ones(2)], dim=1)


def test_stack_of_cpu_0dim_tensors_is_a_1dim_cpu_tensor(cuda_env):
    """torch.stack of 0-dim CPU tensors is a 1-dim CPU tensor: it does not combine with CUDA ones,
    while its 0-dim mean does (a CPU scalar)."""
    stacked = torch.stack([torch.tensor(1.0), torch.tensor(3.0)])
    assert stacked.device.type == "cpu" and stacked.dim() == 1
    with pytest.raises(RuntimeError, match=POINTWISE):
        stacked + torch.ones(2, device="cuda")
    mean = stacked.mean()
    assert (torch.ones(2, device="cuda") * mean).tolist() == [2.0, 2.0]


def test_stack_of_cuda_0dim_losses_passes(cuda_env):
    """Stacking per-step CUDA losses (0-dim) gives a CUDA tensor; stacking CUDA and then moving
    the result to the CPU is fine."""
    losses = [torch.tensor(float(i), device="cuda") for i in range(3)]
    stacked = torch.stack(losses)
    assert stacked.device == CUDA and stacked.tolist() == [0.0, 1.0, 2.0]
    assert torch.stack([stacked.mean().cpu(), torch.tensor(1.0)]).tolist() == [1.0, 1.0]


def test_0dim_cpu_tensor_with_cuda_tensors_in_pointwise_ops_passes(cuda_env):
    """A 0-dim CPU tensor is a scalar to CUDA pointwise operators (either side, in place too); a
    1-dim CPU tensor of one element is not."""
    x = torch.arange(3.0, device="cuda")
    scale = torch.tensor(2.0)
    assert (x * scale).device == CUDA and (scale * x).tolist() == [0.0, 2.0, 4.0]
    x.add_(scale)
    assert x.tolist() == [2.0, 3.0, 4.0]
    with pytest.raises(RuntimeError, match=POINTWISE):
        x * torch.tensor([2.0])


def test_indexing_across_devices(cuda_env):
    """A CUDA tensor may be indexed with CPU index tensors and masks; a CPU tensor with CUDA
    indices fails."""
    x = torch.arange(4.0, device="cuda")
    assert x[torch.tensor([0, 2])].tolist() == [0.0, 2.0]
    assert x[torch.tensor([True, False, True, False])].device == CUDA
    with pytest.raises(RuntimeError, match=CPU_INDEXED):
        torch.arange(4.0)[torch.tensor([0, 2], device="cuda")]


def test_cpu_buffers_are_forgotten_when_freed(cuda_env):
    """(Emulator bookkeeping.) Buffers that turned out to be CPU tensors are not remembered after
    they are freed, so a new buffer at a reused address is decided afresh."""
    if not cuda_env.emulated:
        pytest.skip("emulator bookkeeping")
    emu = cuda_env.emulator
    before = len(emu._wild_adopted)
    kept = [F.one_hot(torch.tensor([0, 1]), 2) for _ in range(5)] + [pad_sequence(_cpu_sequences()) for _ in range(5)]
    assert all(t.device.type == "cpu" for t in kept)
    assert len(emu._wild_adopted) == before + 10  # one per buffer, while it lives
    del kept
    gc.collect()
    assert len(emu._wild_adopted) == before
    assert F.one_hot(torch.tensor([0, 1], device="cuda"), 2).device == CUDA
