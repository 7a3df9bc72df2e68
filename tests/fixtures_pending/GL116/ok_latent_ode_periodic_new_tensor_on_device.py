# source: https://github.com/YuliaRubanova/latent_ode/blob/c0682d4f52b806fb88d965755892eadd9783f936/generate_timeseries.py
# Hard negative (PRECISION25 A1, engine-rooted). latent_ode's toy data set `Periodic_1d(TimeSeries)`
# builds its trajectories in NumPy, then puts them on the run's device with
# `traj_list = torch.Tensor().new_tensor(traj_list, device = self.device)`; `add_noise` adds
# `noise = torch.Tensor(noise).to(self.device)` into `traj_list_w_noise[:,1:,0]` (a clone). Both are
# on `self.device`. The engine takes the device of `x.new_tensor(data, device=d)` from `x` (a host
# `torch.Tensor()`) instead of from `device=`, and GL116 reports the in-place add as a CPU tensor
# meeting a device tensor. (`gpulint run` cannot run this file today: the CUDA emulation does not
# cover `Tensor.new_tensor(..., device="cuda")`, "PyTorch is not linked with support for cuda
# devices"; `new_zeros`/`new_empty`/`torch.tensor(..., device=)` are covered.)
import json

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)
np.random.seed(0)


class TimeSeries:
    def __init__(self, device=torch.device("cpu")):
        self.device = device

    def add_noise(self, traj_list, time_steps, noise_weight):
        n_samples = traj_list.size(0)
        n_tp = len(time_steps) - 1
        noise = np.random.sample((n_samples, n_tp))
        noise = torch.Tensor(noise).to(self.device)
        traj_list_w_noise = traj_list.clone()
        traj_list_w_noise[:, 1:, 0] += noise_weight * noise
        return traj_list_w_noise


class Periodic_1d(TimeSeries):
    def __init__(self, device=torch.device("cpu"), init_freq=0.3):
        super().__init__(device)
        self.init_freq = init_freq

    def sample_traj(self, time_steps, n_samples=1, noise_weight=0.1):
        traj_list = []
        for _ in range(n_samples):
            freq = self.init_freq + np.random.normal(scale=0.05)
            values = np.sin(time_steps * freq * 2 * np.pi)
            traj = np.stack([values, np.cos(time_steps * freq)], -1)
            traj_list.append(np.expand_dims(traj, 0))
        traj_list = np.array(traj_list)
        traj_list = torch.Tensor().new_tensor(traj_list, device=self.device)
        traj_list = traj_list.squeeze(1)
        return self.add_noise(traj_list, time_steps, noise_weight)


device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
time_steps = np.linspace(0, 5, 20)
data = Periodic_1d(device=device).sample_traj(time_steps, n_samples=32).float()

model = nn.GRU(2, 16, batch_first=True).to(device)
head = nn.Linear(16, 2).to(device)
opt = torch.optim.Adam(list(model.parameters()) + list(head.parameters()), lr=1e-2)
losses = []
for _ in range(20):
    out, _ = model(data[:, :-1])
    loss = nn.functional.mse_loss(head(out), data[:, 1:])
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
