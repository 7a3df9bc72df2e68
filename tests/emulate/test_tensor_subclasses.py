"""A script's own torch.Tensor subclasses on CUDA: each test asserts what a real GPU does.

A subclass that keeps torch.Tensor's ``__torch_function__`` (or defines its own) gets its class back
from every operation and every move (``_convert`` in torch/_tensor.py): ``t.to("cuda")`` is an
instance of the subclass on ``cuda:0``, and so are the results of its operations. Runs unchanged on
a machine with CUDA (``cuda_env``).
"""

from __future__ import annotations

import pytest
import torch

CUDA = torch.device("cuda", 0)
POINTWISE = "Expected all tensors to be on the same device, but found at least two devices"


class Tagged(torch.Tensor):
    pass


class Logged(torch.Tensor):
    """Records the functions its __torch_function__ sees (a metadata-carrying subclass)."""

    seen: list = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.seen.append(getattr(func, "__name__", str(func)))
        return super().__torch_function__(func, types, args, kwargs or {})


@pytest.mark.parametrize("move", ["to_str", "to_device", "cuda", "as_subclass_of_cuda"])
def test_a_moved_subclass_reports_cuda(cuda_env, move):
    host = torch.randn(3).as_subclass(Tagged)
    moved = {
        "to_str": lambda: host.to("cuda"),
        "to_device": lambda: host.to(torch.device("cuda", 0)),
        "cuda": lambda: host.cuda(),
        "as_subclass_of_cuda": lambda: torch.randn(3, device="cuda").as_subclass(Tagged),
    }[move]()
    assert isinstance(moved, Tagged)
    assert moved.device == CUDA and moved.is_cuda and not moved.is_cpu and moved.get_device() == 0
    assert "device='cuda:0'" in repr(moved) and repr(moved).startswith("Tagged(")


def test_operations_of_a_cuda_subclass_stay_on_cuda_and_keep_the_class(cuda_env):
    u = torch.ones(3).as_subclass(Tagged).to("cuda")
    for out in (u + 1, u * torch.ones(3, device="cuda"), u.sum(), torch.relu(u)):
        assert isinstance(out, Tagged) and out.device == CUDA
    assert u.to("cuda") is u and u.cuda() is u
    back = u.cpu()
    assert isinstance(back, Tagged) and back.device.type == "cpu"
    wide = u.to(torch.float64)
    assert isinstance(wide, Tagged) and wide.device == CUDA and wide.dtype == torch.float64


def test_a_cuda_subclass_meeting_a_cpu_tensor_fails(cuda_env):
    u = torch.ones(3).as_subclass(Tagged).to("cuda")
    with pytest.raises(RuntimeError, match=POINTWISE):
        u + torch.ones(3)


def test_gradients_flow_back_to_the_host_leaf(cuda_env):
    leaf = torch.randn(3, requires_grad=True)
    (leaf.as_subclass(Tagged).to("cuda") * 2).sum().backward()
    assert leaf.grad is not None and leaf.grad.device.type == "cpu"
    assert torch.equal(leaf.grad, torch.full((3,), 2.0))


def test_a_subclass_with_its_own_torch_function_still_sees_the_operations(cuda_env):
    Logged.seen.clear()
    k = torch.ones(2).as_subclass(Logged).cuda()
    out = k * 2
    assert isinstance(out, Logged) and out.device == CUDA
    assert any("mul" in name for name in Logged.seen), Logged.seen
