# source: https://github.com/TheLastBen/fast-stable-diffusion/issues/946
# The latent-diffusion DDPM keeps its per-timestep log-variance as a plain tensor,
# `self.logvar = torch.full(...)`, and only turns it into an nn.Parameter when `learn_logvar` is
# set. With the default (not learned), `model.to(device)` leaves it on the host, and p_losses()
# indexes it with the timesteps drawn on the model's device: `self.logvar[t]` fails on a GPU.
# fails-on-cuda: indices should be either on cpu or on the same device as the indexed tensor
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class DDPM(nn.Module):
    def __init__(self, num_timesteps=50, logvar_init=0.0, learn_logvar=False):
        super().__init__()
        self.num_timesteps = num_timesteps
        self.model = nn.Sequential(nn.Linear(9, 32), nn.SiLU(), nn.Linear(32, 8))
        betas = torch.linspace(1e-4, 2e-2, num_timesteps)
        alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
        self.register_buffer("sqrt_alphas_cumprod", alphas_cumprod.sqrt())
        self.register_buffer("sqrt_one_minus_alphas_cumprod", (1.0 - alphas_cumprod).sqrt())
        self.learn_logvar = learn_logvar
        self.logvar = torch.full(fill_value=logvar_init, size=(self.num_timesteps,))  # expect: GL106
        if self.learn_logvar:
            self.logvar = nn.Parameter(self.logvar, requires_grad=True)

    @property
    def device(self):
        return self.sqrt_alphas_cumprod.device

    def q_sample(self, x_start, t, noise):
        return (self.sqrt_alphas_cumprod[t][:, None] * x_start
                + self.sqrt_one_minus_alphas_cumprod[t][:, None] * noise)

    def p_losses(self, x_start, t):
        noise = torch.randn_like(x_start)
        x_noisy = self.q_sample(x_start, t, noise)
        model_out = self.model(torch.cat([x_noisy, t[:, None].float() / self.num_timesteps], dim=1))
        loss_simple = F.mse_loss(model_out, noise, reduction="none").mean(dim=1)
        logvar_t = self.logvar[t].to(self.device)
        loss = loss_simple / torch.exp(logvar_t) + logvar_t
        return loss.mean()

    def forward(self, x):
        t = torch.randint(0, self.num_timesteps, (x.shape[0],), device=self.device).long()
        return self.p_losses(x, t)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = DDPM().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
data = torch.randn(256, 8) * 0.5 + 1.0
losses = []
for step in range(60):
    x = data[torch.randint(0, 256, (32,))].to(device)
    loss = model(x)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
