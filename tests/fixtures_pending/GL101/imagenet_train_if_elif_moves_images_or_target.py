# source: https://github.com/pytorch/examples/issues/1071
# The ImageNet example after MPS support was added (September 2022): main_worker() moves the model
# with `model.cuda(args.gpu)` when a GPU index is given, and train() moves each batch through an
# if/elif/elif chain: images only when `args.gpu is not None`, target only in the `elif not
# args.gpu` branch, both only for MPS. With a GPU index (the reporter's --multiprocessing-distributed
# run sets one per process; here the single-process `--gpu 0` path, which takes the same branch) the
# target stays on the host and the criterion fails (fixed in PR #1073: train() gets the device from
# main_worker and moves both). Small CNN, synthetic 3x16x16 images, AverageMeter bookkeeping.
# fails-on-cuda: Expected all tensors to be on the same device
import json
import time
from types import SimpleNamespace

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class AverageMeter:
    def __init__(self, name):
        self.name = name
        self.sum = 0.0
        self.count = 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n


def make_model(num_classes=4):
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(128, num_classes))


def train(train_loader, model, criterion, optimizer, epoch, args, history):
    losses = AverageMeter("Loss")
    model.train()
    end = time.time()
    for i, (images, target) in enumerate(train_loader):
        if args.gpu is not None and torch.cuda.is_available():
            images = images.cuda(args.gpu, non_blocking=True)
        elif not args.gpu and torch.cuda.is_available():
            target = target.cuda(args.gpu, non_blocking=True)
        elif torch.backends.mps.is_available():
            images = images.to("mps")
            target = target.to("mps")

        output = model(images)
        loss = criterion(output, target)  # expect: GL101
        losses.update(loss.item(), images.size(0))
        history.append(loss.item())

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        end = time.time()


def main_worker(gpu, args):
    args.gpu = gpu
    torch.manual_seed(0)
    model = make_model()
    if not torch.cuda.is_available() and not torch.backends.mps.is_available():
        print("using CPU, this will be slow")
    elif args.gpu is not None and torch.cuda.is_available():
        torch.cuda.set_device(args.gpu)
        model = model.cuda(args.gpu)
    elif torch.backends.mps.is_available():
        model = model.to(torch.device("mps"))
    else:
        model = torch.nn.DataParallel(model).cuda()

    if torch.cuda.is_available():
        device = torch.device("cuda:{}".format(args.gpu)) if args.gpu is not None else torch.device("cuda")
    elif torch.backends.mps.is_available():
        device = torch.device("mps")
    else:
        device = torch.device("cpu")
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=args.momentum)

    g = torch.Generator().manual_seed(0)
    target = torch.randint(0, 4, (256,), generator=g)
    images = torch.randn(256, 3, 16, 16, generator=g) + target.view(-1, 1, 1, 1).float()
    train_loader = DataLoader(TensorDataset(images, target), batch_size=args.batch_size, shuffle=True, generator=g)
    history = []
    for epoch in range(args.epochs):
        train(train_loader, model, criterion, optimizer, epoch, args, history)
    return history, device


args = SimpleNamespace(gpu=None, lr=0.05, momentum=0.9, batch_size=32, epochs=3)
history, device = main_worker(0 if torch.cuda.is_available() else None, args)
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(history[:4]) / 4, "last_loss": sum(history[-4:]) / 4, "device": device.type}))
