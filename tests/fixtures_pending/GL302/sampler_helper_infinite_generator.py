# source: https://github.com/rosinality/stylegan2-pytorch/issues/319
# stylegan2-style training: a helper data_sampler(dataset, shuffle, distributed) returns a
# DistributedSampler when distributed; train() wraps the loader in an endless generator
# (`while True: for batch in loader: yield batch`) and draws batches with next() by iteration
# count. Nothing ever calls set_epoch, so every pass over the data repeats the same order.
# fixture: torchrun 2
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils import data


def data_sampler(dataset, shuffle, distributed):
    if distributed:
        return data.distributed.DistributedSampler(dataset, shuffle=shuffle)  # expect: GL302
    if shuffle:
        return data.RandomSampler(dataset)
    return data.SequentialSampler(dataset)


def sample_data(loader):
    while True:
        for batch in loader:
            yield batch


def train(args, loader, generator, g_optim):
    loader = sample_data(loader)
    history = []
    for idx in range(args["iter"]):
        real_img, noise = next(loader)
        fake_img = generator(noise)
        g_loss = nn.functional.mse_loss(fake_img, real_img)
        g_optim.zero_grad()
        g_loss.backward()
        g_optim.step()
        history.append(g_loss.item())
    return history


if __name__ == "__main__":
    args = {"iter": 60, "batch": 8, "distributed": int(os.environ.get("WORLD_SIZE", "1")) > 1}
    if args["distributed"]:
        dist.init_process_group(backend="gloo")
    torch.manual_seed(0)
    noise = torch.randn(96, 8)
    real = torch.sin(noise[:, :4] * 2.0)
    dataset = data.TensorDataset(real, noise)
    loader = data.DataLoader(
        dataset,
        batch_size=args["batch"],
        sampler=data_sampler(dataset, shuffle=True, distributed=args["distributed"]),
        drop_last=True,
    )
    generator = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 4))
    if args["distributed"]:
        generator = DistributedDataParallel(generator)
    g_optim = torch.optim.Adam(generator.parameters(), lr=1e-2)
    history = train(args, loader, generator, g_optim)
    if not args["distributed"] or dist.get_rank() == 0:
        print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(history[:5]) / 5, "last_loss": sum(history[-5:]) / 5, "device": "cpu"}))
    if args["distributed"]:
        dist.destroy_process_group()
