"""GL107 on a plain list of new modules built outside the attribute assignment: a local of
`__init__` (`layers = []` grown with `layers.append(nn.Linear(...))`, then `self.layers = layers`),
or a function of the file that grows and returns one (`self.blocks = make_blocks(2)`, directly or
through a local). Silent when the list is also handed on (`nn.ModuleList(block_list)`,
`nn.Sequential(*layers)`), read, or holds anything else than modules built there. And GL112 stays
silent on such parts called from the container inside the module (Zen-NAS's PlainNet)."""

from __future__ import annotations

from fixture_support import check

HEADER = '''import torch
import torch.nn as nn


def make_blocks(n):
    blocks = []
    for i in range(n):
        blocks.append(nn.Linear(4, 4))
    return blocks


class Net(nn.Module):
    def __init__(self):
        super().__init__()
'''

FOOTER = '''
    def forward(self, x):
        for b in self.block_list:
            x = b(x)
        return x


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
out = model(torch.randn(2, 4).to(device))
'''


def _codes(init_body, codes=("GL107", "GL112")):
    text = HEADER + init_body + FOOTER
    return [(d.code, d.line) for d in check(text, set(codes)) if d.code in codes]


def test_local_list_grown_in_init_is_reported_at_the_assignment():
    body = (
        "        layers = []\n"
        "        for i in range(2):\n"
        "            layers.append(nn.Linear(4, 4))\n"
        "        self.block_list = layers\n"
    )
    assert _codes(body) == [("GL107", 18)]


def test_helper_list_through_a_local_is_reported():
    body = "        block_list = make_blocks(2)\n        self.block_list = block_list\n"
    assert _codes(body) == [("GL107", 16)]


def test_helper_list_assigned_directly_is_reported():
    assert _codes("        self.block_list = make_blocks(2)\n") == [("GL107", 15)]


def test_list_also_registered_by_a_module_list_is_silent():
    body = (
        "        block_list = make_blocks(2)\n"
        "        self.block_list = block_list\n"
        "        self.module_list = nn.ModuleList(block_list)\n"
    )
    assert _codes(body) == []


def test_list_wrapped_before_it_is_stored_is_silent():
    body = (
        "        layers = []\n"
        "        for i in range(2):\n"
        "            layers.append(nn.Linear(4, 4))\n"
        "        self.block_list = nn.Sequential(*layers)\n"
    )
    assert _codes(body) == []


def test_list_of_registered_attributes_is_silent():
    body = (
        "        self.a = nn.Linear(4, 4)\n"
        "        self.b = nn.Linear(4, 4)\n"
        "        layers = []\n"
        "        layers.append(self.a)\n"
        "        layers.append(self.b)\n"
        "        self.block_list = layers\n"
    )
    assert _codes(body) == []


def test_list_read_in_init_is_silent():
    body = (
        "        layers = []\n"
        "        layers.append(nn.Linear(4, 4))\n"
        "        for layer in layers:\n"
        "            self.add_module('l', layer)\n"
        "        self.block_list = layers\n"
    )
    assert _codes(body) == []
