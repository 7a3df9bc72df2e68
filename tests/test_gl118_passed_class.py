"""GL118 resolves an optimizer class passed to a trainer's constructor (`optimizer_fn(...)` in
`__init__`) through the shared `argument_for`: a constructor call does not pass `self`, so the
class given positionally or by keyword, or the parameter's default, is the one built."""

from __future__ import annotations

import pytest
from fixture_support import check

TEXT = '''import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model, optimizer_fn=torch.optim.Adam, device="cpu"):
        self.device = torch.device(device)
        self.model = model
        self.optimizer = optimizer_fn(self.model.parameters(), lr=0.01)
        self.model.to(self.device)

    def step(self, x):
        self.model(x.to(self.device)).sum().backward()
        self.optimizer.step()


{sites}
'''


def gl118(sites: str):
    return [d.line for d in check(TEXT.format(sites=sites), {"GL118"}) if d.code == "GL118"]


@pytest.mark.parametrize(
    "sites",
    [
        'Trainer(nn.Linear(4, 2), torch.optim.Adagrad, "cuda").step(torch.randn(8, 4))',
        'Trainer(nn.Linear(4, 2), optimizer_fn=torch.optim.Adagrad, device="cuda").step(torch.randn(8, 4))',
        'a = Trainer(nn.Linear(4, 2), torch.optim.Adagrad, "cuda")\nb = Trainer(nn.Linear(4, 2), torch.optim.Adagrad)',
    ],
)
def test_adagrad_passed_to_the_constructor_is_reported(sites):
    assert gl118(sites) == [9]


@pytest.mark.parametrize(
    "sites",
    [
        # the default (Adam) keeps no state at construction
        'Trainer(nn.Linear(4, 2), device="cuda").step(torch.randn(8, 4))',
        # the second positional argument is the optimizer class, not the device
        'Trainer(nn.Linear(4, 2), torch.optim.SGD, "cuda").step(torch.randn(8, 4))',
        # two sites passing different classes: not known
        'a = Trainer(nn.Linear(4, 2), torch.optim.Adagrad)\nb = Trainer(nn.Linear(4, 2), torch.optim.Adam)',
        # unpacked arguments: not known
        'args = (nn.Linear(4, 2), torch.optim.Adagrad)\nTrainer(*args)',
    ],
)
def test_other_classes_and_unknown_sites_stay_silent(sites):
    assert gl118(sites) == []
