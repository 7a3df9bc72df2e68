# source: https://github.com/Project-MONAI/GenerativeModels/issues/354
# fixture: torchrun 2
# A latent-diffusion training script run with DDP: the trained AutoencoderKL is wrapped with
# `autoencoder = DDP(autoencoder, device_ids=[device], output_device=rank,
# find_unused_parameters=True)` like the diffusion UNet, and the scale factor is then taken from
# `z = autoencoder.encode_stage_2_inputs(check_data["image"].to(device))` under no_grad:
# "AttributeError: 'DistributedDataParallel' object has no attribute 'encode_stage_2_inputs'"
# (solved with `autoencoder.module.encode_stage_2_inputs(...)`).
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class AutoencoderKL(nn.Module):
    def __init__(self, channels=1, latent=2):
        super().__init__()
        self.encoder = nn.Conv2d(channels, 2 * latent, 3, padding=1)
        self.decoder = nn.Conv2d(latent, channels, 3, padding=1)

    def encode(self, x):
        mu, logvar = self.encoder(x).chunk(2, dim=1)
        return mu, logvar

    def encode_stage_2_inputs(self, x):
        mu, _ = self.encode(x)
        return mu

    def forward(self, x):
        mu, logvar = self.encode(x)
        return self.decoder(mu), mu, logvar


class DiffusionUNet(nn.Module):
    def __init__(self, latent=2):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(latent + 1, 16, 3, padding=1), nn.SiLU(), nn.Conv2d(16, latent, 3, padding=1))

    def forward(self, x, timesteps):
        t = (timesteps.float() / 1000.0).view(-1, 1, 1, 1).expand(-1, 1, x.shape[2], x.shape[3])
        return self.net(torch.cat([x, t], dim=1))


def main():
    distributed = "LOCAL_RANK" in os.environ
    if distributed:
        dist.init_process_group(backend="gloo")
        rank = dist.get_rank()
        world_size = dist.get_world_size()
    else:
        rank, world_size = 0, 1
    device = torch.device("cpu")
    torch.manual_seed(0)
    images = torch.rand(64, 1, 8, 8)
    train_ds = TensorDataset(images)
    sampler = DistributedSampler(train_ds, num_replicas=world_size, rank=rank, shuffle=True) if distributed else None
    train_loader = DataLoader(train_ds, batch_size=8, sampler=sampler, shuffle=sampler is None)

    autoencoder = AutoencoderKL().to(device)
    unet = DiffusionUNet().to(device)
    if distributed:
        autoencoder = DDP(autoencoder, find_unused_parameters=True)
        unet = DDP(unet)

    check_data = next(iter(train_loader))
    with torch.no_grad():
        z = autoencoder.encode_stage_2_inputs(check_data[0].to(device))  # expect: GL305
    scale_factor = 1 / torch.std(z)

    optimizer = torch.optim.Adam(unet.parameters(), lr=3e-3)
    alphas = torch.linspace(0.99, 0.5, 1000)
    history = []
    for epoch in range(8):
        if sampler is not None:
            sampler.set_epoch(epoch)
        unet.train()
        epoch_loss = 0.0
        for (images,) in train_loader:
            images = images.to(device)
            with torch.no_grad():
                latents = autoencoder(images)[1] * scale_factor
            noise = torch.randn_like(latents)
            timesteps = torch.randint(0, 1000, (images.shape[0],), device=device)
            a = alphas[timesteps].view(-1, 1, 1, 1)
            noisy = a.sqrt() * latents + (1 - a).sqrt() * noise
            optimizer.zero_grad(set_to_none=True)
            noise_pred = unet(noisy, timesteps)
            loss = F.mse_loss(noise_pred.float(), noise.float())
            loss.backward()
            optimizer.step()
            epoch_loss += loss.item()
        history.append(epoch_loss / len(train_loader))
    if rank == 0:
        print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
