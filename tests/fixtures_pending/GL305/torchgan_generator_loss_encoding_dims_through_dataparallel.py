# source: https://github.com/torchgan/torchgan/pull/35
# torchgan's multi-GPU trainer wraps the generator and the discriminator in nn.DataParallel; the
# loss objects' train_ops() then draw the noise with `generator.encoding_dims`, an attribute of
# the Generator class, read through the wrapper. The PR was closed over exactly this: "Making
# the generator and discriminator a DataParallel object does not allow us to fetch the
# parameters stored in the Generator object like `encoding dims`". Here the wrapper exists when
# more than one GPU is visible, so single-device runs train.
import json

import torch
import torch.nn as nn


class Generator(nn.Module):
    def __init__(self, encoding_dims=8, out_size=16):
        super().__init__()
        self.encoding_dims = encoding_dims
        self.model = nn.Sequential(nn.Linear(encoding_dims, 32), nn.ReLU(), nn.Linear(32, out_size), nn.Tanh())

    def forward(self, z):
        return self.model(z)


class Discriminator(nn.Module):
    def __init__(self, in_size=16):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(in_size, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))

    def forward(self, x):
        return self.model(x)


class MinimaxGeneratorLoss:
    def forward(self, dgz):
        return nn.functional.binary_cross_entropy_with_logits(dgz, torch.ones_like(dgz))

    def train_ops(self, generator, discriminator, optimizer_generator, device, batch_size):
        noise = torch.randn(batch_size, generator.encoding_dims, device=device)  # expect: GL305
        optimizer_generator.zero_grad()
        loss = self.forward(discriminator(generator(noise)))
        loss.backward()
        optimizer_generator.step()
        return loss.item()


class MinimaxDiscriminatorLoss:
    def forward(self, dx, dgz):
        bce = nn.functional.binary_cross_entropy_with_logits
        return bce(dx, torch.ones_like(dx)) + bce(dgz, torch.zeros_like(dgz))

    def train_ops(self, generator, discriminator, optimizer_discriminator, real_inputs, device, batch_size):
        noise = torch.randn(batch_size, generator.encoding_dims, device=device)  # expect: GL305
        optimizer_discriminator.zero_grad()
        loss = self.forward(discriminator(real_inputs), discriminator(generator(noise).detach()))
        loss.backward()
        optimizer_discriminator.step()
        return loss.item()


class ParallelTrainer:
    def __init__(self, losses, device, lr=1e-3):
        self.device = device
        self.losses = losses
        self.generator = Generator().to(device)
        self.discriminator = Discriminator().to(device)
        if torch.cuda.device_count() > 1:
            self.generator = nn.DataParallel(self.generator)
            self.discriminator = nn.DataParallel(self.discriminator)
        self.optimizer_generator = torch.optim.Adam(self.generator.parameters(), lr=lr, betas=(0.5, 0.999))
        self.optimizer_discriminator = torch.optim.Adam(self.discriminator.parameters(), lr=lr, betas=(0.5, 0.999))

    def train_iter(self, real_inputs):
        batch_size = real_inputs.size(0)
        g_loss = d_loss = 0.0
        for loss in self.losses:
            if isinstance(loss, MinimaxGeneratorLoss):
                g_loss = loss.train_ops(self.generator, self.discriminator, self.optimizer_generator,
                                        self.device, batch_size)
            else:
                d_loss = loss.train_ops(self.generator, self.discriminator, self.optimizer_discriminator,
                                        real_inputs, self.device, batch_size)
        return g_loss, d_loss

    def train(self, data, epochs):
        history = []
        for epoch in range(epochs):
            for i in range(0, data.size(0), 16):
                _, d_loss = self.train_iter(data[i:i + 16].to(self.device))
                history.append(d_loss)
        return history


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = torch.tanh(torch.randn(64, 16) * 0.3 + 0.5)
    trainer = ParallelTrainer([MinimaxGeneratorLoss(), MinimaxDiscriminatorLoss()], device)
    history = trainer.train(data, epochs=10)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))


if __name__ == "__main__":
    main()
