# source: https://github.com/usc-sail/gard-adversarial-speaker-id/issues/2
# gard-adversarial-speaker-id's speaker-ID model: `Preprocessor` (dev/transforms/dataset.py) turns a
# batch of waveforms into a log-mel spectrogram; its mel matrix is kept as a frozen nn.Parameter so
# that `model.to(device)` moves it, but forward() builds the STFT window on every call with
# `torch.hann_window(hp.win_length)`, without a device. train_libri.py moves the model and the
# waveforms to the GPU, and `model.encode(inputs)` -> `self.prep(x)` fails in torch.stft:
# "RuntimeError: stft input and window must be on the same device but got self on cuda:0 and
# window on cpu" (torch >= 1.9; the emulator raises ATen's "Expected all tensors to be on the same
# device", hence the shorter header).
# fails-on-cuda: be on the same device
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class hp:
    sr = 8000
    n_fft = 64
    hop_length = 16
    win_length = 64
    n_mels = 16
    preemphasis = 0.97


EPSILON = 1e-16


def _square(x):
    return x.pow(2).sum(-1)


class Preprocessor(nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(1)
        mel_basis = torch.rand(hp.n_mels, hp.n_fft // 2 + 1, generator=g)
        self.mel_basis = nn.Parameter(mel_basis.T.contiguous(), requires_grad=False)

    def _convert_to_mel_frequency(self, mag_spec):
        mag_spec = mag_spec.transpose(2, 1)
        mel = torch.matmul(mag_spec, self.mel_basis)
        return mel.transpose(2, 1).contiguous()

    def preemphasize(self, wav, coeff):
        return wav[:, 1:] - coeff * wav[:, :-1]

    def forward(self, wav):
        wav = self.preemphasize(wav, hp.preemphasis)
        spec = torch.stft(
            wav,
            n_fft=hp.n_fft,
            hop_length=hp.hop_length,
            win_length=hp.win_length,
            window=torch.hann_window(hp.win_length),  # expect: GL105
            return_complex=True,
        )
        mag_spec = _square(torch.view_as_real(spec))
        mel = self._convert_to_mel_frequency(mag_spec)
        return 10 * torch.clamp(mel, EPSILON).log10()


class SpeakerNet(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.prep = Preprocessor()
        self.tdnn = nn.Sequential(nn.Conv1d(hp.n_mels, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool1d(1))
        self.fc = nn.Linear(32, num_classes)

    def encode(self, x):
        x = self.prep(x.squeeze(1))
        x = (x - x.mean(dim=2, keepdim=True)) / (x.std(dim=2, keepdim=True) + 1e-5)
        return self.tdnn(x).squeeze(-1)

    def forward(self, x):
        return self.fc(self.encode(x))


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = SpeakerNet(num_classes=4).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-2)
    wavs = torch.randn(32, 1, 800)
    labels = torch.arange(32) % 4
    wavs = wavs + labels.view(-1, 1, 1).float() * torch.sin(torch.arange(800).float() * 0.3).view(1, 1, -1)
    first = last = None
    for step in range(60):
        idx = torch.randint(0, 32, (8,))
        inputs, targets = wavs[idx].to(device), labels[idx].to(device)
        loss = F.cross_entropy(model(inputs), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        first = loss.item() if first is None else first
        last = loss.item()
    print("GPULINT-TRAIN " + json.dumps({"first_loss": first, "last_loss": last, "device": device.type}))


if __name__ == "__main__":
    main()
