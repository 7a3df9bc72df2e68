"""PRECISION53 (thirty-second session): rule-side false positives found on new real code.

- GL505: `torch.cuda.empty_cache()` after a periodic skip (`if not step or step % k != 0:
  continue`) runs every k steps, not every step (seamless_communication's m4t finetune trainer).
  A skip that is not periodic (`if x is None: continue`) leaves the call once per step.
- GL106: the gradient-checkpointing dummy (`self.dummy_tensor = torch.ones(1, requires_grad=True)`
  handed whole to `checkpoint(...)` and to the block it checkpoints, GLIP's VLFuse) is never
  combined with a device tensor. The same attribute used in arithmetic, or handed to a submodule
  with no checkpoint call, or made without `requires_grad=True`, is still reported.
"""

from __future__ import annotations

import textwrap

from fixture_support import check


def _lines(src, code):
    return [f.line for f in check(textwrap.dedent(src), {code}) if f.code == code]


LOOP_HEAD = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = [(torch.randn(2, 4), torch.randn(2, 1)) for _ in range(8)]
"""


def test_gl505_empty_cache_after_periodic_continue_is_silent():
    src = LOOP_HEAD + """
step = 0
for x, y in loader:
    loss = ((model(x.to(device)) - y.to(device)) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    step += 1
    if not step or step % 4 != 0:
        continue
    torch.cuda.empty_cache()
    print("eval", step)
"""
    assert _lines(src, "GL505") == []


def test_gl505_empty_cache_after_bad_batch_skip_is_reported():
    src = LOOP_HEAD + """
for x, y in loader:
    if x is None:
        continue
    loss = ((model(x.to(device)) - y.to(device)) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch.cuda.empty_cache()
"""
    assert _lines(src, "GL505") == [17]


def test_gl505_periodic_skip_inside_the_training_step_function_is_silent():
    src = LOOP_HEAD + """
class Trainer:
    def __init__(self):
        self.update_idx = 0

    def _train_step(self, batch):
        x, y = batch
        loss = ((model(x.to(device)) - y.to(device)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        self.update_idx += 1

    def run(self):
        for batch in loader:
            self._train_step(batch)
            if not self.update_idx or self.update_idx % 4 != 0:
                continue
            torch.cuda.empty_cache()


Trainer().run()
"""
    assert _lines(src, "GL505") == []


MODULE = """
import torch
import torch.nn as nn
import torch.utils.checkpoint as checkpoint


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, dummy_tensor=None):
        return self.lin(x)


class Fuse(nn.Module):
    def __init__(self):
        super().__init__()
        self.dummy_tensor = torch.ones(1, dtype=torch.float32, requires_grad=True{extra})
        self.block = Block()

    def forward(self, x):
        if x.shape[0] > 1:
            y = checkpoint.checkpoint(self.block, x, self.dummy_tensor, use_reentrant=True)
        else:
            y = self.block(x, self.dummy_tensor)
        return y{use}


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Fuse().to(device)
print(model(torch.randn(2, 4, device=device)).sum())
"""


def test_gl106_checkpoint_dummy_is_silent():
    assert _lines(MODULE.format(extra="", use=""), "GL106") == []


def test_gl106_checkpoint_dummy_also_used_in_arithmetic_is_reported():
    assert _lines(MODULE.format(extra="", use=" * self.dummy_tensor"), "GL106") == [19]


def test_gl106_dummy_without_requires_grad_is_reported():
    src = MODULE.replace(", requires_grad=True{extra}", "").format(use=" + 0")
    src = src.replace("return y + 0", "return y + self.dummy_tensor")
    assert _lines(src, "GL106") == [19]


def test_gl106_dummy_handed_to_a_submodule_without_checkpoint_is_reported():
    src = MODULE.format(extra="", use="")
    src = src.replace(
        "y = checkpoint.checkpoint(self.block, x, self.dummy_tensor, use_reentrant=True)",
        "y = self.block(x, self.dummy_tensor)",
    ).replace("return self.lin(x)", "return self.lin(x) * dummy_tensor")
    assert _lines(src, "GL106") == [19]
