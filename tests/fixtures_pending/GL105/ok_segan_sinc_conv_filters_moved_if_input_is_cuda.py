# source: https://github.com/santi-pdp/segan_pytorch/blob/052238718b03/segan/models/modules.py
# Hard negative (engine-rooted false positive, benchmarks/PRECISION32.md, pending A2): SEGAN's
# SincConv builds its band-pass filter bank in `forward` from two learnable cut-off vectors. It
# reads the input's placement once, `cuda = x.is_cuda`, makes `filters = torch.zeros(...)` and the
# window's `n = torch.linspace(...)` on the host, and moves them under `if cuda:` with
# `.to('cuda')` before anything meets them. On a GPU input every operand is on the GPU, on a CPU
# input everything stays on the host. GL105 reports both factories: the forward-input flow reads
# `if x.is_cuda:` (fixtures/GL105/ok_arcface_sphere_one_hot_moved_if_cuda.py) but not the same
# test through a local flag.
import json
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def sinc(band, t_right, cuda=False):
    y_right = torch.sin(2 * math.pi * band * t_right) / (2 * math.pi * band * t_right)
    y_left = torch.flip(y_right, [0])
    ones = torch.ones(1)
    if cuda:
        ones = ones.to('cuda')
    return torch.cat([y_left, ones, y_right])


class SincConv(nn.Module):
    def __init__(self, N_filt, Filt_dim, fs, padding='VALID'):
        super().__init__()
        low_freq_mel = 80
        high_freq_mel = 2595 * np.log10(1 + (fs / 2) / 700)
        mel_points = np.linspace(low_freq_mel, high_freq_mel, N_filt)
        f_cos = 700 * (10 ** (mel_points / 2595) - 1)
        b1 = np.roll(f_cos, 1)
        b2 = np.roll(f_cos, -1)
        b1[0] = 30
        b2[-1] = (fs / 2) - 100
        self.freq_scale = fs * 1.0
        self.filt_b1 = nn.Parameter(torch.from_numpy(b1 / self.freq_scale).float())
        self.filt_band = nn.Parameter(torch.from_numpy((b2 - b1) / self.freq_scale).float())
        self.N_filt = N_filt
        self.Filt_dim = Filt_dim
        self.fs = fs
        self.padding = padding

    def forward(self, x):
        cuda = x.is_cuda
        filters = torch.zeros((self.N_filt, self.Filt_dim))
        N = self.Filt_dim
        t_right = torch.linspace(1, (N - 1) / 2, steps=int((N - 1) / 2)) / self.fs
        if cuda:
            filters = filters.to('cuda')
            t_right = t_right.to('cuda')
        min_freq = 50.0
        min_band = 50.0
        filt_beg_freq = torch.abs(self.filt_b1) + min_freq / self.freq_scale
        filt_end_freq = filt_beg_freq + (torch.abs(self.filt_band) + min_band / self.freq_scale)
        n = torch.linspace(0, N, steps=N)
        window = (0.54 - 0.46 * torch.cos(2 * math.pi * n / N)).float()
        if cuda:
            window = window.to('cuda')
        for i in range(self.N_filt):
            low_pass1 = 2 * filt_beg_freq[i] * sinc(filt_beg_freq[i] * self.freq_scale, t_right, cuda)
            low_pass2 = 2 * filt_end_freq[i] * sinc(filt_end_freq[i] * self.freq_scale, t_right, cuda)
            band_pass = low_pass2 - low_pass1
            band_pass = band_pass / torch.max(band_pass)
            filters[i, :] = band_pass * window
        if self.padding == 'SAME':
            x_p = F.pad(x, (self.Filt_dim // 2, self.Filt_dim // 2), mode='reflect')
        else:
            x_p = x
        return F.conv1d(x_p, filters.view(self.N_filt, 1, self.Filt_dim))


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.sinc = SincConv(8, 33, 16000, padding='SAME')
        self.head = nn.Linear(8, 2)

    def forward(self, wav):
        h = self.sinc(wav).abs().mean(-1)
        return self.head(torch.log1p(h))


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Classifier().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
t = torch.arange(256) / 16000.0
low = torch.stack([torch.sin(2 * math.pi * 300 * t + p) for p in torch.rand(32)])
high = torch.stack([torch.sin(2 * math.pi * 5000 * t + p) for p in torch.rand(32)])
wavs = torch.cat([low, high]).unsqueeze(1)
labels = torch.cat([torch.zeros(32), torch.ones(32)]).long()
losses = []
for step in range(25):
    idx = torch.randperm(64)[:32]
    wav, y = wavs[idx].to(device), labels[idx].to(device)
    loss = F.cross_entropy(model(wav), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:3]) / 3, "last_loss": sum(losses[-3:]) / 3,
                                     "device": device.type}))
