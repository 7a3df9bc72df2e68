"""GL110 is silent on a load that reads back the checkpoint an earlier iteration of the same loop
wrote (twitter-research/tgn train_self_supervised.py, early stopping: in the epoch loop,
`if early_stopper.early_stop_check(val_ap): best_model_path = get_checkpoint_path(best_epoch);
tgn.load_state_dict(torch.load(best_model_path)); break` / `else: torch.save(tgn.state_dict(),
get_checkpoint_path(epoch))`). The save and the load sit on the two branches of one `if` inside
the loop, and the paths come from the same builder: the file was written by this process, from
these devices. A load of a path built another way, a load in a loop with no save on the other
branch, or the same shape outside a loop is still reported."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
get_checkpoint_path = lambda epoch: f"./ckpt-{epoch}.pth"
best_epoch = 0
for run in range(2):
    for epoch in range(10):
        stop = epoch > 5
        if stop:
            best_model_path = LOADPATH
            model.load_state_dict(torch.load(best_model_path))
            break
        else:
            torch.save(model.state_dict(), SAVEPATH)
'''


def _lines(text):
    return [f.line for f in check(text, {"GL110"})]


def test_best_epoch_reloaded_from_the_loop_that_saved_it():
    text = TEXT.replace("LOADPATH", "get_checkpoint_path(best_epoch)").replace("SAVEPATH", "get_checkpoint_path(epoch)")
    assert _lines(text) == []


def test_same_literal_path_on_the_two_branches():
    text = TEXT.replace("LOADPATH", '"best.pth"').replace("SAVEPATH", '"best.pth"')
    assert _lines(text) == []


def test_path_built_by_another_helper_is_reported():
    text = TEXT.replace("LOADPATH", "pretrained_path(best_epoch)").replace("SAVEPATH", "get_checkpoint_path(epoch)")
    assert _lines(text) == [13]


def test_other_literal_path_is_reported():
    text = TEXT.replace("LOADPATH", '"pretrained.pth"').replace("SAVEPATH", '"best.pth"')
    assert _lines(text) == [13]


def test_same_shape_outside_a_loop_is_reported():
    text = '''import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
get_checkpoint_path = lambda epoch: f"./ckpt-{epoch}.pth"
if RESUME:
    model.load_state_dict(torch.load(get_checkpoint_path(3)))
else:
    torch.save(model.state_dict(), get_checkpoint_path(0))
'''
    assert _lines(text) == [8]


def test_loop_around_the_if_but_save_outside_it_is_reported():
    text = '''import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
for epoch in range(3):
    if epoch == 0:
        model.load_state_dict(torch.load("best.pth"))
torch.save(model.state_dict(), "best.pth")
'''
    assert _lines(text) == [8]
