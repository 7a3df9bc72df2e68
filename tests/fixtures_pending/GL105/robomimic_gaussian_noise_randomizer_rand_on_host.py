# source: https://github.com/ARISE-Initiative/robomimic/pull/124
# robomimic's GaussianNoiseRandomizer (an nn.Module Randomizer applied by the observation
# encoder in its forward) draws the noise in _forward_in() with `torch.rand(size=out.shape)`, on
# the host, and adds it to the repeated observation batch, which lives on the policy's device.
# The PR makes the noise follow the input (`device=out.device`, as the reviewer asked).
# fixture: unsafe-fixes
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn


class Randomizer(nn.Module):
    def forward_in(self, inputs):
        if self.training:
            return self._forward_in(inputs)
        return inputs

    def forward_out(self, inputs):
        if self.training:
            return self._forward_out(inputs)
        return inputs


class GaussianNoiseRandomizer(Randomizer):
    def __init__(self, input_shape, noise_mean=0.0, noise_std=0.3, limits=None, num_samples=1):
        super().__init__()
        self.input_shape = input_shape
        self.noise_mean = noise_mean
        self.noise_std = noise_std
        self.limits = limits
        self.num_samples = num_samples

    def _forward_in(self, inputs):
        out = inputs.repeat_interleave(self.num_samples, dim=0)
        out = torch.rand(size=out.shape) * self.noise_std + self.noise_mean + out  # expect: GL105
        if self.limits is not None:
            out = torch.clip(out, min=self.limits[0], max=self.limits[1])
        return out

    def _forward_out(self, inputs):
        batch_size = inputs.shape[0] // self.num_samples
        return inputs.reshape(batch_size, self.num_samples, *inputs.shape[1:]).mean(dim=1)


class ObservationEncoder(nn.Module):
    def __init__(self, obs_dim, feat_dim):
        super().__init__()
        self.randomizer = GaussianNoiseRandomizer((obs_dim,), noise_std=0.05, num_samples=2)
        self.net = nn.Sequential(nn.Linear(obs_dim, 32), nn.ReLU(), nn.Linear(32, feat_dim))

    def forward(self, obs):
        x = self.randomizer.forward_in(obs)
        x = self.net(x)
        return self.randomizer.forward_out(x)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
policy = ObservationEncoder(6, 2).to(device)
optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
obs = torch.rand(64, 6).to(device)
actions = obs[:, :2] - obs[:, 2:4]
losses = []
for step in range(30):
    loss = (policy(obs) - actions).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": device.type}))
