"""GL402: an accumulator reset for every batch of a DataLoader loop and grown over `for _ in
range(k)` updates on that batch (rishikksh20/VocGAN utils/train.py: `loss_d_sum = 0.0`; `for _ in
range(hp.train.rep_discriminator): ... loss_d.backward(); optim_d.step(); loss_d_sum += loss_d`;
then `loss_d_avg = (loss_d_sum / rep).item()`) never holds more than one batch's k losses: silent.
The same accumulator reset only per epoch, or a `range` loop over batches inside an epoch loop,
keeps the finding. fixtures27."""

from __future__ import annotations

from fixture_support import check

HEAD = '''import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

model = nn.Linear(4, 1)
optim_d = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(32, 4)), batch_size=8)
'''

PER_BATCH = HEAD + '''

def train(epochs, rep):
    history = []
    for epoch in range(epochs):
        for (x,) in loader:
            RESET
            for _ in range(rep):
                optim_d.zero_grad()
                loss_d = model(x).pow(2).mean()
                loss_d.backward()
                optim_d.step()
                loss_d_sum += loss_d
            history.append((loss_d_sum / rep).item())
    return history


train(2, 3)
'''

EPOCH_RANGE = HEAD + '''
batches = [torch.randn(8, 4) for _ in range(4)]


def train(epochs):
    history = []
    for epoch in range(epochs):
        loss_d_sum = 0.0
        for i in range(len(batches)):
            optim_d.zero_grad()
            loss_d = model(batches[i]).pow(2).mean()
            loss_d.backward()
            optim_d.step()
            loss_d_sum += loss_d
        history.append(loss_d_sum.item())
    return history


train(2)
'''


def _lines(text):
    return [d.line for d in check(text, {"GL402"}) if d.code == "GL402"]


def test_repeats_on_one_batch_reset_per_batch_are_silent():
    assert _lines(PER_BATCH.replace("RESET", "loss_d_sum = 0.0")) == []


def test_repeats_reset_only_per_epoch_keep_the_finding():
    text = PER_BATCH.replace("            RESET\n", "").replace(
        "        for (x,) in loader:", "        loss_d_sum = 0.0\n        for (x,) in loader:")
    assert _lines(text) == [20]


def test_range_loop_over_batches_in_an_epoch_loop_keeps_the_finding():
    assert _lines(EPOCH_RANGE) == [21]
