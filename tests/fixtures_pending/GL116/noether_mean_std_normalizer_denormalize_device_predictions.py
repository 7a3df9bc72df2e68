# source: https://github.com/Emmi-AI/noether/pull/156
# ShiftAndScaleNormalizer keeps `shift` and `scale` from its config as host tensors
# (MeanStdNormalization derives them from the dataset mean/std and hands them to the parent's
# __init__ through a new config). The dataset normalizes the targets on the host, which works;
# denormalize() is applied to the model's predictions on the GPU in the evaluation loop and
# combines them with the host vectors. The PR moves shift and scale to x.device in both methods.
# fails-on-cuda: Expected all tensors to be on the same device
import json
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class ShiftAndScaleNormalizerConfig:
    shift: torch.Tensor
    scale: torch.Tensor


@dataclass
class MeanStdNormalizerConfig:
    mean: torch.Tensor
    std: torch.Tensor


class ShiftAndScaleNormalizer:
    def __init__(self, normalizer_config):
        self.scale = normalizer_config.scale
        self.shift = normalizer_config.shift

    def __call__(self, x):
        return (x + self.shift) * self.scale

    def denormalize(self, x):
        x = x * (1.0 / self.scale) - self.shift  # expect: GL116
        return x


class MeanStdNormalization(ShiftAndScaleNormalizer):
    EPSILON = 1e-6

    def __init__(self, normalizer_config):
        self.mean = normalizer_config.mean
        self.std = normalizer_config.std
        shift = -self.mean
        scale = torch.reciprocal(self.std.clamp(min=self.EPSILON))
        super().__init__(ShiftAndScaleNormalizerConfig(shift=shift, scale=scale))


class FieldDataset(torch.utils.data.Dataset):
    def __init__(self, inputs, targets, normalizer):
        self.inputs, self.targets, self.normalizer = inputs, targets, normalizer

    def __len__(self):
        return len(self.inputs)

    def __getitem__(self, i):
        return self.inputs[i], self.normalizer(self.targets[i])


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
inputs = torch.randn(128, 5)
targets = 50.0 + 10.0 * inputs[:, :3]
normalizer = MeanStdNormalization(MeanStdNormalizerConfig(mean=targets.mean(0), std=targets.std(0)))
loader = torch.utils.data.DataLoader(FieldDataset(inputs, targets, normalizer), batch_size=32)
model = nn.Sequential(nn.Linear(5, 32), nn.GELU(), nn.Linear(32, 3)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
losses = []
for epoch in range(6):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

model.eval()
with torch.no_grad():
    pred = normalizer.denormalize(model(inputs[:16].to(device)))
    print("eval mae", (pred.cpu() - targets[:16]).abs().mean().item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
