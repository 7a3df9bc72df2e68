"""GL503 follows a batch moved with `non_blocking=True` by a comprehension (`{k: v.to(d,
non_blocking=True) for k, v in batch.items()}`) back to the loader the loop iterates, as GL502
does; a pinned loader and a comprehension over a constant dict stay silent."""

from __future__ import annotations

import textwrap

from fixture_support import check

SRC = """
import torch
from torch.utils.data import DataLoader, Dataset


class Pairs(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, idx):
        return {"x": torch.randn(4), "y": torch.randn(1)}


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
constants = {"scale": torch.ones(1)}
loader = DataLoader(Pairs(), batch_size=8, num_workers=2LOADER_KW)
for batch in loader:
    MOVE
    loss = torch.nn.functional.mse_loss(model(batch["x"]), batch["y"])
    opt.zero_grad()
    loss.backward()
    opt.step()
"""

BATCH_MOVE = "batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}"
CONST_MOVE = "c = {k: v.to(device, non_blocking=True) for k, v in constants.items()}"


def _lines(move: str, loader_kw: str = "") -> list[int]:
    src = textwrap.dedent(SRC).replace("MOVE", move).replace("LOADER_KW", loader_kw)
    return [d.line for d in check(src, {"GL503"}) if d.code == "GL503"]


def test_dict_comprehension_over_the_batch_is_reported():
    assert _lines(BATCH_MOVE) == [20]


def test_pinned_loader_or_constant_dict_stay_silent():
    assert _lines(BATCH_MOVE, ", pin_memory=True") == []
    assert _lines(CONST_MOVE) == []
