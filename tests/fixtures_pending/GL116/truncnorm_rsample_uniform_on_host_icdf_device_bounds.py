# source: https://github.com/toshas/torch_truncnorm/issues/2
# TruncatedStandardNormal.rsample() draws its uniforms with torch.empty(shape).uniform_(...), on
# the host, and hands them to icdf(), which combines them with the bounds' CDF values computed in
# __init__ from `a`/`b`; a policy whose loc and scale come from a network on the GPU builds
# TruncatedNormal(loc, scale, a, b) with everything on the device except the drawn uniforms. The
# reporter moves the uniforms to `self._big_phi_a.device`.
# fails-on-cuda: Expected all tensors to be on the same device
import json
import math

import torch
import torch.nn as nn
from torch.distributions import Distribution, constraints
from torch.distributions.utils import broadcast_all

CONST_SQRT_2 = math.sqrt(2)


class TruncatedStandardNormal(Distribution):
    arg_constraints = {"a": constraints.real, "b": constraints.real}
    has_rsample = True

    def __init__(self, a, b, validate_args=None):
        self.a, self.b = broadcast_all(a, b)
        super().__init__(self.a.size(), validate_args=validate_args)
        eps = torch.finfo(self.a.dtype).eps
        self._dtype_min_gt_0 = eps
        self._dtype_max_lt_1 = 1 - eps
        self._big_phi_a = self._big_phi(self.a)
        self._big_phi_b = self._big_phi(self.b)
        self._Z = (self._big_phi_b - self._big_phi_a).clamp_min(eps)

    @staticmethod
    def _big_phi(x):
        return 0.5 * (1 + (x / CONST_SQRT_2).erf())

    @staticmethod
    def _inv_big_phi(x):
        return CONST_SQRT_2 * (2 * x - 1).erfinv()

    def icdf(self, value):
        y = self._big_phi_a + value * self._Z  # expect: GL116
        return self._inv_big_phi(y)

    def rsample(self, sample_shape=torch.Size()):
        shape = self._extended_shape(sample_shape)
        p = torch.empty(shape).uniform_(self._dtype_min_gt_0, self._dtype_max_lt_1)
        return self.icdf(p)


class TruncatedNormal(TruncatedStandardNormal):
    has_rsample = True

    def __init__(self, loc, scale, a, b, validate_args=None):
        self.loc, self.scale, a, b = broadcast_all(loc, scale, a, b)
        a = (a - self.loc) / self.scale
        b = (b - self.loc) / self.scale
        super().__init__(a, b, validate_args=validate_args)

    def icdf(self, value):
        return super().icdf(value) * self.scale + self.loc


class Policy(nn.Module):
    def __init__(self, obs_dim, act_dim):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, 32), nn.Tanh())
        self.mu = nn.Linear(32, act_dim)
        self.log_std = nn.Linear(32, act_dim)

    def forward(self, obs):
        h = self.body(obs)
        return torch.tanh(self.mu(h)), self.log_std(h).clamp(-3, 1).exp()


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
obs_all = torch.randn(128, 4)
target_all = torch.tanh(obs_all[:, :2])
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(obs_all, target_all), batch_size=32)
policy = Policy(4, 2).to(device)
optimizer = torch.optim.Adam(policy.parameters(), lr=0.01)
losses = []
for epoch in range(8):
    for obs, target in loader:
        obs, target = obs.to(device), target.to(device)
        loc, scale = policy(obs)
        dist = TruncatedNormal(loc, scale, -1.0, 1.0)
        action = dist.rsample()
        loss = ((action - target) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
