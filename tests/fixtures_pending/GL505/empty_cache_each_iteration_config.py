# source: https://github.com/HorizonRobotics/alf/pull/1231
# A training config flag turns on `torch.cuda.empty_cache()` at the beginning of every
# iteration of the train loop (the flag is set, so it runs every step).
import json

import torch
import torch.nn as nn


class TrainerConfig:
    def __init__(self, num_iterations=60, empty_cache=True):
        self.num_iterations = num_iterations
        self.empty_cache = empty_cache


def train(config, model, optimizer, device):
    w = torch.linspace(-1, 1, 8)[:, None]
    history = []
    for it in range(config.num_iterations):
        if config.empty_cache:
            torch.cuda.empty_cache()  # expect: GL505
        x = torch.randn(64, 8, device=device)
        loss = nn.functional.mse_loss(model(x), x @ w.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append(loss.item())
    return history


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
losses = train(TrainerConfig(), model, torch.optim.Adam(model.parameters(), lr=0.01), device)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
