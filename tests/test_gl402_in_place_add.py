"""GL402: `acc.add_(loss)`, the in-place form of `acc += loss`, keeps the loss's graph on the
accumulator exactly as `+=` does (NVIDIA/DeepLearningExamples#1102: BERT's
`take_training_step()` ran `stats.device_stat("average_loss").add_(loss)` with the undetached
loss; PR #1104 added `.clone().detach()`). Before, only `+=`, `acc = acc + v` and `append` were
accumulations. Also in a step function without a loop of its own, called from a loop, when the
receiver belongs to a parameter that the loop passes the same object for."""

from __future__ import annotations

from fixture_support import check, fix

LOOP = '''import torch
import torch.nn as nn

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
running = torch.zeros(1)
for step in range(20):
    loss = model(torch.randn(8, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    running.add_(VALUE)
print(running)
'''

STEP = '''import torch
import torch.nn as nn


class Stats:
    def __init__(self):
        self.device_stats = {"loss": torch.zeros(1)}

    def device_stat(self, name):
        return self.device_stats[name]


def take_training_step(model, x, stats):
    loss = model(x).pow(2).mean()
    stats.device_stat("loss").add_(VALUE)
    loss.backward()


model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
STATS_OUTSIDE
for step in range(5):
    STATS_INSIDE
    take_training_step(model, torch.randn(8, 4), stats)
    opt.step()
    opt.zero_grad()
'''


def _gl402(text):
    return [(d.line, d.code) for d in check(text, {"GL402"}) if d.code == "GL402"]


def test_in_place_add_in_the_loop():
    text = LOOP.replace("VALUE", "loss")
    assert _gl402(text) == [(12, "GL402")]
    out = fix(text, {"GL402"}, unsafe=False).text
    assert "    running.add_(loss.detach())\n" in out
    assert _gl402(out) == []


def test_in_place_add_of_a_detached_value_or_with_a_second_argument():
    assert _gl402(LOOP.replace("VALUE", "loss.detach()")) == []
    assert _gl402(LOOP.replace("VALUE", "loss.item()")) == []
    assert _gl402(LOOP.replace("VALUE", "loss, loss")) == []  # not the one-operand form


def test_in_place_add_on_a_tensor_method_result_is_no_accumulator():
    text = LOOP.replace("running.add_(VALUE)", "running.mul_(0.9).add_(loss)")
    assert _gl402(text) == []


def test_step_function_add_into_a_kept_object():
    text = STEP.replace("VALUE", "loss").replace("STATS_OUTSIDE", "stats = Stats()").replace("    STATS_INSIDE\n", "")
    assert _gl402(text) == [(15, "GL402")]
    out = fix(text, {"GL402"}, unsafe=False).text
    assert '    stats.device_stat("loss").add_(loss.detach())\n' in out
    assert _gl402(out) == []


def test_step_function_add_negatives():
    base = STEP.replace("STATS_OUTSIDE", "stats = Stats()").replace("    STATS_INSIDE\n", "")
    assert _gl402(base.replace("VALUE", "loss.detach()")) == []
    # a new object every iteration: the graph dies with it
    fresh = STEP.replace("VALUE", "loss").replace("STATS_OUTSIDE\n", "").replace("STATS_INSIDE", "stats = Stats()")
    assert _gl402(fresh) == []
    # under no_grad
    nograd = base.replace("VALUE", "loss").replace(
        '    stats.device_stat("loss").add_(loss)\n',
        '    with torch.no_grad():\n        stats.device_stat("loss").add_(loss)\n')
    assert _gl402(nograd) == []
