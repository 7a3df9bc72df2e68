# source: https://github.com/Lightning-AI/pytorch-lightning/issues/224
# Early PyTorch Lightning (0.4.x): the LightningModule builds its own training loader with a
# DistributedSampler (`tng_dataloader()`), the Trainer keeps it as `self.tng_dataloader` and its
# epoch loop (`__train()` -> `run_tng_epoch()`) iterates it every epoch, but nothing calls
# `sampler.set_epoch(epoch)`: every epoch sees the same order on every rank. The maintainer
# confirmed ("it's not called ...") and the reporter's PR added the call at the top of the epoch.
# (A plain-Python copy of that Trainer/LightningModule split; rank and world size from the
# environment so that the script also runs as one process.)
import json
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class CoolModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(20, 32)
        self.l2 = nn.Linear(32, 4)
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(256, 20, generator=g)
        self.y = self.x[:, :4].argmax(dim=1)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))

    def training_step(self, batch, batch_nb):
        x, y = batch
        return F.cross_entropy(self(x), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=0.01)

    def tng_dataloader(self):
        dataset = TensorDataset(self.x, self.y)
        world_size = int(os.environ.get("WORLD_SIZE", 1))
        rank = int(os.environ.get("RANK", 0))
        sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank)  # expect: GL302
        return DataLoader(dataset, batch_size=32, sampler=sampler)


class Trainer:
    def __init__(self, max_nb_epochs=4):
        self.max_nb_epochs = max_nb_epochs
        self.current_epoch = 0
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.losses = []

    def fit(self, model):
        self.model = model.to(self.device)
        self.optimizer = model.configure_optimizers()
        self.tng_dataloader = model.tng_dataloader()
        self.__train()

    def __train(self):
        for epoch_nb in range(self.current_epoch, self.max_nb_epochs):
            self.current_epoch = epoch_nb
            self.run_tng_epoch()

    def run_tng_epoch(self):
        for batch_nb, batch in enumerate(self.tng_dataloader):
            batch = [t.to(self.device) for t in batch]
            self.optimizer.zero_grad()
            loss = self.model.training_step(batch, batch_nb)
            loss.backward()
            self.optimizer.step()
            self.losses.append(loss.item())


def main():
    torch.manual_seed(0)
    trainer = Trainer(max_nb_epochs=4)
    trainer.fit(CoolModel())
    losses = trainer.losses
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": trainer.device.type}))


if __name__ == "__main__":
    main()
