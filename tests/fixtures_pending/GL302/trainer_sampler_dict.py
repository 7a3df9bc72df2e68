# source: https://github.com/kan-bayashi/ParallelWaveGAN/issues/177
# The samplers live in a dict (`sampler = {"train": None, "dev": None}`, DistributedSamplers when
# distributed) handed to a Trainer with the dict of loaders; Trainer.run() repeats _train_epoch()
# until the step budget is spent, and _train_epoch() iterates self.data_loader["train"] without
# ever calling self.sampler["train"].set_epoch(...) (the fix added it after each epoch).
# fixture: torchrun 2
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, steps, epochs, data_loader, sampler, model, criterion, optimizer, config):
        self.steps = steps
        self.epochs = epochs
        self.data_loader = data_loader
        self.sampler = sampler
        self.model = model
        self.criterion = criterion
        self.optimizer = optimizer
        self.config = config
        self.finish_train = False
        self.history = []

    def run(self):
        while True:
            self._train_epoch()
            if self.finish_train:
                break

    def _train_step(self, batch):
        x, y = batch
        loss = self.criterion(self.model(x), y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.history.append(loss.item())
        self.steps += 1

    def _train_epoch(self):
        for train_steps_per_epoch, batch in enumerate(self.data_loader["train"], 1):
            self._train_step(batch)
            if self.steps >= self.config["train_max_steps"]:
                self.finish_train = True
                break
        self.epochs += 1


def main():
    config = {"distributed": int(os.environ.get("WORLD_SIZE", "1")) > 1, "batch_size": 8, "train_max_steps": 48}
    if config["distributed"]:
        dist.init_process_group(backend="gloo")
    torch.manual_seed(0)
    x = torch.randn(160, 6)
    y = torch.tanh(x @ torch.randn(6, 2))
    dataset = {"train": TensorDataset(x[:128], y[:128]), "dev": TensorDataset(x[128:], y[128:])}
    sampler = {"train": None, "dev": None}
    if config["distributed"]:
        from torch.utils.data.distributed import DistributedSampler

        sampler["train"] = DistributedSampler(dataset["train"], shuffle=True)  # expect: GL302
        sampler["dev"] = DistributedSampler(dataset["dev"], shuffle=False)
    data_loader = {
        "train": DataLoader(dataset["train"], shuffle=not config["distributed"], batch_size=config["batch_size"], sampler=sampler["train"]),
        "dev": DataLoader(dataset["dev"], shuffle=False, batch_size=config["batch_size"], sampler=sampler["dev"]),
    }
    model = nn.Sequential(nn.Linear(6, 24), nn.Tanh(), nn.Linear(24, 2))
    if config["distributed"]:
        model = DistributedDataParallel(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    trainer = Trainer(0, 0, data_loader, sampler, model, nn.MSELoss(), optimizer, config)
    trainer.run()
    h = trainer.history
    if not config["distributed"] or dist.get_rank() == 0:
        print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(h[:4]) / 4, "last_loss": sum(h[-4:]) / 4, "device": "cpu"}))
    if config["distributed"]:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
