"""GL101 leaves a batch whose `.to(device)` result was thrown away earlier in the same loop to GL104
(pytorch/pytorch#43313's train_step: `train_img.to(device)` as a statement): GL104's safe fix is
the move, and a GL101 fix on top would move the batch twice. A batch of another loop, or one with no
discarded move, is still GL101's."""

from __future__ import annotations

from fixture_support import check, fix

TEXT = '''import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 2)), batch_size=4)
for x, y in loader:
    MOVE
    model(x).sum().backward()
'''

SECOND_LOOP = '''
for x, y in loader:
    model(x).sum().backward()
'''


def _codes(text):
    return sorted((d.line, d.code) for d in check(text, {"GL101", "GL104"}) if d.code in ("GL101", "GL104"))


def test_discarded_move_is_gl104s():
    text = TEXT.replace("MOVE", "x.to(device)")
    assert _codes(text) == [(9, "GL104")]
    out = fix(text, {"GL101", "GL104"}, unsafe=True).text
    assert out.count("x = x.to(device)") == 1


def test_no_discarded_move_is_gl101s():
    assert _codes(TEXT.replace("MOVE", "pass")) == [(10, "GL101")]


def test_discarded_move_in_another_loop_does_not_cover_this_one():
    text = TEXT.replace("MOVE", "x.to(device)") + SECOND_LOOP
    assert _codes(text) == [(9, "GL104"), (13, "GL101")]
