# source: https://github.com/NVlabs/FourCastNet/blob/master/train.py
# Hard negative (PRECISION22 B3). FourCastNet's Trainer.train_one_epoch steps through the scaler
# under `if self.params.enable_amp:` (`self.gscaler.scale(loss).backward()`,
# `self.gscaler.step(self.optimizer)`), else runs `loss.backward()` / `self.optimizer.step()`,
# and then updates the scale in a second block with the same test:
# `if self.params.enable_amp: self.gscaler.update()`. Every iteration that steps through the
# scaler also updates it. GL204 reports the step today: the analysis counts the update as
# "guarded apart" because it sits under an `if` the step is not under, without seeing that the
# step is under an `if` with the same test.
import json
from types import SimpleNamespace

import torch
import torch.nn as nn

torch.manual_seed(0)


class AFNONetDemo(nn.Module):
    def __init__(self, params):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(params.N_in_channels, 16, 3, padding=1), nn.GELU(),
                                 nn.Conv2d(16, params.N_out_channels, 3, padding=1))

    def forward(self, x):
        return self.net(x)


class Trainer:
    def __init__(self, params):
        self.params = params
        self.device = torch.cuda.current_device() if torch.cuda.is_available() else "cpu"
        self.model = AFNONetDemo(params).to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=params.lr)
        if params.enable_amp == True:
            self.gscaler = torch.amp.GradScaler("cuda")
        self.loss_obj = nn.MSELoss()
        g = torch.Generator().manual_seed(1)
        inp = torch.randn(32, params.N_in_channels, 8, 16, generator=g)
        self.train_data = [(inp[i:i + 8], inp[i:i + 8, :params.N_out_channels].roll(1, dims=-1))
                           for i in range(0, 32, 8)]

    def train_one_epoch(self):
        self.model.train()
        total = torch.zeros((), device=self.device)
        for i, data in enumerate(self.train_data, 0):
            inp, tar = map(lambda x: x.to(self.device, dtype=torch.float), data)
            self.model.zero_grad()
            with torch.autocast("cuda", enabled=self.params.enable_amp):
                gen = self.model(inp).to(self.device, dtype=torch.float)
                loss = self.loss_obj(gen, tar)

            if self.params.enable_amp:
                self.gscaler.scale(loss).backward()
                self.gscaler.step(self.optimizer)
            else:
                loss.backward()
                self.optimizer.step()

            if self.params.enable_amp:
                self.gscaler.update()
            total += loss.detach()
        return (total / len(self.train_data)).item()


params = SimpleNamespace(N_in_channels=4, N_out_channels=2, lr=1e-2, enable_amp=torch.cuda.is_available())
trainer = Trainer(params)
history = [trainer.train_one_epoch() for epoch in range(10)]
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1],
                                     "device": "cuda" if torch.cuda.is_available() else "cpu"}))
