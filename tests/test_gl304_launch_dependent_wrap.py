"""GL304: a wrap decided by the process count (`if world_size > 1:` with torchrun's WORLD_SIZE),
saved and restored through the same maybe-wrapped name by a restore that strips the `module.`
prefix (fixtures43 G43-1, ai2cm/ace#120, rules43).

The round trip through a conditionally wrapped name was reported only when the wrap depends on the
machine (`device_count() > 1`, `device == "cuda"`); a wrap under any other test was taken for a
command-line choice that a resume repeats. A process-count test now counts too when every load of
the round trip drops the `module.` prefix: the restore expects plain keys, and a restart with more
than one process loads those into the wrapper (Missing key(s) "module.weight"). A restore that loads
the keys as saved (no stripping) stays silent, as does a command-line flag with stripping; the load
may go through an attribute the engine knows to hold the wrap (`trainer.model`).
"""

from __future__ import annotations

from fixture_support import check, fix

# the README's repro
REPRO = '''
import os
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

world_size = int(os.environ.get("WORLD_SIZE", 1))
model = nn.Linear(4, 1)
if world_size > 1:
    model = DistributedDataParallel(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad()
    model(torch.randn(8, 4)).sum().backward()
    opt.step()
torch.save({"model_state": model.state_dict()}, "ckpt.tar")

state = torch.load("ckpt.tar", weights_only=True)["model_state"]
new_state = {}
for key, val in state.items():
    new_state[key[7:] if key.startswith("module.") else key] = val
model.load_state_dict(new_state)
'''

# ace's shape: the wrap in `Trainer.__init__`, the load through `trainer.model` in a module helper
TRAINER = '''
import os
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel


def _restore_checkpoint(trainer, path):
    state = torch.load(path, weights_only=True)["model_state"]
    trainer.model.load_state_dict({k[7:] if k.startswith("module.") else k: v for k, v in state.items()})


class Trainer:
    def __init__(self, world_size, resuming):
        self.model = nn.Linear(4, 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        if world_size > 1:
            self.model = DistributedDataParallel(self.model)
        if resuming:
            _restore_checkpoint(self, "ckpt.tar")

    def train(self):
        for _ in range(3):
            self.optimizer.zero_grad()
            self.model(torch.randn(8, 4)).sum().backward()
            self.optimizer.step()
        torch.save({"model_state": self.model.state_dict()}, "ckpt.tar")


Trainer(int(os.environ.get("WORLD_SIZE", 1)), False).train()
Trainer(int(os.environ.get("WORLD_SIZE", 1)), True).train()
'''


def _codes(src):
    return [(d.code, d.line) for d in check(src, ["GL304"])]


def test_world_size_wrap_with_stripping_restore_is_reported():
    diags = check(REPRO, ["GL304"])
    assert [(d.code, d.line) for d in diags] == [("GL304", 16)]
    assert "on some paths only (line 10)" in diags[0].message
    fixed = fix(REPRO, ["GL304"], unsafe=True).text
    assert 'getattr(model, "module", model).state_dict()' in fixed
    assert 'getattr(model, "module", model).load_state_dict(new_state)' in fixed


def test_dist_get_world_size_and_is_initialized_count_too():
    src = REPRO.replace('world_size = int(os.environ.get("WORLD_SIZE", 1))\n', "import torch.distributed as dist\n")
    for test in ("dist.get_world_size() > 1", "dist.is_initialized()"):
        assert _codes(src.replace("if world_size > 1:", f"if {test}:")) == [("GL304", 16)], test


def test_trainer_attribute_load_is_reported():
    diags = check(TRAINER, ["GL304"])
    assert [(d.code, d.line) for d in diags] == [("GL304", 27)]
    fixed = fix(TRAINER, ["GL304"], unsafe=True).text
    assert 'getattr(trainer.model, "module", trainer.model).load_state_dict(' in fixed
    assert 'getattr(self.model, "module", self.model).state_dict()' in fixed


# controls (silent on the base and on the branch)

def test_world_size_wrap_loading_keys_as_saved_stays_silent():
    # a restart with the same WORLD_SIZE loads the `module.` keys back into the wrapper
    src = REPRO.replace("model.load_state_dict(new_state)", "model.load_state_dict(state)")
    assert _codes(src) == []
    src = TRAINER.replace('{k[7:] if k.startswith("module.") else k: v for k, v in state.items()}', "state")
    assert _codes(src) == []


def test_command_line_flag_with_stripping_stays_silent():
    src = REPRO.replace('world_size = int(os.environ.get("WORLD_SIZE", 1))',
                        "import sys\ndistributed = '--distributed' in sys.argv").replace(
        "if world_size > 1:", "if distributed:")
    assert _codes(src) == []


def test_unconditional_wrap_with_stripping_stays_silent():
    src = REPRO.replace("if world_size > 1:\n    model = DistributedDataParallel(model)",
                        "model = DistributedDataParallel(model)")
    assert _codes(src) == []


def test_machine_dependent_wrap_still_reported():
    src = REPRO.replace("if world_size > 1:", "if torch.cuda.device_count() > 1:").replace(
        "model.load_state_dict(new_state)", "model.load_state_dict(state)")
    assert _codes(src) == [("GL304", 16)]
