"""GL110 in files that ScriptModel.is_script takes for libraries (no top-level loop, `with`,
`__main__` guard or bare call of an own function): a notebook exported to .py still runs a
`torch.load` at module level, and one in a function that a module-level statement runs
(`history = fit(...)`, `print(sample(p))`), two calls deep at most. A loader no module-level
statement reaches stays silent, as before (AdaptiveSmoothing#6 shape)."""

from __future__ import annotations

from fixture_support import check

HEAD = '''import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
'''


def lines(text: str) -> list[int]:
    return sorted(d.line for d in check(text, {"GL110"}, path="nb.py") if d.code == "GL110")


def test_module_level_load_in_notebook_export_is_flagged():
    text = HEAD + '''model = nn.Linear(2, 2).to(device)
model.load_state_dict(torch.load("m.pt"))
out = model(torch.randn(1, 2).to(device))
'''
    assert lines(text) == [6]


def test_load_in_function_run_by_top_level_assignment_is_flagged():
    text = HEAD + '''

def restore(path):
    model = nn.Linear(2, 2).to(device)
    model.load_state_dict(torch.load(path))
    return model


def sample(path):
    return restore(path)(torch.randn(1, 2).to(device))


print(sample("m.pt"))
'''
    assert lines(text) == [9]


def test_loader_no_top_level_statement_runs_stays_silent():
    text = HEAD + '''

def restore(path):
    model = nn.Linear(2, 2).to(device)
    model.load_state_dict(torch.load(path))
    return model


NAME = "linear"
'''
    assert lines(text) == []


def test_method_run_from_top_level_is_left_to_is_script():
    text = HEAD + '''

class Runner:
    def restore(self, path):
        model = nn.Linear(2, 2).to(device)
        model.load_state_dict(torch.load(path))
        return model


def build():
    return Runner()


runner = build()
'''
    assert lines(text) == []
