"""GL304 on a save helper that renames the wrapper's keys without `module.` before saving
(PRECISION24 #2, 666DZY666/micronet compression/pruning/main.py and the quantization mains:
`state = {"best_acc": ..., "state_dict": model.state_dict()}`, then `for key in
state_copy.keys(): if "module" in key: state["state_dict"][key.replace("module.", "")] =
state["state_dict"].pop(key)`, then `torch.save(state, ...)`). What is saved has no `module.`
keys. A loop that renames the keys without dropping the prefix, or renames a different dict, is
still reported."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
model = nn.DataParallel(model)
other = {}


def save_state(model, best_acc):
    state = {"best_acc": best_acc, "state_dict": model.state_dict()}
    state_copy = state["state_dict"].copy()
    for key in state_copy.keys():
        if "module" in key:
            RENAME
    torch.save(state, "models_save/nin.pth")


opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    loss = model(torch.randn(3, 4)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
save_state(model, 0.0)
'''


def _lines(rename):
    return [f.line for f in check(TEXT.replace("RENAME", rename), {"GL304"}) if f.code == "GL304"]


def test_keys_renamed_without_the_prefix_before_the_save():
    assert _lines('state["state_dict"][key.replace("module.", "")] = state["state_dict"].pop(key)') == []


def test_keys_renamed_with_a_slice_before_the_save():
    assert _lines('state["state_dict"][key[7:]] = state["state_dict"].pop(key)') == []


def test_keys_renamed_keeping_the_prefix_are_still_reported():
    assert _lines('state["state_dict"][key.upper()] = state["state_dict"].pop(key)') == [15]


def test_another_dict_renamed_is_still_reported():
    assert _lines('other[key.replace("module.", "")] = other.pop(key)') == [15]
