# Hard negative (PRECISION55, P55-2): a TTS loss returns `torch.zeros(1)` (host) for the stop-token
# loss when the stopnet is disabled, and adds the stop loss to the total only when it is
# enabled: the host zero never meets the device losses (it is only logged, with `.item()`).
# Shape of mozilla/TTS TTS/tts/layers/losses.py `TacotronLoss.forward`
# (`stop_loss = self.criterion_st(...) if self.config.stopnet else torch.zeros(1)`, then
# `if not self.config.separate_stopnet and self.config.stopnet: loss += stop_loss`):
# https://github.com/mozilla/TTS/blob/master/TTS/tts/layers/losses.py
import json

import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TacotronLoss(nn.Module):
    def __init__(self, stopnet, separate_stopnet):
        super().__init__()
        self.stopnet = stopnet
        self.separate_stopnet = separate_stopnet
        self.criterion = nn.L1Loss()
        self.criterion_st = nn.BCEWithLogitsLoss()

    def forward(self, decoder_output, mel_input, stopnet_output, stopnet_target):
        return_dict = {}
        loss = self.criterion(decoder_output, mel_input)
        stop_loss = self.criterion_st(stopnet_output, stopnet_target) if self.stopnet else torch.zeros(1)
        if not self.separate_stopnet and self.stopnet:
            loss += stop_loss
        return_dict["stopnet_loss"] = stop_loss
        return_dict["loss"] = loss
        return return_dict


decoder = nn.Linear(6, 5).to(device)
criterion = TacotronLoss(stopnet=False, separate_stopnet=True)
optimizer = torch.optim.Adam(decoder.parameters(), lr=1e-2)
x = torch.randn(64, 6)
mel = (x[:, :5] * 0.5 + 0.1).to(device)
stop = (x[:, 5:] > 0).float().to(device)
x = x.to(device)
losses = []
for step in range(50):
    optimizer.zero_grad()
    out = decoder(x)
    loss_dict = criterion(out, mel, out[:, :1], stop)
    loss_dict["loss"].backward()
    optimizer.step()
    losses.append(loss_dict["loss"].item() + loss_dict["stopnet_loss"].item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
