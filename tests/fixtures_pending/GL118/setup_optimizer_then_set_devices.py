# source: https://github.com/lanl/hippynn/pull/15
# Training setup in two functions: setup_training() builds the Adagrad optimizer from the CPU
# model, set_devices() moves the model to the GPU afterwards; the optimizer's state stays behind.
# fails-on-cuda: Tensors of the same index must be on the same device
import json

import torch
import torch.nn as nn


def setup_training(model, lr=0.1):
    optimizer = torch.optim.Adagrad(model.parameters(), lr=lr)  # expect: GL118
    return optimizer


def set_devices(model, device):
    model.to(device)
    return model


def train(model, optimizer, device, steps=60):
    history = []
    w = torch.randn(5, 1)
    for step in range(steps):
        x = torch.randn(32, 5)
        loss = nn.functional.mse_loss(model(x.to(device)), (x @ w).to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append(loss.item())
    return history


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 1))
optimizer = setup_training(model)
model = set_devices(model, device)
losses = train(model, optimizer, device)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
