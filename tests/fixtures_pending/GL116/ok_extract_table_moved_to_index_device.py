# source: https://github.com/openai/improved-diffusion/blob/main/improved_diffusion/gaussian_diffusion.py
# Hard negative: the schedule is a numpy array; the extract helper converts it and moves it to
# the timesteps' device before indexing (`from_numpy(arr).to(device=timesteps.device)[timesteps]`).
import json

import numpy as np
import torch
import torch.nn as nn


def _extract_into_tensor(arr, timesteps, broadcast_shape):
    res = torch.from_numpy(arr).to(device=timesteps.device)[timesteps].float()
    while len(res.shape) < len(broadcast_shape):
        res = res[..., None]
    return res.expand(broadcast_shape)


class Diffusion:
    def __init__(self, steps=100):
        betas = np.linspace(1e-4, 0.02, steps)
        self.num_timesteps = steps
        self.alphas_cumprod = np.cumprod(1.0 - betas)
        self.sqrt_alphas_cumprod = np.sqrt(self.alphas_cumprod)
        self.sqrt_one_minus_alphas_cumprod = np.sqrt(1.0 - self.alphas_cumprod)

    def q_sample(self, x_start, t, noise):
        return (_extract_into_tensor(self.sqrt_alphas_cumprod, t, x_start.shape) * x_start
                + _extract_into_tensor(self.sqrt_one_minus_alphas_cumprod, t, x_start.shape) * noise)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
diffusion = Diffusion()
model = nn.Sequential(nn.Linear(6, 48), nn.SiLU(), nn.Linear(48, 6)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
data = torch.randn(512, 6) * 0.3 + 1.5
losses = []
for step in range(60):
    x0 = data[torch.randint(0, 512, (64,))].to(device)
    t = torch.randint(0, diffusion.num_timesteps, (64,), device=device)
    noise = torch.randn_like(x0)
    loss = nn.functional.mse_loss(model(diffusion.q_sample(x0, t, noise)), noise)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
