"""GL403 in a continual-learning "learner" that is itself an nn.Module (AlwaysBeDreaming-DFCIL#9:
`NormalNN(nn.Module)` keeps `self.model` and `self.optimizer`, trains in `update_model` with
`backward()`/`optimizer.step()`, and its `validation(dataloader)` runs `model.eval()` and
`model.forward(input)` with autograd on). A module class that trains itself is a trainer: its
evaluation loops are the caller's loops, not a forward's. The explicit `model.forward(x)` call is a
model call too. A plain layer's own loop (no optimizer of its own) stays silent."""

from __future__ import annotations

import textwrap

from fixture_support import check

LEARNER = """
import torch
import torch.nn as nn


class Learner(BASE):
    def __init__(self):
        INIT
        self.model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def update_model(self, x, y):
        loss = nn.functional.cross_entropy(self.model(x), y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.detach()

    def validation(self, dataloader, model=None):
        if model is None:
            model = self.model
        orig_mode = model.training
        model.eval()
        correct = 0
        for x, y in dataloader:
            output = CALL
            correct += (output.argmax(1) == y).sum().item()
        model.train(orig_mode)
        return correct


learner = Learner()
data = [(torch.randn(8, 4), torch.randint(0, 2, (8,))) for _ in range(3)]
for x, y in data:
    learner.update_model(x, y)
print(learner.validation(data))
"""


def _lines(base: str, call: str) -> list[int]:
    init = "super().__init__()" if base == "nn.Module" else "pass"
    src = textwrap.dedent(LEARNER).replace("BASE", base).replace("INIT", init).replace("CALL", call)
    return [d.line for d in check(src, {"GL403"}) if d.code == "GL403"]


def test_learner_module_validation_is_reported():
    assert _lines("nn.Module", "model(x)") == [26]


def test_explicit_forward_call_is_reported():
    assert _lines("object", "model.forward(x)") == [26]


def test_learner_module_with_explicit_forward_is_reported():
    assert _lines("nn.Module", "model.forward(x)") == [26]


def test_plain_learner_module_call_still_reported():
    assert _lines("object", "model(x)") == [26]


def test_layer_with_own_loop_and_no_optimizer_is_silent():
    # a module whose forward loops over its blocks after `self.eval()`-style code: no training of its own
    src = textwrap.dedent("""
    import torch
    import torch.nn as nn


    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

        def predict(self, batches):
            self.eval()
            out = []
            for x in batches:
                out.append(self.blocks[0].forward(x))
            return out


    net = Stack()
    print(net.predict([torch.randn(2, 4)]))
    """)
    assert [d for d in check(src, {"GL403"}) if d.code == "GL403"] == []
