"""GL206 across functions in pytorch_resnet_cifar10's shape (the seventh precision pass's miss,
trainer.py:113): `model.half()` in `main()`, the optimizer built there, and the backward pass in
`train(train_loader, model, criterion, optimizer, epoch)`, a function of the file main() calls."""

from __future__ import annotations

from fixture_support import check

SRC = """
import torch
import torch.nn as nn


def train(loader, model, criterion, optimizer):
    model.train()
    for x, y in loader:
        loss = criterion(model(x.half()), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def evaluate(loader, model):
    with torch.no_grad():
        return [model(x.half()).argmax(1) for x, _ in loader]


def main(half=True):
    model = nn.Linear(4, 2).cuda()
    criterion = nn.CrossEntropyLoss().cuda()
    loader = [(torch.randn(8, 4).cuda(), torch.randint(0, 2, (8,)).cuda())]
    BEFORE
    if half:
        model.half()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    AFTER


if __name__ == "__main__":
    main()
"""


def lines(before: str, after: str) -> list[int]:
    src = SRC.replace("BEFORE", before).replace("AFTER", after)
    return [d.line for d in check(src, {"GL206"}) if d.code == "GL206"]


def test_half_in_main_then_the_training_function_is_reported():
    assert lines("pass", "train(loader, model, criterion, optimizer)") == [26]  # model.half()


def test_half_for_evaluation_only_is_silent():
    assert lines("pass", "evaluate(loader, model)") == []


def test_training_before_the_conversion_is_silent():
    assert lines("train(loader, model, criterion, torch.optim.SGD(model.parameters(), lr=0.1))",
                 "evaluate(loader, model)") == []
