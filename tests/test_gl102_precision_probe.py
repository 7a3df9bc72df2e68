"""GL102: an availability test that only chooses a precision (`'bfloat16' if
torch.cuda.is_available() and torch.cuda.is_bf16_supported() else 'float16'`) does not make a
hard-coded `device = "cuda"` safe; any other availability test still does."""

from __future__ import annotations

import pytest
from fixture_support import check

HEAD = '''import torch
import torch.nn as nn

device = "cuda"
'''
TAIL = '''
model = nn.Linear(4, 2).to(device)
for step in range(3):
    model(torch.randn(8, 4, device=device)).sum().backward()
'''


def gl102(text):
    return [(d.line, d.col) for d in check(text, {"GL102"}) if d.code == "GL102"]


@pytest.mark.parametrize(
    "probe",
    [
        'dtype = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"',
        "dtype = torch.bfloat16 if torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 8 else torch.float16",
        '# an is_available() in a comment does not count either\n'
        'dtype = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"',
    ],
)
def test_precision_probe_alone_reports(probe):
    assert gl102(HEAD + probe + "\n" + TAIL) == [(4, 10)]


@pytest.mark.parametrize(
    "other",
    [
        # the probe chooses a device, not a precision
        'device = "cuda" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "cpu"',
        # a second availability test elsewhere in the file
        'dtype = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"\n'
        "assert torch.cuda.is_available()",
        # the bf16 query without the availability test: CUDA-only by design
        'dtype = "bfloat16" if torch.cuda.is_bf16_supported() else "float16"',
        # `or`: not a guard of the query
        'dtype = "bfloat16" if torch.cuda.is_available() or torch.cuda.is_bf16_supported() else "float16"',
    ],
)
def test_other_availability_tests_stay_silent(other):
    assert gl102(HEAD + other + "\n" + TAIL) == []
