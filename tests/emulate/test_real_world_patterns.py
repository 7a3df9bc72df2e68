"""Patterns from real training scripts that a GPU runs (no false alarm) or rejects (same message).

Each test states what real CUDA does; the ``cuda_env`` fixture hands out a real GPU when there is
one, so these tests pin down GPU behaviour, not the emulator's.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

CUDA = torch.device("cuda", 0)


# --- issue 12, false alarms ------------------------------------------------------------------------


def test_zero_dim_cuda_tensor_formats_with_a_format_spec(cuda_env):
    """`f"{acc:.2f}"` on a 0-dim CUDA tensor formats its value (ImageNet example's AverageMeter);
    a 1-dim tensor or a Parameter still refuses a format spec, as Tensor.__format__ does."""
    acc = torch.tensor(0.123456, device="cuda")
    assert f"{acc:.2f}" == "0.12"
    assert f"{acc * 100:6.1f}" == "  12.3"
    assert "{:.3e}".format(torch.tensor(1234.5, device="cuda")) == "1.234e+03"
    assert f"{torch.tensor(3, device='cuda'):d}" == "3"
    with pytest.raises(TypeError, match=r"unsupported format string passed to Tensor.__format__"):
        f"{torch.ones(2, device='cuda'):.2f}"
    with pytest.raises(TypeError, match=r"unsupported format string passed to Parameter.__format__"):
        f"{nn.Parameter(torch.tensor(1.0, device='cuda')):.2f}"
    assert f"{acc}" == str(acc.item())
    assert f"{torch.ones(2, device='cuda')}" == "tensor([1., 1.], device='cuda:0')"
    assert f"{torch.tensor(2.0, device='cuda', requires_grad=True):.1f}" == "2.0"


def test_lazy_modules_moved_to_cuda_before_first_forward(cuda_env):
    """Lazy modules moved with .to("cuda")/.cuda() before their first forward materialize their
    parameters and buffers on the GPU, and train there."""
    model = nn.Sequential(nn.LazyConv2d(4, 3), nn.LazyBatchNorm2d(), nn.Flatten(), nn.LazyLinear(2)).to("cuda")
    out = model(torch.randn(2, 3, 8, 8, device="cuda"))
    assert out.device == CUDA
    for p in model.parameters():
        assert p.device == CUDA and type(p).__name__ == "Parameter" and isinstance(p, nn.Parameter)
    for b in model.buffers():
        assert b.device == CUDA
    out.sum().backward()
    assert model[3].weight.grad.device == CUDA
    lin = nn.LazyLinear(3).cuda()
    assert lin(torch.ones(1, 5, device="cuda")).device == CUDA
    assert lin.weight.shape == (3, 5)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        nn.LazyLinear(3).cuda()(torch.ones(1, 5))


def test_legacy_typed_constructors_and_casts(cuda_env):
    """torch.cuda.FloatTensor(3) / LongTensor([..]) build CUDA tensors; t.type(torch.cuda.X) and
    t.type("torch.cuda.X") move and cast; isinstance checks the device and dtype."""
    a = torch.cuda.FloatTensor(3)
    assert a.device == CUDA and a.dtype == torch.float32 and a.shape == (3,)
    b = torch.cuda.LongTensor([1, 2, 3])
    assert b.device == CUDA and b.dtype == torch.int64 and b.tolist() == [1, 2, 3]
    c = torch.cuda.FloatTensor(2, 4).fill_(1.5)
    assert c.device == CUDA and c.sum().item() == 12.0
    x = torch.arange(3.0)
    y = x.type(torch.cuda.FloatTensor)
    assert y.device == CUDA and y.type() == "torch.cuda.FloatTensor"
    h = x.type("torch.cuda.HalfTensor")
    assert h.device == CUDA and h.dtype == torch.float16
    back = y.type(torch.FloatTensor)
    assert back.device.type == "cpu" and back.type() == "torch.FloatTensor"
    assert y.type(torch.cuda.LongTensor).dtype == torch.int64
    assert isinstance(y, torch.cuda.FloatTensor) and not isinstance(x, torch.cuda.FloatTensor)
    assert not isinstance(b, torch.cuda.FloatTensor)
    with pytest.raises(ValueError, match="invalid type: 'torch.float32'"):
        x.type("torch.float32")


def test_sparse_adam_on_sparse_embedding(cuda_env):
    """nn.Embedding(sparse=True) on the GPU produces a sparse CUDA gradient that SparseAdam uses."""
    torch.manual_seed(0)
    emb = nn.Embedding(20, 4, sparse=True).cuda()
    opt = torch.optim.SparseAdam(emb.parameters(), lr=0.1)
    before = emb.weight.detach().clone()
    for _ in range(2):
        opt.zero_grad()
        emb(torch.tensor([[1, 2], [2, 5]], device="cuda")).pow(2).sum().backward()
        assert emb.weight.grad.is_sparse and emb.weight.grad.device == CUDA
        opt.step()
    changed = (emb.weight.detach() != before).any(dim=1).nonzero().flatten().tolist()
    assert changed == [1, 2, 5]


def test_ctc_loss_with_cpu_length_tensors(cuda_env):
    """F.ctc_loss accepts CPU length tensors (and CPU targets) with CUDA log-probs; it rejects
    floating-point lengths."""
    torch.manual_seed(0)
    log_probs = torch.randn(30, 2, 10, device="cuda").log_softmax(2).requires_grad_()
    targets = torch.randint(1, 10, (2, 8), device="cuda")
    in_len = torch.full((2,), 30, dtype=torch.long)
    tgt_len = torch.tensor([8, 5])
    for tg in (targets, targets.cpu()):
        loss = F.ctc_loss(log_probs, tg, in_len, tgt_len)
        assert loss.device == CUDA
        loss.backward()
        assert log_probs.grad.device == CUDA
    ref = F.ctc_loss(log_probs.detach().cpu(), targets.cpu(), in_len, tgt_len)
    assert abs(ref.item() - loss.item()) < 1e-4
    with pytest.raises(RuntimeError, match="input_lengths must be integral"):
        F.ctc_loss(log_probs, targets, in_len.float(), tgt_len)


def test_record_stream_on_current_stream(cuda_env):
    """Tensor.record_stream(torch.cuda.current_stream()) is accepted and returns None."""
    t = torch.ones(4, device="cuda")
    assert t.record_stream(torch.cuda.current_stream()) is None
    assert t.sum().item() == 4.0


def test_allocator_and_sync_debug_settings(cuda_env):
    """set_per_process_memory_fraction validates its argument; get_allocator_backend names the
    allocator; set/get_sync_debug_mode round-trip."""
    torch.cuda.set_per_process_memory_fraction(1.0)
    with pytest.raises(ValueError, match=r"Invalid fraction value: 1.5. Allowed range: 0~1"):
        torch.cuda.set_per_process_memory_fraction(1.5)
    with pytest.raises(TypeError, match="Invalid type for fraction argument, must be `float`"):
        torch.cuda.set_per_process_memory_fraction(1)
    assert torch.cuda.get_allocator_backend() in ("native", "cudaMallocAsync")
    old = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("warn")
    assert torch.cuda.get_sync_debug_mode() == 1
    torch.cuda.set_sync_debug_mode(old)
    assert torch.cuda.get_sync_debug_mode() == old


@pytest.mark.gpu_memory(64 * 1024**2)
def test_memory_fraction_limits_allocations(cuda_env):
    """With a memory fraction, an allocation past fraction * capacity is a CUDA out-of-memory."""
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(0.25)
    try:
        with pytest.raises(torch.OutOfMemoryError, match="CUDA out of memory"):
            torch.empty(int(total * 0.5), dtype=torch.uint8, device="cuda")
        assert torch.empty(1024, device="cuda").device == CUDA
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_compile_with_eager_backends(cuda_env, backend):
    """torch.compile(backend="eager"/"aot_eager") needs no generated kernels; the compiled module
    trains on the GPU and keeps the `_orig_mod.` state_dict prefix."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)).cuda()
    compiled = torch.compile(model, backend=backend)
    out = compiled(torch.randn(5, 4, device="cuda"))
    assert out.device == CUDA
    out.sum().backward()
    assert model[0].weight.grad.device == CUDA
    assert compiled._orig_mod is model
    assert all(k.startswith("_orig_mod.") for k in compiled.state_dict())

    @torch.compile(backend=backend)
    def f(x):
        return (x * 2).sum()

    assert f(torch.ones(3, device="cuda")).item() == 6.0


# --- streams and events ----------------------------------------------------------------------------


def test_side_stream_prefetching_pattern(cuda_env):
    """A prefetcher (timm/apex style) copies the next batch on a side stream, the compute stream
    waits for it and the batch records the compute stream; values arrive intact."""
    stream = torch.cuda.Stream()
    assert isinstance(stream, torch.cuda.Stream) and isinstance(torch.cuda.current_stream(), torch.cuda.Stream)
    assert stream != torch.cuda.default_stream() and stream.device == CUDA
    batches = [torch.full((4, 3), float(i)).pin_memory() for i in range(3)]
    seen = []
    for b in batches:
        with torch.cuda.stream(stream):
            assert torch.cuda.current_stream() == stream
            nxt = b.cuda(non_blocking=True).float().mul_(2)
        assert torch.cuda.current_stream() == torch.cuda.default_stream()
        torch.cuda.current_stream().wait_stream(stream)
        nxt.record_stream(torch.cuda.current_stream())
        seen.append(nxt.sum().item())
    assert seen == [0.0, 24.0, 48.0]
    stream.synchronize()
    assert stream.query() is True


def test_events_on_streams(cuda_env):
    """Events record on a stream, can be waited on by another stream, and time the work between two
    timing events (a non-negative number of milliseconds)."""
    side = torch.cuda.Stream(priority=-1)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    with torch.cuda.stream(side):
        y = torch.randn(64, 64, device="cuda") @ torch.randn(64, 64, device="cuda")
        done = side.record_event()
    torch.cuda.current_stream().wait_event(done)
    end.record()
    end.synchronize()
    assert done.query() is True
    assert start.elapsed_time(end) >= 0.0
    assert y.device == CUDA
    with pytest.raises(RuntimeError, match="enable_timing"):
        torch.cuda.Event().elapsed_time(torch.cuda.Event())
    torch.cuda.set_stream(side)
    try:
        assert torch.cuda.current_stream() == side
    finally:
        torch.cuda.set_stream(torch.cuda.default_stream())


# --- CUDA autocast's op lists, the default device ---------------------------------------------------


def test_binary_cross_entropy_is_unsafe_to_autocast(cuda_env):
    """Under fp16 CUDA autocast F.binary_cross_entropy (nn.BCELoss) raises; BCEWithLogits is fine,
    and so is BCE outside autocast."""
    logits = torch.randn(4, 1, device="cuda", requires_grad=True)
    target = torch.ones(4, 1, device="cuda")
    with torch.autocast("cuda", dtype=torch.float16):
        with pytest.raises(RuntimeError, match=r"binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast"):
            nn.BCELoss()(torch.sigmoid(logits), target)
        loss = nn.BCEWithLogitsLoss()(logits, target)
    assert loss.dtype == torch.float32
    loss.backward()
    assert F.binary_cross_entropy(torch.sigmoid(logits), target).device == CUDA


def test_cuda_autocast_policy_lists(cuda_env):
    """CUDA autocast (fp16): matmuls run in fp16; layer_norm, softmax, exp, pow, sum and logsumexp
    run in fp32; addcmul promotes to the widest input type; float64 is left alone."""
    x = torch.randn(4, 8, device="cuda")
    w = torch.randn(8, 8, device="cuda")
    ln = nn.LayerNorm(8).cuda()
    with torch.autocast("cuda", dtype=torch.float16):
        h = x @ w
        assert h.dtype == torch.float16
        assert torch.mv(w, x[0]).dtype == torch.float16
        assert ln(h).dtype == torch.float32
        assert torch.softmax(h, -1).dtype == torch.float32
        assert F.log_softmax(h, -1).dtype == torch.float32
        assert h.exp().dtype == torch.float32 and h.pow(2).dtype == torch.float32
        assert h.sum().dtype == torch.float32 and torch.logsumexp(h, -1).dtype == torch.float32
        assert torch.addcmul(h, x, h).dtype == torch.float32
        assert torch.relu(h).dtype == torch.float16
        assert (x.double() @ w.double()).dtype == torch.float64
    with torch.autocast("cuda", dtype=torch.bfloat16):
        assert (x @ w).dtype == torch.bfloat16 and torch.softmax(x @ w, -1).dtype == torch.float32


def test_set_default_device_cuda(cuda_env):
    """set_default_device("cuda") puts factories (torch.tensor included) on the GPU; a shuffling
    DataLoader with its default CPU generator then fails with CUDA's generator error, and works with
    a CUDA generator."""
    from torch.utils.data import DataLoader, TensorDataset

    data = TensorDataset(torch.arange(8.0))
    torch.set_default_device("cuda")
    try:
        assert torch.zeros(2).device == CUDA and torch.tensor([1.0]).device == CUDA and torch.arange(3).device == CUDA
        assert torch.get_default_device() == CUDA
        with pytest.raises(RuntimeError, match=r"Expected a 'cuda' device type for generator but found 'cpu'"):
            list(DataLoader(data, batch_size=4, shuffle=True))
        batches = list(DataLoader(data, batch_size=4, shuffle=True, generator=torch.Generator(device="cuda")))
        assert sorted(v for (b,) in batches for v in b.tolist()) == [float(i) for i in range(8)]
        assert [b.tolist() for (b,) in DataLoader(data, batch_size=4)] == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]
    finally:
        torch.set_default_device(None)
    with pytest.raises(RuntimeError, match=r"Expected a 'cpu' device type for generator but found 'cuda'"):
        torch.randperm(4, generator=torch.Generator(device="cuda"))
    assert torch.zeros(1).device.type == "cpu"


