# source: https://github.com/huggingface/diffusers/pull/8528
# The SD3 DreamBooth script as the PR "Implement SD3 loss weighting" first wrote it (a reviewer ran
# it and got the error in the PR thread): the density of the training timesteps depends on
# `--weighting_scheme`, and every branch draws `u` on the accelerator (`device=accelerator.device`);
# `indices = (u * noise_scheduler_copy.config.num_train_timesteps).long()` then index the flow-match
# scheduler's `timesteps`, a CPU tensor: "indices should be either on cpu or on the same device as
# the indexed tensor (cpu)". The script's own get_sigmas() helper moves the schedule to the device
# before comparing (correct code beside the bug). The merged version draws `u` on the CPU.
# (A small MLP denoiser on synthetic latents, the device from torch instead of Accelerate.)
# fails-on-cuda: indices should be either on cpu or on the same device as the indexed tensor
import argparse
import copy
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class FlowMatchEulerDiscreteScheduler:
    def __init__(self, num_train_timesteps=1000, shift=3.0):
        self.config = argparse.Namespace(num_train_timesteps=num_train_timesteps, shift=shift)
        timesteps = torch.linspace(1, num_train_timesteps, num_train_timesteps, dtype=torch.float32).flip(0)
        sigmas = timesteps / num_train_timesteps
        sigmas = shift * sigmas / (1 + (shift - 1) * sigmas)
        self.timesteps = sigmas * num_train_timesteps
        self.sigmas = sigmas


class Denoiser(nn.Module):
    def __init__(self, dim=16, hidden=64):
        super().__init__()
        self.time_proj = nn.Linear(1, hidden)
        self.net = nn.Sequential(nn.Linear(dim + hidden, hidden), nn.SiLU(), nn.Linear(hidden, dim))

    def forward(self, hidden_states, timestep):
        temb = F.silu(self.time_proj(timestep.unsqueeze(-1) / 1000.0))
        return self.net(torch.cat([hidden_states, temb], dim=-1))


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--weighting_scheme", default="logit_normal", choices=["logit_normal", "mode", "uniform"])
    parser.add_argument("--logit_mean", type=float, default=0.0)
    parser.add_argument("--logit_std", type=float, default=1.0)
    parser.add_argument("--mode_scale", type=float, default=1.29)
    parser.add_argument("--max_train_steps", type=int, default=60)
    parser.add_argument("--learning_rate", type=float, default=3e-3)
    return parser.parse_args()


def main(args):
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    noise_scheduler = FlowMatchEulerDiscreteScheduler(num_train_timesteps=1000, shift=3.0)
    noise_scheduler_copy = copy.deepcopy(noise_scheduler)
    vae = nn.Linear(8, 16)
    vae.requires_grad_(False)
    transformer = Denoiser()
    vae.to(device)
    transformer.to(device)
    optimizer = torch.optim.AdamW(transformer.parameters(), lr=args.learning_rate)
    g = torch.Generator().manual_seed(0)
    instance_images = torch.randn(4, 8, generator=g).repeat(16, 1)

    def get_sigmas(timesteps, n_dim=2, dtype=torch.float32):
        sigmas = noise_scheduler_copy.sigmas.to(device=device, dtype=dtype)
        schedule_timesteps = noise_scheduler_copy.timesteps.to(device)
        timesteps = timesteps.to(device)
        step_indices = [(schedule_timesteps == t).nonzero().item() for t in timesteps]
        sigma = sigmas[step_indices].flatten()
        while len(sigma.shape) < n_dim:
            sigma = sigma.unsqueeze(-1)
        return sigma

    losses = []
    for step in range(args.max_train_steps):
        pixel_values = instance_images[torch.randint(0, len(instance_images), (16,), generator=g)].to(device)
        model_input = vae(pixel_values)
        noise = torch.randn_like(model_input)
        bsz = model_input.shape[0]
        if args.weighting_scheme == "logit_normal":
            u = torch.normal(mean=args.logit_mean, std=args.logit_std, size=(bsz,), device=device)
            u = torch.nn.functional.sigmoid(u)
        elif args.weighting_scheme == "mode":
            u = torch.rand(size=(bsz,), device=device)
            u = 1 - u - args.mode_scale * (torch.cos(math.pi * u / 2) ** 2 - 1 + u)
        else:
            u = torch.rand(size=(bsz,), device=device)
        indices = (u * noise_scheduler_copy.config.num_train_timesteps).long()
        timesteps = noise_scheduler_copy.timesteps[indices].to(device=model_input.device)  # expect: GL116
        sigmas = get_sigmas(timesteps, n_dim=model_input.ndim, dtype=model_input.dtype)
        noisy_model_input = sigmas * noise + (1.0 - sigmas) * model_input
        model_pred = transformer(noisy_model_input, timesteps)
        target = noise - model_input
        loss = F.mse_loss(model_pred.float(), target.float())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))


if __name__ == "__main__":
    main(parse_args())
