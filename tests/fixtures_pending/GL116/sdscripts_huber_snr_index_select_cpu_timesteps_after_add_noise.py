# source: https://github.com/kohya-ss/sd-scripts/issues/2102 (fix discussed in kohya-ss/sd-scripts#2153)
# The Huber "snr" schedule looks up `noise_scheduler.alphas_cumprod` with `timesteps.cpu()`. The
# scheduler's own add_noise() re-binds `self.alphas_cumprod` to the latents' device, so from the
# second training step on, the table is on the GPU and its index is on the host.
# fails-on-cuda: Expected all tensors to be on the same device
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class DDIMScheduler:
    def __init__(self, num_train_timesteps=1000, beta_start=0.00085, beta_end=0.012):
        self.num_train_timesteps = num_train_timesteps
        betas = torch.linspace(beta_start**0.5, beta_end**0.5, num_train_timesteps) ** 2
        self.alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)

    def add_noise(self, original_samples, noise, timesteps):
        self.alphas_cumprod = self.alphas_cumprod.to(device=original_samples.device)
        timesteps = timesteps.to(original_samples.device)
        sqrt_alpha_prod = self.alphas_cumprod[timesteps].sqrt().view(-1, 1, 1, 1)
        sqrt_one_minus_alpha_prod = (1 - self.alphas_cumprod[timesteps]).sqrt().view(-1, 1, 1, 1)
        return sqrt_alpha_prod * original_samples + sqrt_one_minus_alpha_prod * noise


def get_timesteps_and_huber_c(huber_schedule, huber_c, min_timestep, max_timestep, noise_scheduler, b_size, device):
    timesteps = torch.randint(min_timestep, max_timestep, (b_size,), device="cpu")
    if huber_schedule == "exponential":
        alpha = -math.log(huber_c) / noise_scheduler.num_train_timesteps
        huber_c = torch.exp(-alpha * timesteps)
    elif huber_schedule == "snr":
        alphas_cumprod = torch.index_select(noise_scheduler.alphas_cumprod, 0, timesteps.cpu())  # expect: GL116
        sigmas = ((1.0 - alphas_cumprod) / alphas_cumprod) ** 0.5
        huber_c = (1 - huber_c) / (1 + sigmas) ** 2 + huber_c
    else:
        huber_c = torch.full((b_size,), huber_c)
    return timesteps.to(device), huber_c.to(device)


class TinyUNet(nn.Module):
    def __init__(self, channels=4, hidden=16):
        super().__init__()
        self.t_embed = nn.Embedding(1000, hidden)
        self.conv_in = nn.Conv2d(channels, hidden, 3, padding=1)
        self.conv_out = nn.Conv2d(hidden, channels, 3, padding=1)

    def forward(self, x, t):
        h = self.conv_in(x) + self.t_embed(t)[:, :, None, None]
        return self.conv_out(F.silu(h))


def conditional_loss(pred, target, huber_c):
    huber_c = huber_c.view(-1, 1, 1, 1)
    return (2 * huber_c * (torch.sqrt((pred - target) ** 2 + huber_c**2) - huber_c)).mean()


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
unet = TinyUNet().to(device)
noise_scheduler = DDIMScheduler()
optimizer = torch.optim.AdamW(unet.parameters(), lr=3e-3)
latents_all = torch.randn(64, 4, 8, 8)
losses = []
for step in range(40):
    latents = latents_all[(step * 8) % 64:(step * 8) % 64 + 8].to(device)
    noise = torch.randn_like(latents)
    timesteps, huber_c = get_timesteps_and_huber_c("snr", 0.1, 0, 1000, noise_scheduler, latents.shape[0], device)
    noisy_latents = noise_scheduler.add_noise(latents, noise, timesteps)
    noise_pred = unet(noisy_latents, timesteps)
    loss = conditional_loss(noise_pred, noise, huber_c)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
