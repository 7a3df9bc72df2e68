"""Fidelity of the emulated CUDA device: each test asserts what a real GPU does.

The same tests run unchanged on a machine with CUDA (``cuda_env`` then hands out the real device),
so each docstring states the real-CUDA behaviour that the test pins down.
"""

from __future__ import annotations

import copy
import io

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

CUDA = torch.device("cuda", 0)


# --- torch.cuda queries -------------------------------------------------------------------------


def test_is_available_and_device_count(cuda_env):
    """On a GPU machine torch.cuda.is_available() is True and device_count() counts the GPUs."""
    assert torch.cuda.is_available() is True
    assert torch.cuda.device_count() == cuda_env.gpus
    assert torch.cuda.is_initialized() or torch.cuda.device_count() >= 1


@pytest.mark.gpus(2)
def test_current_device_set_device_and_device_context(cuda_env):
    """current_device() starts at 0; set_device(1) and `with torch.cuda.device(1)` change it and
    index-less "cuda" resolves to the current device; an out-of-range ordinal is an error."""
    assert torch.cuda.current_device() == 0
    assert torch.zeros(1, device="cuda").device == torch.device("cuda", 0)
    with torch.cuda.device(1):
        assert torch.cuda.current_device() == 1
        assert torch.zeros(1, device="cuda").device == torch.device("cuda", 1)
    assert torch.cuda.current_device() == 0
    torch.cuda.set_device(1)
    try:
        assert torch.cuda.current_device() == 1
        assert torch.ones(2).cuda().device == torch.device("cuda", 1)
    finally:
        torch.cuda.set_device(0)
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.zeros(1, device=torch.device("cuda", torch.cuda.device_count() + 3))


def test_device_name_properties_and_capability(cuda_env):
    """get_device_name() is a non-empty string, get_device_properties() has name/total_memory/
    major/minor, and get_device_capability() is a (major, minor) tuple matching the properties."""
    name = torch.cuda.get_device_name(0)
    props = torch.cuda.get_device_properties(0)
    assert isinstance(name, str) and name == props.name and name
    assert isinstance(props.total_memory, int) and props.total_memory > 0
    assert torch.cuda.get_device_capability(0) == (props.major, props.minor)
    assert "total_memory" in repr(props)


def test_synchronize_and_empty_cache_are_callable(cuda_env):
    """synchronize() and empty_cache() return None and leave tensors intact."""
    x = torch.arange(4.0, device="cuda")
    assert torch.cuda.synchronize() is None
    assert torch.cuda.synchronize(0) is None
    assert torch.cuda.empty_cache() is None
    assert x.sum().item() == 6.0


def test_manual_seed_reproduces_cuda_random_numbers(cuda_env):
    """torch.cuda.manual_seed(s) makes CUDA random ops repeat; the CUDA generator is separate from
    the CPU one, so drawing on the GPU does not advance the CPU random stream."""
    torch.cuda.manual_seed(123)
    a = torch.randn(5, device="cuda")
    torch.cuda.manual_seed_all(123)
    b = torch.randn(5, device="cuda")
    assert torch.equal(a.cpu(), b.cpu())
    torch.manual_seed(0)
    c1 = torch.randn(3)
    torch.manual_seed(0)
    torch.randn(100, device="cuda")
    nn.functional.dropout(torch.ones(10, device="cuda"), 0.5)
    c2 = torch.randn(3)
    assert torch.equal(c1, c2)
    state = torch.cuda.get_rng_state()
    d1 = torch.rand(4, device="cuda")
    torch.cuda.set_rng_state(state)
    d2 = torch.rand(4, device="cuda")
    assert torch.equal(d1.cpu(), d2.cpu())


def test_memory_statistics(cuda_env):
    """memory_allocated() grows by the (512-byte-rounded) size of a new CUDA tensor and shrinks when
    it is freed; max_memory_allocated() keeps the peak until reset_peak_memory_stats()."""
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    x = torch.empty(1024 * 1024, dtype=torch.uint8, device="cuda")
    assert torch.cuda.memory_allocated() - base == 1024 * 1024
    assert torch.cuda.max_memory_allocated() >= base + 1024 * 1024
    assert torch.cuda.memory_reserved() >= torch.cuda.memory_allocated()
    y = torch.empty(10, dtype=torch.uint8, device="cuda")
    assert torch.cuda.memory_allocated() - base == 1024 * 1024 + 512
    del x, y
    assert torch.cuda.memory_allocated() == base
    assert torch.cuda.max_memory_allocated() >= base + 1024 * 1024
    torch.cuda.reset_peak_memory_stats()
    assert torch.cuda.max_memory_allocated() == torch.cuda.memory_allocated()


