"""Legacy constructors meeting CUDA tensors: each test asserts what a real GPU does.

``torch.Tensor(n)``, ``torch.FloatTensor(n)``, ``torch.LongTensor(n)`` and ``x.new(n)`` reach ATen as
``empty(size, dtype, layout, device=cpu)``, exactly like a buffer C++ composite code makes from some
tensor's ``options()``; they are CPU tensors (``x.new`` a tensor on ``x``'s device), so a CPU one of
1+ dimensions meeting a CUDA tensor fails with PyTorch's device error. A 0-dim CPU tensor keeps its
scalar exemption in pointwise operators. ``torch.set_default_device("cuda")`` does not change
``torch.Tensor(...)`` (pytorch#126533); ``torch.set_default_tensor_type(torch.cuda.FloatTensor)`` does.
Runs unchanged on a machine with CUDA (``cuda_env``).
"""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn

CUDA = torch.device("cuda", 0)
POINTWISE = re.escape("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!")
SAME_DEVICE = "Expected all tensors to be on the same device"


def test_tensor_of_a_size_is_a_cpu_tensor(cuda_env):
    """torch.Tensor(2) is a CPU tensor: added to a CUDA tensor it fails; moved first it works."""
    noise = torch.Tensor(2).normal_(0.0, 0.1)
    assert noise.device.type == "cpu" and not noise.is_cuda
    x = torch.ones(2, device="cuda")
    with pytest.raises(RuntimeError, match=POINTWISE):
        x + noise
    with pytest.raises(RuntimeError, match=POINTWISE):
        x.add_(torch.Tensor(2, 1).squeeze(1).zero_())
    assert (x + noise.to(x.device)).device == CUDA
    assert (x + torch.Tensor(2).to(x.device).zero_()).device == CUDA


def test_legacy_tensor_buffer_of_a_module_not_moved_fails_in_forward(cuda_env):
    """A module keeping torch.Tensor(n) in a plain attribute (not a buffer) leaves it on the CPU
    when the module moves (the soft-actor-critic policy noise); registered as a buffer it moves."""

    class Policy(nn.Module):
        def __init__(self, n: int, register: bool) -> None:
            super().__init__()
            self.mean = nn.Linear(3, n)
            if register:
                self.register_buffer("noise", torch.Tensor(n))
            else:
                self.noise = torch.Tensor(n)

        def forward(self, s: torch.Tensor) -> torch.Tensor:
            return self.mean(s) + self.noise.normal_(0.0, 0.1)

    state = torch.randn(4, 3, device="cuda")
    with pytest.raises(RuntimeError, match=POINTWISE):
        Policy(2, register=False).cuda()(state)
    out = Policy(2, register=True).cuda()(state)
    assert out.device == CUDA
    out.sum().backward()


def test_typed_legacy_constructors_are_cpu_tensors(cuda_env):
    """torch.FloatTensor(n) / torch.LongTensor(n) (sizes) and their data forms are CPU tensors."""
    x = torch.ones(3, device="cuda")
    for make in (
        lambda: torch.FloatTensor(3).fill_(1.0),
        lambda: torch.FloatTensor([1.0, 2.0, 3.0]),
        lambda: torch.DoubleTensor(3).zero_().float(),
        lambda: torch.LongTensor(3).zero_(),
        lambda: torch.LongTensor([0, 1, 2]),
    ):
        t = make()
        assert t.device.type == "cpu" and not t.is_cuda
        with pytest.raises(RuntimeError, match=POINTWISE):
            x * t
        assert (x * t.to(x.device)).device == CUDA
    assert isinstance(torch.FloatTensor(2), torch.FloatTensor)
    assert not isinstance(x, torch.FloatTensor) and isinstance(x, torch.cuda.FloatTensor)
    assert torch.zeros(2).type(torch.LongTensor).dtype == torch.int64
    assert x.type(torch.DoubleTensor).device.type == "cpu"


