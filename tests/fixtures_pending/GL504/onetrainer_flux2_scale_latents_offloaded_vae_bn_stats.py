# source: https://github.com/Nerogar/OneTrainer/pull/1608
# OneTrainer's Flux2 model wrapper normalises the cached latents in `scale_latents(latents)`:
# `self.vae.bn.running_mean.view(1, -1, 1, 1).to(latents.device, latents.dtype)` and the same for
# `sqrt(running_var + eps)`, called by the setup's `predict()` on every training step. With latent
# caching the VAE is offloaded to the CPU after the cache is built, so each step copies the two
# batch-norm statistics host-to-device again (the PR: "the per-step .to(cuda) was a blocking H2D
# that synchronized the whole CUDA stream ... once per step"); the fix keeps the statistics on the
# train device for the whole training.
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor


class TinyVAE(nn.Module):
    def __init__(self, channels=4):
        super().__init__()
        self.encoder = nn.Conv2d(3, channels, 3, padding=1)
        self.bn = nn.BatchNorm2d(channels, affine=False)
        self.batch_norm_eps = 1e-4

    def encode(self, images):
        latents = self.encoder(images)
        self.bn(latents)  # fills the running statistics
        return latents


class TinyTransformer(nn.Module):
    def __init__(self, channels=4):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(channels + 1, 16, 3, padding=1), nn.SiLU(), nn.Conv2d(16, channels, 3, padding=1))

    def forward(self, latents, timestep):
        t = timestep.view(-1, 1, 1, 1).expand(-1, 1, *latents.shape[2:])
        return self.net(torch.cat([latents, t], dim=1))


class Flux2Model:
    def __init__(self, vae, transformer):
        self.vae = vae
        self.transformer = transformer

    def scale_latents(self, latents: Tensor) -> Tensor:
        latents_bn_mean = self.vae.bn.running_mean.view(1, -1, 1, 1).to(latents.device, latents.dtype)  # expect: GL504
        latents_bn_std = torch.sqrt(self.vae.bn.running_var.view(1, -1, 1, 1) + self.vae.batch_norm_eps).to(
            latents.device, latents.dtype
        )
        return (latents - latents_bn_mean) / latents_bn_std


def cache_latents(model, n_images, generator):
    model.vae.train()
    with torch.no_grad():
        images = torch.rand(n_images, 3, 8, 8, generator=generator)
        latents = model.vae.encode(images)
    model.vae.eval()
    return latents


def predict(model, latent_image, train_device, generator):
    scaled_latent_image = model.scale_latents(latent_image.to(train_device))
    noise = torch.randn(scaled_latent_image.shape, generator=generator).to(train_device)
    timestep = torch.rand(scaled_latent_image.shape[0], generator=generator).to(train_device)
    noisy = (1 - timestep.view(-1, 1, 1, 1)) * scaled_latent_image + timestep.view(-1, 1, 1, 1) * noise
    predicted_flow = model.transformer(noisy, timestep)
    return F.mse_loss(predicted_flow, noise - scaled_latent_image)


def train(model, train_device, temp_device, epochs=8):
    generator = torch.Generator().manual_seed(0)
    latent_cache = cache_latents(model, 32, generator)
    model.vae.to(temp_device)  # latent caching: the VAE is offloaded while the transformer trains
    model.transformer.to(train_device)
    optimizer = torch.optim.AdamW(model.transformer.parameters(), lr=3e-3)
    losses = []
    for epoch in range(epochs):
        for i in range(0, latent_cache.shape[0], 8):
            loss = predict(model, latent_cache[i:i + 8], train_device, generator)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.detach())
    return [float(v) for v in losses]


if __name__ == "__main__":
    torch.manual_seed(0)
    train_device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Flux2Model(TinyVAE(), TinyTransformer())
    losses = train(model, train_device, torch.device("cpu"))
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": train_device.type}))
