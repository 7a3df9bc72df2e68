"""End to end: ``python -m gpulint.emulate SCRIPT ARGS`` in a subprocess, as ``gpulint run`` runs it.

On a machine with a real GPU the runner does not emulate (the script gets the real device), so the
assertions below hold on both kinds of machine; only the emulator's own report line differs.
"""

from __future__ import annotations

import json
import os
import sys

import pytest
import torch

REAL_CUDA = torch.cuda.is_available()
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TRAIN = r'''
import json
import torch
import torch.nn as nn

assert torch.cuda.is_available()
device = torch.device("cuda")
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(128, 8)
y = (x[:, :1] * 2 - x[:, 1:2]).contiguous()
losses = []
for step in range(40):
    pred = model(x.to(device))
    loss = nn.functional.mse_loss(pred, y.to(device))
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": pred.device.type}))
'''

BUG = r'''
import torch
import torch.nn as nn

model = nn.Linear(4, 2).cuda()
batch = torch.randn(3, 4)          # forgot .cuda()
out = model(batch)
print("unreachable")
'''

ARGV = r'''
import sys
import torch
print(repr(sys.argv[1:]))
print("name", __name__)
line = sys.stdin.readline().strip()
print("stdin", line)
t = torch.ones(2, device="cuda")
print("device", t.device)
sys.exit(int(sys.argv[1]))
'''


def _last_json(stdout: str) -> dict:
    lines = [l for l in stdout.splitlines() if l.startswith("GPULINT-TRAIN ")]
    assert lines, stdout
    return json.loads(lines[-1][len("GPULINT-TRAIN ") :])


def test_tiny_training_script_trains_on_cuda(run_gpulint):
    """A script that trains on "cuda" runs to completion, reports the cuda device and its loss falls."""
    proc = run_gpulint(TRAIN)
    assert proc.returncode == 0, proc.stderr
    result = _last_json(proc.stdout)
    assert result["device"] == "cuda"
    assert result["last_loss"] < 0.5 * result["first_loss"]
    if not REAL_CUDA:
        lines = [l for l in proc.stderr.splitlines() if l.startswith("gpulint run: emulated cuda peak memory ")]
        assert len(lines) == 1, proc.stderr
        assert lines[0].endswith(("B", "KiB", "MiB", "GiB"))


def test_model_on_cuda_input_on_cpu_fails_like_a_gpu(run_gpulint):
    """The classic bug (model on cuda, batch on cpu) exits non-zero with the same-device error on
    stderr and a traceback pointing at the script line."""
    proc = run_gpulint(BUG)
    assert proc.returncode == 1
    assert "unreachable" not in proc.stdout
    assert "RuntimeError: Expected all tensors to be on the same device" in proc.stderr
    assert "wrapper_CUDA_addmm" in proc.stderr
    assert "out = model(batch)" in proc.stderr
    assert "gpulint/emulate" not in proc.stderr.replace("\\", "/")


def test_argv_stdin_and_exit_code_pass_through(run_gpulint):
    """sys.argv, __name__ == "__main__", stdin, stdout and the exit code are those of `python SCRIPT ARGS`."""
    proc = run_gpulint(ARGV, "7", "--flag", "x y", stdin="hello\n")
    assert proc.returncode == 7, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0] == repr(["7", "--flag", "x y"])
    assert out[1] == "name __main__"
    assert out[2] == "stdin hello"
    assert out[3] == "device cuda:0"


def test_gpus_and_gpu_memory_options(run_gpulint):
    """--gpus 2 gives two devices; --gpu-memory sets the reported capacity and over-allocation
    raises torch.OutOfMemoryError (the script can catch it like on a GPU)."""
    if REAL_CUDA:
        pytest.skip("the options configure the emulated device only")
    source = r'''
import torch
print("count", torch.cuda.device_count())
print("total", torch.cuda.get_device_properties(1).total_memory)
try:
    torch.empty(40 * 1024 * 1024, dtype=torch.uint8, device="cuda:1")
except torch.OutOfMemoryError as exc:
    print("oom", str(exc).split(".")[0])
'''
    proc = run_gpulint(source, options=("--gpus", "2", "--gpu-memory", "32MiB"))
    assert proc.returncode == 0, proc.stderr
    assert "count 2" in proc.stdout
    assert f"total {32 * 1024 * 1024}" in proc.stdout
    assert "oom CUDA out of memory" in proc.stdout
    assert "(cuda:0 " in proc.stderr and "cuda:1 " in proc.stderr


