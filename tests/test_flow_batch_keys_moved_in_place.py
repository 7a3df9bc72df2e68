"""The flow engine: a DataLoader dict batch moved key by key in place, in a loop over its own keys
(`for k in batch: batch[k] = batch[k].to(device)`, `for k, v in batch.items(): batch[k] =
v.to(device)`), is on the device after the loop (precision12's ENGINE_FP #1: GL101 with an unsafe
fix on this idiom, nianticlabs/monodepth2)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SRC = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from dataset import PairDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 4).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for batch in DataLoader(PairDataset(), batch_size=8):
    MOVE
    loss = (model(batch["x"]) - batch["y"]).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def codes(move):
    reg = Registry.load()
    rules = [reg.by_code(c)() for c in ("GL101", "GL116")]
    src = textwrap.dedent(SRC).replace("MOVE", move)
    return [(d.code, d.line) for d in run_text("t.py", src, rules, Options()).diagnostics]


def test_keys_moved_in_a_loop_over_the_batch():
    assert codes("for k in batch:\n        batch[k] = batch[k].to(device)") == []


def test_items_moved_in_a_loop_over_items():
    assert codes("for key, ipt in batch.items():\n        batch[key] = ipt.to(device)") == []


def test_not_moved_is_reported():
    assert codes("pass") == [("GL101", 12)]


def test_one_constant_key_moved_leaves_the_other():
    # `batch["y"]` is still the loader's: it meets the model's output
    assert codes('batch["x"] = batch["x"].to(device)') == [("GL116", 12)]
