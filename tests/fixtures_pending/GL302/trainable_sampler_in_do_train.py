# source: https://github.com/BatsResearch/taglets/pull/28
# fixture: torchrun 2
# Trainable._do_train() builds a DistributedSampler for the training set and runs its epoch loop
# through self._train_epoch() without ever calling set_epoch, so every epoch sees the same order.
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Trainable:
    def __init__(self, model, num_epochs=4, batch_size=16):
        self.model = model
        self.num_epochs = num_epochs
        self.batch_size = batch_size
        self.criterion = nn.CrossEntropyLoss()

    def _train_epoch(self, train_data_loader, optimizer):
        self.model.train()
        losses = []
        for inputs, labels in train_data_loader:
            optimizer.zero_grad()
            loss = self.criterion(self.model(inputs), labels)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses

    def _do_train(self, rank, train_data):
        dist.init_process_group("gloo")
        self.model = DDP(self.model)
        optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        train_sampler = DistributedSampler(train_data)  # expect: GL302
        train_data_loader = DataLoader(train_data, batch_size=self.batch_size, sampler=train_sampler)
        history = []
        for epoch in range(self.num_epochs):
            history += self._train_epoch(train_data_loader, optimizer)
        if rank == 0:
            print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": "cpu"}))
        dist.destroy_process_group()


torch.manual_seed(0)
x = torch.randn(256, 10)
y = (x[:, 0] > 0).long()
trainable = Trainable(nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 2)))
trainable._do_train(int(os.environ.get("RANK", "0")), TensorDataset(x, y))