def test_zero_dim_cpu_tensor_keeps_its_scalar_exemption(cuda_env):
    """A 0-dim CPU tensor (from a legacy constructor too) combines with CUDA tensors pointwise."""
    x = torch.ones(2, device="cuda")
    scale = torch.Tensor([2.0]).squeeze()
    assert scale.dim() == 0
    assert (x * scale).device == CUDA
    assert (x * torch.tensor(3.0)).device == CUDA
    assert (x * torch.LongTensor([2]).sum()).device == CUDA


def test_new_follows_its_tensor(cuda_env):
    """x.new(n) is on x's device: a CUDA x gives CUDA, a CPU x gives a CPU tensor that fails."""
    x = torch.ones(2, device="cuda")
    made = x.new(2).fill_(1.0)
    assert made.device == CUDA and made.is_cuda
    assert (x + made).device == CUDA
    assert x.new([1.0, 2.0]).device == CUDA
    host = torch.ones(2).new(2).fill_(0.0)
    assert host.device.type == "cpu"
    with pytest.raises(RuntimeError, match=POINTWISE):
        x + host


def test_matmul_with_a_legacy_cpu_tensor_fails(cuda_env):
    """A legacy CPU weight into a CUDA matmul fails with the same-device check."""
    x = torch.randn(4, 3, device="cuda")
    w = torch.Tensor(3, 2).uniform_()
    with pytest.raises(RuntimeError, match=SAME_DEVICE):
        x @ w
    with pytest.raises(RuntimeError, match=SAME_DEVICE):
        F.linear(x, torch.Tensor(2, 3).uniform_())
    assert (x @ w.cuda()).device == CUDA


def test_set_default_device_does_not_move_the_legacy_constructor(cuda_env):
    """torch.set_default_device("cuda") leaves torch.Tensor(...) on the CPU (pytorch#126533)."""
    torch.set_default_device("cuda")
    try:
        assert torch.zeros(2).device == CUDA
        assert torch.Tensor(2).device.type == "cpu"
        assert torch.Tensor([1.0]).device.type == "cpu"
    finally:
        torch.set_default_device(None)


def test_default_cuda_tensor_type_makes_legacy_tensors_cuda(cuda_env):
    """After set_default_tensor_type(torch.cuda.FloatTensor), torch.Tensor(...) is a CUDA tensor
    (torch.FloatTensor(...) stays a CPU tensor)."""
    with pytest.warns(UserWarning):
        torch.set_default_tensor_type(torch.cuda.FloatTensor)
    try:
        assert torch.Tensor(2).zero_().device == CUDA
        assert torch.Tensor([1.0, 2.0]).device == CUDA
        assert torch.FloatTensor(2).device.type == "cpu"
        assert torch.Tensor([1.0, 2.0], device="cuda").device == CUDA
    finally:
        torch.set_default_tensor_type(torch.FloatTensor)
    assert torch.Tensor(2).device.type == "cpu"


def test_one_hot_of_legacy_constructed_labels_is_a_cpu_tensor(cuda_env):
    """F.one_hot of labels from torch.LongTensor(n) is a CPU tensor: against CUDA logits it fails."""
    logits = torch.randn(3, 4, device="cuda")
    labels = torch.LongTensor(3).fill_(1)
    target = F.one_hot(labels, 4).float()
    assert labels.device.type == "cpu" and target.device.type == "cpu"
    with pytest.raises(RuntimeError, match=POINTWISE):
        logits * target
    assert (logits * F.one_hot(labels.to(logits.device), 4)).device == CUDA


POLICY = """\
import torch, torch.nn as nn

class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.mean = nn.Linear(3, 2)
        self.noise = torch.Tensor(2)

    def sample(self, s):
        return self.mean(s) + self.noise.normal_(0.0, std=0.1)

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
policy = Policy().to(device)
action = policy.sample(torch.randn(4, 3).to(device))
print("ok", action.device)
"""


