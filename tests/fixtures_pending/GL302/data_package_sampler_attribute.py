# source: https://github.com/Snowdar/asv-subtools/issues/8
# fixture: torchrun 2
# The data package object owns the DistributedSampler (data.train_sampler) and the loader built
# on it; the trainer's epoch loop iterates data.train_loader and never calls
# data.train_sampler.set_epoch(this_epoch), so the shuffle order repeats every epoch.
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Bunch:
    def __init__(self, trainset, batch_size, use_ddp):
        if use_ddp:
            self.train_sampler = DistributedSampler(trainset, shuffle=True)  # expect: GL302
            self.train_loader = DataLoader(trainset, batch_size=batch_size, sampler=self.train_sampler)
        else:
            self.train_sampler = None
            self.train_loader = DataLoader(trainset, batch_size=batch_size, shuffle=True)


class SimpleTrainer:
    def __init__(self, data, model, epochs):
        self.data = data
        self.model = model
        self.epochs = epochs
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        self.loss_fn = nn.CrossEntropyLoss()

    def run(self):
        history = []
        for this_epoch in range(self.epochs):
            for inputs, targets in self.data.train_loader:
                self.optimizer.zero_grad()
                loss = self.loss_fn(self.model(inputs), targets)
                loss.backward()
                self.optimizer.step()
                history.append(loss.item())
        return history


dist.init_process_group("gloo")
torch.manual_seed(0)
x = torch.randn(256, 10)
y = (x[:, 1] > 0).long()
data = Bunch(TensorDataset(x, y), batch_size=16, use_ddp=True)
model = DDP(nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 2)))
history = SimpleTrainer(data, model, epochs=4).run()
if dist.get_rank() == 0:
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": "cpu"}))
dist.destroy_process_group()
