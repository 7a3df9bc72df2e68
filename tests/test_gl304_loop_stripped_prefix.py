"""GL304 is silent when the file's own resume path rebuilds the checkpoint in a loop that drops
the `module.` prefix (biubug6/Pytorch_Retinaface train.py: `new_state_dict = OrderedDict()`,
`for k, v in state_dict.items(): ... name = k[7:] ... new_state_dict[name] = v`, then
`net.load_state_dict(new_state_dict)`, before `net = nn.DataParallel(net)` and
`torch.save(net.state_dict(), ...)`): the `module.` keys are the checkpoint format the file reads
back, as with the dict-comprehension form. A loop that copies the keys unchanged is still
reported."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.nn as nn
from collections import OrderedDict

net = nn.Linear(4, 2)
if RESUME:
    state_dict = torch.load("last.pth", map_location="cpu")
    new_state_dict = OrderedDict()
    for k, v in state_dict.items():
        LOOP
    net.load_state_dict(new_state_dict)
net = nn.DataParallel(net)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for _ in range(2):
    loss = net(torch.randn(3, 4)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
torch.save(net.state_dict(), "last.pth")
'''

STRIP_SLICE = '''head = k[:7]
        if head == "module.":
            name = k[7:]
        else:
            name = k
        new_state_dict[name] = v'''

STRIP_REPLACE = 'new_state_dict[k.replace("module.", "")] = v'

COPY = 'new_state_dict[k] = v'


def _lines(loop):
    return [f.line for f in check(TEXT.replace("LOOP", loop).replace("RESUME", "True"), {"GL304"})]


def test_loop_dropping_the_prefix_with_a_slice_is_the_checkpoint_format():
    assert _lines(STRIP_SLICE) == []


def test_loop_dropping_the_prefix_with_replace_is_the_checkpoint_format():
    assert _lines(STRIP_REPLACE) == []


def test_loop_copying_the_keys_unchanged_is_still_reported():
    assert _lines(COPY) == [19]