def test_bf16_support_and_cudnn_flags(cuda_env):
    """is_bf16_supported() is a bool and bf16 tensors work when it is True; cuDNN is available and
    its benchmark/deterministic flags read back what was set."""
    supported = torch.cuda.is_bf16_supported()
    assert isinstance(supported, bool)
    if supported:
        assert (torch.ones(2, device="cuda", dtype=torch.bfloat16) * 2).dtype == torch.bfloat16
    assert torch.backends.cudnn.is_available() is True
    assert isinstance(torch.backends.cudnn.version(), int)
    old = torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic
    try:
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.deterministic = True
        assert torch.backends.cudnn.benchmark is True and torch.backends.cudnn.deterministic is True
    finally:
        torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = old


# --- where tensors live ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda d: torch.zeros(2, 3, device=d),
        lambda d: torch.ones(4, device=d),
        lambda d: torch.empty(3, device=d),
        lambda d: torch.randn(2, 2, device=d),
        lambda d: torch.rand(3, device=d),
        lambda d: torch.randint(0, 5, (3,), device=d),
        lambda d: torch.arange(5, device=d),
        lambda d: torch.full((2,), 7.0, device=d),
        lambda d: torch.eye(3, device=d),
        lambda d: torch.tensor([1.0, 2.0], device=d),
        lambda d: torch.as_tensor(np.arange(3), device=d),
        lambda d: torch.linspace(0, 1, 5, device=d),
    ],
    ids=["zeros", "ones", "empty", "randn", "rand", "randint", "arange", "full", "eye", "tensor", "as_tensor", "linspace"],
)
@pytest.mark.parametrize("device", ["cuda", "cuda:0", CUDA])
def test_factories_on_cuda_report_cuda(cuda_env, make, device):
    """Factories with device="cuda"/"cuda:0"/torch.device("cuda", 0) return CUDA tensors:
    .device == cuda:0, .is_cuda, get_device() == 0, and real values."""
    t = make(device)
    assert t.device == CUDA
    assert t.is_cuda and not t.is_cpu
    assert t.get_device() == 0
    assert t.cpu().numel() == t.numel()


def test_moving_tensors_to_cuda(cuda_env):
    """.to("cuda"), .cuda(), .to(other_cuda_tensor), .type_as(cuda) copy a CPU tensor to the GPU
    with the same values; new_* and *_like follow their source's device."""
    src = torch.arange(6.0).reshape(2, 3)
    on = torch.zeros(1, device="cuda")
    for moved in (src.to("cuda"), src.cuda(), src.to(on), src.to(device=CUDA, dtype=torch.float64), src.type_as(on)):
        assert moved.device == CUDA
        assert torch.equal(moved.cpu().float(), src)
    assert src.device.type == "cpu"
    for made in (on.new_zeros(3), on.new_ones(2), on.new_empty(2), on.new_full((2,), 1.0), on.new_tensor([1, 2])):
        assert made.device == CUDA
    for made in (torch.zeros_like(on), torch.ones_like(on), torch.empty_like(on), torch.randn_like(on), torch.full_like(on, 3)):
        assert made.device == CUDA
    assert torch.zeros_like(on, device="cpu").device.type == "cpu"


def test_new_tensor_of_a_cpu_tensor_onto_the_device(cuda_env):
    """`torch.Tensor().new_tensor(data, device="cuda")` (YuliaRubanova/latent_ode, PRECISION25):
    C++ builds it on the real device, which a CPU build cannot; the emulator makes it on cuda:0,
    with the receiver's dtype unless `dtype=` says otherwise; without a device it stays on the CPU."""
    plain = torch.Tensor()
    made = plain.new_tensor(np.ones((2, 3)), device="cuda")
    assert made.device == CUDA and made.dtype == plain.dtype
    wide = torch.ones(2, dtype=torch.float64).new_tensor([1, 2], device=torch.device("cuda"))
    assert wide.device == CUDA and wide.dtype == torch.float64
    assert plain.new_tensor([1.0, 2.0], dtype=torch.float16, device="cuda").dtype == torch.float16
    stay = torch.zeros(2).new_tensor([1, 2])
    assert stay.device.type == "cpu" and stay.dtype == torch.float32
    assert torch.zeros(2).new_tensor([1, 2], device="cpu").device.type == "cpu"


def test_an_integer_device_argument_is_a_cuda_ordinal(cuda_env):
    """`torch.zeros(n, device=local_rank)` (an integer device, as DDP scripts write it): a CUDA
    ordinal on a GPU machine. C++ resolves it through the current accelerator while parsing the
    arguments, which a CPU build does not have ("Cannot access accelerator device when none is
    available"); the emulator makes it on that GPU, and an ordinal it does not have fails as CUDA
    does."""
    for made in (torch.zeros(3, device=0), torch.randn(2, 2, device=0), torch.arange(4, device=0),
                 torch.ones(2).new_zeros(3, device=0), torch.full((2,), 1.0, device=0)):
        assert made.device == CUDA
    assert (torch.ones(2, device=0) + torch.ones(2, device="cuda")).device == CUDA
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.zeros(3, device=7)


