# source: https://github.com/cvignac/DiGress/issues/90
# DiGress (discrete graph diffusion): `PredefinedNoiseScheduleDiscrete` registers its `betas` as a
# buffer but keeps the derived `alphas_bar` (the cumulative product used by `get_alpha_bar`) as a
# plain tensor attribute. Moving the diffusion model moves the buffer, not `alphas_bar`; the
# training step draws its step indices on the graphs' device, and `get_alpha_bar` fails at
# `self.alphas_bar[t_int.long()]`: "RuntimeError: indices should be either on cpu or on the same
# device as the indexed tensor (cpu)".
# fails-on-cuda: indices should be either on cpu or on the same device as the indexed tensor
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def cosine_beta_schedule_discrete(timesteps, s=0.008):
    steps = timesteps + 2
    x = torch.linspace(0, steps, steps, dtype=torch.float64)
    alphas_cumprod = torch.cos(0.5 * math.pi * ((x / steps) + s) / (1 + s)) ** 2
    alphas_cumprod = alphas_cumprod / alphas_cumprod[0]
    alphas = alphas_cumprod[1:] / alphas_cumprod[:-1]
    return (1 - alphas).squeeze()


class PredefinedNoiseScheduleDiscrete(nn.Module):
    def __init__(self, timesteps):
        super().__init__()
        self.timesteps = timesteps
        betas = cosine_beta_schedule_discrete(timesteps)
        self.register_buffer("betas", betas.float())
        self.alphas = 1 - torch.clamp(self.betas, min=0, max=0.9999)
        log_alpha_bar = torch.cumsum(torch.log(self.alphas), dim=0)
        self.alphas_bar = torch.exp(log_alpha_bar)  # expect: GL106

    def forward(self, t_normalized=None, t_int=None):
        if t_int is None:
            t_int = torch.round(t_normalized * self.timesteps)
        return self.betas[t_int.long()]

    def get_alpha_bar(self, t_normalized=None, t_int=None):
        if t_int is None:
            t_int = torch.round(t_normalized * self.timesteps)
        return self.alphas_bar[t_int.long()]


class GraphTransformer(nn.Module):
    def __init__(self, n_classes=4, hidden=32):
        super().__init__()
        self.inp = nn.Linear(n_classes + 1, hidden)
        self.out = nn.Linear(hidden, n_classes)

    def forward(self, X_t, t):
        h = torch.relu(self.inp(torch.cat([X_t, t.expand(-1, X_t.size(1)).unsqueeze(-1)], dim=-1)))
        return self.out(h)


class DiscreteDenoisingDiffusion(nn.Module):
    def __init__(self, n_classes=4, T=50):
        super().__init__()
        self.T = T
        self.n_classes = n_classes
        self.model = GraphTransformer(n_classes)
        self.noise_schedule = PredefinedNoiseScheduleDiscrete(T)

    def apply_noise(self, X):
        t_int = torch.randint(1, self.T + 1, size=(X.size(0), 1), device=X.device).float()
        t_float = t_int / self.T
        alpha_t_bar = self.noise_schedule.get_alpha_bar(t_normalized=t_float)
        uniform = torch.full_like(X, 1.0 / self.n_classes)
        probs = alpha_t_bar.unsqueeze(-1) * X + (1 - alpha_t_bar.unsqueeze(-1)) * uniform
        X_t = F.one_hot(torch.multinomial(probs.flatten(0, 1), 1).squeeze(-1), self.n_classes)
        return X_t.view_as(X).float(), t_float

    def training_step(self, X):
        X_t, t = self.apply_noise(X)
        pred = self.model(X_t, t)
        return F.cross_entropy(pred.flatten(0, 1), X.argmax(-1).flatten())


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
graphs = F.one_hot(torch.randint(0, 2, (64, 6)) * 2, 4).float()
model = DiscreteDenoisingDiffusion().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)

losses = []
for step in range(30):
    batch = graphs[(step * 16) % 64:(step * 16) % 64 + 16].to(device)
    loss = model.training_step(batch)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
