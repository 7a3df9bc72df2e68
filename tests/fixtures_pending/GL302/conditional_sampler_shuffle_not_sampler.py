# source: https://github.com/lucidrains/DALLE-pytorch/pull/230
# train_dalle.py: the sampler is a DistributedSampler only when training is distributed (else
# None, and the DataLoader shuffles itself: `shuffle=not data_sampler`); the epoch loop never
# calls data_sampler.set_epoch(epoch), so every epoch sees the same order (the PR adds it).
# fixture: torchrun 2
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

EPOCHS = 4
BATCH_SIZE = 8

distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
if distributed:
    dist.init_process_group(backend="gloo")
torch.manual_seed(0)
text = torch.randn(128, 10)
images = torch.tanh(text @ torch.randn(10, 6))
ds = TensorDataset(text, images)

if distributed:
    data_sampler = DistributedSampler(ds, num_replicas=dist.get_world_size(), rank=dist.get_rank())  # expect: GL302
else:
    data_sampler = None
dl = DataLoader(ds, batch_size=BATCH_SIZE, shuffle=not data_sampler, drop_last=True, sampler=data_sampler)

dalle = nn.Sequential(nn.Linear(10, 32), nn.GELU(), nn.Linear(32, 6))
if distributed:
    dalle = DistributedDataParallel(dalle)
opt = torch.optim.Adam(dalle.parameters(), lr=1e-2)

history = []
for epoch in range(EPOCHS):
    for i, (txt, img) in enumerate(dl):
        loss = nn.functional.mse_loss(dalle(txt), img)
        opt.zero_grad()
        loss.backward()
        opt.step()
        history.append(loss.item())
    if not distributed or dist.get_rank() == 0:
        print(f"epoch {epoch}: {history[-1]:.4f}")

if not distributed or dist.get_rank() == 0:
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(history[:4]) / 4, "last_loss": sum(history[-4:]) / 4, "device": "cpu"}))
if distributed:
    dist.destroy_process_group()
