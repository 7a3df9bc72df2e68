# source: https://github.com/mattroz/diffusion-ddpm/issues/5
# A plain DDPM scheduler class (not an nn.Module) keeps self.betas / self.alphas_hat as CPU
# tensors; the training loop draws timesteps on the device and add_noise indexes the CPU table
# with them.
# fails-on-cuda: indices should be either on cpu or on the same device as the indexed tensor (cpu)
import json

import torch
import torch.nn as nn


class DDPMScheduler:
    def __init__(self, num_timesteps=100, beta_start=1e-4, beta_end=0.02):
        self.num_timesteps = num_timesteps
        self.betas = torch.linspace(beta_start, beta_end, num_timesteps)
        self.alphas = 1.0 - self.betas
        self.alphas_hat = torch.cumprod(self.alphas, dim=0)

    def add_noise(self, images, noise, timesteps):
        alpha_hat = self.alphas_hat[timesteps].to(images.device)  # expect: GL116
        alpha_hat = alpha_hat.view(-1, 1)
        return alpha_hat.sqrt() * images + (1 - alpha_hat).sqrt() * noise


class Denoiser(nn.Module):
    def __init__(self, dim=8, steps=100):
        super().__init__()
        self.t_emb = nn.Embedding(steps, dim)
        self.net = nn.Sequential(nn.Linear(dim, 32), nn.SiLU(), nn.Linear(32, dim))

    def forward(self, x, t):
        return self.net(x + self.t_emb(t))


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
scheduler = DDPMScheduler()
model = Denoiser().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
data = torch.randn(512, 8) * 0.5 + 1.0
losses = []
for step in range(60):
    images = data[torch.randint(0, 512, (64,))].to(device)
    noise = torch.randn_like(images)
    timesteps = torch.randint(0, scheduler.num_timesteps, (images.size(0),), device=device)
    noisy = scheduler.add_noise(images, noise, timesteps)
    loss = nn.functional.mse_loss(model(noisy, timesteps), noise)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