def test_legacy_noise_attribute_fails_under_gpulint_run(run_gpulint):
    """End to end: a torch.Tensor(n) attribute left on the CPU crashes as on a GPU; moved, it runs."""
    proc = run_gpulint(POLICY, options=("--force",))
    assert proc.returncode == 1, proc.stderr
    assert "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!" in proc.stderr
    fixed = POLICY.replace("self.mean(s) + self.noise", "self.mean(s) + self.noise.to(s.device)")
    proc = run_gpulint(fixed, options=("--force",))
    assert proc.returncode == 0, proc.stderr
    assert "ok cuda:0" in proc.stdout


class _Tagged(torch.Tensor):
    pass


def test_tensor_subclass_constructed_from_a_size_is_a_cpu_tensor(cuda_env):
    """class S(torch.Tensor): S(2) builds (a CPU tensor of class S) and fails against a CUDA tensor."""
    s = _Tagged(2).fill_(1.0)
    assert type(s) is _Tagged and s.device.type == "cpu"
    x = torch.ones(2, device="cuda")
    with pytest.raises(RuntimeError, match=POINTWISE):
        x + s
    assert type(_Tagged(torch.ones(2))) is _Tagged


def test_legacy_constructor_refuses_a_cuda_device(cuda_env):
    """With the default (CPU) tensor type, torch.Tensor(data, device="cuda") is refused."""
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: cpu but device type: cuda was passed"):
        torch.Tensor([1.0, 2.0], device="cuda")


# torch/csrc/utils/tensor_new.cpp, the `(Tensor other)` form of a typed legacy constructor:
# TORCH_CHECK_TYPE(other.options().type_equal(options), "expected ", options, " (got ", other.options(), ")")
# type_equal compares the device type and dtype; the constructor's options carry a device type
# without an index (dispatchKeyToTensorOptions), the tensor's its own device.
def _options(dtype: str, device: str) -> str:
    return (
        f"TensorOptions(dtype={dtype}, device={device}, layout=Strided, requires_grad=false (default), "
        "pinned_memory=false (default), memory_format=(nullopt))"
    )


def test_typed_cpu_constructor_of_a_cuda_tensor_raises_type_error(cuda_env):
    """torch.FloatTensor(cuda_tensor) is a TypeError (it does not copy to the CPU); from a CPU tensor
    of its dtype it is an alias, and torch.Tensor(cuda_tensor) (no dtype check) stays on the GPU."""
    x = torch.randn(3, device="cuda")
    expected = f"expected {_options('float', 'cpu')} (got {_options('float', 'cuda:0')})"
    with pytest.raises(TypeError) as info:
        torch.FloatTensor(x)
    assert str(info.value) == expected
    with pytest.raises(TypeError, match=re.escape(f"(got {_options('long int', 'cuda:0')})")):
        torch.LongTensor(torch.zeros(2, dtype=torch.long, device="cuda"))
    host = torch.randn(3)
    assert torch.FloatTensor(host).data_ptr() == host.data_ptr()
    assert torch.FloatTensor(x.cpu()).device.type == "cpu"
    assert torch.Tensor(x).device == CUDA


def test_typed_cuda_constructor_of_a_tensor_checks_device_and_dtype(cuda_env):
    """torch.cuda.FloatTensor(t): an alias of a CUDA float tensor; a CPU tensor or another dtype is
    a TypeError naming the device type `cuda`."""
    x = torch.randn(3, device="cuda")
    alias = torch.cuda.FloatTensor(x)
    assert alias.device == CUDA and alias.data_ptr() == x.data_ptr()
    with pytest.raises(TypeError) as info:
        torch.cuda.FloatTensor(torch.randn(3))
    assert str(info.value) == f"expected {_options('float', 'cuda')} (got {_options('float', 'cpu')})"
    with pytest.raises(TypeError) as info:
        torch.cuda.FloatTensor(x.double())
    assert str(info.value) == f"expected {_options('float', 'cuda')} (got {_options('double', 'cuda:0')})"