def test_to_same_device_returns_self_and_cpu_returns_plain_tensor(cuda_env):
    """x.to("cuda") / x.cuda() on a tensor already on cuda:0 return x itself; .cpu() and
    .to("cpu") return an independent CPU tensor (a torch.Tensor) with the same values."""
    x = torch.randn(3, device="cuda")
    assert x.to("cuda") is x
    assert x.cuda() is x
    assert x.to(CUDA) is x
    c = x.cpu()
    assert type(c) is torch.Tensor and c.device.type == "cpu" and not c.is_cuda
    c2 = x.to("cpu")
    assert type(c2) is torch.Tensor and c2.device.type == "cpu"
    c[0] = 100.0
    assert x[0].item() != 100.0
    assert x.detach().cpu().tolist() == c2.tolist()


def test_ops_views_and_results_stay_on_cuda(cuda_env):
    """Results of ops on CUDA tensors (pointwise, reductions, views, indexing, matmul) are on CUDA,
    and item()/tolist() read their values."""
    x = torch.arange(12.0, device="cuda").reshape(3, 4)
    for r in (x + 1, x.sum(0), x.view(4, 3), x.t(), x[1], x[:, 1:], x @ x.t(), torch.relu(x), x.max(dim=1).values):
        assert r.device == CUDA
    assert x.sum().item() == 66.0
    assert x[0].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert "device='cuda:0'" in repr(x)
    assert x.type() == "torch.cuda.FloatTensor"


def test_autograd_gradients_are_on_cuda(cuda_env):
    """Gradients of CUDA leaves are CUDA tensors with the right values."""
    w = torch.tensor([1.0, 2.0, 3.0], device="cuda", requires_grad=True)
    (w * w).sum().backward()
    assert w.grad.device == CUDA
    assert w.grad.tolist() == [2.0, 4.0, 6.0]


# --- device mismatches -------------------------------------------------------------------------


def test_pointwise_cuda_and_cpu_mismatch_message(cuda_env):
    """A pointwise op between a CUDA tensor and a (non-0-dim) CPU tensor raises RuntimeError
    "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
    also for an in-place op on the CPU tensor."""
    a = torch.ones(3, device="cuda")
    b = torch.ones(3)
    msg = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
    with pytest.raises(RuntimeError) as info:
        a + b
    assert str(info.value) == msg
    with pytest.raises(RuntimeError) as info:
        b + a
    assert str(info.value) == msg
    with pytest.raises(RuntimeError) as info:
        b.add_(a)
    assert str(info.value) == msg


def test_zero_dim_cpu_tensors_are_allowed_with_cuda(cuda_env):
    """0-dim CPU tensors act as scalars in ops with CUDA tensors; the result is on CUDA."""
    a = torch.ones(3, device="cuda")
    r = a * torch.tensor(2.0)
    assert r.device == CUDA and r.tolist() == [2.0, 2.0, 2.0]
    assert torch.where(a > 0, a, torch.tensor(0.0)).device == CUDA


def test_linear_model_on_cuda_input_on_cpu(cuda_env):
    """nn.Linear on CUDA fed a CPU batch fails in addmm: "Expected all tensors to be on the same
    device, but got mat1 is on cpu, different from other tensors on cuda:0 (when checking argument
    in method wrapper_CUDA_addmm)"."""
    model = nn.Linear(4, 2).cuda()
    with pytest.raises(RuntimeError) as info:
        model(torch.randn(3, 4))
    assert str(info.value) == (
        "Expected all tensors to be on the same device, but got mat1 is on cpu, different from other "
        "tensors on cuda:0 (when checking argument in method wrapper_CUDA_addmm)"
    )


def test_linear_without_bias_mismatch(cuda_env):
    """F.linear without bias is a matmul: "... but got mat2 is on cuda:0, different from other
    tensors on cpu (when checking argument in method wrapper_CUDA_mm)"."""
    weight = torch.randn(2, 4, device="cuda")
    with pytest.raises(RuntimeError) as info:
        F.linear(torch.randn(3, 4), weight)
    assert str(info.value) == (
        "Expected all tensors to be on the same device, but got mat2 is on cuda:0, different from other "
        "tensors on cpu (when checking argument in method wrapper_CUDA_mm)"
    )


def test_embedding_mismatch_uses_index_select_wording(cuda_env):
    """nn.Embedding on CUDA with CPU indices fails in index_select: "... but got index is on cpu,
    different from other tensors on cuda:0 (when checking argument in method
    wrapper_CUDA__index_select)"."""
    emb = nn.Embedding(10, 3).cuda()
    with pytest.raises(RuntimeError) as info:
        emb(torch.tensor([1, 2, 3]))
    assert str(info.value) == (
        "Expected all tensors to be on the same device, but got index is on cpu, different from other "
        "tensors on cuda:0 (when checking argument in method wrapper_CUDA__index_select)"
    )


