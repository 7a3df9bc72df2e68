# source: https://github.com/huggingface/diffusers/pull/13450
# UniPCMultistepScheduler.set_timesteps() ends with `self.sigmas = self.sigmas.to("cpu")`, so every
# tensor the multistep update derives from the sigmas (lambda_t, h, rk) is a 0-dim CPU tensor; the
# update then stacks those ratios with `torch.ones((), device=device)` and `torch.stack(rks)`
# fails once the sample and the model are on the GPU ("... tensors is on cuda:0, different from
# other tensors on cpu (when checking argument in method wrapper_CUDA_cat)").
# fails-on-cuda: Expected all tensors to be on the same device
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class VelocityNet(nn.Module):
    def __init__(self, dim=2, hidden=64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim + 1, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, dim))

    def forward(self, x, t):
        return self.net(torch.cat([x, t[:, None] / 1000.0], dim=1))


class FlowUniPCScheduler:
    def __init__(self, num_train_timesteps=1000, solver_order=2):
        self.num_train_timesteps = num_train_timesteps
        self.solver_order = solver_order

    def set_timesteps(self, num_inference_steps, device=None):
        sigmas = torch.linspace(1.0, 1.0 / num_inference_steps, num_inference_steps)
        self.timesteps = (sigmas * self.num_train_timesteps).to(device=device)
        self.sigmas = torch.cat([sigmas, torch.zeros(1)])
        self.sigmas = self.sigmas.to("cpu")
        self.model_outputs = [None] * self.solver_order
        self.lower_order_nums = 0
        self.step_index = 0

    def _lambda(self, sigma):
        sigma = sigma.clamp(1e-4, 1 - 1e-4)
        return torch.log(1 - sigma) - torch.log(sigma)

    def multistep_uni_p_bh_update(self, model_output, sample, order):
        sigma_t, sigma_s0 = self.sigmas[self.step_index + 1], self.sigmas[self.step_index]
        lambda_t, lambda_s0 = self._lambda(sigma_t), self._lambda(sigma_s0)
        h = lambda_t - lambda_s0
        rks = []
        D1s = []
        for i in range(1, order):
            si = self.step_index - i
            lambda_si = self._lambda(self.sigmas[si])
            rk = (lambda_si - lambda_s0) / h
            rks.append(rk)
            D1s.append((self.model_outputs[-(i + 1)] - model_output) / rk)
        rks.append(torch.ones((), device=sample.device))
        rks = torch.stack(rks)  # expect: GL116
        x_t = sample + (sigma_t - sigma_s0) * model_output
        if D1s:
            x_t = x_t + 0.5 * (sigma_t - sigma_s0) * torch.stack(D1s, dim=1).sum(dim=1) * (rks[-1] / rks.abs().sum())
        return x_t

    def step(self, model_output, timestep, sample):
        self.model_outputs = self.model_outputs[1:] + [model_output]
        order = min(self.solver_order, self.lower_order_nums + 1)
        prev_sample = self.multistep_uni_p_bh_update(model_output, sample, order)
        self.lower_order_nums = min(self.lower_order_nums + 1, self.solver_order)
        self.step_index += 1
        return prev_sample


def sample_data(n):
    angle = torch.rand(n) * 2 * math.pi
    return torch.stack([angle.cos(), angle.sin()], dim=1) * 2.0


model = VelocityNet().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
losses = []
for step in range(150):
    x0 = sample_data(128).to(device)
    noise = torch.randn_like(x0)
    sigma = torch.rand(128, device=device)
    xt = (1 - sigma[:, None]) * x0 + sigma[:, None] * noise
    loss = F.mse_loss(model(xt, sigma * 1000), noise - x0)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

scheduler = FlowUniPCScheduler()
scheduler.set_timesteps(10, device=device)
model.eval()
x = torch.randn(256, 2, device=device)
with torch.no_grad():
    for t in scheduler.timesteps:
        v = model(x, t.expand(x.shape[0]))
        x = scheduler.step(v, t, x)
print("sample radius:", x.norm(dim=1).mean().item())

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
