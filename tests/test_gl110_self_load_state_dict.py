"""GL110's safe fix (`map_location="cpu"`) when the load feeds `self.load_state_dict(...)` in a
method of a module class of the file (DialogRPT#7: `Scorer.load()` runs
`weights = torch.load(path)` then `self.load_state_dict(weights)`, and `get_model()` moves the
model with `.cuda()` afterwards). `load_state_dict` copies the values onto the module's own
device, so loading on the host is safe. `self` of a plain class, or a loaded object that also
feeds something else, keeps the finding without the safe fix."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

SRC = """
import torch
import torch.nn as nn


class Scorer(BASE):
    def __init__(self):
        super().__init__()
        self.score = nn.Linear(4, 1)

    def load(self, path):
        weights = torch.load(path)
        USE


if __name__ == "__main__":
    cuda = torch.cuda.is_available()
    model = Scorer()
    model.load("updown.pth")
    if cuda:
        model.cuda()
"""


def _src(base: str = "nn.Module", use: str = "self.load_state_dict(weights)") -> str:
    return textwrap.dedent(SRC).replace("BASE", base).replace("USE", use)


def test_self_load_state_dict_of_module_class_gets_the_safe_cpu_fix():
    src = _src()
    assert [d.line for d in check(src, {"GL110"}) if d.code == "GL110"] == [12]
    out = fix(src, {"GL110"}, unsafe=False).text
    assert 'weights = torch.load(path, map_location="cpu")' in out
    assert [d for d in check(out, {"GL110"}) if d.code == "GL110"] == []


def test_direct_argument_to_self_load_state_dict_gets_the_safe_cpu_fix():
    src = _src().replace("weights = torch.load(path)\n        self.load_state_dict(weights)",
                         "self.load_state_dict(torch.load(path))")
    out = fix(src, {"GL110"}, unsafe=False).text
    assert 'self.load_state_dict(torch.load(path, map_location="cpu"))' in out


def test_loaded_object_that_also_feeds_something_else_gets_no_safe_fix():
    src = _src(use="self.load_state_dict(weights)\n        self.extra = weights['score.weight'].sum()")
    assert [d.code for d in check(src, {"GL110"})] == ["GL110"]
    assert 'map_location="cpu"' not in fix(src, {"GL110"}, unsafe=False).text


def test_self_of_a_plain_class_gets_no_safe_fix():
    src = _src(base="object").replace("        super().__init__()\n", "")
    assert 'map_location="cpu"' not in fix(src, {"GL110"}, unsafe=False).text