def test_conv_mismatch_uses_type_wording(cuda_env):
    """A CUDA conv fed a CPU image (or the reverse) fails with "Input type (torch.FloatTensor) and
    weight type (torch.cuda.FloatTensor) should be the same or input should be a MKLDNN tensor and
    weight is a dense tensor"."""
    conv = nn.Conv2d(3, 4, 3).cuda()
    with pytest.raises(RuntimeError) as info:
        conv(torch.randn(1, 3, 8, 8))
    assert str(info.value) == (
        "Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same or "
        "input should be a MKLDNN tensor and weight is a dense tensor"
    )
    with pytest.raises(RuntimeError) as info:
        nn.Conv2d(3, 4, 3)(torch.randn(1, 3, 8, 8, device="cuda"))
    assert str(info.value).startswith("Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor)")


def test_cross_entropy_and_cat_mismatch(cuda_env):
    """cross_entropy with CUDA logits and CPU targets fails in nll_loss_forward on argument target;
    torch.cat of CUDA and CPU tensors fails in cat on argument tensors."""
    logits = torch.randn(4, 3, device="cuda")
    with pytest.raises(RuntimeError) as info:
        F.cross_entropy(logits, torch.tensor([0, 1, 2, 0]))
    assert str(info.value) == (
        "Expected all tensors to be on the same device, but got target is on cpu, different from other "
        "tensors on cuda:0 (when checking argument in method wrapper_CUDA_nll_loss_forward)"
    )
    with pytest.raises(RuntimeError) as info:
        torch.cat([logits, torch.randn(4, 3)])
    assert str(info.value) == (
        "Expected all tensors to be on the same device, but got tensors is on cpu, different from other "
        "tensors on cuda:0 (when checking argument in method wrapper_CUDA_cat)"
    )


def test_indexing_with_cpu_and_cuda_indices(cuda_env):
    """A CUDA tensor may be indexed with a CPU index tensor (result on CUDA); a CPU tensor indexed
    with a CUDA index raises "indices should be either on cpu or on the same device as the indexed
    tensor (cpu)"."""
    x = torch.arange(5.0, device="cuda")
    r = x[torch.tensor([0, 2])]
    assert r.device == CUDA and r.tolist() == [0.0, 2.0]
    with pytest.raises(RuntimeError) as info:
        torch.arange(5.0)[torch.tensor([0, 2], device="cuda")]
    assert str(info.value) == "indices should be either on cpu or on the same device as the indexed tensor (cpu)"


@pytest.mark.gpus(2)
def test_two_cuda_devices_do_not_mix(cuda_env):
    """Tensors on cuda:0 and cuda:1 cannot meet in one op: "... found at least two devices, cuda:0
    and cuda:1!"; .to("cuda:1") moves a tensor across devices."""
    a = torch.ones(3, device="cuda:0")
    b = torch.ones(3, device="cuda:1")
    with pytest.raises(RuntimeError) as info:
        a + b
    assert str(info.value) == "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cuda:1!"
    moved = a.to("cuda:1")
    assert moved.device == torch.device("cuda", 1)
    assert (moved + b).device == torch.device("cuda", 1)


def test_numpy_of_cuda_tensor_raises(cuda_env):
    """.numpy() (and np.asarray) on a CUDA tensor raise TypeError "can't convert cuda:0 device type
    tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."."""
    x = torch.ones(3, device="cuda")
    msg = "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."
    with pytest.raises(TypeError) as info:
        x.numpy()
    assert str(info.value) == msg
    with pytest.raises(TypeError) as info:
        np.asarray(x)
    assert str(info.value) == msg
    assert x.cpu().numpy().tolist() == [1.0, 1.0, 1.0]


# --- modules, optimizers, checkpoints ------------------------------------------------------------


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.bn = nn.BatchNorm1d(2)
        self.register_buffer("scale", torch.ones(2))
        self.plain = torch.zeros(2)  # not registered: stays where it was created


def test_module_to_moves_parameters_and_buffers_only(cuda_env):
    """Module.to("cuda")/.cuda() move parameters and registered buffers in place (same Parameter
    objects), and leave an unregistered tensor attribute on the CPU."""
    net = _Net()
    weight = net.fc.weight
    assert net.to("cuda") is net
    assert net.fc.weight is weight and isinstance(weight, nn.Parameter)
    assert all(p.device == CUDA for p in net.parameters())
    assert all(b.device == CUDA for b in net.buffers())
    assert net.plain.device.type == "cpu"
    net.cpu()
    assert weight.device.type == "cpu"
    net.cuda()
    assert weight.device == CUDA
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        net.fc(torch.randn(1, 3, device="cuda")) * net.plain


def test_optimizer_state_follows_parameters(cuda_env):
    """Adam's exp_avg/exp_avg_sq are created on the parameters' device (its step counter on the CPU),
    and an optimizer state_dict loaded from CPU is moved to the parameters' device."""
    torch.manual_seed(0)
    model = nn.Linear(3, 1).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    model(torch.randn(4, 3, device="cuda")).sum().backward()
    opt.step()
    state = opt.state[model.weight]
    assert state["exp_avg"].device == CUDA and state["exp_avg_sq"].device == CUDA
    cpu_model = nn.Linear(3, 1)
    cpu_opt = torch.optim.Adam(cpu_model.parameters(), lr=0.01)
    cpu_model(torch.randn(4, 3)).sum().backward()
    cpu_opt.step()
    opt.load_state_dict(cpu_opt.state_dict())
    assert opt.state[model.weight]["exp_avg"].device == CUDA


