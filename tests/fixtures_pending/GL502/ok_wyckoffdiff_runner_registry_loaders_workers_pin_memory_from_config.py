# source: https://github.com/httk/wyckoffdiff/pull/12
# WyckoffDiff: `BaseRunner.__init__` builds the model, the loaders, the optimizer and the logger
# through `init_*` hooks; `init_dataloaders` asks the registry for the dataset class and unpacks
# the three loaders returned by its classmethod `get_dataloaders(config)`, which builds each
# `DataLoader(dataset, batch_size=..., shuffle=split == "train")` with the defaults
# (`num_workers=0`, `pin_memory=False`). `D3PMTrainer(BaseRunner)` then moves every batch to the
# GPU in its training loop, so loading and the host-to-device copies never overlap the compute.
# The PR ("Dataloader speedup", developed on a 3090 and an A100) passes `num_workers`,
# `pin_memory=True` and `persistent_workers` from the config. Hard negative, the PR's change: the
# classmethod passes `num_workers`, `pin_memory` and `persistent_workers` from the config. (A small MLP denoiser over synthetic
# one-hot "Wyckoff" vectors replaces the D3PM graph network; the logger prints.)
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Registry:
    def __init__(self):
        self.mapping = {"dataset": {}, "model": {}, "runner": {}, "logger": {}}

    def _register(self, kind, name):
        def wrap(cls):
            self.mapping[kind][name] = cls
            return cls
        return wrap

    def register_dataset(self, name):
        return self._register("dataset", name)

    def register_model(self, name):
        return self._register("model", name)

    def register_runner(self, name):
        return self._register("runner", name)

    def register_logger(self, name):
        return self._register("logger", name)

    def get_dataset_class(self, name):
        return self.mapping["dataset"][name]

    def get_model_class(self, name):
        return self.mapping["model"][name]

    def get_runner_class(self, name):
        return self.mapping["runner"][name]

    def get_logger_class(self, name):
        return self.mapping["logger"][name]


registry = Registry()


@registry.register_dataset("toy")
class WyckoffDataset(Dataset):
    def __init__(self, split, num_elements, debug=False):
        g = torch.Generator().manual_seed({"train": 0, "val": 1, "test": 2}[split])
        n = 256 if split == "train" else 64
        self.elements = torch.randint(0, num_elements, (n, 4), generator=g) % (num_elements // 2)
        self.num_elements = num_elements

    def __len__(self):
        return len(self.elements)

    def __getitem__(self, idx):
        return {"x_inf_dof": nn.functional.one_hot(self.elements[idx], self.num_elements).float()}

    @classmethod
    def get_dataloaders(cls, config):
        loaders = []
        for split in ["train", "val", "test"]:
            dataset = cls(split=split, num_elements=config["num_elements"], debug=config["debug"])
            loaders.append(
                DataLoader(
                    dataset,
                    batch_size=config["batch_size"],
                    shuffle=split == "train",
                    num_workers=config["num_workers"],
                    pin_memory=config["pin_memory"],
                    persistent_workers=(config["persistent_workers"] and config["num_workers"] > 0),
                )
            )
        return loaders


@registry.register_model("d3pm")
class D3PM(nn.Module):
    def __init__(self, config):
        super().__init__()
        k = config["num_elements"]
        self.num_timesteps = 10
        self.net = nn.Sequential(nn.Linear(4 * k + 1, 64), nn.ReLU(), nn.Linear(64, 4 * k))
        self.k = k

    def get_noisy_data(self, batch):
        x0 = batch["x_inf_dof"]
        t = torch.randint(1, self.num_timesteps + 1, (x0.shape[0],), device=x0.device)
        keep = (torch.rand(x0.shape[:2], device=x0.device) > t[:, None] / (self.num_timesteps + 1)).float()
        uniform = torch.full_like(x0, 1.0 / self.k)
        x_t = keep[..., None] * x0 + (1 - keep[..., None]) * uniform
        return x_t, t

    def forward(self, x_t, t):
        h = torch.cat([x_t.flatten(1), t[:, None].float() / self.num_timesteps], -1)
        return self.net(h).view(x_t.shape[0], 4, self.k)

    def training_losses(self, logits, batch):
        target = batch["x_inf_dof"].argmax(-1)
        return nn.functional.cross_entropy(logits.reshape(-1, self.k), target.reshape(-1)), None


@registry.register_logger("print")
class PrintLogger:
    def __init__(self, config):
        self.every = config["log_every"]

    def log(self, values, step):
        if step % self.every == 0:
            print(step, values)


class BaseRunner:
    def __init__(self, config):
        self.device = config["device"]
        self.config = config
        self.num_epochs = config["epochs"]
        self.init_model(config)
        self.init_dataloaders(config)
        self.init_optimizer(config)
        self.init_logger(config)

    def init_model(self, config):
        raise NotImplementedError

    def init_dataloaders(self, config):
        (
            self.train_loader,
            self.val_loader,
            self.test_loader,
        ) = registry.get_dataset_class(config["dataset"]).get_dataloaders(config)

    def init_optimizer(self, config):
        raise NotImplementedError

    def init_logger(self, config):
        self.logger = registry.get_logger_class(config["logger"])(config)


@registry.register_runner("train_d3pm")
class D3PMTrainer(BaseRunner):
    def __init__(self, config):
        super().__init__(config)
        self.step = 0
        self.epoch = 0
        self.history = []

    def init_model(self, config):
        self.model = registry.get_model_class("d3pm")(config).to(self.device)

    def init_optimizer(self, config):
        self.optimizer = getattr(torch.optim, self.config["optimizer"])(
            self.model.parameters(), lr=config["lr"], weight_decay=config["l2_reg"]
        )

    def train(self):
        self.model.train(True)
        for epoch_i in range(self.epoch, self.num_epochs):
            epoch_losses = []
            for batch_i, batch in enumerate(self.train_loader):
                self.step += 1
                self.optimizer.zero_grad()
                batch = {k: v.to(self.device) for k, v in batch.items()}
                x_t, t = self.model.get_noisy_data(batch)
                logits = self.model(x_t, t)
                loss, verbosed_losses = self.model.training_losses(logits, batch)
                loss.backward()
                self.optimizer.step()
                epoch_losses.append(loss.item())
                self.logger.log({"train/step_loss": epoch_losses[-1]}, step=self.step)
            self.history.append(sum(epoch_losses) / len(epoch_losses))
        return self.history


if __name__ == "__main__":
    torch.manual_seed(0)
    config = {
        "device": torch.device("cuda" if torch.cuda.is_available() else "cpu"),
        "dataset": "toy", "num_elements": 8, "debug": False, "batch_size": 32,
        "epochs": 5, "optimizer": "Adam", "lr": 3e-3, "l2_reg": 0.0,
        "logger": "print", "log_every": 20,
        "num_workers": 1, "pin_memory": True, "persistent_workers": True,
    }
    runner = registry.get_runner_class("train_d3pm")(config)
    history = runner.train()
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": config["device"].type}))
