"""GL203's fix steps through the scaler; when nothing updates the scaler it also inserts
`scaler.update()` (GL204's test and insertion), so that the fix alone leaves a script that runs
(nerfstudio-project/nerfacc#307: `grad_scaler.step(optimizer)` without an update raised "step() has
already been called since the last update()" on the second iteration). With GL204 applied in the
same run there is still exactly one update."""

from __future__ import annotations

import pytest
from fixture_support import check, fix, run_script

HEAD = '''import torch

model = torch.nn.Linear(4, 1)
head = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
opt2 = torch.optim.SGD(head.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cpu")
for i in range(3):
    x = torch.randn(8, 4)
    loss = model(x).sum() + head(x).sum()
    scaler.scale(loss).backward()
'''


def _run(body: str, codes) -> str:
    text = HEAD + body
    out = fix(text, codes, unsafe=False)
    assert not [d for d in out.diagnostics if d.code == "GL000"]
    after = [d.code for d in check(out.text, {"GL203", "GL204"})]
    assert after == [], after  # fixed, and nothing left for either rule
    return out.text[len(HEAD):]


@pytest.mark.parametrize("codes", [{"GL203"}, {"GL203", "GL204"}])
def test_direct_step_without_update_gets_one_update(codes):
    body = "    opt.step()\n    opt.zero_grad()\n"
    assert [d.code for d in check(HEAD + body, {"GL203", "GL204"})] == ["GL203"]
    assert _run(body, codes) == "    scaler.step(opt)\n    scaler.update()\n    opt.zero_grad()\n"


@pytest.mark.parametrize("codes", [{"GL203"}, {"GL203", "GL204"}])
def test_two_direct_steps_share_one_fix_with_one_update_after_the_last(codes):
    body = "    opt.step()\n    opt2.step()\n"
    found = check(HEAD + body, {"GL203"})
    assert [d.code for d in found] == ["GL203", "GL203"]
    assert found[0].fix is not None and found[0].fix.edits == found[1].fix.edits
    assert _run(body, codes) == "    scaler.step(opt)\n    scaler.step(opt2)\n    scaler.update()\n"


def test_direct_step_with_an_update_is_only_replaced():
    body = "    opt.step()\n    scaler.update()\n"
    assert _run(body, {"GL203"}) == "    scaler.step(opt)\n    scaler.update()\n"


def test_direct_step_beside_a_scaler_step_without_update():
    """GL204 inserts the update after the existing step first; GL203 steps through the scaler in the
    next round: one update in the end, and GL203 alone does not add a second place to update."""
    body = "    scaler.step(opt)\n    opt2.step()\n"
    both = _run(body, {"GL203", "GL204"})
    assert both.count("scaler.update()") == 1
    assert both.count("scaler.step(") == 2 and "opt2.step()" not in both
    alone = fix(HEAD + body, {"GL203"}, unsafe=False)
    assert alone.text == HEAD + body  # no fix of its own: the missing update is GL204's


def test_the_fixed_loop_runs(tmp_path):
    """The fix's output runs: three iterations of step + update on the CPU GradScaler (the
    replacement alone raised on the second)."""
    out = _run("    opt.step()\n    opt.zero_grad()\n", {"GL203"})
    script = tmp_path / "fixed.py"
    script.write_text(HEAD + out + 'print("done")\n')
    proc = run_script(script, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "done"