def test_unsupported_feature_is_reported_clearly(run_gpulint):
    """torch.compile cannot be emulated: one `gpulint run: ... cannot be emulated: ...` line, exit 3."""
    if REAL_CUDA:
        pytest.skip("only the emulator refuses torch.compile")
    source = r'''
import torch
model = torch.nn.Linear(2, 2).cuda()
model = torch.compile(model)
print("unreachable")
'''
    proc = run_gpulint(source)
    assert proc.returncode == 3
    assert "unreachable" not in proc.stdout
    lines = [l for l in proc.stderr.splitlines() if "cannot be emulated" in l]
    assert lines == ["gpulint run: torch.compile cannot be emulated: TorchInductor generates Triton/CUDA kernels that need a real GPU"]


def test_importing_gpulint_emulate_does_not_import_torch(tmp_path):
    """`import gpulint.emulate` (and parsing sizes) must not import torch."""
    import subprocess

    code = "import sys, gpulint, gpulint.emulate; gpulint.emulate.parse_size('1GiB'); print('torch' in sys.modules)"
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    proc = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


STEPS = r'''
import time
import torch, torch.nn as nn
model = nn.Linear(4, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
step = 0
try:
    while True:
        loss = model(torch.randn(8, 4, device="cuda")).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        step += 1
        print("step", step, flush=True)
        if "--slow" in __import__("sys").argv:
            time.sleep(0.05)
except Exception as exc:  # a script's broad handler must not swallow the stop
    print("swallowed", exc)
    raise
'''