def test_save_and_load_checkpoints(cuda_env):
    """torch.save of CUDA tensors records "cuda:0" storage locations; torch.load without
    map_location restores them on CUDA, with map_location="cpu" on the CPU, and load_state_dict
    copies a CPU state into a CUDA model."""
    model = nn.Linear(3, 2).cuda()
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "t": torch.arange(3.0, device="cuda")}, buf)
    buf.seek(0)
    locations: list[str] = []
    torch.load(buf, map_location=lambda storage, loc: (locations.append(loc), storage)[1])
    assert locations and set(locations) == {"cuda:0"}
    buf.seek(0)
    loaded = torch.load(buf)
    assert loaded["t"].device == CUDA and loaded["model"]["weight"].device == CUDA
    assert loaded["t"].tolist() == [0.0, 1.0, 2.0]
    buf.seek(0)
    on_cpu = torch.load(buf, map_location="cpu")
    assert on_cpu["t"].device.type == "cpu" and on_cpu["model"]["weight"].device.type == "cpu"
    fresh = nn.Linear(3, 2).cuda()
    fresh.load_state_dict(on_cpu["model"])
    assert fresh.weight.device == CUDA
    assert torch.equal(fresh.weight.detach().cpu(), model.weight.detach().cpu())
    buf2 = io.BytesIO()
    torch.save(torch.ones(2), buf2)
    buf2.seek(0)
    assert torch.load(buf2).device.type == "cpu"


def test_deepcopy_keeps_device(cuda_env):
    """copy.deepcopy of a CUDA model gives CUDA parameters with equal values."""
    model = nn.Linear(3, 2).cuda()
    twin = copy.deepcopy(model)
    assert twin.weight.device == CUDA and isinstance(twin.weight, nn.Parameter)
    assert torch.equal(twin.weight.detach().cpu(), model.weight.detach().cpu())


# --- mixed precision ---------------------------------------------------------------------------------


def test_autocast_cuda_defaults_to_float16(cuda_env):
    """torch.autocast("cuda") is enabled with float16 by default: a Linear runs in float16 inside,
    float32 outside; is_autocast_enabled("cuda") reflects the context."""
    layer = nn.Linear(4, 2).cuda()
    x = torch.randn(3, 4, device="cuda")
    assert torch.get_autocast_dtype("cuda") == torch.float16
    with torch.autocast("cuda"):
        assert torch.is_autocast_enabled("cuda")
        y = layer(x)
        assert y.dtype == torch.float16 and y.device == CUDA
        y.float().sum().backward()
    assert not torch.is_autocast_enabled("cuda")
    assert layer.weight.grad.dtype == torch.float32 and layer.weight.grad.device == CUDA
    assert layer(x).dtype == torch.float32


def test_grad_scaler_scales_unscales_and_skips_inf_steps(cuda_env):
    """GradScaler("cuda") is enabled, multiplies the loss by its scale, unscales gradients before
    the step, skips the step and halves the scale when gradients contain inf."""
    torch.manual_seed(0)
    model = nn.Linear(4, 1).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda", init_scale=1024.0)
    assert scaler.is_enabled()
    x = torch.randn(8, 4, device="cuda")
    loss = model(x).pow(2).mean()
    scaled = scaler.scale(loss)
    assert scaled.device == CUDA
    assert scaled.item() == pytest.approx(loss.item() * 1024.0, rel=1e-5)
    scaled.backward()
    scaler.unscale_(opt)
    reference = torch.autograd.grad(model(x).pow(2).mean(), model.weight)[0]
    assert torch.allclose(model.weight.grad.cpu(), reference.cpu(), rtol=1e-4, atol=1e-6)
    before = model.weight.detach().clone()
    scaler.step(opt)
    scaler.update()
    assert not torch.equal(before.cpu(), model.weight.detach().cpu())
    assert scaler.get_scale() == 1024.0
    opt.zero_grad()
    model(x).sum().backward()
    model.weight.grad.fill_(float("inf"))
    before = model.weight.detach().clone()
    scaler.step(opt)
    scaler.update()
    assert torch.equal(before.cpu(), model.weight.detach().cpu())
    assert scaler.get_scale() == 512.0


# --- data loading -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [0, 1])
def test_dataloader_pin_memory(cuda_env, workers):
    """DataLoader(pin_memory=True) yields pinned CPU batches that .to("cuda", non_blocking=True)
    moves to the GPU."""
    ds = torch.utils.data.TensorDataset(torch.arange(12.0).reshape(6, 2), torch.arange(6))
    seen = []
    for xb, yb in torch.utils.data.DataLoader(ds, batch_size=4, pin_memory=True, num_workers=workers):
        assert xb.device.type == "cpu" and xb.is_pinned()
        moved = xb.to("cuda", non_blocking=True)
        assert moved.device == CUDA
        seen.append(yb.tolist())
    assert seen == [[0, 1, 2, 3], [4, 5]]
    assert torch.ones(3).pin_memory().is_pinned() and not torch.ones(3).is_pinned()


