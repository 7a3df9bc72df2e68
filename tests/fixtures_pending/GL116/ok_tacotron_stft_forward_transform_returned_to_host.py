# Hard negative (PRECISION55, P55-4): an STFT module that is never moved keeps its bases as
# buffers on the host; `transform` runs the convolution on the accelerator (moving the input and
# the basis there itself) and brings the result back with `.cpu()`, so `inverse` combines host
# magnitudes with the host `inverse_basis`. The module is only used on the host (Griffin-Lim at
# inference, mel extraction in preprocessing); no operand is on another device.
# Shape of rishikksh20/FastSpeech2 utils/stft.py and janvainer/speedyspeech
# code/melgan/utils/stft.py (`F.conv1d(input_data.cuda(), ...forward_basis....cuda(), ...).cpu()`,
# the workaround of NVIDIA/tacotron2#125), here with the device chosen at run time:
# https://github.com/rishikksh20/FastSpeech2/blob/master/utils/stft.py
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class STFT(nn.Module):
    def __init__(self, filter_length=16, hop_length=4):
        super().__init__()
        self.filter_length, self.hop_length = filter_length, hop_length
        fourier = np.fft.fft(np.eye(filter_length))
        cutoff = filter_length // 2 + 1
        basis = np.vstack([np.real(fourier[:cutoff]), np.imag(fourier[:cutoff])])
        forward_basis = torch.FloatTensor(basis[:, None, :])
        inverse_basis = torch.FloatTensor(np.linalg.pinv(filter_length / hop_length * basis).T[:, None, :])
        self.register_buffer("forward_basis", forward_basis.float())
        self.register_buffer("inverse_basis", inverse_basis.float())

    def transform(self, input_data):
        forward_transform = F.conv1d(input_data.unsqueeze(1).to(device), self.forward_basis.to(device),
                                     stride=self.hop_length).cpu()
        cutoff = self.filter_length // 2 + 1
        real_part, imag_part = forward_transform[:, :cutoff], forward_transform[:, cutoff:]
        return torch.sqrt(real_part ** 2 + imag_part ** 2 + 1e-9), torch.atan2(imag_part, real_part)

    def inverse(self, magnitude, phase):
        recombine = torch.cat([magnitude * torch.cos(phase), magnitude * torch.sin(phase)], dim=1)
        return F.conv_transpose1d(recombine, self.inverse_basis, stride=self.hop_length)

    def forward(self, input_data):
        magnitude, phase = self.transform(input_data)
        return self.inverse(magnitude, phase)


# learn a gain so that the STFT round trip of the scaled signal matches the target
stft = STFT()
gain = torch.zeros(1, requires_grad=True)
optimizer = torch.optim.Adam([gain], lr=5e-2)
signal = torch.sin(torch.linspace(0, 20, 256)).unsqueeze(0)
target = stft(2.0 * signal).detach()
losses = []
for step in range(60):
    optimizer.zero_grad()
    loss = F.mse_loss(stft(signal * torch.exp(gain)), target)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
