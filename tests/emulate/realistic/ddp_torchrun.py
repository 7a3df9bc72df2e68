"""DDP script written for torchrun and NCCL (LOCAL_RANK, DistributedSampler, rank-0 checkpoint)."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def ddp_setup():
    dist.init_process_group(backend="nccl")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))


class Trainer:
    def __init__(self, model, loader, optimizer):
        self.gpu_id = int(os.environ["LOCAL_RANK"])
        self.model = DDP(model.to(self.gpu_id), device_ids=[self.gpu_id])
        self.loader, self.optimizer = loader, optimizer

    def _run_epoch(self, epoch):
        self.loader.sampler.set_epoch(epoch)
        for source, targets in self.loader:
            source, targets = source.to(self.gpu_id), targets.to(self.gpu_id)
            self.optimizer.zero_grad()
            loss = nn.functional.cross_entropy(self.model(source), targets)
            loss.backward()
            self.optimizer.step()
        return loss

    def train(self, epochs):
        for epoch in range(epochs):
            loss = self._run_epoch(epoch)
            dist.all_reduce(loss, op=dist.ReduceOp.AVG)
            if self.gpu_id == 0:
                torch.save(self.model.module.state_dict(), "snapshot.pt")
                print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)


def main():
    ddp_setup()
    data = TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,)))
    loader = DataLoader(data, batch_size=8, shuffle=False, sampler=DistributedSampler(data))
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
    trainer = Trainer(model, loader, torch.optim.SGD(model.parameters(), lr=0.05))
    trainer.train(2)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
