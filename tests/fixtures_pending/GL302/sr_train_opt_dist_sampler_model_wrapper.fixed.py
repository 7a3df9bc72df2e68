# source: https://github.com/cszn/KAIR/pull/106
# fixture: torchrun 2
# An image-restoration training script driven by an options dict: when opt["dist"] is set it builds
# a DistributedSampler (shuffle on) for the training set and a loader over it, otherwise a shuffling
# loader; the epoch loop then feeds every batch to a model-wrapper class (feed_data /
# optimize_parameters) and never calls set_epoch, so each epoch repeats the same order. The PR adds
# `if opt["dist"]: train_sampler.set_epoch(epoch)` at the top of the epoch loop.
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class PairedDataset(Dataset):
    def __init__(self, n=128):
        g = torch.Generator().manual_seed(0)
        self.H = torch.rand(n, 1, 8, 8, generator=g)
        self.L = self.H + 0.1 * torch.randn(n, 1, 8, 8, generator=g)

    def __len__(self):
        return len(self.H)

    def __getitem__(self, index):
        return {"L": self.L[index], "H": self.H[index]}


class DnCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 3, padding=1))

    def forward(self, x):
        return x - self.body(x)


class ModelPlain:
    def __init__(self, opt, device):
        self.device = device
        net = DnCNN().to(device)
        self.netG = DDP(net) if opt["dist"] else net
        self.G_optimizer = torch.optim.Adam(self.netG.parameters(), lr=opt["lr"])
        self.G_lossfn = nn.L1Loss()
        self.log = []

    def feed_data(self, data):
        self.L = data["L"].to(self.device)
        self.H = data["H"].to(self.device)

    def optimize_parameters(self, current_step):
        self.G_optimizer.zero_grad()
        loss = self.G_lossfn(self.netG(self.L), self.H)
        loss.backward()
        self.G_optimizer.step()
        self.log.append(loss.item())


def main():
    opt = {"dist": "LOCAL_RANK" in os.environ, "lr": 0.01, "batch_size": 16}
    if opt["dist"]:
        dist.init_process_group("gloo")
        rank = dist.get_rank()
    else:
        rank = 0
    device = torch.device("cpu")
    torch.manual_seed(0)

    train_set = PairedDataset()
    if opt["dist"]:
        train_sampler = DistributedSampler(train_set, shuffle=True, drop_last=True, seed=0)  # expect: GL302
        train_loader = DataLoader(train_set, batch_size=opt["batch_size"], shuffle=False, drop_last=True, sampler=train_sampler)
    else:
        train_loader = DataLoader(train_set, batch_size=opt["batch_size"], shuffle=True, drop_last=True)

    model = ModelPlain(opt, device)
    current_step = 0
    for epoch in range(5):
        train_sampler.set_epoch(epoch)
        for i, train_data in enumerate(train_loader):
            current_step += 1
            model.feed_data(train_data)
            model.optimize_parameters(current_step)

    if rank == 0:
        print("GPULINT-TRAIN " + json.dumps({"first_loss": model.log[0], "last_loss": model.log[-1], "device": device.type}))
    if opt["dist"]:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
