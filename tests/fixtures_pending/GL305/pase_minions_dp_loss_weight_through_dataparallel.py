# source: https://github.com/santi-pdp/pase/issues/30
# santi-pdp/pase, pase/models/core.py: Waveminionet.__init__ wraps every worker ("minion") in
# DataParallel when it sees more than one device, `self.minions_dp = nn.ModuleList([nn.DataParallel(m)
# for m in self.minions])`, and train_() then runs `minions_run = self.minions_dp` and, per worker,
# `lweight = minion.loss_weight` / `minion.loss(y_, y_lab)` on the wrapper:
# "AttributeError: 'DataParallel' object has no attribute 'loss_weight'". The reporter changed it to
# `minion.module.loss_weight`. The frontend optimizer, one optimizer per minion, the `min2idx` map and
# the `skip` connections are kept; the networks are tiny. With one device (or none) the wrappers are not
# built and the script trains; `gpulint run --gpus 2` fails with the reported error.
import json

import torch
import torch.nn as nn


class MLPMinion(nn.Module):
    def __init__(self, num_inputs, num_outputs, name, loss_weight=1.0, skip=False):
        super().__init__()
        self.name = name
        self.skip = skip
        self.loss_weight = loss_weight
        self.loss = nn.MSELoss()
        self.net = nn.Sequential(nn.Conv1d(num_inputs, 16, 1), nn.PReLU(16), nn.Conv1d(16, num_outputs, 1))

    def forward(self, x):
        return self.net(x)


class WaveFe(nn.Module):
    def __init__(self, emb_dim=8):
        super().__init__()
        self.conv = nn.Conv1d(1, emb_dim, 5, stride=2, padding=2)

    def forward(self, x):
        return torch.tanh(self.conv(x))


class Waveminionet(nn.Module):
    def __init__(self, minions_cfg, num_devices=0):
        super().__init__()
        self.frontend = WaveFe()
        self.minions = nn.ModuleList([MLPMinion(8, cfg["num_outputs"], cfg["name"], cfg["loss_weight"]) for cfg in minions_cfg])
        self.min2idx = {cfg["name"]: i for i, cfg in enumerate(minions_cfg)}
        if num_devices > 1:
            self.frontend_dp = nn.DataParallel(self.frontend)  # expect: GL301
            self.minions_dp = nn.ModuleList([nn.DataParallel(m) for m in self.minions])  # expect: GL301

    def train_(self, batches, epoch, lr, device, history):
        feopt = torch.optim.Adam(self.frontend.parameters(), lr=lr)
        minopts = {m.name: torch.optim.Adam(m.parameters(), lr=lr) for m in self.minions}
        frontend = self.frontend_dp if hasattr(self, "frontend_dp") else self.frontend
        minions_run = self.minions
        if hasattr(self, "minions_dp"):
            minions_run = self.minions_dp
        for epoch_ in range(epoch):
            self.train()
            for batch in batches:
                feopt.zero_grad()
                h = frontend(batch["chunk"].to(device))
                min_h = {}
                for mi, minion in enumerate(minions_run, start=1):
                    min_name = self.minions[mi - 1].name
                    min_h[min_name] = minion(h)
                t_loss = torch.zeros(1).to(device)
                for min_name, y_ in min_h.items():
                    minion = minions_run[self.min2idx[min_name]]
                    minopts[min_name].zero_grad()
                    y_lab = batch[min_name].to(device)
                    lweight = minion.loss_weight  # expect: GL305
                    loss = minion.loss(y_, y_lab)  # expect: GL305
                    t_loss += lweight * loss
                t_loss.backward()
                for min_name in min_h:
                    minopts[min_name].step()
                feopt.step()
                history.append(t_loss.item())


def make_batches(n, seed):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        wav = torch.randn(4, 1, 32, generator=g)
        lps = wav[:, :, ::2].abs().repeat(1, 2, 1)
        out.append({"chunk": wav, "lps": lps, "rms": wav[:, :, ::2].pow(2)})
    return out


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    minions_cfg = [{"name": "lps", "num_outputs": 2, "loss_weight": 1.0}, {"name": "rms", "num_outputs": 1, "loss_weight": 0.5}]
    model = Waveminionet(minions_cfg, num_devices=torch.cuda.device_count()).to(device)
    history = []
    model.train_(make_batches(12, 0), epoch=8, lr=0.01, device=device, history=history)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
