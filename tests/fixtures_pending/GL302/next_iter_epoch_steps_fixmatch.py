# source: https://github.com/kekmodel/FixMatch-pytorch/issues/34
# fixture: torchrun 2
# FixMatch picks the sampler class by rank (RandomSampler or DistributedSampler), instantiates it
# inline in DataLoader(sampler=train_sampler(dataset)), and draws batches with next(iter) inside
# a fixed number of steps per epoch, re-creating the iterator when it runs out; set_epoch is
# never called, so each re-created iterator repeats the same order.
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, RandomSampler, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def train(args, labeled_trainloader, model, optimizer):
    labeled_iter = iter(labeled_trainloader)
    model.train()
    history = []
    for epoch in range(args["start_epoch"], args["epochs"]):
        for batch_idx in range(args["eval_step"]):
            try:
                inputs_x, targets_x = next(labeled_iter)
            except StopIteration:
                labeled_iter = iter(labeled_trainloader)
                inputs_x, targets_x = next(labeled_iter)
            loss = F.cross_entropy(model(inputs_x), targets_x)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(loss.item())
    return history


def main():
    local_rank = int(os.environ.get("LOCAL_RANK", "-1"))
    if local_rank != -1:
        dist.init_process_group(backend="gloo")
    torch.manual_seed(0)
    x = torch.randn(256, 10)
    y = (x[:, 2] > 0).long()
    labeled_dataset = TensorDataset(x, y)
    train_sampler = RandomSampler if local_rank == -1 else DistributedSampler
    labeled_trainloader = DataLoader(labeled_dataset, sampler=train_sampler(labeled_dataset), batch_size=16, drop_last=True)  # expect: GL302
    model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 2))
    if local_rank != -1:
        model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    args = {"start_epoch": 0, "epochs": 4, "eval_step": 10}
    history = train(args, labeled_trainloader, model, optimizer)
    if local_rank in [-1, 0]:
        print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": "cpu"}))
    if local_rank != -1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
