"""GL203: `optimizer.step()` after an `if fp16:` / `else:` whose fp16 branch runs
`scaler.scale(loss).backward()`, `scaler.step(optimizer)`, `scaler.update()` and whose other
branch runs `loss.backward()` (FlyEgle/imageclassification#1): the fp16 path steps twice. Reported
at the step, without a fix (removing or replacing it would break the fp32 path). The step inside
the `else:`, or `scaler.step(optimizer)` after both branches, stays silent. fixtures27."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.nn as nn

model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda")
fp16 = torch.cuda.is_available()
for x in [torch.randn(8, 4) for _ in range(3)]:
    optimizer.zero_grad()
    if fp16:
        with torch.autocast("cuda"):
            loss = model(x).pow(2).mean()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    else:
        loss = model(x).pow(2).mean()
        loss.backward()
STEP
'''


def _found(text):
    return [d for d in check(text, {"GL203"}) if d.code == "GL203"]


def test_step_after_both_branches_is_reported_without_a_fix():
    found = _found(TEXT.replace("STEP", "    optimizer.step()"))
    assert [d.line for d in found] == [19]
    assert found[0].fix is None


def test_step_inside_the_plain_branch_is_silent():
    assert _found(TEXT.replace("STEP", "        optimizer.step()")) == []


def test_scaler_step_after_both_branches_is_silent():
    text = TEXT.replace("        scaler.step(optimizer)\n        scaler.update()\n", "")
    text = text.replace("STEP", "    scaler.step(optimizer)\n    scaler.update()").replace(
        'scaler = torch.amp.GradScaler("cuda")', 'scaler = torch.amp.GradScaler("cuda", enabled=fp16)').replace(
        'fp16 = torch.cuda.is_available()\n', '').replace('import torch.nn as nn\n', 'import torch.nn as nn\n\nfp16 = torch.cuda.is_available()\n')
    assert _found(text) == []
