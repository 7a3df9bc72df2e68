"""GL108 findings that come from the flow engine (the loss and the model reach each other through a
trainer or wrapper class) carry the same safe fix as the direct ones, `.to(D)` on the loss
constructor, when the engine's device expression D can be evaluated there; never inside an
nn.Module (a loss kept in a plain list there is GL107's ModuleList fix), never with a name the
constructor cannot see."""

from __future__ import annotations

from fixture_support import check, fix

WRAPPER = '''import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def tensors_to_device(tensors, device):
    return tuple(t.to(device) for t in tensors)


class Model:
    def __init__(self, network, optimizer, loss_function):
        self.network = network
        self.optimizer = optimizer
        self.loss_function = loss_function
        self.device = None

    def to(self, device):
        self.device = device
        self.network.to(self.device)
        return self

    def fit_batch(self, x, y):
        x, y = tensors_to_device((x, y), self.device)
        loss = self.loss_function(self.network(x), y)
        loss.backward()
        self.optimizer.step()


network = nn.Linear(4, 3)
criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 3.0]))
model = Model(network, torch.optim.SGD(network.parameters(), lr=0.1), criterion)
model.to(device)
model.fit_batch(torch.randn(8, 4), torch.randint(0, 3, (8,)))
'''

IN_MODULE_LIST = '''import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 6)
        self.criterions = []
        for p in range(2):
            self.criterions.append(nn.CrossEntropyLoss(weight=torch.ones(3)))

    def forward(self, x):
        return self.body(x).view(-1, 2, 3)

    def training_step(self, x, t):
        out = self(x)
        return self.criterions[0](out[:, 0], t[:, 0]) + self.criterions[1](out[:, 1], t[:, 1])


model = Tagger().to(device)
loss = model.training_step(torch.randn(8, 4).to(device), torch.randint(0, 3, (8, 2)).to(device))
'''

NOT_VISIBLE = '''import torch
import torch.nn as nn


class Trainer:
    def __init__(self, network, criterion, gpu):
        self.dev = torch.device(f"cuda:{gpu}" if torch.cuda.is_available() else "cpu")
        self.network = network.to(self.dev)
        self.criterion = criterion

    def step(self, x, y):
        x, y = x.to(self.dev), y.to(self.dev)
        return self.criterion(self.network(x), y)


criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 3.0]))
trainer = Trainer(nn.Linear(4, 3), criterion, 0)
trainer.step(torch.randn(8, 4), torch.randint(0, 3, (8,)))
'''


def _gl108(src):
    return [d for d in check(src, {"GL108"}) if d.code == "GL108"]


def test_loss_handed_to_a_wrapper_that_moves_only_the_network_gets_the_fix():
    found = _gl108(WRAPPER)
    assert [d.line for d in found] == [31]
    assert found[0].fix is not None
    out = fix(WRAPPER, {"GL108"}, False).text
    assert "criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 3.0])).to(device)\n" in out
    assert fix(out, {"GL108"}, False).text == out
    assert _gl108(out) == []


def test_loss_in_a_plain_list_of_a_module_is_reported_without_a_fix():
    found = _gl108(IN_MODULE_LIST)
    assert [d.line for d in found] == [13]
    assert found[0].fix is None
    assert fix(IN_MODULE_LIST, {"GL108"}, False).text == IN_MODULE_LIST


def test_no_fix_with_a_device_the_constructor_cannot_see():
    for d in _gl108(NOT_VISIBLE):
        assert d.fix is None
    assert fix(NOT_VISIBLE, {"GL108"}, False).text == NOT_VISIBLE
