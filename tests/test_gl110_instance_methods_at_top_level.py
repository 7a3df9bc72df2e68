"""GL110 in a file that is not a script (no loop, no `__main__` guard, no call of its own
functions at top level: a notebook exported to .py) checks the loads that run when the file runs.
Those include the methods a module-level statement runs on an instance of the file's class built
at module level (deepmatcher#54: `model = MatchingModel()` then `model.load_state(path)`), the
methods they call on `self`, and the `__init__` of a class built at module level. A library
defining the same class without using it stays silent."""

from __future__ import annotations

from fixture_support import check

LIB = """
import torch
import torch.nn as nn


class MatchingModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def run_train(self, x, device=None):
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.to(device)
        return self.fc(x.to(device))

    def load_state(self, path):
        state = self._read(path)
        self.load_state_dict(state["model"])

    def _read(self, path):
        return torch.load(path)
"""


def test_method_run_on_module_level_instance_is_checked():
    src = LIB + """
model = MatchingModel()
model.load_state("hybrid_model.pth")
print(model.run_train(torch.randn(2, 4)))
"""
    found = [d for d in check(src, ["GL110"]) if d.code == "GL110"]
    assert len(found) == 1
    assert found[0].line == src.splitlines().index("        return torch.load(path)") + 1


def test_init_of_class_built_at_module_level_is_checked():
    src = LIB.replace(
        '''        self.fc = nn.Linear(4, 2)
''',
        '''        self.fc = nn.Linear(4, 2)
        self.load_state("pretrained.pth")
''',
    ) + """
model = MatchingModel()
print(model.run_train(torch.randn(2, 4)))
"""
    assert [d.code for d in check(src, ["GL110"])] == ["GL110"]


def test_library_that_never_uses_its_class_stays_silent():
    assert check(LIB, ["GL110"]) == []


def test_method_not_called_at_top_level_stays_silent():
    src = LIB + """
model = MatchingModel()
print(model.run_train(torch.randn(2, 4)))
"""
    assert check(src, ["GL110"]) == []
