"""GL301: a DataParallel wrap inside a method of a class of the file is reported when the file runs
that method: `__init__` of a class the file builds (santi-pdp/pase#30: Waveminionet's constructor
wraps every minion, `nn.ModuleList([nn.DataParallel(m) for m in self.minions])`, and the script
trains the model), another method the file calls by name. Before, any wrap inside a class was taken
for a library helper. A class the file never builds, a method never called, a wrap in a function
nested in a method, and a class nested in a function stay silent. No fix is offered for these
wraps (the codemod converts a plain `model = nn.DataParallel(model)` only)."""

from __future__ import annotations

from fixture_support import check, fix

TEXT = '''import torch
import torch.nn as nn


class Minion(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 4)

    def forward(self, x):
        return self.net(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.minions = nn.ModuleList([Minion() for _ in range(2)])
        self.minions_dp = nn.ModuleList([nn.DataParallel(m) for m in self.minions])

    def parallel(self):
        self.dp = nn.DataParallel(self.minions[0])
        return self


BUILD
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(3):
    loss = sum(m(torch.randn(2, 4)).pow(2).mean() for m in net.minions_dp)
    opt.zero_grad()
    loss.backward()
    opt.step()
'''


def _gl301(text):
    return sorted((d.line, d.code) for d in check(text, {"GL301"}) if d.code == "GL301")


def test_wrap_in_the_constructor_of_a_class_the_file_builds():
    text = TEXT.replace("BUILD", "net = Net()")
    assert _gl301(text) == [(18, "GL301")]
    assert fix(text, {"GL301"}, unsafe=True).text == text  # reported without a fix


def test_wrap_in_a_method_the_file_calls():
    text = TEXT.replace("BUILD", "net = Net().parallel()")
    assert _gl301(text) == [(18, "GL301"), (21, "GL301")]


def test_class_never_built_or_method_never_called():
    assert _gl301(TEXT.replace("BUILD", "net = nn.Linear(4, 4)").replace(
        "for m in net.minions_dp", "for m in [net]")) == []


def test_wrap_in_a_function_nested_in_the_method():
    text = TEXT.replace("BUILD", "net = Net()").replace(
        "        self.minions_dp = nn.ModuleList([nn.DataParallel(m) for m in self.minions])\n",
        "        def wrap(m):\n            return nn.DataParallel(m)\n        self.wrap = wrap\n")
    assert _gl301(text) == []


def test_class_nested_in_a_function():
    text = '''import torch
import torch.nn as nn


def build():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.dp = nn.DataParallel(nn.Linear(4, 4))

    return Net()


net = Net = None
opt = torch.optim.SGD(nn.Linear(4, 4).parameters(), lr=0.1)
opt.zero_grad()
'''
    assert _gl301(text) == []


def test_class_named_for_training_in_an_evaluation_script():
    # ZJULearning/RMI eval.py: a `Trainer` built only to validate; no backward, no optimizer
    text = '''import torch
import torch.nn as nn


class Trainer:
    def __init__(self):
        self.model = nn.DataParallel(nn.Linear(4, 1))

    def validation(self):
        with torch.no_grad():
            return self.model(torch.randn(2, 4))


trainer = Trainer()
trainer.validation()
'''
    assert _gl301(text) == []


def test_class_of_a_trainer_module_never_built_here():
    # JusperLee/Dual-Path-RNN-Pytorch trainer/trainer_Tasnet.py: `Trainer.run()` calls
    # `self.train(epoch)`, whose loop wraps the model; nothing in the file builds a Trainer
    text = '''import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def train(self, epoch):
        model = nn.DataParallel(self.model)
        self.optimizer.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        self.optimizer.step()

    def run(self):
        for epoch in range(2):
            self.train(epoch)
'''
    assert _gl301(text) == []


def test_wrapper_only_loaded_into_and_unwrapped():
    # chingyaoc/DCL linear.py: `Net.__init__` wraps the encoder only to load a checkpoint saved
    # from a DataParallel model, then keeps `model.module.f`
    text = '''import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, state):
        super().__init__()
        model = nn.Sequential(nn.Linear(4, 4))
        model = nn.DataParallel(model)
        model.load_state_dict(state)
        self.f = model.module[0]

    def forward(self, x):
        return self.f(x)


net = Net({"module.0.weight": torch.zeros(4, 4), "module.0.bias": torch.zeros(4)})
opt = torch.optim.SGD(net.parameters(), lr=0.1)
opt.zero_grad()
net(torch.randn(2, 4)).sum().backward()
opt.step()
'''
    assert _gl301(text) == []
    assert _gl301(text.replace("        self.f = model.module[0]\n", "        self.f = model.module[0]\n        model(torch.randn(2, 4))\n")) == [(9, "GL301")]
