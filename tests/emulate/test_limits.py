"""What the emulator refuses, and how it says so (emulated device only: a real GPU runs these)."""

from __future__ import annotations

import pytest
import torch

from gpulint.emulate import EmulationUnsupported

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="a real GPU supports these features")


@pytest.fixture
def emulated():
    from gpulint.emulate import emulated_cuda

    with emulated_cuda() as emu:
        yield emu


@pytest.mark.parametrize(
    "action,feature",
    [
        (lambda: torch.compile(torch.nn.Linear(2, 2)), "torch.compile"),
        (lambda: torch.cuda.CUDAGraph(), "CUDA graphs"),
        (lambda: torch.cuda.graph(None), "CUDA graphs"),
        (
            lambda: __import__("torch.utils.cpp_extension").utils.cpp_extension.load_inline("x", cpp_sources="", cuda_sources="__global__ void k(){}"),
            "CUDA extensions",
        ),
    ],
    ids=["compile", "cudagraph", "graph", "cuda-extension"],
)
def test_unsupported_features_raise_clearly(emulated, action, feature):
    with pytest.raises(EmulationUnsupported) as info:
        action()
    assert info.value.feature == feature
    assert str(info.value).startswith(f"{feature} cannot be emulated: ")
    assert isinstance(info.value, RuntimeError)
    assert emulated.unsupported_seen


def test_default_stream_and_events_work(emulated):
    stream = torch.cuda.current_stream()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.ones(10, device="cuda").sum()
    end.record()
    stream.synchronize()
    torch.cuda.synchronize()
    assert end.elapsed_time(start) <= 0 <= start.elapsed_time(end)
    with torch.cuda.stream(stream):
        assert torch.ones(1, device="cuda").device.type == "cuda"


def test_custom_cuda_only_operator_is_reported(emulated):
    lib = torch.library.Library("gpulint_test_only_cuda", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    # registered for CUDA only: like a custom CUDA kernel shipped by an extension
    lib.impl("twice", lambda x: x * 2, "CUDA")
    with pytest.raises(EmulationUnsupported) as info:
        torch.ops.gpulint_test_only_cuda.twice(torch.ones(2, device="cuda"))
    assert "gpulint_test_only_cuda::twice" in info.value.feature


def test_patches_are_undone_after_emulation():
    from gpulint.emulate import emulated_cuda

    before = (torch.cuda.is_available, torch.Tensor.__dict__.get("to"), torch.save, torch.nn.Parameter.__new__)
    with emulated_cuda(gpus=2):
        assert torch.cuda.device_count() == 2
    after = (torch.cuda.is_available, torch.Tensor.__dict__.get("to"), torch.save, torch.nn.Parameter.__new__)
    assert before == after
    assert torch.cuda.is_available() is False
    assert torch.zeros(1).to(torch.float64).dtype == torch.float64
