# source: https://github.com/spdlearn/spd_learn/pull/16
# spd_learn's `WaveletConv` (a learnable Gabor wavelet filter bank, from the GREEN model) keeps
# `self.device = device if device is not None else torch.device("cpu")` from its constructor
# and ends `forward` with `return X_conv.to(device=self.device, dtype=self.dtype)`. A plain
# attribute is not moved by `model.to(device)`, so with the model on the GPU the wavelet
# features come back on the CPU and the next layer (here the covariance pooling's linear
# projection, a CUDA weight) fails with "Expected all tensors to be on the same device". The PR
# returns the output on `X.device`. (EEG data, the SPD layers and the BiMap/ReEig stack reduced
# to a power-of-wavelet feature, a linear projection and a classifier on synthetic signals.)
# fails-on-cuda: Expected all tensors to be on the same device
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def compute_gabor_wavelet(tt, foi, fwhm, sfreq, dtype):
    freqs = 2 ** foi
    sigma = (2 ** fwhm.abs()) / (2 * math.sqrt(2 * math.log(2))) / 10
    env = torch.exp(-0.5 * (tt[None, :] / sigma[:, None]) ** 2)
    phase = 2 * math.pi * freqs[:, None] * tt[None, :]
    wav = torch.complex(env * torch.cos(phase), env * torch.sin(phase))
    return (wav / wav.abs().pow(2).sum(dim=1, keepdim=True).sqrt()).to(dtype)


class WaveletConv(nn.Module):
    def __init__(self, kernel_width_s, foi_init, sfreq=100, dtype=torch.complex64, device=None):
        super().__init__()
        self.n_wavelets = len(foi_init)
        self.sfreq = sfreq
        self.dtype = dtype
        self.device = device if device is not None else torch.device("cpu")
        tmax = kernel_width_s / 2.0
        self.register_buffer("tt", torch.linspace(-tmax, tmax, int(kernel_width_s * sfreq)))
        foi_tensor = torch.tensor(foi_init)
        self.foi = nn.Parameter(foi_tensor, requires_grad=True)
        self.fwhm = nn.Parameter(-foi_tensor.clone(), requires_grad=True)

    def forward(self, X):
        wavelets = compute_gabor_wavelet(self.tt, self.foi, self.fwhm, self.sfreq, self.dtype)
        n_freqs = wavelets.shape[0]
        batch_size, in_channels, times = X.shape
        X_conv = F.conv1d(X.to(self.dtype).view(-1, 1, times), wavelets.unsqueeze(1))
        X_conv = X_conv.view(batch_size, in_channels, n_freqs, -1).swapaxes(1, 2)
        return X_conv.to(device=self.device, dtype=self.dtype)


class Green(nn.Module):
    def __init__(self, n_ch, n_outputs, foi_init=(2.0, 3.0, 4.0), hidden=8):
        super().__init__()
        self.wavelet = WaveletConv(kernel_width_s=0.2, foi_init=list(foi_init), sfreq=100)
        self.proj = nn.Linear(n_ch, hidden)
        self.head = nn.Linear(len(foi_init) * hidden, n_outputs)

    def forward(self, X):
        power = self.wavelet(X).abs().pow(2).mean(dim=-1)
        feats = self.proj(torch.log1p(power))  # expect: GL116
        return self.head(feats.flatten(1))


def make_eeg(n=48, n_ch=4, times=120, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = torch.arange(times) / 100.0
    label = torch.randint(0, 2, (n,), generator=g)
    freq = torch.where(label == 1, 16.0, 4.0)
    X = torch.sin(2 * math.pi * freq[:, None, None] * t) + 0.5 * torch.randn(n, n_ch, times, generator=g)
    return X, label


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Green(n_ch=4, n_outputs=2).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
X, y = make_eeg()
losses = []
for epoch in range(15):
    for i in range(0, len(X), 16):
        xb, yb = X[i:i + 16].to(device), y[i:i + 16].to(device)
        loss = F.cross_entropy(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
