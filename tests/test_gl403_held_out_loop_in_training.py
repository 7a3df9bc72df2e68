"""GL403 on a loop over a held-out loader (`test_loader`, `val_dl`) nested in the training loop: the
test-accuracy check of course notebooks (emadRad/lstm-gru-pytorch lstm_gru.ipynb, PRECISION17.md
M2), run every N iterations with autograd on and no `model.eval()` or evaluation function around
it. Hard negatives: a nested loop that trains, one under `no_grad`/`inference_mode`, one whose
outputs are detached, one that uses gradients, and a held-out name that is not a loader."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

HEAD = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

X, Y = torch.randn(64, 8), torch.randint(0, 3, (64,))
train_loader = DataLoader(TensorDataset(X, Y), batch_size=16, shuffle=True)
test_loader = DataLoader(TensorDataset(X, Y), batch_size=32)
model = nn.Linear(8, 3)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
step = 0
for epoch in range(2):
    for images, labels in train_loader:
        optimizer.zero_grad()
        loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()
        step += 1
        if step % 4 == 0:
"""


def source(inner: str, head: str = HEAD) -> str:
    return textwrap.dedent(head) + textwrap.indent(textwrap.dedent(inner), " " * 12)


def gl403(inner: str, head: str = HEAD) -> list[int]:
    return [d.line for d in check(source(inner, head), ["GL403"])]


def line_of(inner: str, needle: str) -> int:
    return next(i for i, ln in enumerate(source(inner).splitlines(), 1) if needle in ln)


ACCURACY = """
correct = 0
for images, labels in test_loader:
    outputs = model(images)
    _, predicted = torch.max(outputs.data, 1)
    correct += (predicted == labels).sum()
print(step, correct.item())
"""


def test_test_accuracy_loop_in_the_training_loop_fires():
    assert gl403(ACCURACY) == [line_of(ACCURACY, "outputs = model(images)")]


def test_the_fix_wraps_the_inner_loop_in_no_grad():
    out = fix(source(ACCURACY), ["GL403"], unsafe=False).text
    assert "            with torch.no_grad():\n                for images, labels in test_loader:\n" in out
    assert [d.line for d in check(out, ["GL403"])] == []


def test_enumerate_over_a_validation_loader_fires():
    head = HEAD.replace("test_loader", "val_dl")
    inner = """
    for i, (x, y) in enumerate(val_dl):
        acc = (model(x).argmax(1) == y).float().mean()
    """
    src = source(inner, head)
    want = next(i for i, ln in enumerate(src.splitlines(), 1) if "model(x)" in ln)
    assert gl403(inner, head) == [want]


# hard negatives ----------------------------------------------------------------------------------

def test_a_nested_loop_that_trains_is_silent():
    assert gl403("""
    for images, labels in test_loader:
        optimizer.zero_grad()
        criterion(model(images), labels).backward()
        optimizer.step()
    """) == []


def test_a_nested_loop_under_no_grad_is_silent():
    assert gl403("""
    with torch.no_grad():
        for images, labels in test_loader:
            correct = (model(images).argmax(1) == labels).sum()
    """) == []


def test_a_nested_loop_under_inference_mode_is_silent():
    assert gl403("""
    with torch.inference_mode():
        for images, labels in test_loader:
            correct = (model(images).argmax(1) == labels).sum()
    """) == []


def test_a_nested_loop_whose_outputs_are_detached_is_silent():
    assert gl403("""
    for images, labels in test_loader:
        outputs = model(images).detach()
        correct = (outputs.argmax(1) == labels).sum()
    """) == []


def test_a_nested_loop_that_uses_gradients_is_silent():
    assert gl403("""
    for images, labels in test_loader:
        images.requires_grad_(True)
        saliency = torch.autograd.grad(model(images).sum(), images)[0]
    """) == []


def test_a_held_out_name_that_is_not_a_loader_is_silent():
    assert gl403("""
    for test_set in ["a", "b"]:
        print(test_set, model(X[:4]).argmax(1))
    """) == []

