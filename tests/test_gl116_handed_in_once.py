"""G62-3 (GL116; ourownstory/neural_prophet#1023, fixtures62).

1. `reg_loss = torch.zeros(1, ...)` then `reg_loss += self.reg_lambda * self.ar_net.weight.abs()
   .mean()` in the same method: the accelerator operand is a parameter of a layer the module built
   in `__init__`, so `device=self.ar_net.weight.device` on the factory is the catalog's safe case
   (a deterministic factory of the same function), as `device=<name>.device` is for a name.
   Not offered when the attribute may hold another tensor at the factory (written outside
   `__init__`, or in the method itself), for a random factory, nor for a factory of another method.
2. Host ids made in `training_step` and handed to `self.forward(...)`, where (in `trend`) their
   one-hot encoding meets two parameters: one report per host tensor, at the first operation that
   fails, naming the call and the other operation, with the call's (unsafe) fix, instead of three
   reports. A host tensor of the callee's own making is still reported beside the call's.
"""

from __future__ import annotations

import subprocess
import sys

from fixture_support import check, fix

REG = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, reg_lambda=1e-3):
        super().__init__()
        self.ar_net = nn.Linear(4, 1)
        self.reg_lambda = reg_lambda

    def forward(self, x):
        return self.ar_net(x)

    def regularized(self, loss):
        reg_loss = torch.zeros(1, dtype=torch.float, requires_grad=False)
        if self.reg_lambda > 0:
            reg_loss += self.reg_lambda * self.ar_net.weight.abs().mean()
        return loss + reg_loss.squeeze()


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = Net().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 4).to(device), torch.randn(8, 1).to(device)
for _ in range(3):
    loss = model.regularized(F.mse_loss(model(x), y))
    opt.zero_grad()
    loss.backward()
    opt.step()
print("OK", loss.item())
'''


def _gl116(text):
    return [d for d in check(text, {"GL116"}) if d.code == "GL116"]


def test_accumulator_gets_the_safe_factory_fix_from_a_parameter_attribute(tmp_path):
    found = _gl116(REG)
    assert [d.line for d in found] == [18]
    assert found[0].fix is not None and found[0].fix.applicability == "safe"
    assert "device=self.ar_net.weight.device" in found[0].message
    out = fix(REG, {"GL116"}, unsafe=False).text
    assert "torch.zeros(1, dtype=torch.float, requires_grad=False, device=self.ar_net.weight.device)" in out
    assert not _gl116(out)
    p = tmp_path / "fixed.py"
    p.write_text(out)
    proc = subprocess.run([sys.executable, str(p)], capture_output=True, text=True, timeout=300,
                          env={"CUDA_VISIBLE_DEVICES": "", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("OK")


def test_no_safe_fix_when_the_attribute_is_set_outside_init():
    text = REG.replace("        return self.ar_net(x)\n",
                       "        return self.ar_net(x)\n\n    def reset(self):\n        self.ar_net = nn.Linear(4, 1)\n")
    found = _gl116(text)
    assert [d.line for d in found] == [21]
    assert found[0].fix is None or found[0].fix.applicability != "safe"


def test_no_safe_fix_when_the_method_writes_the_attribute():
    text = REG.replace("        if self.reg_lambda > 0:\n",
                       "        self.ar_net = self.ar_net\n        if self.reg_lambda > 0:\n")
    found = _gl116(text)
    assert len(found) == 1
    assert found[0].fix is None or found[0].fix.applicability != "safe"


def test_no_safe_fix_for_a_random_factory():
    text = REG.replace("torch.zeros(1, dtype=torch.float, requires_grad=False)", "torch.rand(1)")
    found = _gl116(text)
    assert [d.line for d in found] == [18]
    assert found[0].fix is None or found[0].fix.applicability != "safe"


def test_no_fix_for_a_factory_of_another_method():
    text = REG.replace(
        "        reg_loss = torch.zeros(1, dtype=torch.float, requires_grad=False)\n",
        "        reg_loss = self.start()\n").replace(
        "    def regularized(self, loss):\n",
        "    def start(self):\n        return torch.zeros(1, dtype=torch.float)\n\n    def regularized(self, loss):\n")
    found = _gl116(text)
    assert len(found) == 1 and found[0].fix is None


def test_a_module_attribute_is_no_device_operand():
    # `self.ar_net` is a module: it has no `.device`; the operand the engine names is its output
    text = REG.replace("reg_loss += self.reg_lambda * self.ar_net.weight.abs().mean()",
                       "reg_loss = reg_loss + self.ar_net(torch.ones(1, 4, device=self.ar_net.weight.device)).sum()")
    for d in _gl116(text):
        assert d.fix is None or "self.ar_net.device" not in "".join(e.content for e in d.fix.edits)


IDS = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, names):
        super().__init__()
        self.id_dict = {n: i for i, n in enumerate(names)}
        self.k = nn.Parameter(torch.zeros(len(names)))
        self.m = nn.Parameter(torch.zeros(len(names)))

    def trend(self, t, meta):
        one_hot = F.one_hot(meta, num_classes=len(self.id_dict)).float()
        k = torch.sum(one_hot * self.k, dim=1, keepdim=True)
        m = torch.sum(one_hot * self.m, dim=1, keepdim=True)
        return k * t + m

    def forward(self, t, meta):
        return self.trend(t, meta)

    def training_step(self, t, y, names):
        ids = torch.tensor([self.id_dict[n] for n in names])
        return F.mse_loss(self.forward(t, ids), y)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net(["a", "b"]).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
t, y = torch.rand(4, 1).to(device), torch.rand(4, 1).to(device)
for _ in range(3):
    loss = model.training_step(t, y, ["a", "b", "a", "b"])
    opt.zero_grad()
    loss.backward()
    opt.step()
'''


def test_ids_handed_into_the_module_are_reported_once_at_the_first_failing_operation():
    found = _gl116(IDS)
    assert [d.line for d in found] == [15]
    msg = found[0].message
    assert "`ids`" in msg and "line 23" in msg and "line 24" in msg and "again on line 16" in msg
    # the call's fix: moving the ids where they are passed in places them for both operations
    assert found[0].fix is not None and found[0].fix.applicability == "unsafe"
    out = fix(IDS, {"GL116"}, unsafe=True).text
    assert "self.forward(t, ids.to(device))" in out
    assert not _gl116(out)


def test_a_host_tensor_made_inside_the_callee_is_its_own_report():
    # another host tensor the callee meets (a module-level table, `SCALE`) does not come from the
    # ids: it stays a finding of its own, beside the merged one
    text = IDS.replace("        return k * t + m\n", "        return (k * t + m) * SCALE\n").replace(
        "\n\nclass Net", "\nSCALE = torch.ones(4, 1)\n\n\nclass Net")
    found = _gl116(text)
    lines = [d.line for d in found]
    assert lines == [17, 19]
    assert "`ids`" in found[0].message
    assert "SCALE" in found[1].message and "`ids`" not in found[1].message


def test_the_call_is_still_reported_when_nothing_inside_is():
    # `forward` alone: the engine reports the call (the ids reach the module's layer inside)
    text = '''import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x, ids):
        return self.fc(x) + ids

    def step(self, x):
        ids = torch.ones(3, 2)
        return self.forward(x, ids)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
out = model.step(torch.randn(3, 4).to(device))
'''
    found = _gl116(text)
    assert [d.line for d in found] == [15]
