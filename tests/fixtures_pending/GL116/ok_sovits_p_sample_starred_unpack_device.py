# Source shape: https://github.com/svc-develop-team/so-vits-svc/blob/4.1-Stable/diffusion/diffusion_onnx.py (GaussianDiffusion.p_sample)
# Pending hard negative (PRECISION44, P44-3): `b, *_, device = *x.shape, x.device` binds
# `device` to the last element of the starred tuple, `x.device`, so the noise is made where `x`
# is (the DDPM code of lucidrains / DiffSinger writes it this way). GL116 reports the sampling
# step today: with a starred target the engine does not bind `device` to `x.device` and takes
# `noise_like(x.shape, device)` for an accelerator tensor (`b, device = x.shape[0], x.device` is
# silent). Here everything runs on the host, as the ONNX export does.
import json

import torch
import torch.nn as nn

torch.manual_seed(0)


def noise_like(shape, device, repeat=False):
    if repeat:
        return torch.randn((1, *shape[1:]), device=device).repeat(shape[0], *((1,) * (len(shape) - 1)))
    return torch.randn(shape, device=device)


class Denoiser(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim + 1, 32), nn.SiLU(), nn.Linear(32, dim))

    def forward(self, x, t):
        return self.net(torch.cat([x, t.float().unsqueeze(-1) / 10], dim=-1))


class GaussianDiffusion(nn.Module):
    def __init__(self, dim=8, timesteps=10):
        super().__init__()
        self.denoise_fn = Denoiser(dim)
        betas = torch.linspace(1e-4, 0.2, timesteps)
        alphas_cumprod = torch.cumprod(1 - betas, dim=0)
        self.register_buffer("betas", betas)
        self.register_buffer("sqrt_alphas_cumprod", alphas_cumprod.sqrt())
        self.register_buffer("sqrt_one_minus_alphas_cumprod", (1 - alphas_cumprod).sqrt())
        self.num_timesteps = timesteps

    def p_losses(self, x_start, t):
        noise = torch.randn_like(x_start)
        x_noisy = (self.sqrt_alphas_cumprod[t].unsqueeze(-1) * x_start
                   + self.sqrt_one_minus_alphas_cumprod[t].unsqueeze(-1) * noise)
        return ((self.denoise_fn(x_noisy, t) - noise) ** 2).mean()

    def sample(self, n):
        # the export path: inputs made on the host, as `OnnxExport` does
        x = torch.randn((n, 8), dtype=torch.float32).cpu()
        for i in reversed(range(self.num_timesteps)):
            x = p_sample(self, x, torch.full((n,), i, dtype=torch.long))
        return x


@torch.no_grad()
def p_sample(self, x, t):
    b, *_, device = *x.shape, x.device
    eps = self.denoise_fn(x, t)
    model_mean = x - self.betas[t].unsqueeze(-1) * eps
    model_log_variance = torch.log(torch.full((b, 1), 0.01))  # a fixed small posterior variance
    noise = noise_like(x.shape, device)
    # no noise when t == 0
    nonzero_mask = (1 - (t == 0).float()).reshape(b, *((1,) * (len(x.shape) - 1)))
    return model_mean + nonzero_mask * (0.5 * model_log_variance).exp() * noise


model = GaussianDiffusion()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
data = torch.randn(64, 8) * 0.1 + 1.0

losses = []
for step in range(40):
    t = torch.randint(0, model.num_timesteps, (64,))
    optimizer.zero_grad()
    loss = model.p_losses(data, t)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

x = model.sample(4)
print("sample mean", round(x.mean().item(), 3))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": "cpu"}))
