"""GL101's fix in a trainer class whose `__init__` moved the model with its own `device`
parameter: the batch is moved with the attribute `__init__` stored it in (`self.device`), not
with a module-level `device` that happens to share the name (or does not exist)."""

from __future__ import annotations

import libcst as cst
from fixture_support import check, fix

TRAINER = '''import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, model, device, lr=0.1):
        self.device = device
        self.model = model.to(device)
        self.criterion = nn.CrossEntropyLoss()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr)

    def train_step(self, batch):
        x, y = batch
        x = x.to(self.device)
        loss = self.criterion(self.model(x), y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()

    def fit(self, loader):
        for batch in loader:
            self.train_step(batch)


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randint(0, 3, (8,))), batch_size=4)
    Trainer(nn.Linear(4, 3), device).fit(loader)
'''


def test_the_batch_is_moved_with_the_trainers_own_attribute():
    found = [d for d in check(TRAINER, {"GL101"}) if d.code == "GL101"]
    assert [d.line for d in found] == [16]
    assert "`y = y.to(self.device)`" in found[0].message
    out = fix(TRAINER, {"GL101"}, unsafe=True).text
    cst.parse_module(out)
    assert "        x, y = batch\n        y = y.to(self.device)\n" in out
    assert [d for d in check(out, {"GL101"}) if d.code == "GL101"] == []


def test_without_the_attribute_no_fix_names_another_scopes_variable():
    text = TRAINER.replace("        self.device = device\n", "").replace("x.to(self.device)", "x.to(next(self.model.parameters()).device)")
    found = [d for d in check(text, {"GL101"}) if d.code == "GL101"]
    assert [d.line for d in found] == [15]
    out = fix(text, {"GL101"}, unsafe=True).text
    assert "y.to(device)" not in out