def test_pinning_a_cuda_batch_fails(cuda_env):
    """A collate_fn that already moved the batch to CUDA cannot be combined with pin_memory=True:
    "cannot pin 'torch.cuda.FloatTensor' only dense CPU tensors can be pinned"."""
    ds = torch.utils.data.TensorDataset(torch.randn(4, 2))
    loader = torch.utils.data.DataLoader(
        ds, batch_size=2, pin_memory=True, collate_fn=lambda b: torch.stack([x for (x,) in b]).cuda()
    )
    with pytest.raises(RuntimeError) as info:
        next(iter(loader))
    assert "cannot pin 'torch.cuda.FloatTensor' only dense CPU tensors can be pinned" in str(info.value)


class _CudaItems(torch.utils.data.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return torch.ones(2).cuda() * i


def test_cuda_in_forked_dataloader_worker_fails(cuda_env):
    """Using CUDA in a forked DataLoader worker after the parent used CUDA fails with "Cannot
    re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use the
    'spawn' start method"."""
    torch.ones(1, device="cuda")  # the parent has initialised CUDA
    loader = torch.utils.data.DataLoader(_CudaItems(), batch_size=2, num_workers=1, multiprocessing_context="fork")
    with pytest.raises(RuntimeError) as info:
        next(iter(loader))
    assert "Cannot re-initialize CUDA in forked subprocess" in str(info.value)


def test_optimizer_state_left_on_cpu_fails_foreach_step(cuda_env):
    """Adam(foreach=True) whose moments were restored on the CPU while its parameters are on CUDA
    fails: "Tensors of the same index must be on the same device and the same dtype except `step`
    tensors that can be CPU and float32/64 ..."."""
    cpu_model = nn.Linear(3, 2)
    cpu_opt = torch.optim.Adam(cpu_model.parameters(), foreach=True)
    cpu_model(torch.randn(4, 3)).sum().backward()
    cpu_opt.step()
    state = cpu_opt.state_dict()
    model = nn.Linear(3, 2)
    opt = torch.optim.Adam(model.parameters(), foreach=True)
    opt.load_state_dict(state)  # moments follow the (CPU) parameters
    model.cuda()  # ... which then move; the moments stay behind
    model(torch.randn(4, 3, device="cuda")).sum().backward()
    with pytest.raises(RuntimeError) as info:
        opt.step()
    assert str(info.value).startswith(
        "Tensors of the same index must be on the same device and the same dtype except `step` tensors "
        "that can be CPU and float32/64"
    )


# --- memory -------------------------------------------------------------------------------------------------


@pytest.mark.gpu_memory(64 * 1024 * 1024)
def test_out_of_memory_raises_cuda_oom(cuda_env):
    """Allocating more than the device holds raises torch.OutOfMemoryError (also available as
    torch.cuda.OutOfMemoryError, a RuntimeError) with "CUDA out of memory. Tried to allocate ..."."""
    total = torch.cuda.get_device_properties(0).total_memory
    with pytest.raises(torch.OutOfMemoryError) as info:
        torch.empty(total + 1024 * 1024, dtype=torch.uint8, device="cuda")
    assert isinstance(info.value, torch.cuda.OutOfMemoryError)
    assert isinstance(info.value, RuntimeError)
    assert str(info.value).startswith("CUDA out of memory. Tried to allocate ")
    x = torch.ones(1024, device="cuda")  # the device still works afterwards
    assert x.sum().item() == 1024.0


def test_training_loop_on_cuda_learns(cuda_env):
    """A small model trained on CUDA with SGD lowers its loss; everything stays on the device."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1)).to("cuda")
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(64, 4)
    y = x.sum(dim=1, keepdim=True)
    losses = []
    for _ in range(30):
        xb, yb = x.to("cuda"), y.to("cuda")
        loss = F.mse_loss(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        assert loss.device == CUDA
    assert losses[-1] < 0.5 * losses[0]


# --- more of what training scripts do -----------------------------------------------------------------------


def test_one_hot_and_custom_autograd_function(cuda_env):
    """F.one_hot of CUDA labels is a CUDA tensor (of CPU labels a CPU tensor); a custom
    autograd.Function's backward receives CUDA gradients and saved CUDA tensors."""
    labels = torch.tensor([0, 2, 1], device="cuda")
    oh = F.one_hot(labels, 3)
    assert oh.device == CUDA and oh.tolist() == [[1, 0, 0], [0, 0, 1], [0, 1, 0]]
    assert F.one_hot(torch.tensor([1, 0]), 2).device.type == "cpu"
    seen = {}

    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            seen["grad"], seen["saved"] = grad.device, x.device
            return 2 * x * grad

    x = torch.tensor([1.0, 3.0], device="cuda", requires_grad=True)
    Square.apply(x).sum().backward()
    assert seen == {"grad": CUDA, "saved": CUDA}
    assert x.grad.tolist() == [2.0, 6.0]


def test_gradient_hooks_and_clip_grad_norm(cuda_env):
    """Tensor hooks see CUDA gradients; clip_grad_norm_ returns a CUDA norm and rescales the CUDA
    gradients to the requested norm."""
    model = nn.Sequential(nn.Linear(3, 8), nn.Linear(8, 1)).cuda()
    hooked = []
    model[0].weight.register_hook(lambda g: hooked.append(g.device))
    (model(torch.randn(16, 3, device="cuda")) * 100).sum().backward()
    assert hooked == [CUDA]
    norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
    assert norm.device == CUDA and norm.item() > 0.5
    total = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters()]))
    assert total.device == CUDA
    assert total.item() == pytest.approx(0.5, rel=1e-3)


