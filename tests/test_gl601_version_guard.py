"""GL601 and the torch-version fallback (fixtures55, G55-1). skrl's `Agent.load` (PR #197) loads
with `weights_only=False` when the installed torch has the keyword and without it otherwise:

    if version.parse(torch.__version__) >= version.parse("1.13"):
        modules = torch.load(path, map_location=self.device, weights_only=False)
    else:
        modules = torch.load(path, map_location=self.device)

The bare load is the fallback for a torch older than 1.13, where `weights_only` does not exist:
it is not a load that forgot the keyword. A bare load stays reported when the `if` does not test
the version, when the other branch does not pass `weights_only=`, and outside such an `if`."""

from __future__ import annotations

from fixture_support import rules_for

from gpulint.engine import Options, run_text


def _lines(src):
    return sorted(d.line for d in run_text("t.py", src, rules_for({"GL601"}), Options()).diagnostics if d.code == "GL601")


GUARDED = '''import torch
from packaging import version


def load(model, path):
    if version.parse(torch.__version__) >= version.parse("1.13"):
        sd = torch.load(path, map_location="cpu", weights_only=True)
    else:
        sd = torch.load(path, map_location="cpu")
    model.load_state_dict(sd)
'''


def test_bare_load_in_the_old_torch_branch_is_not_reported():
    assert _lines(GUARDED) == []


def test_bare_load_in_the_new_torch_branch_is_not_reported_either():
    src = GUARDED.replace(">= version.parse", "< version.parse")
    assert _lines(src) == []


def test_string_version_test_counts():
    src = GUARDED.replace('version.parse(torch.__version__) >= version.parse("1.13")', 'torch.__version__ >= "1.13"')
    assert _lines(src) == []


def test_other_branch_without_weights_only_is_still_reported():
    src = GUARDED.replace(', weights_only=True', '')
    assert _lines(src) == [7, 9]


def test_if_that_does_not_test_the_version_is_still_reported():
    src = GUARDED.replace('version.parse(torch.__version__) >= version.parse("1.13")', 'path.endswith(".pt")')
    assert _lines(src) == [9]


def test_bare_load_outside_the_if_is_still_reported():
    src = GUARDED + '''

def load_again(model, path):
    model.load_state_dict(torch.load(path))
'''
    assert _lines(src) == [14]


def test_elif_chain_version_test():
    src = '''import torch


def load(model, path, trusted):
    if trusted:
        sd = torch.load(path)
    elif torch.__version__ >= "1.13":
        sd = torch.load(path, weights_only=True)
    else:
        sd = torch.load(path)
    model.load_state_dict(sd)
'''
    # line 6 is in the `if trusted:` branch, whose test is no version test: reported;
    # line 10 is the fallback of the version test: silent.
    assert _lines(src) == [6]
