# source: https://github.com/mozilla/TTS/issues/619
# Mozilla TTS's vocoder GAN training: the generator loss is an `nn.Module` whose multi-resolution
# STFT losses each hold a `TorchSTFT` helper, a plain class that makes its Hann window with
# `getattr(torch, window)(win_length)` on the host. `train_vocoder_gan.py` moves the generator and
# calls `criterion_gen.cuda()`, which cannot reach the helper's window, so `torch.stft` on the
# CUDA waveforms fails with "Expected all tensors to be on the same device" (the reporter makes
# `TorchSTFT` an `nn.Module` so that the move reaches the window). A small transposed-conv
# generator on synthetic tones stands in for MelGAN.
# fails-on-cuda: be on the same device
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class TorchSTFT():
    def __init__(self, n_fft, hop_length, win_length, window="hann_window"):
        self.n_fft = n_fft
        self.hop_length = hop_length
        self.win_length = win_length
        self.window = getattr(torch, window)(win_length)

    def __call__(self, x):
        o = torch.stft(x, self.n_fft, self.hop_length, self.win_length, self.window,  # expect: GL116
                       center=True, pad_mode="reflect", normalized=False, onesided=True, return_complex=True)
        M = o.abs()
        return torch.sqrt(torch.clamp(M ** 2, min=1e-8))


class STFTLoss(nn.Module):
    def __init__(self, n_fft, hop_length, win_length):
        super().__init__()
        self.stft = TorchSTFT(n_fft, hop_length, win_length)

    def forward(self, y_hat, y):
        y_hat_M = self.stft(y_hat)
        y_M = self.stft(y)
        loss_mag = F.l1_loss(torch.log(y_M), torch.log(y_hat_M))
        loss_sc = torch.norm(y_M - y_hat_M, p="fro") / torch.norm(y_M, p="fro")
        return loss_mag, loss_sc


class MultiScaleSTFTLoss(nn.Module):
    def __init__(self, n_ffts=(64, 128), hop_lengths=(16, 32), win_lengths=(48, 96)):
        super().__init__()
        self.loss_funcs = nn.ModuleList()
        for n_fft, hop_length, win_length in zip(n_ffts, hop_lengths, win_lengths):
            self.loss_funcs.append(STFTLoss(n_fft, hop_length, win_length))

    def forward(self, y_hat, y):
        N = len(self.loss_funcs)
        loss_sc = 0
        loss_mag = 0
        for f in self.loss_funcs:
            lm, lsc = f(y_hat, y)
            loss_mag += lm
            loss_sc += lsc
        return loss_mag / N, loss_sc / N


class GeneratorLoss(nn.Module):
    def __init__(self, stft_loss_weight=1.0):
        super().__init__()
        self.stft_loss_weight = stft_loss_weight
        self.stft_loss = MultiScaleSTFTLoss()

    def forward(self, y_hat, y):
        stft_loss_mg, stft_loss_sc = self.stft_loss(y_hat.squeeze(1), y.squeeze(1))
        return self.stft_loss_weight * (stft_loss_mg + stft_loss_sc)


class TinyGenerator(nn.Module):
    def __init__(self, in_channels=4, hop=16):
        super().__init__()
        self.pre = nn.Conv1d(in_channels, 16, 3, padding=1)
        self.up = nn.ConvTranspose1d(16, 8, hop, stride=hop)
        self.post = nn.Conv1d(8, 1, 7, padding=3)

    def forward(self, c):
        return torch.tanh(self.post(F.leaky_relu(self.up(F.leaky_relu(self.pre(c), 0.2)), 0.2)))


def synthetic_batch(n=8, frames=32, hop=16):
    freqs = torch.randint(0, 4, (n,))
    c = F.one_hot(freqs, 4).float().unsqueeze(-1).repeat(1, 1, frames)
    t = torch.arange(frames * hop) / 4000.0
    y = 0.5 * torch.sin(2 * math.pi * (200.0 * (freqs + 1)).unsqueeze(1) * t).unsqueeze(1)
    return c, y


use_cuda = torch.cuda.is_available()
model_gen = TinyGenerator()
criterion_gen = GeneratorLoss()
if use_cuda:
    model_gen.cuda()
    criterion_gen.cuda()
optimizer_gen = torch.optim.Adam(model_gen.parameters(), lr=3e-3)
losses = []
for step in range(80):
    c_G, y_G = synthetic_batch()
    if use_cuda:
        c_G = c_G.cuda(non_blocking=True)
        y_G = y_G.cuda(non_blocking=True)
    y_hat = model_gen(c_G)
    loss_G = criterion_gen(y_hat, y_G)
    optimizer_gen.zero_grad()
    loss_G.backward()
    optimizer_gen.step()
    losses.append(loss_G.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:10]) / 10, "last_loss": sum(losses[-10:]) / 10, "device": "cuda" if use_cuda else "cpu"}))
