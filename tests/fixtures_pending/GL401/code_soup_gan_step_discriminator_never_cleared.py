# source: https://github.com/Adversarial-Deep-Learning/code-soup/pull/73
# code_soup/ch5/models/gan.py before the fix: Generator and Discriminator each build their own
# Adam optimizer as `self.optimizer` in __init__; a plain `GAN` class holds both and its
# `step(data)` method runs one DCGAN-style iteration. The generator is cleared with
# `self.generator.zero_grad()`, but the discriminator never is: its real/fake backward passes and
# the generator's backward through it keep adding to the same `.grad` every batch. The PR added
# `self.discriminator.zero_grad()` first in `step`. The training script calls `gan.step(data)`
# for every batch of every epoch.
import json

import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset


class Generator(nn.Module):
    def __init__(self, data_dims, latent_dims, lr):
        super().__init__()
        self.latent_dims = latent_dims
        self.main = nn.Sequential(nn.Linear(latent_dims, 32), nn.LeakyReLU(0.2), nn.Linear(32, data_dims))
        self.optimizer = optim.Adam(self.parameters(), lr=lr)

    def forward(self, x):
        return self.main(x)


class Discriminator(nn.Module):
    def __init__(self, data_dims, lr):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(data_dims, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1), nn.Sigmoid())
        self.optimizer = optim.Adam(self.parameters(), lr=lr)

    def forward(self, x):
        return self.main(x)


class GAN:
    def __init__(self, data_dims, latent_dims, device, lr):
        self.latent_dims = latent_dims
        self.device = device
        self.generator = Generator(data_dims, latent_dims, lr).to(device)
        self.discriminator = Discriminator(data_dims, lr).to(device)
        self.criterion = nn.BCELoss()
        self.real_label, self.fake_label = 1.0, 0.0

    def step(self, data):
        (real,) = data
        real = real.to(self.device)
        batch_size = real.shape[0]
        label = torch.full((batch_size,), self.real_label, dtype=torch.float, device=self.device)
        # Forward pass real batch through D
        output = self.discriminator(real).view(-1)
        errD_real = self.criterion(output, label)
        errD_real.backward()
        D_x = output.mean().item()
        # Train with all-fake batch
        noise = torch.randn(batch_size, self.latent_dims, device=self.device)
        fake = self.generator(noise)
        label.fill_(self.fake_label)
        output = self.discriminator(fake.detach()).view(-1)
        errD_fake = self.criterion(output, label)
        errD_fake.backward()
        D_G_z1 = output.mean().item()
        errD = errD_real + errD_fake
        # Update D
        self.discriminator.optimizer.step()  # expect: GL401

        self.generator.zero_grad()
        label.fill_(self.real_label)
        output = self.discriminator(fake).view(-1)
        errG = self.criterion(output, label)
        errG.backward()
        D_G_z2 = output.mean().item()
        # Update G
        self.generator.optimizer.step()
        return D_x, D_G_z1, errD.item(), D_G_z2


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    samples = torch.randn(512, 2) * 0.3 + torch.tensor([2.0, -1.0])
    dataloader = DataLoader(TensorDataset(samples), batch_size=64, shuffle=True)
    gan = GAN(data_dims=2, latent_dims=4, device=device, lr=2e-3)
    probe = torch.randn(256, 4, device=device)
    history = []
    for epoch in range(6):
        for i, data in enumerate(dataloader, 0):
            D_x, D_G_z1, errD, D_G_z2 = gan.step(data)
            # how far the generated samples' mean is from the data's (the GAN's progress)
            with torch.no_grad():
                history.append((gan.generator(probe).mean(0).cpu() - samples.mean(0)).norm().item())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
