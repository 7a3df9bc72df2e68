# source: https://github.com/wjmaddox/swa_gaussian/pull/12
# SWAG's `run_swag.py` picks `args.device` (CUDA when available, else the CPU) and moves the
# model with `model.to(args.device)`, but the helpers it calls from `swag/utils.py`,
# `train_epoch(loader, model, criterion, optimizer)` and `eval(loader, model, criterion)`, send
# every batch to the GPU with bare `input.cuda(non_blocking=True)` /
# `target.cuda(non_blocking=True)`, so a CPU-only run stops in the first training step with
# "AssertionError: Torch not compiled with CUDA enabled". The PR adds a `cuda` flag to the
# helpers, set from the same availability test. (CIFAR replaced by synthetic 3x8x8 images of 4
# classes; `losses.cross_entropy(model, input, target)` kept as the criterion the helpers call;
# helpers, criterion and driver in one file. One marker per helper, at its first `.cuda()`: the rule
# reports the run-time-fallback meeting once per group, naming the second line.)
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


def cross_entropy(model, input, target):
    output = model(input)
    loss = F.cross_entropy(output, target)
    return loss, output


def train_epoch(loader, model, criterion, optimizer):
    loss_sum = 0.0
    correct = 0.0
    num_objects_current = 0
    model.train()
    for i, (input, target) in enumerate(loader):
        input = input.cuda(non_blocking=True)  # expect: GL102
        target = target.cuda(non_blocking=True)
        loss, output = criterion(model, input, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss_sum += loss.data.item() * input.size(0)
        pred = output.data.argmax(1, keepdim=True)
        correct += pred.eq(target.data.view_as(pred)).sum().item()
        num_objects_current += input.size(0)
    return {"loss": loss_sum / num_objects_current, "accuracy": correct / num_objects_current * 100.0}


def eval(loader, model, criterion):
    loss_sum = 0.0
    correct = 0.0
    model.eval()
    with torch.no_grad():
        for i, (input, target) in enumerate(loader):
            input = input.cuda(non_blocking=True)  # expect: GL102
            target = target.cuda(non_blocking=True)
            loss, output = criterion(model, input, target)
            loss_sum += loss.item() * input.size(0)
            pred = output.data.argmax(1, keepdim=True)
            correct += pred.eq(target.data.view_as(pred)).sum().item()
    return {"loss": loss_sum / len(loader.dataset), "accuracy": correct / len(loader.dataset) * 100.0}


def make_loaders(seed=0):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 4, (256,), generator=g)
    images = torch.randn(256, 3, 8, 8, generator=g) * 0.5 + labels.float()[:, None, None, None] / 2
    ds = torch.utils.data.TensorDataset(images, labels)
    train, test = torch.utils.data.random_split(ds, [192, 64], generator=g)
    return {
        "train": torch.utils.data.DataLoader(train, batch_size=32, shuffle=True),
        "test": torch.utils.data.DataLoader(test, batch_size=64),
    }


if torch.cuda.is_available():
    device = torch.device("cuda")
else:
    device = torch.device("cpu")

torch.manual_seed(0)
loaders = make_loaders()
model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(32, 4))
model.to(device)
criterion = cross_entropy
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
losses = []
for epoch in range(5):
    train_res = train_epoch(loaders["train"], model, criterion, optimizer)
    test_res = eval(loaders["test"], model, criterion)
    losses.append(train_res["loss"])
    print(epoch, train_res, test_res)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
