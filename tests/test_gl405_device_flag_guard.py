"""GL405 through a flag that only records a device test (NVIDIA/apex#316's ImageNet loop with the
synchronize pulled out of the print guard, kept runnable on a CPU with `use_cuda =
torch.cuda.is_available()`): `if use_cuda:` still runs the sync every step on a GPU. A flag bound to
anything else (a CLI option, a constant, a periodic test) stays silent."""

from __future__ import annotations

import textwrap

from fixture_support import check

SRC = """
import torch
import torch.nn as nn

FLAG_BINDING
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
data = [(torch.randn(8, 4), torch.randn(8, 2)) for _ in range(4)]
for step, (x, y) in enumerate(data):
    x, y = x.to(device), y.to(device)
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    if use_cuda:
        torch.cuda.synchronize()
"""


def _lines(binding: str) -> list[int]:
    src = textwrap.dedent(SRC).replace("FLAG_BINDING", binding)
    return [d.line for d in check(src, {"GL405"}) if d.code == "GL405"]


def test_flag_bound_to_a_device_test_is_reported():
    assert _lines("use_cuda = torch.cuda.is_available()") == [17]
    assert _lines('use_cuda = torch.device("cuda").type == "cuda"') == [17]


def test_flag_bound_to_anything_else_stays_silent():
    assert _lines("use_cuda = False") == []
    assert _lines("import sys\nuse_cuda = '--sync' in sys.argv") == []
    assert _lines("use_cuda = torch.cuda.is_available() and len(sys.argv) > 3") == []
