# source: https://github.com/fastai/fastai/issues/2496
# fixture: torchrun 2
# fastai v1: the GANModule keeps a generator and a critic and a `switch(gen_mode)` method; the
# GANTrainer callback alternates the two by calling `self.learn.model.switch(gen_mode)` at the
# start of every epoch. Under `python -m torch.distributed.launch`, the DistributedTrainer
# callback has already replaced `learn.model` with a DistributedDataParallel wrapper in its own
# `on_train_begin`, so the WGAN lesson script crashes in `GANTrainer.switch()`:
# "'DistributedDataParallel' object has no attribute 'switch'". Single-process runs train.
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel


class GANModule(nn.Module):
    def __init__(self, generator, critic, gen_mode=False):
        super().__init__()
        self.gen_mode = gen_mode
        self.generator = generator
        self.critic = critic

    def forward(self, *args):
        return self.generator(*args) if self.gen_mode else self.critic(*args)

    def switch(self, gen_mode=None):
        self.gen_mode = (not self.gen_mode) if gen_mode is None else gen_mode


class Learner:
    def __init__(self, model, data, lr=2e-3):
        self.model = model
        self.data = data
        self.lr = lr
        self.callbacks = []
        self.history = []


class LearnerCallback:
    def __init__(self, learn):
        self.learn = learn

    def on_train_begin(self):
        pass

    def on_epoch_begin(self, epoch):
        pass


class DistributedTrainer(LearnerCallback):
    def on_train_begin(self):
        self.learn.model = DistributedDataParallel(self.learn.model, find_unused_parameters=True)


class GANTrainer(LearnerCallback):
    def __init__(self, learn, gen_first=False):
        super().__init__(learn)
        self.gen_mode = gen_first
        gan = learn.model
        self.opt_gen = torch.optim.Adam(gan.generator.parameters(), lr=learn.lr, betas=(0.5, 0.99))
        self.opt_critic = torch.optim.Adam(gan.critic.parameters(), lr=learn.lr, betas=(0.5, 0.99))

    def switch(self, gen_mode=None):
        self.gen_mode = (not self.gen_mode) if gen_mode is None else gen_mode
        self.learn.model.switch(gen_mode)  # expect: GL305

    def _set_trainable(self):
        gan = getattr(self.learn.model, "module", self.learn.model)
        gan.generator.requires_grad_(self.gen_mode)
        gan.critic.requires_grad_(not self.gen_mode)

    def on_epoch_begin(self, epoch):
        self.switch(epoch % 2 == 1)
        self._set_trainable()

    def train_batch(self, real):
        model = self.learn.model
        noise = torch.randn(real.size(0), 4)
        if self.gen_mode:
            fake = model(noise)
            gen = getattr(model, "module", model)
            loss = -gen.critic(fake).mean() + F.mse_loss(fake.mean(0), real.mean(0))
            self.opt_gen.zero_grad()
            loss.backward()
            self.opt_gen.step()
            return loss.item()
        gen = getattr(model, "module", model)
        with torch.no_grad():
            fake = gen.generator(noise)
        scores = model(torch.cat([fake, real]))
        loss = scores[:fake.size(0)].mean() - scores[fake.size(0):].mean()
        self.opt_critic.zero_grad()
        loss.backward()
        self.opt_critic.step()
        return F.mse_loss(fake.mean(0), real.mean(0)).item()


def fit(learn, epochs):
    for cb in learn.callbacks:
        cb.on_train_begin()
    trainer = [cb for cb in learn.callbacks if isinstance(cb, GANTrainer)][0]
    for epoch in range(epochs):
        for cb in learn.callbacks:
            cb.on_epoch_begin(epoch)
        for i in range(0, learn.data.size(0), 16):
            learn.history.append(trainer.train_batch(learn.data[i:i + 16]))


def main():
    distributed = "LOCAL_RANK" in os.environ
    if distributed:
        dist.init_process_group(backend="gloo")
    rank = dist.get_rank() if distributed else 0
    torch.manual_seed(0)
    generator = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8))
    critic = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
    data = torch.randn(64, 8) * 0.5 + 1.0
    learn = Learner(GANModule(generator, critic), data)
    learn.callbacks.append(GANTrainer(learn))
    if distributed:
        learn.callbacks.insert(0, DistributedTrainer(learn))
    fit(learn, epochs=10)
    if rank == 0:
        print("GPULINT-TRAIN " + json.dumps({"first_loss": learn.history[0], "last_loss": learn.history[-1], "device": "cpu"}))
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
