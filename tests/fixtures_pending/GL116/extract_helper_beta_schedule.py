# source: https://github.com/modelscope/modelscope/issues/220
# A diffusion helper `_i(tensor, t, x)` indexes a schedule tensor with t and moves the result to
# x; the schedule comes from beta_schedule() (host), the timesteps t are drawn on the device.
# fails-on-cuda: indices should be either on cpu or on the same device as the indexed tensor (cpu)
import json
import math

import torch
import torch.nn as nn


def _i(tensor, t, x):
    shape = (x.size(0),) + (1,) * (x.ndim - 1)
    return tensor[t].view(shape).to(x)  # expect: GL116


def beta_schedule(num_timesteps=200):
    steps = torch.arange(num_timesteps + 1, dtype=torch.float64) / num_timesteps
    alphas_bar = torch.cos((steps + 0.008) / 1.008 * math.pi / 2) ** 2
    return (1 - alphas_bar[1:] / alphas_bar[:-1]).clamp(max=0.999)


class GaussianDiffusion:
    def __init__(self, betas):
        self.num_timesteps = len(betas)
        alphas = 1 - betas
        self.alphas_cumprod = torch.cumprod(alphas, dim=0)
        self.sqrt_alphas_cumprod = self.alphas_cumprod.sqrt()
        self.sqrt_one_minus_alphas_cumprod = (1 - self.alphas_cumprod).sqrt()

    def q_sample(self, x0, t, noise):
        return _i(self.sqrt_alphas_cumprod, t, x0) * x0 + _i(self.sqrt_one_minus_alphas_cumprod, t, x0) * noise

    def loss(self, x0, t, model):
        noise = torch.randn_like(x0)
        xt = self.q_sample(x0, t, noise)
        return nn.functional.mse_loss(model(xt, t.float() / self.num_timesteps), noise)


class Net(nn.Module):
    def __init__(self, dim=6):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(dim + 1, 48), nn.SiLU(), nn.Linear(48, dim))

    def forward(self, x, t):
        return self.body(torch.cat([x, t[:, None]], dim=1))


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
diffusion = GaussianDiffusion(beta_schedule())
model = Net().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
data = torch.randn(512, 6) * 0.3 + 1.5
losses = []
for step in range(60):
    x0 = data[torch.randint(0, 512, (64,))].to(device)
    t = torch.randint(0, diffusion.num_timesteps, (64,), device=device)
    loss = diffusion.loss(x0, t, model)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
