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
