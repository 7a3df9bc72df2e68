"""GL110's unsafe fix writes `map_location=<a device name visible at the load>`. The fixes13 corpus
audit found `map_location=device` written into a method of a model file (TorchSemiSeg
furnace/base_model/hrnet.py, `init_weights(pretrained)`) whose only `device` is bound inside the
file's `if __name__ == "__main__":` smoke test: imported by the training script, the method raised
NameError. A global bound only under the `__main__` guard is not visible from the file's functions
(it still is inside the guard itself)."""

from __future__ import annotations

import ast

from fixture_support import fix

MODEL_FILE = '''import os
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def init_weights(self, pretrained=""):
        if os.path.isfile(pretrained):
            state = torch.load(pretrained)
            self.load_state_dict({k: v for k, v in state.items() if k in self.state_dict()})


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    extra = torch.load("extra.pt")
    print(model(torch.randn(1, 4).to(device)), len(extra))
'''


def test_method_does_not_read_a_main_only_global():
    out = fix(MODEL_FILE, {"GL110"}, unsafe=True).text
    ast.parse(out)
    method = out[out.index("def init_weights"):out.index('if __name__')]
    assert "map_location=device" not in method


def test_the_main_block_itself_may_use_it():
    out = fix(MODEL_FILE, {"GL110"}, unsafe=True).text
    assert 'extra = torch.load("extra.pt", map_location=device)' in out


def test_no_device_name_in_the_message_when_none_is_visible():
    # precision10 / fixtures14: with no device expression at the load the message said
    # "pass `map_location=device`" in files that have no `device`
    from fixture_support import check

    src = """
import torch


def run(path, x):
    net = torch.load(path)
    return net(x.cuda())


if __name__ == "__main__":
    print(run("model.pt", torch.randn(2, 3)))
"""
    found = check(src, ["GL110"])
    assert found and all("map_location=device" not in d.message for d in found)
