"""GL601's safe `weights_only=True` is for a load that feeds the `load_state_dict` of a module,
optimizer, scheduler or scaler (tensors in containers). diffwave's learner.py (fixes11 corpus audit)
loads a checkpoint into `self.load_state_dict(checkpoint)` of `DiffWaveLearner`, a plain class of
the file whose own `load_state_dict` reads the step, the scaler and the run's params dict: what
that file holds is the class's business, so the finding stays without the safe fix. A module class
of the file (`self.load_state_dict` inside an `nn.Module`) keeps it."""

from __future__ import annotations

from fixture_support import fix, rules_for
from gpulint.engine import Options, run_text

LEARNER = '''import torch
import torch.nn as nn


class Learner:
    def __init__(self, model_dir, model, optimizer):
        self.model_dir = model_dir
        self.model = model
        self.optimizer = optimizer
        self.step = 0

    def state_dict(self):
        return {"step": self.step, "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state_dict):
        self.model.load_state_dict(state_dict["model"])
        self.optimizer.load_state_dict(state_dict["optimizer"])
        self.step = state_dict["step"]

    def restore_from_checkpoint(self, filename="weights"):
        try:
            checkpoint = torch.load(f"{self.model_dir}/{filename}.pt")
            self.load_state_dict(checkpoint)
            return True
        except FileNotFoundError:
            return False


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 1)

    def load_from_pretrained(self, path):
        self.load_state_dict(torch.load(path, map_location="cpu"), strict=False)


if __name__ == "__main__":
    net = nn.Linear(4, 2)
    learner = Learner("runs", net, torch.optim.SGD(net.parameters(), lr=0.1))
    learner.restore_from_checkpoint()
    learner.load_state_dict(torch.load("other.pt"))
    Scorer().load_from_pretrained("scorer.pt")
'''


def test_plain_class_load_state_dict_gets_no_safe_fix_a_module_class_does():
    out = fix(LEARNER, {"GL601"}, unsafe=True).text
    assert 'torch.load(f"{self.model_dir}/{filename}.pt")\n' in out
    assert 'learner.load_state_dict(torch.load("other.pt"))' in out
    assert 'torch.load(path, map_location="cpu", weights_only=True)' in out


def test_the_loads_into_the_plain_class_are_still_reported():
    found = [d for d in run_text("t.py", LEARNER, rules_for({"GL601"}), Options()).diagnostics if d.code == "GL601"]
    assert len(found) == 3
    assert sum(d.fix is not None for d in found) == 1
