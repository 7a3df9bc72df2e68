"""GL102, G60-2's wider form (rules63): in a script that falls back to the CPU (`device =
torch.device("cuda" if torch.cuda.is_available() else "cpu")` and the model moved there), an
unguarded placement on the index-less `"cuda"` string (`x.to("cuda")`, `device="cuda"` of a torch
factory) is the same crash on a CPU-only machine as a bare `.cuda()` ("Torch not compiled with
CUDA enabled"); and the fallback may be declared inside `main()` rather than at module level.
Hard negatives: `"cuda"` as an autocast/GradScaler device type, `"cuda:1"`, a site under a device
test or a `try`, a `main()` the script never calls, a placement in a method, the site in a
module's `forward`."""

from __future__ import annotations

import subprocess
import sys

from fixture_support import check, fix

MAIN = '''import torch
import torch.nn as nn


def evaluate(model, n):
    x = EVAL_SITE
    return model(x).sum()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(4, 2).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        x = LOOP_SITE
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("OK", float(evaluate(model, 2)))


CALL
'''


def src(eval_site='torch.randn(n, 4, device="cuda")', loop_site="torch.randn(8, 4).to(device)",
        call='if __name__ == "__main__":\n    main()'):
    return MAIN.replace("EVAL_SITE", eval_site).replace("LOOP_SITE", loop_site).replace("CALL", call)


def found(text):
    return [d for d in check(text, {"GL102"}) if d.code == "GL102"]


def test_device_cuda_keyword_in_a_helper_with_the_fallback_in_main_is_reported():
    ds = found(src())
    assert [d.line for d in ds] == [6]
    assert "the file moves its model to `device` on line 12" in ds[0].message


def test_to_cuda_string_in_main_is_reported_and_routed_through_mains_device(tmp_path):
    text = src(eval_site="torch.randn(n, 4).to(next(model.parameters()).device)",
               loop_site='torch.randn(8, 4).to("cuda")')
    ds = found(text)
    assert [d.line for d in ds] == [15]
    assert ds[0].fix is not None
    out = fix(text, {"GL102"}, True).text
    assert "x = torch.randn(8, 4).to(device)" in out and '"cuda")' not in out
    assert not found(out)
    p = tmp_path / "fixed.py"
    p.write_text(out)
    proc = subprocess.run([sys.executable, str(p)], capture_output=True, text=True, timeout=300,
                          env={"CUDA_VISIBLE_DEVICES": "", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_helper_site_gets_no_fix_where_mains_device_is_not_visible():
    ds = found(src())
    assert ds[0].fix is None or "evaluate" not in "".join(e.content for e in ds[0].fix.edits)
    out = fix(src(), {"GL102"}, True).text
    assert 'torch.randn(n, 4, device="cuda")' in out


MODULE_LEVEL = '''import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x = SITE
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
'''


def test_module_level_to_cuda_string_is_reported_with_the_fix():
    text = MODULE_LEVEL.replace("SITE", 'torch.randn(8, 4).to("cuda")')
    ds = found(text)
    assert [d.line for d in ds] == [8]
    out = fix(text, {"GL102"}, True).text
    assert "x = torch.randn(8, 4).to(device)" in out


def test_module_level_device_keyword_is_reported_with_the_fix():
    text = MODULE_LEVEL.replace("SITE", 'torch.randn(8, 4, device="cuda")')
    assert [d.line for d in found(text)] == [8]
    out = fix(text, {"GL102"}, True).text
    assert "x = torch.randn(8, 4, device=device)" in out


# hard negatives -----------------------------------------------------------------------------------

def test_autocast_and_gradscaler_device_types_stay_silent():
    text = MODULE_LEVEL.replace("    x = SITE\n", '    x = torch.randn(8, 4).to(device)\n'
                                '    scaler = torch.amp.GradScaler("cuda")\n'
                                '    with torch.autocast("cuda", enabled=False):\n'
                                '        pass\n')
    assert found(text) == []


def test_other_index_stays_silent():
    assert found(MODULE_LEVEL.replace("SITE", 'torch.randn(8, 4).to("cuda:1")')) == []


def test_guarded_or_try_sites_stay_silent():
    assert found(src(eval_site='torch.randn(n, 4, device="cuda" if torch.cuda.is_available() else "cpu")')) == []
    assert found(src(eval_site='torch.randn(n, 4, device="cuda") if torch.cuda.is_available() else torch.randn(n, 4)')) == []
    guarded = MODULE_LEVEL.replace("    x = SITE\n", '    try:\n        x = torch.randn(8, 4).to("cuda")\n'
                                   '    except RuntimeError:\n        x = torch.randn(8, 4)\n')
    assert found(guarded) == []


def test_main_never_called_stays_silent():
    assert found(src(call="")) == []


def test_placement_in_a_method_declares_no_fallback_here():
    text = '''import torch
import torch.nn as nn


class Trainer:
    def __init__(self):
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = nn.Linear(4, 2).to(device)

    def step(self):
        return self.model(torch.randn(8, 4, device="cuda")).sum()


def main():
    Trainer().step()


main()
'''
    assert found(text) == []


def test_string_in_a_modules_forward_stays_silent():
    text = MODULE_LEVEL.replace("model = nn.Linear(4, 2).to(device)", "model = Net().to(device)").replace(
        "device = torch.device", '''class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x) + torch.zeros(2, device="cuda")


device = torch.device''').replace("SITE", "torch.randn(8, 4).to(device)")
    assert found(text) == []
