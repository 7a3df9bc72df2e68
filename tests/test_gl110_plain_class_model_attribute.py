"""GL110's safe fix (`map_location="cpu"`) when the load feeds `load_state_dict` of a module held by
an attribute of a plain (non-Module) class (pykg2vec#223: `Trainer.load_model()` rebuilds
`self.model = TransE(...)` and runs `self.model.load_state_dict(torch.load(path))`; the class facts
answer "unknown" for `self.model`, the flow engine knows it holds a module there). An attribute the
engine cannot tell keeps the unsafe device fix."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

SRC = """
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model, device):
        self.model = model
        self.device = device

    def load_model(self, path):
        self.model = REBUILT
        self.model.load_state_dict(torch.load(path))
        self.model.to(self.device)


device = "cuda" if torch.cuda.is_available() else "cpu"
t = Trainer(nn.Linear(3, 1), device)
t.load_model("m.pt")
"""


def _src(rebuilt: str) -> str:
    return textwrap.dedent(SRC).replace("REBUILT", rebuilt)


def test_module_attribute_of_plain_class_gets_the_safe_cpu_fix():
    src = _src("nn.Linear(3, 1)")
    assert [d.line for d in check(src, {"GL110"}) if d.code == "GL110"] == [13]
    out = fix(src, {"GL110"}, unsafe=False).text
    assert 'self.model.load_state_dict(torch.load(path, map_location="cpu"))' in out


def test_unknown_attribute_value_gets_no_safe_fix():
    src = _src("make_model()").replace("import torch.nn as nn\n", "import torch.nn as nn\nfrom models import make_model\n")
    assert [d.code for d in check(src, {"GL110"})] == ["GL110"]
    assert fix(src, {"GL110"}, unsafe=False).text == src
