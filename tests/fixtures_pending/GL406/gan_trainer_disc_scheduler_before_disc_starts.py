# source: https://github.com/idiap/coqui-ai-Trainer/pull/20
# Trainer for GAN models (vocoders) whose discriminator only starts training after
# `steps_to_start_discriminator`: every epoch ends with a step of every scheduler, also the
# discriminator's, whose optimizer has not stepped yet during the first epochs ("Detected call of
# `lr_scheduler.step()` before `optimizer.step()`"; the PR steps a scheduler only if its
# optimizer stepped).
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class Trainer:
    def __init__(self, gen, disc, steps_to_start_discriminator, device):
        self.device = device
        self.gen = gen.to(device)
        self.disc = disc.to(device)
        self.optimizer = [torch.optim.Adam(self.gen.parameters(), lr=2e-2), torch.optim.Adam(self.disc.parameters(), lr=1e-3)]
        self.scheduler = [torch.optim.lr_scheduler.ExponentialLR(o, gamma=0.95) for o in self.optimizer]
        self.steps_to_start_discriminator = steps_to_start_discriminator
        self.total_steps_done = 0
        self.losses = []

    def train_step(self, x, y):
        opt_g, opt_d = self.optimizer
        if self.total_steps_done >= self.steps_to_start_discriminator:
            opt_d.zero_grad()
            real = self.disc(y)
            fake = self.disc(self.gen(x).detach())
            loss_d = F.softplus(-real).mean() + F.softplus(fake).mean()
            loss_d.backward()
            opt_d.step()
        opt_g.zero_grad()
        y_hat = self.gen(x)
        loss_g = F.l1_loss(y_hat, y)
        if self.total_steps_done >= self.steps_to_start_discriminator:
            loss_g = loss_g + 0.01 * F.softplus(-self.disc(y_hat)).mean()
        loss_g.backward()
        opt_g.step()
        self.total_steps_done += 1
        return F.l1_loss(y_hat, y).item()

    def train_epoch(self, batches):
        for x, y in batches:
            self.losses.append(self.train_step(x.to(self.device), y.to(self.device)))
        for scheduler in self.scheduler:
            scheduler.step()  # expect: GL406

    def fit(self, batches, epochs):
        for epoch in range(epochs):
            self.train_epoch(batches)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
x_all = torch.randn(64, 8)
y_all = torch.tanh(x_all @ torch.randn(8, 8))
batches = [(x_all[i:i + 16], y_all[i:i + 16]) for i in range(0, 64, 16)]
trainer = Trainer(nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 8)), nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1)), steps_to_start_discriminator=12, device=device)
trainer.fit(batches, epochs=6)
print("GPULINT-TRAIN " + json.dumps({"first_loss": trainer.losses[0], "last_loss": trainer.losses[-1], "device": device.type}))
