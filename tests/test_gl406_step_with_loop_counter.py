"""GL406: `scheduler.step(<loop counter>)` first in a loop whose counter starts past 0
(fixtures41 G41-2, ildoonet/pytorch-gradual-warmup-lr#8, rules42).

A step with an argument was never reported. With `for epoch in range(1, N): sched.step(epoch)`
before the epoch's optimizer steps, the explicit epoch sets the schedule to its value for epoch 1
before anything trained with the value for epoch 0 (StepLR(step_size=1, gamma=0.5), lr 1.0: the
first epoch trains with 0.5), and PyTorch warns "Detected call of `lr_scheduler.step()` before
`optimizer.step()`" (both checked on torch 2.13). From 0 the first value is used: silent.
"""

from __future__ import annotations

from fixture_support import check

HEAD = '''import torch
import torch.nn as nn
from torch.optim.lr_scheduler import StepLR, ReduceLROnPlateau, _LRScheduler

START = 1


class Warmup(_LRScheduler):
    def get_lr(self):
        return [b * min(1.0, (self.last_epoch + 1) / 3) for b in self.base_lrs]


model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
'''

EPOCHS = '''
sched = {sched}
for epoch in {range}:
    {step}
    for _ in range(3):
        opt.zero_grad()
        loss = model(torch.randn(8, 4)).sum()
        loss.backward()
        opt.step()
'''

LINE = HEAD.count("\n") + 4  # the `{step}` line


def _gl406(sched="StepLR(opt, 2)", rng="range(1, 5)", step="sched.step(epoch)", head=HEAD):
    src = head + EPOCHS.format(sched=sched, range=rng, step=step)
    return [d.line for d in check(src, {"GL406"}) if d.code == "GL406"]


def test_step_with_a_counter_from_one_before_the_optimizer_is_reported():
    assert _gl406() == [LINE]
    assert _gl406(rng="range(1, 12)", sched="Warmup(opt)") == [LINE]  # a torch subclass of the file
    assert _gl406(step="sched.step(epoch=epoch)") == [LINE]
    assert _gl406(rng="range(START, 5)") == [LINE]  # a module-level constant start


def test_counter_from_zero_or_unknown_start_is_silent():
    assert _gl406(rng="range(5)") == []
    assert _gl406(rng="range(0, 5)") == []
    assert _gl406(rng="range(int(input()), 5)") == []


def test_other_arguments_and_metric_schedulers_are_silent():
    assert _gl406(step="sched.step(epoch - 1)") == []
    assert _gl406(step="sched.step(3)") == []
    assert _gl406(sched="ReduceLROnPlateau(opt)", step="sched.step(epoch)") == []


def test_unknown_scheduler_class_is_silent():
    head = HEAD.replace("from torch.optim.lr_scheduler import", "from mylib import Sched\nfrom torch.optim.lr_scheduler import")
    assert _gl406(sched="Sched(opt)", head=head) == []


def test_step_after_the_optimizer_steps_is_silent():
    src = HEAD + '''
sched = StepLR(opt, 2)
for epoch in range(1, 5):
    for _ in range(3):
        opt.zero_grad()
        model(torch.randn(8, 4)).sum().backward()
        opt.step()
    sched.step(epoch)
'''
    assert [d for d in check(src, {"GL406"}) if d.code == "GL406"] == []


def test_counter_rebound_in_the_loop_is_silent():
    assert _gl406(step="epoch = epoch - 1; sched.step(epoch)") == []


def test_an_optimizer_step_before_the_loop_is_silent():
    # pytorch-gradual-warmup-lr's README after #8: a zero-gradient step first, then step(epoch)
    src = HEAD + '''
sched = Warmup(opt)
opt.zero_grad()
opt.step()
for epoch in range(1, 5):
    sched.step(epoch)
    for _ in range(3):
        opt.zero_grad()
        model(torch.randn(8, 4)).sum().backward()
        opt.step()
'''
    assert [d for d in check(src, {"GL406"}) if d.code == "GL406"] == []