def test_half_precision_matmul_and_conv(cuda_env):
    """fp16 GEMMs and convolutions give fp16 results (accumulated in fp32, as on a GPU), fp16
    gradients for a .half() model, and mixing fp16 with fp32 is still an error."""
    torch.manual_seed(0)
    a, b = torch.randn(16, 32, device="cuda").half(), torch.randn(32, 8, device="cuda").half()
    out = a @ b
    assert out.dtype == torch.float16 and out.device == CUDA
    assert torch.allclose(out.float(), (a.float() @ b.float()).half().float(), atol=1e-2)
    conv = nn.Conv2d(3, 4, 3).cuda().half()
    y = conv(torch.randn(2, 3, 8, 8, device="cuda").half())
    y.float().sum().backward()
    assert y.dtype == torch.float16 and conv.weight.grad.dtype == torch.float16 and conv.bias.grad.dtype == torch.float16
    with pytest.raises(RuntimeError, match="dtype"):
        a @ b.float()


def test_pack_padded_sequence_lengths_must_be_on_the_cpu(cuda_env):
    """`pack_padded_sequence` needs its `lengths` on the CPU even for CUDA inputs (since torch 1.7,
    pytorch/pytorch#43227): CUDA lengths fail with ATen's message; CPU lengths and a list work."""
    from torch.nn.utils.rnn import pack_padded_sequence

    x = torch.randn(3, 5, 4, device="cuda")
    lengths = torch.tensor([5, 3, 2])
    with pytest.raises(RuntimeError, match=r"'lengths' argument should be a 1D CPU int64 tensor, but got 1D cuda:0 Long tensor"):
        pack_padded_sequence(x, lengths.to("cuda"), batch_first=True)
    with pytest.raises(RuntimeError, match=r"'lengths' argument should be a 1D CPU int64 tensor"):
        pack_padded_sequence(x, lengths.to("cuda"), batch_first=True, enforce_sorted=False)
    packed = pack_padded_sequence(x, lengths, batch_first=True)
    assert packed.data.device == CUDA and packed.batch_sizes.device.type == "cpu"
    assert pack_padded_sequence(x, [5, 3, 2], batch_first=True).data.shape == (10, 4)
