"""GL118 reports one optimizer constructor once: the statement-order check (optimizer built in
`__init__` before the model moves, same function) and the flow engine (another method steps it
while calling the moved model) both see the same Adagrad; the second must not repeat it."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model, device):
        self.device = device
        self.model = model
        self.optimizer = torch.optim.Adagrad(self.model.parameters(), lr=0.01)
        self.model.to(self.device)

    def step(self, x):
        self.model(x.to(self.device)).sum().backward()
        self.optimizer.step()


trainer = Trainer(nn.Linear(4, 2), torch.device("cuda"))
trainer.step(torch.randn(8, 4))
'''


def test_the_constructor_is_reported_once():
    found = [d for d in check(TEXT, {"GL118"}) if d.code == "GL118"]
    assert [(d.line, d.col) for d in found] == [(9, 26)]
    assert found[0].fix is not None  # the one kept is the statement-order finding, with its fix
