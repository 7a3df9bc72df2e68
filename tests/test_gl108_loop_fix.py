"""GL108's safe `.to(D)` on the loss constructor is offered when the model move and the loss are
made in the same loop iteration (FluxGAT#4: `for fold in ...:` in main()), and only when the
move always runs there: not under an `if`, not in an inner loop."""

from __future__ import annotations

from fixture_support import check, fix

TEXT = '''import torch
import torch.nn as nn


def main(use_cuda):
    device = torch.device("cuda")
    x = torch.randn(4, 2, device=device)
    y = torch.ones(4, 1, device=device)
    for fold in range(2):
MOVE
        criterion = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([2.0]))
        criterion(model(x), y).backward()


main(True)
'''

IN_ITERATION = "        model = nn.Linear(2, 1).to(device)"
UNDER_IF = "        model = nn.Linear(2, 1)\n        if use_cuda:\n            model = model.to(device)"
INNER_LOOP = "        model = nn.Linear(2, 1)\n        for _ in range(1):\n            model = model.to(device)"


def _run(move):
    text = TEXT.replace("MOVE", move)
    found = [d for d in check(text, {"GL108"}) if d.code == "GL108"]
    return text, found, fix(text, {"GL108"}, unsafe=False).text


def test_model_and_loss_made_in_one_iteration_get_the_fix():
    text, found, out = _run(IN_ITERATION)
    assert len(found) == 1 and found[0].fix is not None
    assert "criterion = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([2.0])).to(device)\n" in out
    assert out.count(".to(device)") == text.count(".to(device)") + 1
    assert [d for d in check(out, {"GL108"}) if d.code == "GL108"] == []


def test_no_fix_when_the_move_may_not_run_in_the_iteration():
    for move in (UNDER_IF, INNER_LOOP):
        text, found, out = _run(move)
        assert all(d.fix is None for d in found)
        assert out == text
