"""GL111 through functions of the file: an optimizer a helper returns, a model moved by the function
it is handed to (michuanhaohao/reid-strong-baseline#114), and the state-moving workaround."""

from __future__ import annotations

import textwrap

from fixture_support import check

HEAD = '''
import torch
import torch.nn as nn


def make_optimizer(model, lr=0.01):
    return torch.optim.Adam(model.parameters(), lr=lr)


def create_trainer(model, optimizer, device=None):
    if device:
        model.to(device)
{workaround}
    def _update(x):
        optimizer.zero_grad()
        model(x.to(device)).sum().backward()
        optimizer.step()

    return _update


def do_train(model, optimizer, device):
    update = create_trainer(model, optimizer, device=device)
    update(torch.randn(4, 10))


def train(path, device):
    model = nn.Linear(10, 2)
    optimizer = make_optimizer(model)
    if path is not None:
        optimizer.load_state_dict(torch.load(path, map_location="cpu"))
    do_train(model, optimizer, device)
'''

WORKAROUND = '''        for state in optimizer.state.values():
            for k, v in state.items():
                if isinstance(v, torch.Tensor):
                    state[k] = v.to(device)
'''


def codes(src: str) -> list[tuple[str, int]]:
    return [(d.code, d.line) for d in check(textwrap.dedent(src), {"GL111"}) if d.code == "GL111"]


def test_optimizer_from_a_helper_and_model_moved_by_the_trainer_it_is_handed_to():
    found = codes(HEAD.format(workaround=""))
    assert found == [("GL111", 31)]  # the load


def test_the_trainer_moving_the_optimizer_state_after_the_model_is_silent():
    assert codes(HEAD.format(workaround=WORKAROUND)) == []


def test_the_state_moved_inline_after_the_model_is_silent():
    src = '''
import torch
import torch.nn as nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2)
optimizer = torch.optim.Adam(model.parameters())
optimizer.load_state_dict(torch.load("opt.pt", map_location="cpu"))
model.to(device)
for state in optimizer.state.values():
    for k, v in state.items():
        if isinstance(v, torch.Tensor):
            state[k] = v.to(device)
'''
    assert codes(src) == []
    assert codes(src.split("for state")[0]) == [("GL111", 7)]


def test_a_helper_that_moves_the_model_to_the_cpu_is_not_a_device_move():
    src = HEAD.format(workaround="").replace("model.to(device)", 'model.to("cpu")')
    assert codes(src) == []
