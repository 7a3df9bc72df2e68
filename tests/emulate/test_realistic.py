"""Realistic training scripts (tests/emulate/realistic/) under ``gpulint run``.

Each script is written in the structure of a well-known public training script and trains on tiny
synthetic data in a few seconds. Every script must finish on the emulated GPU, and each one with a
small injected device bug (a patch applied here) must fail with the error a GPU gives.
Single-process scripts run in this process (``run_script``, as ``gpulint run`` does, without a
new interpreter per run); multi-process ones (spawn children, torchrun ranks) run as commands.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="the realistic suite drives the emulator")

HERE = Path(__file__).parent / "realistic"
REPO_ROOT = str(Path(__file__).resolve().parents[2])


@dataclass(frozen=True)
class Case:
    script: str
    old: str  # the line(s) the injected bug replaces (must occur exactly once)
    new: str
    error: str  # regex of the GPU's error message
    finished: str  # regex the clean run prints at its end
    nproc: int | None = None  # run as `gpulint run --nproc-per-node N`
    command: bool = False  # run as a command (spawns processes)


SAME_DEVICE = r"Expected all tensors to be on the same device"
CASES = [
    Case("imagenet_style.py", "        target = target.to(device, non_blocking=True)\n", "", SAME_DEVICE, r"best Acc@1 \d+\.\d\d True"),
    Case(
        "hogwild_spawn.py",
        "        data, target = data.to(device), target.to(device)\n",
        "        target = target.to(device)\n",
        r"Input type \(torch.FloatTensor\) and weight type \(torch.cuda.FloatTensor\) should be the same",
        r"rank 1 done loss",
        command=True,
    ),
    Case(
        "prefetch_streams.py",
        "self.mean = torch.tensor([x * 255 for x in MEAN], device=device).view(1, 3, 1, 1)",
        "self.mean = torch.tensor([x * 255 for x in MEAN]).view(1, 3, 1, 1)",
        r"Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
        r"time True",
    ),
    Case(
        "ddp_torchrun.py",
        '        self.gpu_id = int(os.environ["LOCAL_RANK"])\n',
        "        self.gpu_id = 0\n",
        r"Duplicate GPU detected : rank 1 and rank 0 both on CUDA device",
        r"epoch 1 loss",
        nproc=2,
    ),
    Case(
        "gpt_bf16.py",
        "pos = torch.arange(0, t, dtype=torch.long, device=device)",
        "pos = torch.arange(0, t, dtype=torch.long)",
        r"but got index is on cpu, different from other tensors on cuda:0 \(when checking argument in method wrapper_CUDA__index_select\)",
        r"iter 7: loss",
    ),
    Case(
        "gan_legacy_tensors.py",
        "        gen_imgs = generator(z)\n        g_loss = adversarial_loss(discriminator(gen_imgs), valid)\n",
        "        with torch.autocast('cuda', dtype=torch.float16):\n            gen_imgs = generator(z)\n            g_loss = adversarial_loss(discriminator(gen_imgs), valid)\n",
        r"torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast",
        r"\[Epoch 1\] \[D loss",
    ),
    Case(
        "speech_ctc.py",
        "h0 = torch.zeros(4, x.size(0), self.hidden, device=x.device)",
        "h0 = torch.zeros(4, x.size(0), self.hidden)",
        # enforce_sorted=False: the hidden state is first permuted with the (CUDA) sorted indices
        r"but got index is on cuda:0, different from other tensors on cpu \(when checking argument in method wrapper_CUDA__index_select\)",
        r"step 3 ctc",
    ),
    Case(
        "recsys_sparse.py",
        "users, items, labels = users.to(device), items.to(device), labels.to(device)",
        "items, labels = items.to(device), labels.to(device)",
        r"but got index is on cpu, different from other tensors on cuda:0 \(when checking argument in method wrapper_CUDA__index_select\)",
        r"epoch 1 loss",
    ),
    Case(
        "amp_fp16_classifier.py",
        "nn.Linear(64, 4)).to(device)",
        "nn.Linear(64, 4)).to(device).half()",
        r"ValueError: Attempting to unscale FP16 gradients\.",
        r"step 5 loss",
    ),
    Case(
        "default_device_loader.py",
        ', generator=torch.Generator(device="cuda"))',
        ")",
        r"Expected a 'cuda' device type for generator but found 'cpu'",
        r"epoch 2 loss [\d.]+ on cuda:0",
    ),
    Case(
        "lazy_compiled_metrics.py",
        "logits.argmax(1).detach().cpu().numpy()",
        "logits.argmax(1).detach().numpy()",
        r"can't convert cuda:0 device type tensor to numpy\. Use Tensor\.cpu\(\) to copy the tensor to host memory first\.",
        r"predictions \(64,\)",
    ),
]


def _run(case: Case, path: Path, capfd) -> tuple[int, str, str]:
    if case.command or case.nproc:
        options = ["--nproc-per-node", str(case.nproc)] if case.nproc else []
        env = dict(os.environ, PYTHONPATH=REPO_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        proc = subprocess.run(
            [sys.executable, "-m", "gpulint.emulate", *options, str(path)],
            capture_output=True, text=True, cwd=str(path.parent), env=env, timeout=900, check=False,
        )  # fmt: skip
        return proc.returncode, proc.stdout, proc.stderr
    from gpulint.emulate.runner import run_script

    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        code = run_script(str(path), [])
    finally:
        os.chdir(cwd)
        torch.set_default_device(None)  # a script may set it; the next test starts clean
    out, err = capfd.readouterr()
    return code, out, err


@pytest.mark.parametrize("case", CASES, ids=[c.script[:-3] for c in CASES])
def test_realistic_script_trains_and_its_injected_bug_fails_like_a_gpu(case, tmp_path, capfd):
    source = (HERE / case.script).read_text()
    clean = tmp_path / "clean" / case.script
    clean.parent.mkdir()
    clean.write_text(source)
    code, out, err = _run(case, clean, capfd)
    assert code == 0, err[-3000:]
    assert re.search(case.finished, out), out[-2000:]
    assert "cannot be emulated" not in err

    assert source.count(case.old) == 1, f"the bug patch no longer applies to {case.script}"
    buggy = tmp_path / "buggy" / case.script
    buggy.parent.mkdir()
    buggy.write_text(source.replace(case.old, case.new))
    code, out, err = _run(case, buggy, capfd)
    assert code != 0, out[-2000:]
    assert re.search(case.error, err), err[-3000:]
    assert "cannot be emulated" not in err
