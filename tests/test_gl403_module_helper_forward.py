"""GL403: the evaluation loop calls the model through a module-level function of the file that is
given the model as an argument (`targets, scores = forward(model, i, test_data)` after
`model.eval()`, CRIPAC-DIG/SR-GNN's `train_test`; PRECISION19 M1). The helper calls it with
autograd on and hands the output back: the loop records a graph per batch."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SRC = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x)


def forward(model, i, data):
    x, y = data[i]
    out = model(x){tail}
    return y, out


def train_test(model, optimizer, train_data, test_data):
    model.train()
    for i in range(len(train_data)):
        optimizer.zero_grad()
        targets, scores = forward(model, i, train_data)
        F.cross_entropy(scores, targets).backward()
        optimizer.step()
    model.eval()
    hits = 0
    {guard}for i in range(len(test_data)):
        {indent}targets, scores = forward({model}, i, test_data)
        {indent}hits += (scores.argmax(1) == targets).sum().item()
    return hits


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
data = [(torch.randn(8, 4), torch.randint(0, 3, (8,))) for _ in range(3)]
print(train_test(model, optimizer, data, data))
"""


def gl403(tail="", guard="", indent="", model="model") -> list[int]:
    rule = Registry.load().by_code("GL403")()
    src = textwrap.dedent(SRC.format(tail=tail, guard=guard, indent=indent, model=model))
    return [d.line for d in run_text("train.py", src, [rule], Options()).diagnostics]


def test_a_module_level_helper_given_the_model():
    assert gl403() == [32]


def test_hard_negatives():
    # the helper detaches what it hands back: no graph leaves it
    assert gl403(tail=".detach()") == []
    # under no_grad
    assert gl403(guard="with torch.no_grad():\n      ", indent="  ") == []
    # the helper is not given the model (a plain data function)
    assert gl403(model="None") == []
