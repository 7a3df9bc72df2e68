# source: https://github.com/bernardo-torres/spectral-optimal-transport/issues/3
# Spectral optimal transport loss (losses.py + features.py in one script): the loss module keeps the
# `device` string it was built with ("cpu" by default) and its forward() and the STFT transform move
# their inputs to `self.device`; the STFT window is a plain tensor attribute. After
# `Wasserstein1DLoss(...).to(device)` the registered `bin_positions` buffer is on the GPU, but the
# spectra are computed on the CPU, and wasserstein_1d() gathers the CPU bin weights with indices
# sorted from the GPU positions.
# fails-on-cuda: Expected all tensors to be on the same device
import json
import math

import torch
import torch.nn as nn


def wasserstein_1d(u_values, v_values, u_weights, v_weights, p=1, require_sort=True):
    if require_sort:
        u_values, u_sorter = torch.sort(u_values, 1)
        v_values, v_sorter = torch.sort(v_values, 1)
        u_weights = torch.gather(u_weights, 1, u_sorter)  # expect: GL116
        v_weights = torch.gather(v_weights, 1, v_sorter)  # expect: GL116
    u_cdf = torch.cumsum(u_weights, 1)
    v_cdf = torch.cumsum(v_weights, 1)
    deltas = torch.diff(u_values, dim=1)
    return torch.sum(torch.abs(u_cdf - v_cdf)[:, :-1] ** p * deltas, dim=1)


class _BaseTransform(nn.Module):
    def __init__(self, bin_position_scaling="normalized", device="cpu"):
        super().__init__()
        self.device = device
        self.bin_position_scaling = bin_position_scaling


class STFT(_BaseTransform):
    def __init__(self, fft_size=64, hop_length=16, win_length=None, bin_position_scaling="normalized", device="cpu"):
        super().__init__(bin_position_scaling, device)
        self.fft_size = fft_size
        self.hop_size = hop_length
        self.win_length = win_length if win_length else fft_size
        self.window = torch.hann_window(self.win_length).to(device)

    def get_bin_positions(self):
        return torch.linspace(0, 1, self.fft_size // 2 + 1)

    def forward(self, x):
        x = x.to(self.device)
        spec = torch.stft(x, n_fft=self.fft_size, hop_length=self.hop_size, win_length=self.win_length,
                          window=self.window, return_complex=True)
        return torch.abs(spec)


class _BaseSOTLoss(nn.Module):
    def __init__(self, transform="stft", fft_size=64, hop_length=16, eps=1e-8, device="cpu", reduce=True):
        super().__init__()
        if transform == "stft":
            self.transform_module = STFT(fft_size=fft_size, hop_length=hop_length, device=device)
        else:
            raise ValueError(f"Unknown transform {transform}")
        self.device = device
        self.register_buffer("bin_positions", self.transform_module.get_bin_positions())
        self.eps = eps
        self.reduce = reduce
        self.to(device)

    def forward(self, x, y, x_positions=None, y_positions=None):
        x = x.to(self.device)
        y = y.to(self.device)
        x_spec = self.transform_module(x).permute(0, 2, 1)
        y_spec = self.transform_module(y).permute(0, 2, 1)
        x_pos = x_positions if x_positions is not None else self.bin_positions
        y_pos = y_positions if y_positions is not None else self.bin_positions
        loss = self.loss(x_spec, y_spec, x_positions=x_pos, y_positions=y_pos)
        return torch.mean(loss) if self.reduce else loss


class Wasserstein1DLoss(_BaseSOTLoss):
    def loss(self, x_spec, y_spec, x_positions=None, y_positions=None):
        batch, frames, bins = x_spec.shape
        x_w = x_spec.reshape(-1, bins) + self.eps
        y_w = y_spec.reshape(-1, bins) + self.eps
        x_w = x_w / x_w.sum(-1, keepdim=True)
        y_w = y_w / y_w.sum(-1, keepdim=True)
        u_values = x_positions.expand(x_w.shape[0], bins)
        v_values = y_positions.expand(y_w.shape[0], bins)
        return wasserstein_1d(u_values, v_values, x_w, y_w).view(batch, frames).mean(-1)


class Synth(nn.Module):
    def __init__(self, n_samples=256):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, 64), nn.Tanh(), nn.Linear(64, 2))
        self.register_buffer("t", torch.arange(n_samples) / n_samples)

    def forward(self, z):
        freq, amp = self.net(z).unbind(-1)
        freq = 8 + 40 * torch.sigmoid(freq)
        return torch.sigmoid(amp)[:, None] * torch.sin(2 * math.pi * freq[:, None] * self.t * 4)


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Synth().to(device)
    loss_fn = Wasserstein1DLoss(transform="stft").to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    t = torch.arange(256) / 256
    losses = []
    for step in range(60):
        z = torch.rand(16, 1)
        target = torch.sin(2 * math.pi * (10 + 30 * z) * t * 4).to(device)
        loss = loss_fn(model(z.to(device)), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    print("GPULINT-TRAIN " + json.dumps({"first_loss": first, "last_loss": last, "device": device.type}))
