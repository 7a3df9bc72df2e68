# source: https://github.com/2noise/ChatTTS/issues/724
# ChatTTS's web UI, "Sample Audio" upload: `Chat.sample_audio_speaker(wav)` hands the uploaded
# numpy waveform to `DVAE.sample_audio`, which only wraps it with `torch.from_numpy(wav)` and
# calls `self(wav, "encode")`; the DVAE was loaded onto the GPU (`.to(device)`), so its mel
# front end (a torchaudio MelSpectrogram, whose Hann window is a registered buffer) holds its
# window on cuda:0 while the waveform stays on the host: "RuntimeError: stft input and window must
# be on the same device but got self on cpu and window on cuda:0" (torch >= 1.9; the emulator
# raises ATen's "Expected all tensors to be on the same device", hence the shorter header). Also
# #603 and #741. (A small MelSpectrogram module stands for torchaudio's; the decoder is trained for
# a few steps on the device first.)
# fails-on-cuda: be on the same device
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class MelSpectrogramFeatures(nn.Module):
    def __init__(self, n_fft=64, hop_length=16, n_mels=10):
        super().__init__()
        self.n_fft, self.hop_length = n_fft, hop_length
        self.register_buffer("window", torch.hann_window(n_fft))
        g = torch.Generator().manual_seed(3)
        self.register_buffer("mel_fb", torch.rand(n_fft // 2 + 1, n_mels, generator=g))

    def forward(self, audio):
        spec = torch.stft(audio, self.n_fft, self.hop_length, window=self.window, return_complex=True).abs().pow(2)
        mel = torch.matmul(spec.transpose(-1, -2), self.mel_fb).transpose(-1, -2)
        return torch.log(torch.clip(mel, min=1e-5))


class DVAE(nn.Module):
    def __init__(self, n_mels=10, hidden=16, codebook=32):
        super().__init__()
        self.register_buffer("coef", torch.ones(n_mels))
        self.preprocessor_mel = MelSpectrogramFeatures(n_mels=n_mels)
        self.downsample_conv = nn.Conv1d(n_mels, hidden, 3, padding=1)
        self.encoder = nn.Conv1d(hidden, hidden, 3, padding=1)
        self.codebook = nn.Embedding(codebook, hidden)
        self.decoder = nn.Conv1d(hidden, hidden, 3, padding=1)
        self.out_conv = nn.Conv1d(hidden, n_mels, 1)

    def forward(self, inp, mode="decode"):
        if mode == "encode":
            mel = self.preprocessor_mel(inp)
            x = self.downsample_conv(mel / self.coef.view(-1, 1)).unsqueeze(0)
            x = self.encoder(x)
            dist = torch.cdist(x.transpose(1, 2), self.codebook.weight.unsqueeze(0))
            return dist.argmin(-1)
        vq_feats = self.codebook(inp).transpose(1, 2)
        dec_out = self.out_conv(F.gelu(self.decoder(vq_feats)))
        return dec_out * self.coef.view(-1, 1)

    @torch.inference_mode()
    def sample_audio(self, wav):
        if isinstance(wav, np.ndarray):
            wav = torch.from_numpy(wav)
        return self(wav, "encode").squeeze_(0)  # expect: GL116


class Chat:
    def __init__(self, device):
        self.device = device
        self.dvae = DVAE().to(device).eval()

    def sample_audio_speaker(self, wav):
        codes = self.dvae.sample_audio(wav)
        return "".join(chr(ord("a") + int(c) % 26) for c in codes.flatten().tolist())


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    chat = Chat(device)
    dvae = chat.dvae
    optimizer = torch.optim.Adam(dvae.parameters(), lr=1e-2)
    codes = torch.randint(0, 32, (4, 12), device=device)
    target = torch.randn(4, 10, 12, device=device)
    first = last = None
    dvae.train()
    for step in range(30):
        loss = F.mse_loss(dvae(codes, "decode"), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        first = loss.item() if first is None else first
        last = loss.item()
    dvae.eval()
    wav = np.random.RandomState(0).randn(800).astype(np.float32)
    print("speaker", chat.sample_audio_speaker(wav)[:16])
    print("GPULINT-TRAIN " + json.dumps({"first_loss": first, "last_loss": last, "device": device.type}))


if __name__ == "__main__":
    main()
