"""GL101 and batch dicts whose keys are moved one by one (the tenth batch's plainest false
positive: `batch["x"] = batch["x"].to(device)` then `model(batch["x"])` was reported as an
unmoved DataLoader batch, with an unsafe fix), and the key that is left on the host."""

from __future__ import annotations

import textwrap

from fixture_support import check

SRC = '''
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class DS(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return {"x": torch.randn(4), "y": i % 2}


model = nn.Linear(4, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for batch in DataLoader(DS(), batch_size=4):
    MOVE
    loss = model(batch["x"]).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
'''


def lines(move: str) -> list[int]:
    src = textwrap.dedent(SRC).replace("MOVE", move)
    return [d.line for d in check(src, {"GL101"}) if d.code == "GL101"]


def test_a_key_moved_in_place_reaches_the_model_moved():
    assert lines('batch["x"] = batch["x"].to(device)') == []


def test_another_key_moved_leaves_this_one_on_the_host():
    assert lines('batch["y"] = batch["y"].to(device)') == [21]


def test_nothing_moved_is_reported():
    assert lines("pass") == [21]
