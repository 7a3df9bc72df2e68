"""GL110's unsafe fix in a method maps to the device the instance keeps (`self.device`, set in
`__init__`), not to the script's module-level `device` (HRFAE#3 shape); a method of a class that
keeps no device still gets the visible module-level name."""

from __future__ import annotations

from fixture_support import fix

TEXT = '''import torch
import torch.nn as nn


class Trainer:
    def __init__(self, device):
        SETS
        self.net = nn.Linear(4, 2).to(device)

    def load(self, path):
        ckpt = torch.load(path)
        self.net.load_state_dict(ckpt["net"])
        return ckpt["epoch"]


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
trainer = Trainer(device)
for _ in range(2):
    y = trainer.net(torch.randn(3, 4).to(device))
epoch = trainer.load("checkpoint.pt")
'''


def test_method_of_a_class_keeping_its_device_maps_to_self_device():
    out = fix(TEXT.replace("SETS", "self.device = device"), {"GL110"}, unsafe=True).text
    assert "torch.load(path, map_location=self.device)" in out


def test_class_without_a_device_attribute_keeps_the_module_level_name():
    out = fix(TEXT.replace("SETS", "self.steps = 0"), {"GL110"}, unsafe=True).text
    assert "torch.load(path, map_location=device)" in out


def test_class_comparing_its_device_to_its_own_strings_is_not_used():
    # YOLOX's Predictor: `self.device = device` where the class tests `self.device == "gpu"`, a
    # value torch.load's map_location would reject
    text = TEXT.replace("SETS", "self.device = device").replace(
        "        ckpt = torch.load(path)", '        if self.device == "gpu":\n            pass\n        ckpt = torch.load(path)')
    out = fix(text, {"GL110"}, unsafe=True).text
    assert "map_location=self.device" not in out
