# source: https://github.com/CompVis/latent-diffusion/pull/282
# The DDPM module keeps its per-timestep log-variance as a plain tensor attribute made with
# torch.full(...) in __init__; model.to(device) leaves it on the CPU, and p_losses indexes it
# with the timesteps drawn on the GPU before moving the result (the PR's title: "first move to
# device, then index").
# fails-on-cuda: indices should be either on cpu or on the same device as the indexed tensor (cpu)
import json

import torch
import torch.nn as nn


class DDPM(nn.Module):
    def __init__(self, dim=8, num_timesteps=100, logvar_init=0.0):
        super().__init__()
        self.num_timesteps = num_timesteps
        self.net = nn.Sequential(nn.Linear(dim + 1, 32), nn.SiLU(), nn.Linear(32, dim))
        self.logvar = torch.full(fill_value=logvar_init, size=(num_timesteps,))  # expect: GL106
        betas = torch.linspace(1e-4, 0.02, num_timesteps)
        self.register_buffer("sqrt_alphas_cumprod", torch.cumprod(1 - betas, 0).sqrt())
        self.register_buffer("sqrt_one_minus", (1 - torch.cumprod(1 - betas, 0)).sqrt())

    def p_losses(self, x_start, t):
        noise = torch.randn_like(x_start)
        x_noisy = self.sqrt_alphas_cumprod[t, None] * x_start + self.sqrt_one_minus[t, None] * noise
        model_out = self.net(torch.cat([x_noisy, t[:, None].float() / self.num_timesteps], dim=1))
        loss_simple = ((model_out - noise) ** 2).mean(dim=1)
        logvar_t = self.logvar[t].to(x_start.device)
        return (loss_simple / torch.exp(logvar_t) + logvar_t).mean()

    def forward(self, x):
        t = torch.randint(0, self.num_timesteps, (x.shape[0],), device=x.device).long()
        return self.p_losses(x, t)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
data = torch.randn(512, 8) * 0.3 + 1.0
model = DDPM().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
losses = []
for step in range(80):
    x = data[torch.randint(0, 512, (64,))].to(device)
    loss = model(x)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
