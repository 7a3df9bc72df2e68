# source: https://github.com/NVIDIA/tacotron2/issues/241
# tacotron2's train.py: prepare_dataloaders(hparams) builds the DistributedSampler when
# hparams.distributed_run is set (shuffle=False then, the sampler shuffles) and returns
# (train_loader, valset, collate_fn); train(output_directory, ..., n_gpus, rank, group_name,
# hparams) unpacks it and runs `for epoch in range(epoch_offset, hparams.epochs): for i, batch in
# enumerate(train_loader): ...` without ever calling train_sampler.set_epoch(epoch), so every
# epoch visits the batches in the same order (the report: "the dataloader will get the same batch
# ... at every epoch in distributed training setup"). apply_gradient_allreduce() stands for the
# repo's distributed.py helper: it broadcasts the parameters and all-reduces gradients with hooks,
# returning the module itself (no wrapper).
# fixture: torchrun 2
import json
import os
from types import SimpleNamespace

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class TextMelLoader(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.text = torch.randint(0, 20, (n, 6), generator=g)
        self.mel = torch.sin(self.text.float().unsqueeze(-1) * torch.linspace(0, 1, 4)).mean(1)

    def __len__(self):
        return len(self.text)

    def __getitem__(self, i):
        return self.text[i], self.mel[i]


class TextMelCollate:
    def __call__(self, batch):
        return torch.stack([b[0] for b in batch]), torch.stack([b[1] for b in batch])


class Tacotron2(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(20, 16)
        self.decoder = nn.Sequential(nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 4))

    def parse_batch(self, batch):
        text, mel = batch
        return text, mel

    def forward(self, x):
        return self.decoder(self.embedding(x).mean(1))


def apply_gradient_allreduce(module):
    world_size = dist.get_world_size()
    for p in module.state_dict().values():
        dist.broadcast(p, 0)

    def allreduce_hook(grad):
        grad = grad.clone()
        dist.all_reduce(grad)
        return grad / world_size

    for p in module.parameters():
        if p.requires_grad:
            p.register_hook(allreduce_hook)
    return module


def prepare_dataloaders(hparams):
    trainset = TextMelLoader(64, seed=1)
    valset = TextMelLoader(16, seed=2)
    collate_fn = TextMelCollate()
    if hparams.distributed_run:
        train_sampler = DistributedSampler(trainset)  # expect: GL302
        shuffle = False
    else:
        train_sampler = None
        shuffle = True
    train_loader = DataLoader(trainset, num_workers=0, shuffle=shuffle, sampler=train_sampler,
                              batch_size=hparams.batch_size, pin_memory=False, drop_last=True, collate_fn=collate_fn)
    return train_loader, valset, collate_fn


def train(n_gpus, rank, hparams):
    if hparams.distributed_run:
        dist.init_process_group(backend="gloo", world_size=n_gpus, rank=rank)
    torch.manual_seed(hparams.seed)
    model = Tacotron2()
    learning_rate = hparams.learning_rate
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate, weight_decay=hparams.weight_decay)
    if hparams.distributed_run:
        model = apply_gradient_allreduce(model)
    criterion = nn.MSELoss()
    train_loader, valset, collate_fn = prepare_dataloaders(hparams)
    iteration = 0
    epoch_offset = 0
    history = []
    model.train()
    for epoch in range(epoch_offset, hparams.epochs):
        if rank == 0:
            print("Epoch: {}".format(epoch))
        for i, batch in enumerate(train_loader):
            for param_group in optimizer.param_groups:
                param_group["lr"] = learning_rate
            model.zero_grad()
            x, y = model.parse_batch(batch)
            y_pred = model(x)
            loss = criterion(y_pred, y)
            reduced_loss = loss.item()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), hparams.grad_clip_thresh)
            optimizer.step()
            history.append(reduced_loss)
            iteration += 1
    if rank == 0:
        print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(history[:4]) / 4, "last_loss": sum(history[-4:]) / 4, "device": "cpu"}))
    if hparams.distributed_run:
        dist.destroy_process_group()


if __name__ == "__main__":
    n_gpus = int(os.environ.get("WORLD_SIZE", "1"))
    hparams = SimpleNamespace(distributed_run=n_gpus > 1, seed=1234, learning_rate=1e-2, weight_decay=1e-6,
                              batch_size=8, epochs=6, grad_clip_thresh=1.0)
    train(n_gpus, int(os.environ.get("RANK", "0")), hparams)
