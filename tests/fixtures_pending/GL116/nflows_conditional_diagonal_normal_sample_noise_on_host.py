# source: https://github.com/bayesiains/nflows/issues/8
# ConditionalDiagonalNormal (an nn.Module distribution whose means and log-stds come from a
# context encoder) draws its sampling noise in _sample() with torch.randn(context_size *
# num_samples, *self._shape), without a device. Training through log_prob() works on the GPU;
# sampling after training combines the device means/stds with host noise. The fix draws the
# noise with device=means.device.
# fails-on-cuda: Expected all tensors to be on the same device
import json
import math

import torch
import torch.nn as nn


class Distribution(nn.Module):
    def forward(self, *args):
        raise RuntimeError("Forward method cannot be called for a Distribution object.")

    def log_prob(self, inputs, context=None):
        return self._log_prob(inputs, context)

    def sample(self, num_samples, context=None):
        return self._sample(num_samples, context)


def repeat_rows(x, num_reps):
    shape = x.shape
    x = x.unsqueeze(1)
    x = x.expand(shape[0], num_reps, *shape[1:])
    return x.reshape(shape[0] * num_reps, *shape[1:])


class ConditionalDiagonalNormal(Distribution):
    def __init__(self, shape, context_encoder=None):
        super().__init__()
        self._shape = torch.Size(shape)
        self._context_encoder = context_encoder if context_encoder is not None else (lambda x: x)
        self.register_buffer("_log_z", torch.tensor(0.5 * self._shape.numel() * math.log(2 * math.pi)), persistent=False)

    def _compute_params(self, context):
        params = self._context_encoder(context)
        split = params.shape[-1] // 2
        means = params[..., :split].reshape(params.shape[0], *self._shape)
        log_stds = params[..., split:].reshape(params.shape[0], *self._shape)
        return means, log_stds

    def _log_prob(self, inputs, context):
        means, log_stds = self._compute_params(context)
        norm_inputs = (inputs - means) * torch.exp(-log_stds)
        log_prob = -0.5 * (norm_inputs ** 2).sum(dim=1)
        return log_prob - log_stds.sum(dim=1) - self._log_z

    def _sample(self, num_samples, context):
        means, log_stds = self._compute_params(context)
        stds = torch.exp(log_stds)
        means = repeat_rows(means, num_samples)
        stds = repeat_rows(stds, num_samples)
        context_size = context.shape[0]
        noise = torch.randn(context_size * num_samples, *self._shape)
        samples = means + stds * noise  # expect: GL116
        return samples.reshape(context_size, num_samples, *self._shape)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
context_all = torch.randn(256, 3)
inputs_all = context_all[:, :2] * 2.0 + 0.1 * torch.randn(256, 2)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(inputs_all, context_all), batch_size=32)
encoder = nn.Sequential(nn.Linear(3, 32), nn.Tanh(), nn.Linear(32, 4))
flow = ConditionalDiagonalNormal(shape=[2], context_encoder=encoder).to(device)
optimizer = torch.optim.Adam(flow.parameters(), lr=0.01)
losses = []
for epoch in range(6):
    for inputs, context in loader:
        inputs, context = inputs.to(device), context.to(device)
        loss = -flow.log_prob(inputs, context=context).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
with torch.no_grad():
    samples = flow.sample(5, context=context_all[:4].to(device))
print("sample shape", tuple(samples.shape))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
