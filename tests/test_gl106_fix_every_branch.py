"""GL106's fix registers the buffer at every assignment that can run first, not only at the first
one in the text (rules42).

tests/fixtures/GL106/customized_linear_mask_plain_attribute.py (CustomizedLinear#1) assigns the mask
on two branches (`if isinstance(mask, torch.Tensor): self.mask = ...` / `else: self.mask =
torch.tensor(mask, ...)`); the fix registered it on the first branch only, so a module built on the
other branch kept a plain attribute that `model.to(device)` does not move, and the fixed file was
not reported again (the class registers the name somewhere). Now each branch registers it; an
assignment that always runs after a registering one still assigns the registered buffer; a branch
that assigns something that is not a tensor (a Parameter, None) gets no fix.
"""

from __future__ import annotations

import textwrap

import torch
from fixture_support import check, fix

HEAD = '''
import torch
import torch.nn as nn


class Masked(nn.Module):
    def __init__(self, mask, scale=False):
        super().__init__()
        self.lin = nn.Linear(4, 4)
'''

TAIL = '''
    def forward(self, x):
        return self.lin(x) * self.mask


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Masked(torch.ones(4)).to(device)
print(model(torch.randn(2, 4).to(device)))
'''

BRANCHES = HEAD + '''        if isinstance(mask, torch.Tensor):
            self.mask = mask.float()
        else:
            self.mask = torch.tensor(mask, dtype=torch.float)
''' + TAIL

# the first assignment runs on every path; the later one only re-assigns the registered buffer
DOMINATED = HEAD + '''        self.mask = torch.ones(4)
        if scale:
            self.mask = self.mask * 2
''' + TAIL

ONE_LINE_IF = HEAD + '''        if isinstance(mask, list): self.mask = torch.tensor(mask, dtype=torch.float)
        self.mask = torch.ones(4) if not isinstance(mask, list) else self.mask
''' + TAIL

# the second `if` reads the attribute first: it runs only after the first one (auraloss's STFT loss)
READS_ITSELF = HEAD + '''        if not scale:
            self.mask = torch.ones(4)
        if scale is not None and mask is not None:
            self.mask = self.mask.float()
''' + TAIL

NONE_BRANCH = HEAD + '''        if scale:
            self.mask = torch.ones(4)
        else:
            self.mask = None
''' + TAIL


def _gl106(text):
    return [d for d in check(text, {"GL106"}) if d.code == "GL106"]


def _fixed(text):
    return fix(text, {"GL106"}, unsafe=False).text


def _buffers_of(text, *args):
    """Build `Masked(*args)` from the fixed text (on the CPU) and return its buffer names."""
    ns: dict = {}
    cls_src = text.split("\ndevice = ")[0]
    exec(compile(cls_src, "fixed.py", "exec"), ns)  # noqa: S102 (the test's own source)
    return set(dict(ns["Masked"](*args).named_buffers()))


def test_each_branch_registers_the_buffer():
    assert [d.line for d in _gl106(BRANCHES)] == [13]
    fixed = _fixed(BRANCHES)
    assert fixed.count('self.register_buffer("mask"') == 2
    assert "self.mask = " not in fixed
    # both constructions now register it (the first-branch-only fix left the list one plain)
    assert _buffers_of(fixed, torch.ones(4)) == {"mask"}
    assert _buffers_of(fixed, [1.0, 0.0, 1.0, 1.0]) == {"mask"}
    # idempotent and silent
    assert _fixed(fixed) == fixed
    assert _gl106(fixed) == []


def test_a_later_assignment_after_the_registering_one_stays_an_assignment():
    fixed = _fixed(DOMINATED)
    assert fixed.count('self.register_buffer("mask"') == 1
    assert "            self.mask = self.mask * 2\n" in fixed
    assert _buffers_of(fixed, torch.ones(4), True) == {"mask"}
    assert _fixed(fixed) == fixed


def test_a_later_assignment_that_reads_the_attribute_stays_an_assignment():
    fixed = _fixed(READS_ITSELF)
    assert fixed.count('self.register_buffer("mask"') == 1
    assert "            self.mask = self.mask.float()\n" in fixed
    assert _buffers_of(fixed, torch.ones(4)) == {"mask"}


def test_a_one_line_if_does_not_dominate_what_follows():
    assert [d.line for d in _gl106(ONE_LINE_IF)] == [10]
    fixed = _fixed(ONE_LINE_IF)
    # the second assignment can run first (the `if` on one line may not run): it registers too;
    # registering a name that is already a buffer is allowed
    assert fixed.count('self.register_buffer("mask"') == 2
    assert _buffers_of(fixed, torch.ones(4)) == {"mask"}
    assert _buffers_of(fixed, [1.0, 0.0, 1.0, 1.0]) == {"mask"}
    assert _fixed(fixed) == fixed


def test_no_fix_when_another_branch_assigns_none():
    for src in (NONE_BRANCH,):
        assert [d.fix for d in _gl106(src)] == [None], textwrap.shorten(src, 80)
        assert _fixed(src) == src, textwrap.shorten(src, 80)
