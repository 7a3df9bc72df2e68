"""A rule's declared fix safety (the rules table, `gpulint rules`, the docs) agrees with the fixes
it offers on its fixtures: `safe` rules offer only safe fixes, `unsafe` rules only unsafe ones,
`none` rules none, `mixed` rules both; a rule whose fixture findings include some without a fix
says `fix_partial`."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulint.diagnostics import SAFE, UNSAFE
from gpulint.engine import Options, run_text
from gpulint.registry import Registry

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CODES = ["GL105", "GL110", "GL501", "GL601"]


def _offered(code: str):
    rule = Registry.load().by_code(code)
    safeties, unfixed = set(), 0
    for path in sorted((FIXTURES / code).glob("*.py")):
        if path.name.endswith(".fixed.py") or path.name.startswith("ok_"):
            continue
        out = run_text(str(path), path.read_text(encoding="utf-8"), [rule()], Options())
        for d in out.diagnostics:
            if d.code != code:
                continue
            if d.fix is None:
                unfixed += 1
            else:
                safeties.add(d.fix.applicability)
    return rule, safeties, unfixed


@pytest.mark.parametrize("code", CODES)
def test_declared_fix_safety_matches_the_fixes(code):
    rule, safeties, unfixed = _offered(code)
    expected = {"safe": {SAFE}, "unsafe": {UNSAFE}, "mixed": {SAFE, UNSAFE}, "none": set()}[rule.fix_safety]
    assert safeties == expected, (rule.fix_safety, safeties)
    if unfixed:
        assert rule.fix_partial, unfixed


GL110_NO_DEVICE_NAME = """import torch

if __name__ == "__main__":
    model = torch.nn.Linear(2, 2).cuda()
    ckpt = torch.load("c.pt")
    model.load_state_dict(ckpt["model"])
    print(ckpt["epoch"])
"""
GL501_EXTRA_MOVE_ARGS = """import torch

device = torch.device("cuda")
model = torch.nn.Linear(2, 2).to(device)
for step in range(10):
    noise = torch.zeros(8, 2).to(device, non_blocking=True)
    model(noise).sum().backward()
"""


@pytest.mark.parametrize(("code", "text"), [("GL110", GL110_NO_DEVICE_NAME), ("GL501", GL501_EXTRA_MOVE_ARGS)])
def test_partial_rules_report_some_shapes_without_a_fix(code, text):
    rule = Registry.load().by_code(code)
    assert rule.fix_partial
    found = [d for d in run_text("t.py", text, [rule()], Options()).diagnostics if d.code == code]
    assert len(found) == 1 and found[0].fix is None


def test_gl601_offers_no_weights_only_fix_for_a_torch_older_than_1_13():
    from gpulint.config import RuleSettings

    rule = Registry.load().by_code("GL601")
    text = "import torch\nmodel = torch.nn.Linear(2, 2)\nmodel.load_state_dict(torch.load('m.pt'))\n"
    new = run_text("t.py", text, [rule()], Options()).diagnostics
    assert [d.fix is not None for d in new] == [True]
    old_settings = RuleSettings(torch_version=(1, 12))
    old = run_text("t.py", text, [rule()], Options(settings=old_settings)).diagnostics
    assert [(d.code, d.fix) for d in old] == [("GL601", None)]