def test_model_split_between_cpu_and_cuda_trains(cuda_env):
    """A model whose first layer stays on the CPU and second is on CUDA trains with an explicit
    .cuda() between them; gradients flow back to the CPU layer and Adam updates both devices."""
    torch.manual_seed(0)
    first, second = nn.Linear(3, 4), nn.Linear(4, 1).cuda()
    opt = torch.optim.Adam(list(first.parameters()) + list(second.parameters()), lr=0.01)
    before = first.weight.detach().clone(), second.weight.detach().cpu().clone()
    out = second(first(torch.randn(5, 3)).cuda())
    out.pow(2).mean().backward()
    assert first.weight.grad.device.type == "cpu" and second.weight.grad.device == CUDA
    opt.step()
    assert first.weight.device.type == "cpu" and second.weight.device == CUDA
    assert not torch.equal(before[0], first.weight.detach())
    assert not torch.equal(before[1], second.weight.detach().cpu())


def test_packed_sequences_and_lstm(cuda_env):
    """pack_padded_sequence keeps data on CUDA and batch_sizes on the CPU (the lengths must be a CPU
    tensor or a list: ATen checks `lengths.is_cpu()`, see
    test_real_world_patterns.py::test_pack_padded_sequence_lengths_must_be_on_the_cpu; this test
    used to pass CUDA lengths, which the emulator accepted and a GPU rejects); an LSTM on CUDA
    consumes it and pad_packed_sequence returns CUDA output, CPU lengths."""
    x = torch.randn(4, 2, 3, device="cuda")
    packed = nn.utils.rnn.pack_padded_sequence(x, torch.tensor([4, 2]))
    assert packed.data.device == CUDA and packed.batch_sizes.device.type == "cpu"
    lstm = nn.LSTM(3, 5).cuda()
    out, (h, c) = lstm(packed)
    padded, lengths = nn.utils.rnn.pad_packed_sequence(out)
    assert padded.device == CUDA and h.device == CUDA and c.device == CUDA
    assert lengths.device.type == "cpu" and lengths.tolist() == [4, 2]
    padded.sum().backward()
    assert lstm.weight_ih_l0.grad.device == CUDA


def test_set_default_device_cuda(cuda_env):
    """torch.set_default_device("cuda") makes factories and new modules allocate on CUDA."""
    torch.set_default_device("cuda")
    try:
        assert torch.zeros(2).device == CUDA
        assert nn.Linear(2, 2).weight.device == CUDA
    finally:
        torch.set_default_device(None)
    assert torch.zeros(2).device.type == "cpu"


def test_tensor_constructors_from_cuda_data(cuda_env):
    """torch.tensor/as_tensor of a CUDA tensor with device="cpu" copy it to the CPU; without a
    device, as_tensor keeps it on CUDA (no copy) and torch.tensor copies it on CUDA."""
    x = torch.arange(3.0, device="cuda")
    assert torch.as_tensor(x) is x
    assert torch.as_tensor(x, device="cpu").device.type == "cpu"
    with pytest.warns(UserWarning):
        t = torch.tensor(x)
    assert t.device == CUDA and t is not x
    with pytest.warns(UserWarning):
        assert torch.tensor(x, device="cpu").device.type == "cpu"


@pytest.mark.gpus(2)
def test_data_parallel_splits_batch_over_devices(cuda_env):
    """nn.DataParallel scatters the batch over the GPUs, gathers outputs on cuda:0, matches the
    single-device result and accumulates gradients on the module's parameters; parameters not on
    device_ids[0] are rejected."""
    torch.manual_seed(0)
    dp = nn.DataParallel(nn.Linear(4, 2).cuda())
    x = torch.randn(6, 4, device="cuda")
    y = dp(x)
    assert y.device == CUDA and y.shape == (6, 2)
    assert torch.allclose(y.detach().cpu(), dp.module(x).detach().cpu(), atol=1e-6)
    y.sum().backward()
    assert dp.module.weight.grad.device == CUDA
    with pytest.raises(RuntimeError, match=r"module must have its parameters and buffers on device cuda:0"):
        nn.DataParallel(nn.Linear(4, 2))(x)


