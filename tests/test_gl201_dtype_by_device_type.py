"""GL201: an autocast dtype chosen by the device type (`torch.bfloat16 if device.type == "cuda" else
torch.float16`, huggingface/nanoVLM, PRECISION16 A1) runs float16 only off CUDA: no GradScaler is
needed there."""

from __future__ import annotations

import pytest

from fixture_support import check

_SRC = """import torch
import torch.nn as nn

device = torch.device("cuda") if torch.cuda.is_available() else torch.device("mps")
model = nn.Linear(8, 1).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(10):
    x = torch.randn(4, 8, device=device)
    optimizer.zero_grad()
    with torch.autocast(device_type=device.type, dtype=DTYPE):
        loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
"""


@pytest.mark.parametrize("dtype", [
    'torch.bfloat16 if device.type == "cuda" else torch.float16',
    'torch.bfloat16 if device.type in ["cuda", "cpu"] else torch.float16',
    'torch.bfloat16 if device.type != "mps" else torch.float16',
])
def test_float16_only_off_cuda_is_silent(dtype):
    assert [d.code for d in check(_SRC.replace("DTYPE", dtype), ["GL201"])] == []


@pytest.mark.parametrize("dtype", [
    'torch.float16 if device.type == "cuda" else torch.bfloat16',
    'torch.bfloat16 if device.type == "mps" else torch.float16',
    "torch.float16",
])
def test_float16_on_cuda_still_reports(dtype):
    assert [d.code for d in check(_SRC.replace("DTYPE", dtype), ["GL201"])] == ["GL201"]
