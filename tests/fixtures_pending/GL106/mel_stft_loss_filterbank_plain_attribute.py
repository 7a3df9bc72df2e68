# source: https://github.com/csteinmetz1/auraloss/issues/34
# auraloss's STFTLoss (the MelSTFTLoss base) builds its filterbank in __init__: for
# `scale == "mel"` it computes the mel filters with NumPy and stores
# `self.fb = torch.tensor(fb).unsqueeze(0)`, and only when a `device` argument is given moves it
# with `self.fb = self.fb.to(self.device)`. The filterbank is a plain attribute, not a buffer, so
# moving the loss module (by hand or by Lightning) leaves it on the CPU and
# `torch.matmul(self.fb, x_mag)` in forward fails on the GPU with "Expected all tensors to be on
# the same device" (the maintainer's fix: `self.register_buffer("fb", fb)`).
# fails-on-cuda: Expected all tensors to be on the same device
import json

import numpy as np
import torch
import torch.nn as nn


def mel_filters(sample_rate, n_fft, n_mels):
    n_freqs = n_fft // 2 + 1
    mel_max = 2595.0 * np.log10(1.0 + (sample_rate / 2) / 700.0)
    hz_points = 700.0 * (10 ** (np.linspace(0.0, mel_max, n_mels + 2) / 2595.0) - 1.0)
    bins = np.floor((n_fft + 1) * hz_points / sample_rate).astype(int)
    fb = np.zeros((n_mels, n_freqs), dtype=np.float32)
    for m in range(1, n_mels + 1):
        left, center, right = bins[m - 1], bins[m], bins[m + 1]
        for k in range(left, center):
            fb[m - 1, k] = (k - left) / max(center - left, 1)
        for k in range(center, right):
            fb[m - 1, k] = (right - k) / max(right - center, 1)
    return fb


class STFTLoss(nn.Module):
    def __init__(self, fft_size=64, hop_size=16, win_length=64, sample_rate=None, scale=None,
                 n_bins=None, device=None):
        super().__init__()
        self.fft_size = fft_size
        self.hop_size = hop_size
        self.win_length = win_length
        self.register_buffer("window", torch.hann_window(win_length))
        self.scale = scale
        self.device = device
        if self.scale == "mel":
            assert sample_rate is not None
            assert n_bins <= fft_size
            fb = mel_filters(sample_rate, fft_size, n_bins)
            self.fb = torch.tensor(fb).unsqueeze(0)  # expect: GL106
        if scale is not None and device is not None:
            self.fb = self.fb.to(self.device)

    def stft(self, x):
        x_stft = torch.stft(x, self.fft_size, self.hop_size, self.win_length, self.window,
                            return_complex=True)
        return torch.sqrt(torch.clamp(x_stft.abs() ** 2, min=1e-7))

    def forward(self, x, y):
        x_mag = self.stft(x.view(-1, x.size(-1)))
        y_mag = self.stft(y.view(-1, y.size(-1)))
        if self.scale is not None:
            x_mag = torch.matmul(self.fb, x_mag)
            y_mag = torch.matmul(self.fb, y_mag)
        sc_loss = torch.norm(y_mag - x_mag, p="fro") / torch.norm(y_mag, p="fro")
        mag_loss = nn.functional.l1_loss(torch.log(x_mag), torch.log(y_mag))
        return sc_loss + mag_loss


class MelSTFTLoss(STFTLoss):
    def __init__(self, sample_rate, fft_size=64, hop_size=16, win_length=64, n_mels=16, **kwargs):
        super().__init__(fft_size, hop_size, win_length, sample_rate=sample_rate, scale="mel",
                         n_bins=n_mels, **kwargs)


class Denoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(1, 8, 9, padding=4), nn.Tanh(), nn.Conv1d(8, 1, 9, padding=4))

    def forward(self, x):
        return x + self.net(x)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
t = torch.linspace(0, 1, 512)
clean = torch.stack([torch.sin(2 * np.pi * f * t) for f in (20.0, 35.0, 50.0, 65.0)]).unsqueeze(1)
noisy = clean + 0.3 * torch.randn_like(clean)
clean, noisy = clean.to(device), noisy.to(device)
model = Denoiser().to(device)
criterion = MelSTFTLoss(sample_rate=512).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
losses = []
for step in range(15):
    optimizer.zero_grad()
    loss = criterion(model(noisy), clean)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
