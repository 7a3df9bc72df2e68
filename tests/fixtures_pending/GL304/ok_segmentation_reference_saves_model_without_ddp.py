# source: https://github.com/pytorch/vision/pull/2142
# fixture: torchrun 2
# torchvision's references/segmentation/train.py after the resume fix: main(args) wraps the model
# in DistributedDataParallel when args.distributed and keeps `model_without_ddp = model.module`;
# on --resume it loads `torch.load(args.resume, map_location="cpu")` into model_without_ddp (and
# the optimizer and lr scheduler) before training, calls train_sampler.set_epoch(epoch) every
# epoch, and saves `{"model": model_without_ddp.state_dict(), "optimizer": ..., "lr_scheduler":
# ..., "epoch": epoch, "args": args}` from the main process only. Plain keys on every path, CPU
# mapped resume: GL304 (and GL110, GL302) must stay silent.
import argparse
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class FCNHead(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
        self.classifier = nn.Conv2d(8, num_classes, 1)

    def forward(self, x):
        return {"out": self.classifier(self.backbone(x))}


def criterion(inputs, target):
    return F.cross_entropy(inputs["out"], target, ignore_index=255)


def train_one_epoch(model, criterion, optimizer, data_loader, lr_scheduler, device, epoch):
    model.train()
    total = 0.0
    for image, target in data_loader:
        image, target = image.to(device), target.to(device)
        output = model(image)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        lr_scheduler.step()
        total += loss.item()
    return total / len(data_loader)


def save_on_master(obj, path, rank):
    if rank == 0:
        torch.save(obj, path)


def main(args):
    args.distributed = "RANK" in os.environ and "WORLD_SIZE" in os.environ
    rank = 0
    if args.distributed:
        dist.init_process_group(backend="gloo")
        rank = dist.get_rank()
    device = torch.device(args.device)
    torch.manual_seed(0)
    images = torch.randn(64, 3, 8, 8)
    masks = (images[:, 0] > 0).long() + (images[:, 1] > 0.5).long()
    dataset = TensorDataset(images, masks)
    if args.distributed:
        train_sampler = DistributedSampler(dataset)
    else:
        train_sampler = torch.utils.data.RandomSampler(dataset)
    data_loader = DataLoader(dataset, batch_size=8, sampler=train_sampler, drop_last=True)

    model = FCNHead()
    model.to(device)
    model_without_ddp = model
    if args.distributed:
        model = torch.nn.parallel.DistributedDataParallel(model)
        model_without_ddp = model.module
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    lr_scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda x: (1 - x / (len(data_loader) * args.epochs)) ** 0.9)
    start_epoch = 0
    if args.resume and os.path.exists(args.resume):
        checkpoint = torch.load(args.resume, map_location="cpu", weights_only=False)
        model_without_ddp.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        lr_scheduler.load_state_dict(checkpoint["lr_scheduler"])
        start_epoch = checkpoint["epoch"] + 1

    history = []
    for epoch in range(start_epoch, args.epochs):
        if args.distributed:
            train_sampler.set_epoch(epoch)
        history.append(train_one_epoch(model, criterion, optimizer, data_loader, lr_scheduler, device, epoch))
        checkpoint = {
            "model": model_without_ddp.state_dict(),
            "optimizer": optimizer.state_dict(),
            "lr_scheduler": lr_scheduler.state_dict(),
            "epoch": epoch,
            "args": args,
        }
        save_on_master(checkpoint, os.path.join(args.output_dir, "checkpoint.pth"), rank)
    if rank == 0:
        print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
    if args.distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--resume", default="")
    parser.add_argument("--output-dir", default=".")
    main(parser.parse_args([]))
