"""GL118's fix moves a reassigning model move (`model = model.to(d)`) above the optimizer, as it
does the statement form; never when a name the move reads is bound between the optimizer and the
move (the device, or the model re-bound to a wrapper), nor for a move bound to another name."""

from __future__ import annotations

from fixture_support import check, fix

HEAD = '''import torch
import torch.nn as nn


def main():
'''

REASSIGN = HEAD + '''    device = torch.device("cuda")
    model = nn.Linear(2, 2)
    opt = torch.optim.Adagrad(model.parameters(), lr=0.1)
    model = model.to(device)
    model(torch.randn(3, 2, device=device)).sum().backward()
    opt.step()


main()
'''

DEVICE_BOUND_AFTER = HEAD + '''    model = nn.Linear(2, 2)
    opt = torch.optim.Adagrad(model.parameters(), lr=0.1)
    device = torch.device("cuda")
    model = model.to(device)
    model(torch.randn(3, 2, device=device)).sum().backward()
    opt.step()


main()
'''

MODEL_REBOUND_BETWEEN = HEAD + '''    device = torch.device("cuda")
    model = nn.Linear(2, 2)
    opt = torch.optim.Adagrad(model.parameters(), lr=0.1)
    model = nn.Sequential(model, nn.ReLU())
    model = model.to(device)
    model(torch.randn(3, 2, device=device)).sum().backward()
    opt.step()


main()
'''


def _gl118(text):
    return [d for d in check(text, {"GL118"}) if d.code == "GL118"]


def test_reassigning_move_is_moved_above_the_optimizer():
    assert [d.line for d in _gl118(REASSIGN)] == [8]
    fixed = fix(REASSIGN, {"GL118"}, unsafe=True).text
    lines = [ln.strip() for ln in fixed.splitlines()]
    assert lines.index("model = model.to(device)") + 1 == lines.index(
        "opt = torch.optim.Adagrad(model.parameters(), lr=0.1)")
    assert lines.count("model = model.to(device)") == 1
    assert _gl118(fixed) == []


def test_no_fix_when_the_device_is_bound_after_the_optimizer():
    found = _gl118(DEVICE_BOUND_AFTER)
    assert [d.line for d in found] == [7]
    assert fix(DEVICE_BOUND_AFTER, {"GL118"}, unsafe=True).text == DEVICE_BOUND_AFTER


def test_no_fix_when_the_model_is_rebound_between():
    found = _gl118(MODEL_REBOUND_BETWEEN)
    assert [d.line for d in found] == [8]
    assert fix(MODEL_REBOUND_BETWEEN, {"GL118"}, unsafe=True).text == MODEL_REBOUND_BETWEEN
