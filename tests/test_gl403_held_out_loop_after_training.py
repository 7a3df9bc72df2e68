"""GL403: the final test-accuracy check of a course script, a loop over a loader of held-out data
(`for x, y in test_loader:`) after the training loop, at module level or in the same function,
calling the trained model with autograd on (PRECISION19 M5: dragen1860's lessons 05 and 32, whose
validation loop nested in the epoch loop was already reported)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SCRIPT = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

train_loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randint(0, 2, (32,))), batch_size=8)
test_loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,))), batch_size=8)
net = nn.Linear(4, 2)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in train_loader:
        loss = F.cross_entropy(net(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

total_correct = 0
for x, y in {loader}:
    out = {model}(x)
    total_correct += out.argmax(dim=1).eq(y).sum().item()
print(total_correct)
"""

FUNCTION = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def main(train_loader, valid_loader):
    model = nn.Linear(4, 2)
    opt = torch.optim.Adam(model.parameters())
    for epoch in range(3):
        for x, y in train_loader:
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
    {guard}
    correct = 0
    for x, y in valid_loader:
        correct += (model(x).argmax(1) == y).sum().item()
    return correct


data = TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,)))
print(main(DataLoader(data, batch_size=4, shuffle=True), DataLoader(data, batch_size=4)))
"""


def gl403(src: str) -> list[int]:
    rule = Registry.load().by_code("GL403")()
    return [d.line for d in run_text("train.py", textwrap.dedent(src), [rule], Options()).diagnostics]


def test_a_test_loop_after_training_at_module_level():
    assert gl403(SCRIPT.format(loader="test_loader", model="net")) == [20]


def test_a_validation_loop_after_training_in_a_function():
    found = run_text("train.py", textwrap.dedent(FUNCTION.format(guard="pass")),
                     [Registry.load().by_code("GL403")()], Options()).diagnostics
    assert [d.line for d in found] == [19]
    assert found[0].fix is not None  # wrapped in `with torch.no_grad():`


def test_hard_negatives():
    # a loader not named as held-out data (a second pass over the training data)
    assert gl403(SCRIPT.format(loader="train_loader", model="net")) == []
    # another model than the trained one (a frozen teacher of another file)
    src = SCRIPT.format(loader="test_loader", model="teacher").replace(
        "net = nn.Linear(4, 2)", "net = nn.Linear(4, 2)\nteacher = nn.Linear(4, 2)")
    assert gl403(src) == []
    # already under no_grad
    src = SCRIPT.format(loader="test_loader", model="net").replace(
        "for x, y in test_loader:\n    out = net(x)", "with torch.no_grad():\n  for x, y in test_loader:\n    out = net(x)")
    assert gl403(src) == []
    # test-time training (a backward pass in the held-out loop)
    src = FUNCTION.format(guard="pass").replace(
        "correct += (model(x).argmax(1) == y).sum().item()",
        "F.cross_entropy(model(x), y).backward()")
    assert gl403(src) == []
    # `torch.set_grad_enabled(False)` before it
    assert gl403(FUNCTION.format(guard="torch.set_grad_enabled(False)")) == []