def test_banner_and_max_steps(run_gpulint):
    """A banner opens the emulated run; --max-steps N stops after N optimizer steps with exit 0."""
    if REAL_CUDA:
        pytest.skip("the banner and the stop messages belong to the emulated run")
    proc = run_gpulint(STEPS, options=("--max-steps", "3"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["step", "1", "step", "2"]
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("gpulint run: emulating 1 CUDA device (torch ") and lines[0].endswith(", CPU compute)")
    assert "gpulint run: stopped after 3 optimizer steps (--max-steps 3)" in lines
    assert "swallowed" not in proc.stdout


def test_max_time_stops_cleanly(run_gpulint):
    if REAL_CUDA:
        pytest.skip("the stop message belongs to the emulated run")
    proc = run_gpulint(STEPS, "--slow", options=("--max-time", "2"))
    assert proc.returncode == 0, proc.stderr
    assert "gpulint run: stopped after 2 s (--max-time 2)" in proc.stderr
    assert "swallowed" not in proc.stdout


GAN = r'''
import sys
import torch, torch.nn as nn
critic_steps = int(sys.argv[1])
G = nn.Linear(2, 4).cuda()
D = nn.Linear(4, 1).cuda()
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
it = 0
while True:
    for _ in range(critic_steps):
        real = torch.randn(8, 4, device="cuda")
        fake = G(torch.randn(8, 2, device="cuda")).detach()
        loss_d = D(fake).mean() - D(real).mean()
        opt_d.zero_grad(); loss_d.backward(); opt_d.step()
        print("d", flush=True)
    loss_g = -D(G(torch.randn(8, 2, device="cuda"))).mean()
    opt_g.zero_grad(); loss_g.backward(); opt_g.step()
    it += 1
    print("g", it, flush=True)
'''


@pytest.mark.parametrize("critic_steps", [1, 3])
def test_max_steps_counts_training_steps_of_a_gan(run_gpulint, critic_steps):
    """With a generator and a discriminator, --max-steps N stops after N full iterations: both
    optimizers (the critic stepped several times per generator step) finish their N-th step."""
    if REAL_CUDA:
        pytest.skip("the stop message belongs to the emulated run")
    proc = run_gpulint(GAN, str(critic_steps), options=("--max-steps", "2"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.split("\n")
    # the generator's 2nd step ends the run (before the script prints "g 2")
    assert out.count("d") == 2 * critic_steps
    assert "g 1" in out and "g 2" not in out
    d, g = 2 * critic_steps, 2
    assert (
        f"gpulint run: stopped after 2 training steps (--max-steps 2; the script's 2 optimizers made {g}, {d} steps)"
        in proc.stderr.splitlines()
    )


PHASES = r'''
import torch, torch.nn as nn
model = nn.Linear(4, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):  # phase 1: a first optimizer, then replaced (it is garbage-collected)
    opt.zero_grad(); model(torch.randn(8, 4, device="cuda")).pow(2).mean().backward(); opt.step()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
__import__("gc").collect()  # an optimizer is freed by the cycle collector: make it happen now
unused = torch.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1)  # built, never stepped
step = 0
while True:
    opt.zero_grad(); model(torch.randn(8, 4, device="cuda")).pow(2).mean().backward(); opt.step()
    step += 1
    print("step", step, flush=True)
'''


def test_max_steps_is_not_held_by_a_dropped_or_idle_optimizer(run_gpulint):
    """A replaced optimizer no longer counts; one that never steps cannot keep the run going
    (the run stops at 10 x N steps of the optimizer that does step)."""
    if REAL_CUDA:
        pytest.skip("the stop message belongs to the emulated run")
    proc = run_gpulint(PHASES, options=("--max-steps", "3"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[-2] == "step 29"
    assert (
        "gpulint run: stopped after 0 training steps (--max-steps 3; the script's 2 optimizers made 30, 0 steps)"
        in proc.stderr.splitlines()
    )


HINT = r'''
import torch
import torch.nn as nn


def prepare(x, device):
    x.to(device)
    return x * 2


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
out = model(prepare(torch.randn(8, 4), device))
'''


def test_device_error_ends_with_the_static_finding_that_explains_it(run_gpulint):
    """The crash is at the model call; the hint names the discarded move in the helper above it."""
    if REAL_CUDA:
        pytest.skip("hints follow emulated crashes")
    proc = run_gpulint(HINT)
    assert proc.returncode == 1
    assert "Expected all tensors to be on the same device" in proc.stderr
    hints = [l for l in proc.stderr.splitlines() if l.startswith("gpulint run: hint: ")]
    assert any(h.startswith("gpulint run: hint: gpulint check reports GL104 at script.py:7: ") for h in hints), hints
    assert len(hints) <= 3


def _notebook(path, second_cell: str) -> None:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# training"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": ["%matplotlib inline\n", "import torch, torch.nn as nn\n", "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n", "model = nn.Linear(4, 2).to(device)"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": [second_cell]},
    ]  # fmt: skip
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"language_info": {"name": "python"}}, "cells": cells}
    path.write_text(json.dumps(nb))


def test_notebook_code_cells_run_in_order(tmp_path):
    """`gpulint run train.ipynb` runs the code cells in order (IPython magics commented out)."""
    import subprocess

    env = dict(os.environ, PYTHONPATH=REPO_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    good, bad = tmp_path / "good.ipynb", tmp_path / "bad.ipynb"
    _notebook(good, "x = torch.randn(3, 4).to(device)\nprint('out', model(x).device.type)\n")
    _notebook(bad, "x = torch.randn(3, 4)\nprint('out', model(x).device.type)\n")
    runs = [
        subprocess.run([sys.executable, "-m", "gpulint.emulate", str(nb)], capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=900, check=False)
        for nb in (good, bad)
    ]  # fmt: skip
    assert runs[0].returncode == 0, runs[0].stderr
    assert runs[0].stdout.strip() == "out cuda"
    assert runs[1].returncode == 1
    assert "print('out', model(x).device.type)" in runs[1].stderr
    assert "Expected all tensors to be on the same device" in runs[1].stderr
