# source: https://github.com/huggingface/diffusers/pull/6704 and https://github.com/kohya-ss/sd-scripts/pull/2153
# Hard negative: a plain scheduler class keeps alphas_cumprod on the host and, in add_noise,
# re-binds the attribute to the sample's device before indexing (diffusers); another lookup
# indexes the host table with host timesteps (`timesteps.cpu()`) and moves the result.
import json

import torch
import torch.nn as nn


class DDPMScheduler:
    def __init__(self, num_train_timesteps=100):
        self.num_train_timesteps = num_train_timesteps
        self.betas = torch.linspace(1e-4, 0.02, num_train_timesteps)
        self.alphas_cumprod = torch.cumprod(1.0 - self.betas, dim=0)
        self.snr_table = self.alphas_cumprod / (1 - self.alphas_cumprod)

    def add_noise(self, original_samples, noise, timesteps):
        self.alphas_cumprod = self.alphas_cumprod.to(device=original_samples.device)
        sqrt_alpha_prod = self.alphas_cumprod[timesteps].sqrt().view(-1, 1)
        sqrt_one_minus = (1 - self.alphas_cumprod[timesteps]).sqrt().view(-1, 1)
        return sqrt_alpha_prod * original_samples + sqrt_one_minus * noise

    def snr(self, timesteps):
        return self.snr_table[timesteps.cpu()].to(timesteps.device)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
noise_scheduler = DDPMScheduler()
model = nn.Sequential(nn.Linear(6, 48), nn.SiLU(), nn.Linear(48, 6)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
data = torch.randn(512, 6) * 0.3 + 1.5
losses = []
for step in range(60):
    latents = data[torch.randint(0, 512, (64,))].to(device)
    noise = torch.randn_like(latents)
    timesteps = torch.randint(0, noise_scheduler.num_train_timesteps, (64,), device=device)
    noisy = noise_scheduler.add_noise(latents, noise, timesteps)
    weight = noise_scheduler.snr(timesteps).clamp(max=5.0) / 5.0
    loss = (weight[:, None] * (model(noisy) - noise) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
