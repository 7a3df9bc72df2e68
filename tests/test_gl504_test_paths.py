"""GL504's constants built and moved in a loop: not reported in a test suite's files (kospeech's
test/test_conformer.py rebuilds its target constant in a 10-step smoke loop), as GL501."""

from __future__ import annotations

from fixture_support import check

SRC = """
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
for i in range(10):
    targets = torch.LongTensor([[1, 3, 2], [1, 2, 0]]).to(device)
    print(targets.sum())
"""


def test_reported_in_a_script():
    assert [d.line for d in check(SRC, {"GL504"}, path="train.py") if d.code == "GL504"] == [5]


def test_silent_in_a_test_file():
    assert [d for d in check(SRC, {"GL504"}, path="test/test_conformer.py") if d.code == "GL504"] == []
