# source: https://github.com/pytorch/xla/issues/2029
# fixture: torchrun 2
# pytorch/xla's multi-core AlexNet/Fashion-MNIST Colab: map_fn(index, flags) calls train_mnist(),
# which builds a DistributedSampler (num_replicas = world size, rank = ordinal, shuffle=True)
# and a DataLoader over it, then for each epoch wraps the loader in a ParallelLoader and hands
# `para_loader.per_device_loader(device)` to the nested train_loop_fn(). set_epoch is never
# called, so "the training data is not really randomized": every epoch sees the same order.
# (torch_xla is not available here: xm.xrt_world_size()/get_ordinal() are the process group's
# world size and rank under torchrun, and ParallelLoader is a small stand-in with the same API.)
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class ParallelLoader:
    def __init__(self, loader, devices):
        self._loader = loader
        self._devices = devices

    def per_device_loader(self, device):
        for data, target in self._loader:
            yield data.to(device), target.to(device)


class AlexNetSmall(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Dropout(0.1), nn.Linear(8 * 4 * 4, num_classes))

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


def train_mnist(flags, world_size, ordinal):
    torch.manual_seed(flags["seed"])
    images = torch.randn(128, 1, 8, 8)
    labels = (images.mean(dim=(1, 2, 3)) > 0).long() + 2 * (images[:, 0, 0, 0] > 0).long()
    train_dataset = TensorDataset(images, labels)
    train_sampler = DistributedSampler(train_dataset, num_replicas=world_size, rank=ordinal, shuffle=True)  # expect: GL302
    train_loader = DataLoader(train_dataset, batch_size=flags["batch_size"], sampler=train_sampler,
                              num_workers=flags["num_workers"], drop_last=True)
    device = torch.device("cpu")
    net = nn.parallel.DistributedDataParallel(AlexNetSmall().to(device))
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05 * world_size, momentum=0.5)
    losses = []

    def train_loop_fn(loader):
        net.train()
        total = 0.0
        count = 0
        for x, (data, target) in enumerate(loader):
            optimizer.zero_grad()
            output = net(data)
            loss = loss_fn(output, target)
            loss.backward()
            optimizer.step()
            total += loss.item()
            count += 1
        losses.append(total / count)

    for epoch in range(1, flags["num_epochs"] + 1):
        para_loader = ParallelLoader(train_loader, [device])
        train_loop_fn(para_loader.per_device_loader(device))
    return losses


def map_fn(index, flags):
    dist.init_process_group(backend="gloo")
    losses = train_mnist(flags, dist.get_world_size(), dist.get_rank())
    if dist.get_rank() == 0:
        print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": "cpu"}))
    dist.destroy_process_group()


if __name__ == "__main__":
    flags = {"seed": 1234, "batch_size": 16, "num_workers": 0, "num_epochs": 8}
    map_fn(int(os.environ.get("LOCAL_RANK", 0)), flags)
