"""GL404: an epoch loop whose training runs in a function of the file (pytorch/tutorials#1624, the
Quickstart: `for t in range(epochs): train(dataloader, model, ...); test(dataloader, model, ...)`,
`test()` starts with `model.eval()` and `train()` never calls `model.train()`). The loop has no
training loop of its own, so it was neither a training nor an epoch loop for the rule. A function
that puts the model back in training mode itself, or one that trains another model, stays silent."""

from __future__ import annotations

from fixture_support import check, fix

TEXT = '''import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.2), nn.Linear(8, 2)).to(device)
other = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.2), nn.Linear(8, 2)).to(device)
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
data = [(torch.randn(3, 4), torch.tensor([0, 1, 0]))]


def train(dataloader, net, loss_fn, optimizer):
    MODE
    for X, y in dataloader:
        X, y = X.to(device), y.to(device)
        loss = loss_fn(net(X), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


def test(dataloader, net, loss_fn):
    net.eval()
    with torch.no_grad():
        for X, y in dataloader:
            X, y = X.to(device), y.to(device)
            print(loss_fn(net(X), y).item())


for t in range(3):
    print(t)
    train(data, TRAINED, loss_fn, optimizer)
    test(data, model, loss_fn)
'''


def _gl404(text):
    return [(d.line, d.code) for d in check(text, {"GL404"}) if d.code == "GL404"]


def test_eval_in_test_never_undone_by_train_function():
    text = TEXT.replace("    MODE\n", "").replace("TRAINED", "model")
    assert _gl404(text) == [(22, "GL404")]
    out = fix(text, {"GL404"}, unsafe=False).text
    assert "for t in range(3):\n    model.train()\n    print(t)\n" in out
    assert _gl404(out) == []


def test_train_function_restores_training_mode():
    assert _gl404(TEXT.replace("MODE", "net.train()").replace("TRAINED", "model")) == []


def test_train_function_trains_another_model():
    assert _gl404(TEXT.replace("    MODE\n", "").replace("TRAINED", "other")) == []


GLOBAL = '''import torch
from torch import nn

model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.2), nn.Linear(8, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
data = [(torch.randn(3, 4), torch.tensor([0, 1, 0]))]


def train_epoch():
    for X, y in data:
        nn.functional.cross_entropy(model(X), y).backward()
        optimizer.step()
        optimizer.zero_grad()


def validate():
    model.eval()
    with torch.no_grad():
        return sum(nn.functional.cross_entropy(model(X), y).item() for X, y in data)


for epoch in range(3):
    train_epoch()
    print(validate())
'''

TRAINER = '''import torch
from torch import nn


class Trainer:
    def __init__(self):
        self.model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.2), nn.Linear(8, 2))
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.data = [(torch.randn(3, 4), torch.tensor([0, 1, 0]))]

    def train_epoch(self):
        for X, y in self.data:
            nn.functional.cross_entropy(self.model(X), y).backward()
            self.optimizer.step()
            self.optimizer.zero_grad()

    def validate(self):
        self.model.eval()
        with torch.no_grad():
            return sum(nn.functional.cross_entropy(self.model(X), y).item() for X, y in self.data)

    def fit(self, epochs):
        for epoch in range(epochs):
            self.train_epoch()
            print(self.validate())


Trainer().fit(3)
'''


def test_module_level_model_trained_in_function():
    assert _gl404(GLOBAL) == [(17, "GL404")]


def test_self_model_trained_in_method():
    assert _gl404(TRAINER) == [(18, "GL404")]
    assert _gl404(TRAINER.replace("    def train_epoch(self):\n", "    def train_epoch(self):\n        self.model.train()\n")) == []


def test_train_function_chooses_eval_mode_itself():
    # facebookresearch/SLIP main_linear.py: train() puts the frozen backbone in eval mode on
    # purpose (linear probing) before its own batch loop
    text = TEXT.replace("MODE", "net.eval()").replace("TRAINED", "model")
    assert _gl404(text) == []
