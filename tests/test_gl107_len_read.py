"""GL107: reading a plain list of modules only through `len(self.<attr>)` in `__init__` (a text
CNN sizing its classifier by the number of kernels, pytorch/pytorch#1053 as rebuilt in
tests/fixtures/GL107/textcnn_conv1d_kernels_in_plain_list.py) registers none of the entries, so
the list is still reported. Any other read in `__init__` keeps the rule silent as before (the
entries may be registered another way), and so does a file that defines its own `len`."""

from __future__ import annotations

from fixture_support import check

TEMPLATE = '''import torch.nn as nn
PRELUDE

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = [nn.Conv1d(4, 1, 3), nn.Conv1d(4, 1, 4)]
        self.fc = nn.Linear(READ, 2)

    def forward(self, x):
        return self.fc(sum(c(x).max(2)[0] for c in self.convs))
'''


def _lines(read: str, prelude: str = "") -> list[int]:
    text = TEMPLATE.replace("READ", read).replace("PRELUDE", prelude)
    return [d.line for d in check(text, {"GL107"}) if d.code == "GL107"]


def test_len_of_the_list_in_init_is_not_a_hand_off():
    assert _lines("len(self.convs)") == [7]


def test_literal_width_still_reported():
    assert _lines("2") == [7]


def test_other_reads_in_init_stay_silent():
    assert _lines("sum(1 for _ in self.convs)") == []
    assert _lines("len(list(self.convs))") == []


def test_a_file_defining_its_own_len_stays_silent():
    assert _lines("len(self.convs)", "\ndef len(x):\n    return 2\n") == []
