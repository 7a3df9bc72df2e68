# source: https://github.com/d2l-ai/d2l-en/pull/2461
# d2l "Concise Implementation for Multiple GPUs" (PyTorch tab): a module-level ResNet is handed to
# `train(net, num_gpus, batch_size, lr)`, which initialises its weights with `net.apply`, wraps it
# with `nn.DataParallel(net, device_ids=devices)` and moves every batch to `devices[0]` - but the
# network itself is never moved there. The notebook only worked because an earlier single-GPU cell
# had moved the parameters; run on its own, the multi-GPU cell fails with "module must have its
# parameters and buffers on device cuda:0 (device_ids[0]) but found one of them on device: cpu".
# The PR adds the missing move. Here: a small conv net, synthetic 28x28 images, the book's helpers
# (`try_gpu`, `evaluate_accuracy_gpu`) written out.
# (Like the book's cell, the script asks for two GPUs: on the CPU it trains, and
# `gpulint run --gpus 2 file.py` fails with the error above; one GPU is not enough to see it,
# DataParallel moves the module itself when it is given a single device.)
# fixture: static (needs two GPUs to fail; checked by hand on the CPU and with `gpulint run --gpus 2`)
# fails-on-cuda: module must have its parameters and buffers on device cuda:0
import json

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def try_gpu(i=0):
    if torch.cuda.device_count() >= i + 1:
        return torch.device(f"cuda:{i}")
    return torch.device("cpu")


def small_resnet(num_classes, in_channels=1):
    return nn.Sequential(
        nn.Conv2d(in_channels, 8, kernel_size=3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        nn.Conv2d(8, 16, kernel_size=3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(16, num_classes))


def load_data(batch_size, n=512, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 1, 28, 28, generator=g)
    y = (X[:, :, :14].mean(dim=(1, 2, 3)) > X[:, :, 14:].mean(dim=(1, 2, 3))).long()
    train_iter = DataLoader(TensorDataset(X[:384], y[:384]), batch_size=batch_size, shuffle=True, generator=g)
    test_iter = DataLoader(TensorDataset(X[384:], y[384:]), batch_size=batch_size)
    return train_iter, test_iter


def evaluate_accuracy_gpu(net, data_iter, device=None):
    if isinstance(net, nn.Module):
        net.eval()
        if not device:
            device = next(iter(net.parameters())).device
    correct, total = 0.0, 0
    with torch.no_grad():
        for X, y in data_iter:
            X, y = X.to(device), y.to(device)
            correct += float((net(X).argmax(dim=1) == y).sum())
            total += y.numel()
    return correct / total


def train(net, num_gpus, batch_size, lr):
    train_iter, test_iter = load_data(batch_size)
    devices = [try_gpu(i) for i in range(num_gpus)]

    def init_weights(m):
        if type(m) in [nn.Linear, nn.Conv2d]:
            nn.init.normal_(m.weight, std=0.01)

    net.apply(init_weights)
    # Set model on multiple GPUs
    net = nn.DataParallel(net, device_ids=devices)
    trainer = torch.optim.SGD(net.parameters(), lr)
    loss = nn.CrossEntropyLoss()
    losses = []
    for epoch in range(6):
        net.train()
        for X, y in train_iter:
            trainer.zero_grad()
            X, y = X.to(devices[0]), y.to(devices[0])
            l = loss(net(X), y)  # expect: GL112
            l.backward()
            trainer.step()
            losses.append(l.item())
        print(f"epoch {epoch + 1}, test acc {evaluate_accuracy_gpu(net, test_iter):.2f}")
    return losses, devices


torch.manual_seed(0)
net = small_resnet(10)
losses, devices = train(net, num_gpus=2, batch_size=64, lr=0.2)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": devices[0].type}))
