"""GL112's fix when the model is called in a function that receives it and the device as
parameters (`def train(model, device, loader, ...)`, the MNIST example's shape;
PacktPublishing/Mastering-PyTorch#9): `model = model.to(device)` right after the model is built,
with the names every call site passes; no fix when the call sites do not say which names."""

from __future__ import annotations

from fixture_support import check, fix

TEXT = '''import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def train(model, device, loader):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        model(x).sum().backward()


DEVICE_LINE
loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 2)), batch_size=4)
model = nn.Linear(4, 2)
LATE_DEVICE
CALLS
'''


def _run(calls, device_line='device = torch.device("cuda" if torch.cuda.is_available() else "cpu")', late=""):
    text = TEXT.replace("DEVICE_LINE", device_line).replace("LATE_DEVICE", late).replace("CALLS", calls)
    found = [d for d in check(text, {"GL112"}) if d.code == "GL112"]
    return found, fix(text, {"GL112"}, unsafe=True).text, text


def test_fix_uses_the_call_site_names():
    found, out, text = _run("for epoch in range(2):\n    train(model, device, loader)")
    assert len(found) == 1
    assert out == text.replace("model = nn.Linear(4, 2)\n", "model = nn.Linear(4, 2)\nmodel = model.to(device)\n")
    assert [d for d in check(out, {"GL112"}) if d.code == "GL112"] == []


def test_keyword_arguments():
    found, out, text = _run("train(loader=loader, device=device, model=model)")
    assert "model = model.to(device)\n" in out


def test_no_fix_when_the_sites_disagree_or_the_device_comes_later():
    for calls, dev, late in (
        ("train(model, device, loader)\ntrain(model, other, loader)", 'device = other = torch.device("cuda")', ""),
        ("train(model, device, loader)", "", 'device = torch.device("cuda")'),
    ):
        found, out, text = _run(calls, dev, late)
        assert len(found) == 1
        assert out == text
