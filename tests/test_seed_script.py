"""The foundation issue's acceptance check, end to end through the CLI, on the seed-style script."""

from __future__ import annotations

import subprocess
import sys

SEED = """\
import torch

model = torch.nn.Linear(4, 2)
optimizer = torch.optim.Adam(model.parameters(), lr=0.001).to('cuda')
loss_function = torch.nn.CrossEntropyLoss().to('cuda')

x = torch.randn(16, 4)
y = torch.randint(0, 2, (16,))
for step in range(3):
    optimizer.zero_grad()
    loss = loss_function(model(x), y)
    loss.backward()
    optimizer.step()
print("trained")
"""


def gpulint(*args, cwd):
    return subprocess.run([sys.executable, "-m", "gpulint", *args], cwd=cwd, capture_output=True, text=True)


def test_seed_script_check_fix_run_fix_again(tmp_path):
    script = tmp_path / "seed.py"
    script.write_text(SEED, encoding="utf-8")

    check = gpulint("check", "--no-cache", "seed.py", cwd=tmp_path)
    assert check.returncode == 1
    gl103 = [line for line in check.stdout.splitlines() if " GL103 " in line]
    # one GL103, on the optimizer line, fixable; the loss module's .to('cuda') is not GL103
    assert len(gl103) == 1, check.stdout
    assert gl103[0].startswith("seed.py:4:13: GL103 [*] "), gl103

    fix = gpulint("fix", "--no-cache", "seed.py", cwd=tmp_path)
    fixed = script.read_text(encoding="utf-8")
    assert "optimizer = torch.optim.Adam(model.parameters(), lr=0.001)\n" in fixed, fixed
    assert "loss_function = torch.nn.CrossEntropyLoss().to('cuda')\n" in fixed  # a Module: left alone
    assert fixed == SEED.replace("lr=0.001).to('cuda')", "lr=0.001)"), fix.stdout

    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                         env={"CUDA_VISIBLE_DEVICES": "", "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().endswith("trained")

    again = gpulint("fix", "--no-cache", "seed.py", cwd=tmp_path)
    assert script.read_text(encoding="utf-8") == fixed, again.stdout
    assert " GL103 " not in again.stdout
