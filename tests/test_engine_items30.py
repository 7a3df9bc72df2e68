"""Engine items, twenty-third session (each test checked to fail with its change stashed)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def _lines(src: str, *codes: str) -> list[tuple[int, str]]:
    rules = [Registry.load().by_code(c)() for c in codes]
    diags = run_text("train.py", textwrap.dedent(src), rules, Options()).diagnostics
    return sorted((d.line, d.code) for d in diags)


def _messages(src: str, *codes: str) -> list[str]:
    rules = [Registry.load().by_code(c)() for c in codes]
    return [d.message for d in run_text("train.py", textwrap.dedent(src), rules, Options()).diagnostics]


# E42-8 (spectral-optimal-transport#3's shape): a host copy made on every path of its function
# (`out.to("cpu")`, `out.cpu()`) and combined with the device tensor it was copied from. The
# engine skipped every tensor moved to the CPU by a call as "on purpose, under a CPU-only guard".
HOST_COPY = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 8).to(device)
out = model(torch.randn(2, 4).to(device))
x = out.to("cpu")
y = x * out
z = out.cpu()
w = torch.add(z, out)
"""


def test_an_unconditional_host_copy_meets_the_device_tensor():
    assert _lines(HOST_COPY, "GL116") == [(9, "GL116"), (11, "GL116")]
    assert any("moved there by `out.cpu()` on line 10" in msg for msg in _messages(HOST_COPY, "GL116"))


def test_a_host_copy_under_a_branch_stays_silent():
    src = """
    import torch
    import torch.nn as nn

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(4, 8).to(device)
    out = model(torch.randn(2, 4).to(device))
    x = out
    if args_cpu_only():
        x = out.to("cpu")
    y = x * out
    try:
        z = out.cuda()
    except RuntimeError:
        z = out.cpu()
    w = z + out
    """
    assert _lines(src, "GL116") == []


def test_a_host_copy_of_a_possibly_scalar_tensor_stays_silent():
    src = """
    import torch
    import torch.nn as nn

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(4, 8).to(device)
    loss = nn.functional.mse_loss(model(torch.randn(2, 4).to(device)), torch.zeros(2, 8, device=device))
    total = loss.cpu()
    scaled = total * model(torch.randn(2, 4).to(device))
    """
    # a loss module's output is 0-dim: a 0-dim CPU tensor may meet a device tensor
    assert _lines(src, "GL116") == []


# E42-9 (MDI-LLM#21's shape): `if "cuda" in device:` of a device literal (or the availability
# choice) is a test that holds on a GPU run; its branch pairs the current device with another GPU.
GET_BATCH = """
import torch
import torch.nn as nn

device = "cuda:1"
model = nn.Embedding(32, 8)
model.to(device)
x = torch.randint(0, 32, (4, 6))
y = torch.randint(0, 32, (4, 6))
if "cuda" in device:
    x, y = x.to("cuda"), y.to(device)
else:
    x, y = x.to(device), y.to(device)
out = model(x)
"""


def test_a_device_type_test_of_a_device_literal_is_decided():
    assert _lines(GET_BATCH, "GL116") == [(14, "GL116")]


def test_a_device_type_test_decides_the_gpu_branch():
    from gpulint.flow import gpu_guard
    from gpulint.model import ScriptModel
    import libcst as cst

    src = textwrap.dedent("""
    import torch
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    name = "cpu"
    other = input()
    a = "cuda" in str(device)
    b = device.type == "cuda"
    c = device.type != "cpu"
    d = str(device).startswith("cuda")
    e = "cuda" in name
    f = device == "cuda"
    g = "cuda" in other
    h = name == "cpu"
    """)
    mod = cst.parse_module(src)
    m = ScriptModel(mod, src)
    got = {}
    for st in mod.body:
        node = st.body[0]
        if type(node) is cst.Assign and node.targets[0].target.value in "abcdefgh":
            got[node.targets[0].target.value] = gpu_guard(m, node.value)
    # f: `torch.device("cuda") == "cuda"` is not decided by the type alone (an index may follow)
    assert got == {"a": True, "b": True, "c": True, "d": True, "e": False, "f": None, "g": None, "h": True}


# E42-3 (MMGeneration#476's `get_module_device`): a file helper that returns the device index of a
# module's parameters when `.is_cuda`, else `torch.device("cpu")`. The engine now decides
# `x.is_cuda` where it knows where `x` is, and reads `x.get_device()` of an accelerator tensor as
# that device, so the helper's summary is the module's device and the timesteps moved there index
# a host table.
MODULE_DEVICE = """
import numpy as np
import torch
import torch.nn as nn


def get_module_device(module):
    if next(module.parameters()).is_cuda:
        return next(module.parameters()).get_device()
    return torch.device("cpu")


def var_to_tensor(var, index):
    return torch.from_numpy(var)[index].float()


class Diffusion(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 8)
        self.sqrt_alphas_bar = np.sqrt(np.cumprod(1.0 - np.linspace(1e-4, 0.05, 50)))

    def q_sample(self, x_0, t):
        return x_0 * var_to_tensor(self.sqrt_alphas_bar, t)[:, None]

    def reconstruction_step(self, x, timesteps):
        timesteps = timesteps.to(get_module_device(self))
        return self.q_sample(x, timesteps)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Diffusion().to(device)
x = torch.randn(4, 8).to(device)
out = model.reconstruction_step(x, torch.randint(0, 50, (4,)))
"""


def test_a_helper_returning_the_module_device_index():
    assert _lines(MODULE_DEVICE, "GL116") == [(14, "GL116")]


def test_a_helper_given_a_host_module_returns_the_host():
    # the same helper on a module never moved: `is_cuda` is False, the CPU device is returned and
    # the table and its indices are both on the host
    src = MODULE_DEVICE.replace("model = Diffusion().to(device)", "model = Diffusion()").replace(
        "x = torch.randn(4, 8).to(device)", "x = torch.randn(4, 8)")
    assert _lines(src, "GL116") == []


def test_get_device_of_a_host_tensor_is_not_a_device():
    src = """
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    t = torch.zeros(3)
    rank = t.get_device()
    y = torch.randn(4, 3).to(rank) + torch.randn(4, 3).to(device)
    """
    assert _lines(src, "GL116") == []
