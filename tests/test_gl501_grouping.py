"""GL501 reports the sites of one file once (as GL102 does): at the first site, the other lines in
the message, one safe fix for the deterministic factories and one unsafe fix for the random ones."""

from __future__ import annotations

from fixture_support import check, fix

from gpulint.rule import SAFE, UNSAFE

MIXED = '''import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = torch.zeros(x.size(0), 4).to(x.device)
        return self.fc(x + h)


def jitter(x):
    return x + torch.randn(x.shape).to(device)


model = Net().to(device)
for step in range(3):
    m = torch.ones(2, 4).to(device)
    y = model(jitter(m))
'''


def test_one_finding_per_file_lists_the_other_functions_sites():
    found = [d for d in check(MIXED, {"GL501"}) if d.code == "GL501"]
    assert [d.line for d in found] == [13]
    msg = found[0].message
    assert "also on lines 18, 23" in msg
    assert "random factory (line 18)" in msg
    assert found[0].fix is not None and found[0].fix.applicability == SAFE


def test_safe_fix_rewrites_the_deterministic_sites_and_leaves_the_random_one_to_an_unsafe_fix():
    out = fix(MIXED, {"GL501"}, unsafe=False)
    assert "torch.zeros(x.size(0), 4, device=x.device)" in out.text
    assert "torch.ones(2, 4, device=device)" in out.text
    assert "torch.randn(x.shape).to(device)" in out.text
    left = [d for d in check(out.text, {"GL501"}) if d.code == "GL501"]
    assert [d.line for d in left] == [18]
    assert left[0].fix is not None and left[0].fix.applicability == UNSAFE
    assert "also on" not in left[0].message


def test_unsafe_fixes_rewrite_every_site():
    out = fix(MIXED, {"GL501"}, unsafe=True)
    assert ".to(" not in out.text.replace("Net().to(device)", "")
    assert "torch.randn(x.shape, device=device)" in out.text
    assert not [d for d in check(out.text, {"GL501"}) if d.code == "GL501"]


def test_a_suppressed_site_is_neither_reported_nor_rewritten():
    text = MIXED.replace("h = torch.zeros(x.size(0), 4).to(x.device)", "h = torch.zeros(x.size(0), 4).to(x.device)  # noqa: GL501")
    found = [d for d in check(text, {"GL501"}) if d.code == "GL501"]
    assert [d.line for d in found] == [18]
    assert "also on line 23" in found[0].message and "13" not in found[0].message
    out = fix(text, {"GL501"}, unsafe=True)
    assert "torch.zeros(x.size(0), 4).to(x.device)  # noqa: GL501" in out.text
    assert "torch.ones(2, 4, device=device)" in out.text


def test_only_random_sites_get_one_unsafe_fix():
    text = MIXED.replace("torch.zeros(x.size(0), 4)", "torch.rand(x.size(0), 4)").replace("torch.ones(2, 4)", "torch.randint(0, 3, (2, 4))")
    found = [d for d in check(text, {"GL501"}) if d.code == "GL501"]
    assert len(found) == 1 and found[0].fix.applicability == UNSAFE
    assert "random factor" not in found[0].message  # no safe fix to set apart from
    assert len(found[0].fix.edits) == 3


def test_in_a_notebook_the_other_sites_are_given_in_their_cells_numbering(tmp_path):
    import json

    from fixture_support import rules_for

    from gpulint.engine import Options, process_file

    def code(text):
        return {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": text.splitlines(True)}

    head, rest = MIXED.split("\n\n\nclass Net", 1)
    net, rest = ("class Net" + rest).split("\n\n\ndef jitter", 1)
    jitter, loop = ("def jitter" + rest).split("\n\n\nmodel = ", 1)
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# a notebook\n"]},
        code(head + "\n"),
        code(net + "\n"),
        {"cell_type": "markdown", "metadata": {}, "source": ["text\n"]},
        code(jitter + "\n"),
        code("model = " + loop),
    ]
    nb = tmp_path / "t.ipynb"
    nb.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1))
    res = process_file(str(nb), str(nb), rules_for({"GL501"}), Options(write=False))
    found = [d for d in res.diagnostics if d.code == "GL501"]
    assert [(d.cell, d.line) for d in found] == [(3, 7)]
    msg = found[0].message
    # named as the reporter names locations: the cell's number in the notebook, then the line
    assert "also on cell 5, line 2 and cell 6, line 3" in msg
    assert "random factory (cell 5, line 2)" in msg


def test_a_suppression_that_silences_a_grouped_site_is_not_reported_unused():
    text = MIXED.replace("m = torch.ones(2, 4).to(device)", "m = torch.ones(2, 4).to(device)  # noqa: GL501")
    found = check(text, {"GL501", "GL002"})
    assert [d.code for d in found] == ["GL501"]
    assert "23" not in found[0].message
    # a directive on a line with no site is still unused
    text = MIXED.replace("y = model(jitter(m))", "y = model(jitter(m))  # noqa: GL501")
    assert [d.code for d in check(text, {"GL501", "GL002"})] == ["GL501", "GL002"]
