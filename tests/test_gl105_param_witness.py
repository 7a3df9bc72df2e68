"""GL105's engine path names the device of a parameter of the function that makes the factory
(bound when the function starts), so its `device=x.device` fix can be written even when the
operand that met the factory is bound after it or lives in another function."""

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

RULES = [Registry.load().by_code("GL105")()]

TRAIN = '''
model = Net().cuda()
for step in range(3):
    x = torch.randn(4, 8, 16).cuda()
    model(x).sum().backward()
'''


def _run(src, fix=False):
    return run_text("t.py", src, RULES, Options(fix=fix, unsafe_fixes=False, write=False))


def test_clamp_bound_made_in_forward_is_fixed_with_forwards_input():
    # Swin V2's window attention: a CPU tensor as clamp's `max=` (microsoft/Swin-Transformer#194 shape)
    src = '''import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(2, 1, 1))
        self.proj = nn.Linear(16, 16)

    def forward(self, x):
        s = torch.clamp(self.scale, max=torch.log(torch.tensor(100.0))).exp()
        return self.proj(x) * s.sum()
''' + TRAIN
    out = _run(src, fix=True)
    assert [(d.code, d.line) for d in out.initial] == [("GL105", 12)]
    assert "device=x.device" in out.initial[0].message
    assert "torch.tensor(100.0, device=x.device)" in out.text


def test_a_dict_parameter_is_not_named_as_the_device():
    src = '''import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, outputs):
        h = self.proj(outputs["x"])
        idx = torch.arange(h.shape[0])
        keep = h.sum(dim=(1, 2)) > 0
        return h[idx[keep]]


model = Net().cuda()
for step in range(3):
    x = torch.randn(4, 8, 16).cuda()
    model({"x": x}).sum().backward()
'''
    out = _run(src, fix=True)
    for d in out.diagnostics:
        assert "outputs.device" not in d.message
    assert "outputs.device" not in (out.text)


def test_a_module_is_never_named_as_the_device():
    # `self.gru(x, h0)`: nn.GRU has no `.device` attribute
    src = '''import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(16, 16, batch_first=True)

    def forward(self, batch):
        feats = batch
        h0 = torch.zeros(1, feats.size(0), 16)
        out, _ = self.gru(feats, h0)
        return out
''' + TRAIN
    out = _run(src)
    assert [d.code for d in out.diagnostics] == ["GL105"]
    assert "self.gru.device" not in out.diagnostics[0].message
