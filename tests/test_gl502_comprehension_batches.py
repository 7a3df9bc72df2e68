"""GL502 follows a batch moved by a comprehension (`{k: v.to(d) for k, v in batch.items()}`, the
shape GL101's own fix writes, and `[t.to(d) for t in batch]`) back to the loader the loop iterates;
a comprehension over something that is not a loader batch stays silent."""

from __future__ import annotations

from fixture_support import check

DICT_BATCH = '''import torch
from torch.utils.data import DataLoader, Dataset


class Pairs(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, idx):
        return {"x": torch.randn(4), "y": torch.randn(1)}


class Runner:
    def __init__(self, device):
        self.device = device
        self.model = torch.nn.Linear(4, 1).to(self.device)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.train_loader = DataLoader(Pairs(), batch_size=8, shuffle=True)

    def train(self):
        for batch_i, batch in enumerate(self.train_loader):
            batch = {k: v.to(self.device) for k, v in batch.items()}
            loss = torch.nn.functional.mse_loss(self.model(batch["x"]), batch["y"])
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()


Runner(torch.device("cuda" if torch.cuda.is_available() else "cpu")).train()
'''

LIST_BATCH = '''import torch
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
for batch in loader:
    x, y = [t.to(device) for t in batch]
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
'''

NOT_A_BATCH = '''import torch
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
constants = {"scale": torch.ones(1), "shift": torch.zeros(1)}
for x, y in loader:
    c = {k: v.to(device) for k, v in constants.items()}
    loss = torch.nn.functional.mse_loss(model(x) * c["scale"] + c["shift"], y)
    opt.zero_grad()
    loss.backward()
    opt.step()
'''


def _lines(src):
    return [d.line for d in check(src, {"GL502"}) if d.code == "GL502"]


def test_dict_comprehension_over_batch_items_reaches_the_loader():
    assert _lines(DICT_BATCH) == [18]


def test_list_comprehension_over_the_batch_reaches_the_loader():
    assert _lines(LIST_BATCH) == [7]


def test_comprehension_over_a_constant_dict_is_not_a_batch_move():
    assert _lines(NOT_A_BATCH) == []
