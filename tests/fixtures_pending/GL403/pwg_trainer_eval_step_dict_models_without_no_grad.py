# source: https://github.com/kan-bayashi/ParallelWaveGAN/pull/26
# parallel_wavegan/bin/train.py: Trainer keeps its networks, losses, optimizers and schedulers in
# dicts (`self.model["generator"]`, `self.model["discriminator"]`, ...). _check_eval_interval()
# runs _eval_epoch() from the training loop every `eval_interval_steps`; it puts every model in
# eval mode and calls _eval_step(batch), which runs the generator and the discriminator with
# gradients enabled ("Fix additional memory consuming in the evaluation": the PR decorates
# _eval_step with `@torch.no_grad()`).
import json

import torch
import torch.nn as nn


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(1, 8, 3, padding=1), nn.Tanh(), nn.Conv1d(8, 1, 3, padding=1))

    def forward(self, c):
        return self.net(c)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(1, 8, 3, padding=1), nn.LeakyReLU(0.2), nn.Conv1d(8, 1, 3, padding=1))

    def forward(self, y):
        return self.net(y)


class Trainer(object):
    def __init__(self, steps, epochs, data_loader, model, criterion, optimizer, scheduler, config, device=torch.device("cpu")):
        self.steps = steps
        self.epochs = epochs
        self.data_loader = data_loader
        self.model = model
        self.criterion = criterion
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.config = config
        self.device = device
        self.finish_train = False
        self.gen_losses = []
        self.eval_losses = []

    def run(self):
        while True:
            self._train_epoch()
            if self.finish_train:
                break

    def _parse_batch(self, batch):
        x, y = batch
        return x.to(self.device), y.to(self.device)

    def _train_step(self, batch):
        x, y = self._parse_batch(batch)
        y_ = self.model["generator"](x)
        gen_loss = self.criterion["l1"](y_, y)
        if self.steps > self.config["discriminator_train_start_steps"]:
            p_ = self.model["discriminator"](y_)
            gen_loss += self.config["lambda_adv"] * self.criterion["mse"](p_, p_.new_ones(p_.size()))
        self.optimizer["generator"].zero_grad()
        gen_loss.backward()
        self.optimizer["generator"].step()
        self.scheduler["generator"].step()
        self.gen_losses.append(gen_loss.item())
        if self.steps > self.config["discriminator_train_start_steps"]:
            p = self.model["discriminator"](y)
            p_ = self.model["discriminator"](y_.detach())
            dis_loss = self.criterion["mse"](p, p.new_ones(p.size())) + self.criterion["mse"](p_, p_.new_zeros(p_.size()))
            self.optimizer["discriminator"].zero_grad()
            dis_loss.backward()
            self.optimizer["discriminator"].step()
            self.scheduler["discriminator"].step()

    def _train_epoch(self):
        for train_steps_per_epoch, batch in enumerate(self.data_loader["train"], 1):
            self._train_step(batch)
            self.steps += 1
            self._check_eval_interval()
            if self.steps >= self.config["train_max_steps"]:
                self.finish_train = True
                break
        self.epochs += 1

    def _eval_step(self, batch):
        x, y = self._parse_batch(batch)
        y_ = self.model["generator"](x)  # expect: GL403
        p_ = self.model["discriminator"](y_)  # expect: GL403
        aux_loss = self.criterion["l1"](y_, y)
        adv_loss = self.criterion["mse"](p_, p_.new_ones(p_.size()))
        self.eval_losses.append((aux_loss + self.config["lambda_adv"] * adv_loss).item())

    def _eval_epoch(self):
        for key in self.model.keys():
            self.model[key].eval()
        for eval_steps_per_epoch, batch in enumerate(self.data_loader["dev"], 1):
            self._eval_step(batch)
        for key in self.model.keys():
            self.model[key].train()

    def _check_eval_interval(self):
        if self.steps % self.config["eval_interval_steps"] == 0:
            self._eval_epoch()


def make_loader(n, seed):
    g = torch.Generator().manual_seed(seed)
    c = torch.randn(n, 1, 32, generator=g)
    y = torch.tanh(2 * c)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(c, y), batch_size=8)


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    config = {"discriminator_train_start_steps": 8, "lambda_adv": 0.1, "train_max_steps": 40, "eval_interval_steps": 10}
    model = {"generator": Generator().to(device), "discriminator": Discriminator().to(device)}
    criterion = {"l1": nn.L1Loss().to(device), "mse": nn.MSELoss().to(device)}
    optimizer = {
        "generator": torch.optim.Adam(model["generator"].parameters(), lr=1e-2),
        "discriminator": torch.optim.Adam(model["discriminator"].parameters(), lr=1e-3),
    }
    scheduler = {
        "generator": torch.optim.lr_scheduler.StepLR(optimizer["generator"], step_size=100, gamma=0.5),
        "discriminator": torch.optim.lr_scheduler.StepLR(optimizer["discriminator"], step_size=100, gamma=0.5),
    }
    data_loader = {"train": make_loader(64, 1), "dev": make_loader(16, 2)}
    trainer = Trainer(0, 0, data_loader, model, criterion, optimizer, scheduler, config, device=device)
    trainer.run()
    losses = trainer.gen_losses
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
