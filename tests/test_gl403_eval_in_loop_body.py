"""GL403: a loop that switches the model to evaluation mode itself (`classifier = classifier.eval()`
as one of its statements: fxia22/pointnet.pytorch's final test loop, precision11) is an evaluation
loop even when the code before it left the model in training mode."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SRC = """
import torch
import torch.nn as nn

classifier = nn.Linear(3, 2).cuda()
optimizer = torch.optim.SGD(classifier.parameters(), lr=0.1)
data = [(torch.randn(4, 3), torch.randint(0, 2, (4,))) for _ in range(3)]
for epoch in range(2):
    for points, target in data:
        points, target = points.cuda(), target.cuda()
        optimizer.zero_grad()
        classifier = classifier.train()
        loss = nn.functional.cross_entropy(classifier(points), target)
        loss.backward()
        optimizer.step()

total = 0
for points, target in data:
    points, target = points.cuda(), target.cuda()
    classifier = classifier.eval()
    pred = classifier(points)
    total += pred.argmax(1).eq(target).sum().item()
"""


def codes(src):
    reg = Registry.load()
    return [(d.code, d.line) for d in run_text("t.py", textwrap.dedent(src), [reg.by_code("GL403")()], Options()).diagnostics]


def test_eval_switched_inside_the_loop():
    assert codes(SRC) == [("GL403", 21)]


def test_statement_form():
    assert codes(SRC.replace("    classifier = classifier.eval()", "    classifier.eval()")) == [("GL403", 21)]


def test_no_grad_is_silent():
    src = SRC.replace("    pred = classifier(points)", "    with torch.no_grad():\n        pred = classifier(points)")
    assert codes(src) == []


def test_loop_that_switches_back_to_training_is_silent():
    src = SRC.replace("    total += pred", "    classifier.train()\n    total += pred")
    assert codes(src) == []


def test_training_loop_with_eval_for_a_teacher_is_silent():
    # the loop trains (backward, step): eval() of another model in it does not make it evaluation
    src = SRC.replace("    total += pred.argmax(1).eq(target).sum().item()",
                      "    loss = nn.functional.cross_entropy(pred, target)\n    loss.backward()\n    optimizer.step()")
    assert codes(src) == []
