"""GL404: `self.eval()` inside the training loop of a plain trainer class whose own `eval()` method
is the evaluation pass (ContextualAI/HALOs train/trainers.py, `PPOTrainer.train()` calling
`self.eval()`; the trainer also has a `forward(model, batch)` method, so it looked like a module)
is not `nn.Module.eval`: reporting it as a module left in eval mode, with the safe fix
`self.train()` inserted into `train()` itself, makes the method recurse."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

SRC = """
import torch
import torch.nn as nn


class Trainer(object):
    def __init__(self, policy, batches, eval_batches):
        self.policy = policy
        self.batches = batches
        self.eval_batches = eval_batches
        self.optimizer = torch.optim.SGD(policy.parameters(), lr=0.1)

    def forward(self, model, x):
        return model(x)

    def get_batch_metrics(self, x):
        return self.forward(self.policy, x).pow(2).mean()

    def eval(self):
        self.policy.eval()
        with torch.no_grad():
            return sum(self.get_batch_metrics(x).item() for x in self.eval_batches)

    def train(self):
        self.policy.train()
        for step, x in enumerate(self.batches):
            if step % 5 == 0:
                print(self.eval())
            self.optimizer.zero_grad()
            loss = self.get_batch_metrics(x)
            loss.backward()
            self.optimizer.step()


policy = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.1), nn.Linear(8, 1))
Trainer(policy, [torch.randn(2, 4) for _ in range(10)], [torch.randn(2, 4)]).train()
"""


def test_trainer_eval_method_is_not_module_eval():
    src = textwrap.dedent(SRC)
    assert [d for d in check(src, ["GL404"]) if "`self.eval()`" in d.message] == []
    out = fix(src, ["GL404"], unsafe=True)
    assert out.text.count("self.train()") == src.count("self.train()")


MODULE_OVERRIDE = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.1), nn.Linear(8, 1))

    def forward(self, x):
        return self.body(x)

    def eval(self):
        print("eval mode")
        return super().eval()


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model.train()
for epoch in range(3):
    for x in [torch.randn(2, 4) for _ in range(4)]:
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        print(model(torch.randn(2, 4)).sum().item())
"""


def test_module_overriding_eval_stays_reported():
    # an `nn.Module` subclass's own `eval()` still switches the mode
    diags = check(textwrap.dedent(MODULE_OVERRIDE), ["GL404"])
    assert [(d.line, "`model.eval()`" in d.message) for d in diags] == [(27, True)]
