# source: https://github.com/open-mmlab/mmgeneration/pull/476
# MMGeneration's DDPM (base_diffusion.py + utils.py + sampler.py collapsed into one script): the
# diffusion module keeps its schedule as numpy arrays (`self.sqrt_alphas_bar`, ...), the timestep
# sampler draws host timesteps that reconstruction_step() moves to the module's device
# (`get_module_device(self)`), and the module-level helper var_to_tensor() indexes
# `torch.from_numpy(var)` (a CPU tensor) with those device timesteps. Since torch 1.13 this fails
# on the GPU: "indices should be either on cpu or on the same device as the indexed tensor (cpu)".
# fails-on-cuda: indices should be either on cpu or on the same device as the indexed tensor
import json
from functools import partial

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def get_module_device(module):
    try:
        next(module.parameters())
    except StopIteration:
        raise ValueError("The input module should contain parameters.")
    if next(module.parameters()).is_cuda:
        return next(module.parameters()).get_device()
    return torch.device("cpu")


def var_to_tensor(var, index, target_shape=None, device=None):
    var_indexed = torch.from_numpy(var)[index].float()  # expect: GL116
    if device is not None:
        var_indexed = var_indexed.to(device)
    while len(var_indexed.shape) < len(target_shape):
        var_indexed = var_indexed[..., None]
    return var_indexed


def _get_noise_batch(noise, image_shape, num_batches=0):
    if isinstance(noise, torch.Tensor):
        return noise
    return torch.randn((num_batches, ) + tuple(image_shape))


class UniformTimeStepSampler:
    def __init__(self, num_timesteps):
        self.num_timesteps = num_timesteps
        self.prob = [1 / self.num_timesteps for _ in range(self.num_timesteps)]

    def sample(self, batch_size):
        return torch.from_numpy(np.random.choice(self.num_timesteps, size=(batch_size, ), p=self.prob)).long()

    def __call__(self, batch_size):
        return self.sample(batch_size)


class DenoisingMLP(nn.Module):
    def __init__(self, in_channels, num_timesteps, hidden=64):
        super().__init__()
        self.embed = nn.Embedding(num_timesteps, hidden)
        self.net_in = nn.Linear(in_channels, hidden)
        self.net_out = nn.Sequential(nn.SiLU(), nn.Linear(hidden, in_channels))

    def forward(self, x_t, t):
        return self.net_out(self.net_in(x_t) + self.embed(t))


class BasicGaussianDiffusion(nn.Module):
    def __init__(self, in_channels=8, num_timesteps=50):
        super().__init__()
        self.num_timesteps = num_timesteps
        self.denoising = DenoisingMLP(in_channels, num_timesteps)
        self.get_noise = partial(_get_noise_batch, image_shape=torch.Size([in_channels]))
        self.sampler = UniformTimeStepSampler(num_timesteps)
        self.prepare_diffusion_vars()

    def prepare_diffusion_vars(self):
        self.betas = np.linspace(1e-4, 0.05, self.num_timesteps, dtype=np.float64)
        alphas = 1.0 - self.betas
        self.alphas_bar = np.cumprod(alphas, axis=0)
        self.sqrt_alphas_bar = np.sqrt(self.alphas_bar)
        self.sqrt_one_minus_alphas_bar = np.sqrt(1.0 - self.alphas_bar)

    def q_sample(self, x_0, t, noise=None):
        tar_shape = x_0.shape
        noise = self.get_noise(noise, num_batches=x_0.shape[0])
        mean = var_to_tensor(self.sqrt_alphas_bar, t, tar_shape, x_0.device)
        std = var_to_tensor(self.sqrt_one_minus_alphas_bar, t, tar_shape, x_0.device)
        return x_0 * mean + noise * std

    def reconstruction_step(self, data_batch, timesteps=None):
        device = get_module_device(self)
        real_imgs = data_batch["real_img"]
        num_batches = real_imgs.shape[0]
        if callable(timesteps):
            timesteps = timesteps(num_batches)
        if timesteps.ndim == 1:
            timesteps = timesteps.unsqueeze(0)
        timesteps = timesteps.to(get_module_device(self))
        losses = []
        for timestep in timesteps:
            noise_batches = self.get_noise(None, num_batches=num_batches).to(device)
            diffusion_batches = self.q_sample(real_imgs, timestep, noise_batches)
            eps_pred = self.denoising(diffusion_batches, timestep)
            losses.append(F.mse_loss(eps_pred, noise_batches))
        return sum(losses) / len(losses)

    def train_step(self, data, optimizer):
        optimizer["denoising"].zero_grad()
        loss = self.reconstruction_step(data, timesteps=self.sampler)
        loss.backward()
        optimizer["denoising"].step()
        return dict(log_vars=dict(loss=loss.item()))


if __name__ == "__main__":
    torch.manual_seed(0)
    np.random.seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = torch.tanh(torch.randn(256, 8) @ torch.randn(8, 8))
    loader = torch.utils.data.DataLoader(data, batch_size=32, shuffle=True)
    model = BasicGaussianDiffusion().to(device)
    optimizer = dict(denoising=torch.optim.Adam(model.denoising.parameters(), lr=3e-3))
    losses = []
    for epoch in range(6):
        for real_img in loader:
            outputs = model.train_step(dict(real_img=real_img.to(device)), optimizer)
            losses.append(outputs["log_vars"]["loss"])
    first, last = sum(losses[:8]) / 8, sum(losses[-8:]) / 8
    print("GPULINT-TRAIN " + json.dumps({"first_loss": first, "last_loss": last, "device": device.type}))