def test_work_in_threads_and_cuda_generators(cuda_env):
    """CUDA work started from another Python thread behaves the same (devices, mismatch errors);
    torch.Generator(device="cuda") reports cuda and seeds CUDA random ops reproducibly."""
    import threading

    result = {}

    def work():
        try:
            result["moved"] = torch.ones(2).cuda().device
            result["op"] = (torch.ones(2, device="cuda") * 2).device
            torch.ones(2, device="cuda") + torch.ones(2)
        except RuntimeError as exc:
            result["error"] = str(exc)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert result["moved"] == CUDA and result["op"] == CUDA
    assert result["error"].startswith("Expected all tensors to be on the same device")
    gen = torch.Generator(device="cuda")
    assert gen.device == CUDA and isinstance(gen, torch.Generator)
    gen.manual_seed(7)
    a = torch.randn(4, device="cuda", generator=gen)
    gen.manual_seed(7)
    b = torch.randn(4, device="cuda", generator=gen)
    assert a.device == CUDA and torch.equal(a.cpu(), b.cpu())


def test_save_whole_model_and_reload(cuda_env, tmp_path):
    """torch.save(model) of a CUDA module and torch.load(weights_only=False) give back a module with
    CUDA parameters (map_location="cpu" gives CPU ones)."""
    model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3)).cuda()
    path = tmp_path / "model.pt"
    torch.save(model, path)
    again = torch.load(path, weights_only=False)
    assert all(p.device == CUDA for p in again.parameters())
    assert all(isinstance(p, nn.Parameter) for p in again.parameters())
    assert again[1].running_mean.device == CUDA
    on_cpu = torch.load(path, weights_only=False, map_location="cpu")
    assert all(p.device.type == "cpu" for p in on_cpu.parameters())


def test_rnn_hidden_state_on_wrong_device(cuda_env):
    """A CUDA GRU started from a CPU hidden state raises "Input and hidden tensors are not at the
    same device, found input tensor at cuda:0 and hidden tensor at cpu"; with a CUDA state it runs."""
    gru = nn.GRU(3, 4, batch_first=True).cuda()
    x = torch.randn(2, 5, 3, device="cuda")
    with pytest.raises(RuntimeError) as info:
        gru(x, torch.zeros(1, 2, 4))
    assert str(info.value) == (
        "Input and hidden tensors are not at the same device, found input tensor at cuda:0 and hidden tensor at cpu"
    )
    out, h = gru(x, torch.zeros(1, 2, 4, device="cuda"))
    assert out.device == CUDA and h.device == CUDA


@pytest.mark.gpu_memory(64 * 1024 * 1024)
def test_huge_allocation_is_a_cuda_oom_not_a_host_failure(cuda_env):
    """Asking for far more than the device holds (here 1 TiB) raises torch.OutOfMemoryError naming the
    requested size, also when copying a host tensor that does not fit."""
    with pytest.raises(torch.OutOfMemoryError) as info:
        torch.zeros(1024**4 // 4, device="cuda")
    assert "Tried to allocate 1024.00 GiB" in str(info.value)
    total = torch.cuda.get_device_properties(0).total_memory
    if total <= 2 * 1024**3:
        host = torch.empty(total // 4 + 1024 * 1024, dtype=torch.float32)
        with pytest.raises(torch.OutOfMemoryError):
            host.to("cuda")


def test_parameter_repr_and_type_string(cuda_env):
    """repr of a CUDA Parameter is "Parameter containing:\\ntensor(..., device='cuda:0',
    requires_grad=True)"; Tensor.type() of CUDA tensors names the torch.cuda type."""
    p = nn.Parameter(torch.ones(2, device="cuda"))
    assert isinstance(p, nn.Parameter) and p.device == CUDA
    assert repr(p) == "Parameter containing:\ntensor([1., 1.], device='cuda:0', requires_grad=True)"
    assert torch.ones(1, device="cuda", dtype=torch.float16).type() == "torch.cuda.HalfTensor"
    assert torch.ones(1, device="cuda", dtype=torch.int64).type() == "torch.cuda.LongTensor"


def test_masked_fill_with_cpu_mask(cuda_env):
    """masked_fill of a CUDA tensor with a CPU mask raises "expected self and mask to be on the same
    device, but got mask on cpu and self on cuda:0"; a CUDA mask works."""
    scores = torch.randn(3, 3, device="cuda")
    causal = torch.tril(torch.ones(3, 3))
    with pytest.raises(RuntimeError) as info:
        scores.masked_fill(causal == 0, float("-inf"))
    assert str(info.value) == "expected self and mask to be on the same device, but got mask on cpu and self on cuda:0"
    out = scores.masked_fill(causal.cuda() == 0, float("-inf"))
    assert out.device == CUDA and torch.isinf(out.cpu()).sum().item() == 3
