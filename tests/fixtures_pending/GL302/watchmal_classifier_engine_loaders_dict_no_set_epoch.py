# source: https://github.com/WatChMaL/WatChMaL/commit/f27d05ccd7a06d7be74e6bbcd84c0d70e703226e
# fixture: torchrun 2
# WatChMaL's `main_worker_function` builds one DataLoader per task with `get_data_loader(...)`, a
# helper that swaps in a DistributedSampler when more than one GPU is used, stores the loaders in a
# dict by name and hands the dict to `ClassifierEngine`, which keeps it as `self.data_loaders`.
# `ClassifierEngine.train()` loops `while floor(epoch) < epochs` over `self.data_loaders["train"]`
# and never calls `set_epoch` on the loader's sampler, so every epoch replays the same per-rank
# order; the commit "fixed added set_epoch for train_loader" adds
# `train_loader.sampler.set_epoch(floor(epoch))` for the distributed case.
# (A tiny classifier on synthetic events; gloo on the CPU under torchrun, one process per rank.)
import json
import os
from math import floor

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, RandomSampler, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class ResNetClassifier(nn.Module):
    def __init__(self, n_features=12, num_classes=3):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_features, 32), nn.ReLU(), nn.Linear(32, num_classes))

    def forward(self, x):
        return self.net(x)


def make_dataset(n, seed):
    g = torch.Generator().manual_seed(seed)
    data = torch.randn(n, 12, generator=g)
    labels = data[:, :3].argmax(dim=1)
    return TensorDataset(data, labels)


def get_data_loader(dataset, batch_size, num_workers=0, gpu=None, ngpus=1):
    sampler = RandomSampler(dataset)
    if ngpus > 1:
        print("Using distributed sampler")
        sampler = DistributedSampler(dataset, num_replicas=ngpus, rank=gpu)  # expect: GL302
    return DataLoader(dataset, sampler=sampler, batch_size=batch_size, num_workers=num_workers)


class ClassifierEngine:
    def __init__(self, model, gpu, data_loaders, rank):
        self.model = model
        self.device = torch.device("cuda", gpu) if torch.cuda.is_available() else torch.device("cpu")
        if isinstance(self.model, DDP):
            self.model_accs = self.model.module
        else:
            self.model_accs = self.model
        self.data_loaders = data_loaders
        self.rank = rank
        self.criterion = nn.CrossEntropyLoss()
        self.optimizer = None

    def configure_optimizers(self, lr):
        self.optimizer = torch.optim.Adam(self.model_accs.parameters(), lr=lr)

    def forward(self, data, labels, train=True):
        with torch.set_grad_enabled(train):
            outputs = self.model(data.to(self.device))
            loss = self.criterion(outputs, labels.to(self.device))
        return loss

    def train(self, epochs):
        epoch = 0.0
        losses = []
        while floor(epoch) < epochs:
            train_loader = self.data_loaders["train"]
            for i, (data, labels) in enumerate(self.data_loaders["train"]):
                self.model.train()
                loss = self.forward(data, labels, True)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                epoch += 1.0 / len(train_loader)
                losses.append(loss.item())
        return losses


def main_worker_function(gpu, ngpus_per_node):
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    if torch.cuda.is_available():
        torch.cuda.set_device(gpu)
    dist.init_process_group(backend, init_method="env://", world_size=ngpus_per_node, rank=gpu)
    torch.manual_seed(0)
    model = ResNetClassifier()
    if torch.cuda.is_available():
        model = model.to(gpu)
    model = DDP(model, device_ids=[gpu] if torch.cuda.is_available() else None)

    data_loaders = {}
    for name, (n, seed) in {"train": (1024, 0), "validation": (256, 1)}.items():
        data_loaders[name] = get_data_loader(make_dataset(n, seed), batch_size=64, gpu=gpu, ngpus=ngpus_per_node)

    engine = ClassifierEngine(model=model, gpu=gpu, data_loaders=data_loaders, rank=gpu)
    engine.configure_optimizers(lr=1e-2)
    losses = engine.train(epochs=4)
    if gpu == 0:
        print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": engine.device.type}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main_worker_function(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
