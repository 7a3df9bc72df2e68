"""PRECISION54 (thirty-third session): rule-side false positives found on new real code.

- GL401: omnivore's trainer clears `self.optim.zero_grad()` (the project's `OmniOptimizer`, built
  by an imported `construct_optimizer`) and steps `self.scaler.step(self.optim.optimizer)`: the
  clear of the object that holds the stepped optimizer clears it. A clear of another object, or a
  holder cleared only on another branch of an `if` than the step, is still reported.
- GL110: NVIDIA sentiment-discovery resumes `rng = torch.load(.../rng.pt)` and hands `rng[0]`,
  `rng[1]` to `torch.cuda.set_rng_state` / `torch.set_rng_state`: generator states are CPU byte
  tensors, so `map_location` changes nothing. A loaded object also read any other way is still
  reported.
"""

from __future__ import annotations

import textwrap

from fixture_support import check


def _lines(src, code):
    return [f.line for f in check(textwrap.dedent(src), {code}) if f.code == code]


TRAINER = """
import torch
import torch.nn as nn
from omnivision.optim import construct_optimizer


class Trainer:
    def __init__(self):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = nn.Linear(4, 1).to(self.device)
        self.optim = construct_optimizer(self.model)
        self.critic = nn.Linear(4, 1).to(self.device)
        self.optim_d = construct_optimizer(self.critic)
        self.scaler = torch.amp.GradScaler("cuda")

    def train_epoch(self, loader, flag):
        for x, y in loader:
            x, y = x.to(self.device), y.to(self.device)
{clear}
            loss = ((self.model(x) - y) ** 2).mean()
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optim.optimizer)
            self.scaler.update()
"""


def test_gl401_zero_grad_of_the_wrapper_holding_the_stepped_optimizer_is_silent():
    src = TRAINER.format(clear="            self.optim.zero_grad()")
    assert _lines(src, "GL401") == []


def test_gl401_zero_grad_of_another_wrapper_is_reported():
    src = TRAINER.format(clear="            self.optim_d.zero_grad()")
    assert _lines(src, "GL401") == [22]


def test_gl401_wrapper_cleared_only_on_the_other_branch_is_reported():
    # the clear and the step sit on two branches of one `if`: the step's branch never clears
    src = textwrap.dedent(TRAINER.format(clear="")).replace(
        "            self.scaler.step(self.optim.optimizer)\n",
        "            if flag:\n"
        "                self.optim.zero_grad()\n"
        "            else:\n"
        "                self.scaler.step(self.optim.optimizer)\n",
    )
    assert _lines(src, "GL401") == [25]


def test_gl401_zero_grad_of_the_inner_optimizer_stepped_through_the_wrapper_is_silent():
    src = """
import torch
import torch.nn as nn
from omnivision.optim import construct_optimizer

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 1).to(device)
optim = construct_optimizer(model)
loader = [(torch.randn(2, 4), torch.randn(2, 1)) for _ in range(8)]
for epoch in range(3):
    for x, y in loader:
        optim.optimizer.zero_grad()
        loss = ((model(x.to(device)) - y.to(device)) ** 2).mean()
        loss.backward()
        optim.step()
"""
    assert _lines(src, "GL401") == []


RESUME = """
import os
import torch
import torch.nn as nn

use_cuda = torch.cuda.is_available()
model = nn.Linear(4, 4)
if use_cuda:
    model.cuda()


def resume(path):
{body}


if __name__ == "__main__":
    resume("run/model.pt")
"""


def _resume(body):
    return RESUME.format(body=textwrap.indent(textwrap.dedent(body), "    "))


def test_gl110_rng_state_tuple_fed_to_rng_setters_is_silent():
    src = _resume("""
        rng = torch.load(os.path.join(os.path.dirname(path), "rng.pt"))
        torch.cuda.set_rng_state(rng[0])
        torch.set_rng_state(rng[1])
    """)
    assert _lines(src, "GL110") == []


def test_gl110_rng_states_unpacked_or_passed_whole_are_silent():
    src = _resume("""
        cuda_state, cpu_state = torch.load(path + ".rng")
        torch.cuda.random.set_rng_state(cuda_state)
        torch.random.set_rng_state(cpu_state)
        torch.set_rng_state(torch.load(path + ".cpu_rng"))
    """)
    assert _lines(src, "GL110") == []


def test_gl110_dict_of_generator_states_is_silent():
    src = "import random\nimport numpy as np\n" + _resume("""
        states = torch.load(path + ".rng")
        random.setstate(states["python"])
        np.random.set_state(states["numpy"])
        torch.random.set_rng_state(states["cpu"])
        torch.cuda.random.set_rng_state_all(states["cuda"])
    """)
    assert _lines(src, "GL110") == []


def test_gl110_rng_file_also_holding_weights_is_reported():
    src = _resume("""
        rng = torch.load(path)
        torch.set_rng_state(rng[0])
        model.load_state_dict(rng[1])
    """)
    assert _lines(src, "GL110") == [14]


def test_gl110_rng_file_read_another_way_is_reported():
    src = _resume("""
        rng = torch.load(path)
        torch.set_rng_state(rng[0])
        print(rng)
    """)
    assert _lines(src, "GL110") == [14]
