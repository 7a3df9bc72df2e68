"""GL112 on `self.model(x)`, a model a trainer class stores in `__init__` and never moves
(SA-ConvLSTM #25): the unsafe fix moves it where it is stored, with the inputs' device, only when
that device can be read there (a module constant, or a `self` attribute set above it)."""

from __future__ import annotations

from fixture_support import check, fix

TEXT = '''import torch
import torch.nn as nn

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class Trainer:
    def __init__(self, model):
INIT

    def train(self, data):
LOCAL
        for x in data:
            x = x.to(@DEV@)
            self.model(x).sum().backward()


Trainer(nn.Linear(4, 2)).train([torch.randn(2, 4)])
'''


def _run(init, dev, local="        pass"):
    text = TEXT.replace("INIT", init).replace("@DEV@", dev).replace("LOCAL", local)
    found = [d for d in check(text, {"GL112"}) if d.code == "GL112"]
    return text, found, fix(text, {"GL112"}, unsafe=True).text


def test_module_constant_device():
    text, found, out = _run("        self.model = model", "DEVICE")
    assert len(found) == 1
    assert "        self.model = model\n        self.model = self.model.to(DEVICE)\n" in out
    assert [d for d in check(out, {"GL112"}) if d.code == "GL112"] == []


def test_self_device_set_before_the_model():
    init = "        self.device = torch.device(DEVICE)\n        self.model = model"
    text, found, out = _run(init, "self.device")
    assert "        self.model = model\n        self.model = self.model.to(self.device)\n" in out


def test_no_fix_when_the_device_is_set_after_or_is_a_local():
    init = "        self.model = model\n        self.device = torch.device(DEVICE)"
    for text, found, out in (_run(init, "self.device"),
                             _run("        self.model = model", "dev", "        dev = torch.device(DEVICE)")):
        assert len(found) == 1
        assert out == text


def test_the_message_never_names_an_undefined_cuda_device():
    # fixtures13 (zen_nas#7): with no device expression the message said "moved to `cuda`" and
    # "add `model.to(cuda)`"; `.cuda()` inputs get `.cuda()` advice
    src = """
import torch
import torch.nn as nn

model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x = torch.randn(2, 4).cuda()
    loss = model(x).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
    found = check(src, ["GL112"])
    assert len(found) == 1
    assert "model = model.cuda()" in found[0].message and ".to(cuda)" not in found[0].message
