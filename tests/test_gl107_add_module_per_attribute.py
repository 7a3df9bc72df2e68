"""GL107 in a class that registers some modules with `self.add_module(...)`: the attributes whose
entries it registers that way stay silent, the other plain containers of modules are reported
(RLlib's ComplexInputNetwork registers `self.cnns[i]` but not `self.one_hot[i]`, ray#22659).
When a registration hands over anything else than an entry of a `self.<attr>` (a local, a call),
the class is left alone as before."""

from __future__ import annotations

from fixture_support import check

TEMPLATE = '''import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.cnns = {}
        self.one_hot = {}
        for i in range(2):
            self.cnns[i] = nn.Linear(2, 2)
            REGISTER
            self.one_hot[i] = nn.Linear(2, 2)

    def forward(self, x):
        return self.cnns[0](x) + self.one_hot[0](x)
'''


def _lines(register: str):
    text = TEMPLATE.replace("REGISTER", register)
    return [d.line for d in check(text, {"GL107"}) if d.code == "GL107"]


def test_unregistered_dict_beside_an_add_module_registered_one_is_reported():
    assert _lines('self.add_module("cnn_{}".format(i), self.cnns[i])') == [8]


def test_setattr_of_an_entry_counts_as_registering_that_attribute():
    assert _lines('setattr(self, "cnn_{}".format(i), self.cnns[i])') == [8]


def test_every_dict_registered_is_silent():
    text = TEMPLATE.replace(
        "REGISTER",
        'self.add_module("cnn_{}".format(i), self.cnns[i])\n'
        '            self.add_module("oh_{}".format(i), self.one_hot[i])',
    ).replace("            self.one_hot[i] = nn.Linear(2, 2)\n", "").replace(
        "        for i in range(2):\n", "        for i in range(2):\n            self.one_hot[i] = nn.Linear(2, 2)\n")
    assert [d.line for d in check(text, {"GL107"}) if d.code == "GL107"] == []


def test_registration_of_a_local_leaves_the_class_alone():
    text = TEMPLATE.replace("REGISTER", 'layer = nn.Linear(2, 2)\n            self.add_module("l{}".format(i), layer)')
    assert [d.line for d in check(text, {"GL107"}) if d.code == "GL107"] == []
