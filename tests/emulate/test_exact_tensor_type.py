"""The class of a CUDA tensor, as scripts test it.

On a GPU a CUDA tensor's class is ``torch.Tensor`` itself, so ``type(x) == torch.Tensor`` holds (a
collate function's ``if type(x) == torch.Tensor: x = x.to(device)``), two tensors on different GPUs
have equal types, a parameter's type is ``nn.Parameter`` and a script's subclass stays that
subclass. Written against real CUDA (see conftest.py).

The emulator keeps the CUDA identity in the Python class (a per-device subclass), so
``type(x) is torch.Tensor`` and looking ``type(x)`` up in a dict or set keyed by ``torch.Tensor``
remain false under emulation; those two are not tested here (see gpulint/emulate/_engine.py).
"""

from __future__ import annotations

import pytest
import torch
from torch import nn


class MyTensor(torch.Tensor):
    pass


def test_type_of_a_cuda_tensor_equals_torch_tensor(cuda_env):
    """type(x) == torch.Tensor (either side), != is False, and it prints as torch.Tensor, for
    tensors made on the GPU, moved there and produced by operators and autograd."""
    made = torch.zeros(3, device="cuda")
    moved = torch.zeros(3).cuda()
    w = torch.randn(3, device="cuda", requires_grad=True)
    (w * 2).sum().backward()
    for x in (made, moved, made + moved, moved.to("cuda"), w.grad, w.detach()):
        assert x.device.type == "cuda"
        assert type(x) == torch.Tensor  # the comparison scripts write
        assert torch.Tensor == type(x)
        assert (type(x) != torch.Tensor) is False
        assert repr(type(x)) == "<class 'torch.Tensor'>"
    assert type(torch.zeros(2)) == torch.Tensor
    assert type(made) in (torch.Tensor, list)


@pytest.mark.gpus(2)
def test_types_equal_across_devices_and_kinds(cuda_env):
    """Tensors on cuda:0, cuda:1 and the CPU have equal types; a CUDA parameter's type is
    nn.Parameter (not torch.Tensor); a script's subclass on the GPU is that subclass."""
    a = torch.zeros(2, device="cuda:0")
    b = torch.zeros(2, device="cuda:1")
    assert type(a) == type(b) == type(torch.zeros(2))
    p = nn.Linear(2, 2).cuda().weight
    assert type(p) == nn.Parameter and type(p) != torch.Tensor
    assert repr(type(p)) == "<class 'torch.nn.parameter.Parameter'>"
    m = torch.zeros(2).as_subclass(MyTensor).cuda()
    assert m.device.type == "cuda"
    assert type(m) == MyTensor and type(m) != torch.Tensor


def test_collate_moves_tensors_tested_by_exact_type(cuda_env):
    """A collate/transfer helper that moves only `type(v) == torch.Tensor` values leaves the others
    alone and moves the tensors (already-CUDA ones stay on the GPU)."""

    def to_device(batch, device):
        return {k: (v.to(device) if type(v) == torch.Tensor else v) for k, v in batch.items()}

    batch = {"x": torch.ones(2), "y": torch.ones(2, device="cuda"), "name": "a", "n": 3}
    out = to_device(to_device(batch, "cuda"), "cpu")
    assert out["x"].device.type == "cpu" and out["y"].device.type == "cpu"
    assert out["name"] == "a" and out["n"] == 3
