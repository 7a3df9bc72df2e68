"""GL110 is silent on a load that reads back a checkpoint a function of the file wrote earlier in
the same run (PRECISION23 #1):

- songyouwei/ABSA-PyTorch train.py: `best_model_path = self._train(...)`, where `_train` saves the
  best state_dict with `torch.save(self.model.state_dict(), path)` and ends with `return path`,
  then `self.model.load_state_dict(torch.load(best_model_path))`;
- Yura52/tabular-dl-revisiting-models bin/node.py: in the epoch loop, `if progress.success:
  save_checkpoint(stage)` / `elif progress.fail: ... torch.load(get_checkpoint_path(stage))`, where
  `save_checkpoint(suffix)` saves to `get_checkpoint_path(suffix)` (the tgn early-stopping shape,
  the save one call away).

The look-alikes stay reported: a resume load of the same builder before the loop, a saver that
writes only when the file is missing (an older file may be read), a saving function whose
returned value is not the saved path, and the branch shape outside a loop."""

from __future__ import annotations

from fixture_support import check

RETURNED = '''import torch
import torch.nn as nn


class Instructor:
    def __init__(self, device):
        self.device = device
        self.model = nn.Linear(4, 2).to(device)

    def _train(self, epochs):
        path = None
        best = 0.0
        for epoch in range(epochs):
            acc = float(epoch)
            if acc > best:
                best = acc
                path = "state_dict/best_{0}".format(epoch)
                SAVE
        return RETURN

    def run(self):
        best_model_path = self._train(3)
        self.model.load_state_dict(torch.load(best_model_path))


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    Instructor(device).run()
'''

BRANCH = '''import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)


def get_checkpoint_path(suffix):
    return f"checkpoint_{suffix}.pt"


def save_checkpoint(suffix):
    torch.save({"model": model.state_dict()}, get_checkpoint_path(suffix))


stage = 0
RESUME
for epoch in range(10):
    success = epoch % 3 == 0
    if success:
        save_checkpoint(stage)
    elif epoch > 6:
        best = torch.load(get_checkpoint_path(stage))
        model.load_state_dict(best["model"])
        stage += 1
'''


def _lines(text):
    return [f.line for f in check(text, {"GL110"})]


def test_method_returns_the_path_it_saved_to():
    text = RETURNED.replace("SAVE", "torch.save(self.model.state_dict(), path)").replace("RETURN", "path")
    assert _lines(text) == []


def test_method_saving_only_when_missing_keeps_the_finding():
    save = "if not os.path.exists(path):\n                    torch.save(self.model.state_dict(), path)"
    text = "import os\n" + RETURNED.replace("SAVE", save).replace("RETURN", "path")
    assert _lines(text) == [25]


def test_method_returning_something_else_keeps_the_finding():
    text = RETURNED.replace("SAVE", "torch.save(self.model.state_dict(), path)").replace("RETURN", '"pretrained.pt"')
    assert _lines(text) == [23]


def test_saving_function_on_the_other_branch_of_the_loop():
    text = BRANCH.replace("RESUME\n", "")
    assert _lines(text) == []


def test_resume_before_the_loop_keeps_its_finding():
    text = BRANCH.replace("RESUME", 'model.load_state_dict(torch.load(get_checkpoint_path(stage))["model"])')
    assert _lines(text) == [17]


def test_branch_shape_outside_a_loop_keeps_the_finding():
    text = BRANCH.replace("RESUME\n", "").replace("for epoch in range(10):\n", "if True:\n    epoch = 7\n")
    assert _lines(text) == [23]
