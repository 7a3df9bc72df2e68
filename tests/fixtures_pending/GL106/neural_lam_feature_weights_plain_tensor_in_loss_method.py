# source: https://github.com/mllam/neural-lam/pull/241
# neural-lam's autoregressive model keeps per-variable loss weights as a plain tensor attribute,
# `self.feature_weights = torch.tensor(...)`, set in __init__ and read by the model's own
# loss method, not by forward(). Moving the model (`model.to(device)`) moves its parameters and
# buffers but not this attribute, so the weighted loss multiplies device errors by host weights.
# The PR registers it as a buffer.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn


class ARModel(nn.Module):
    def __init__(self, n_vars=4, hidden=32, feature_weights=(1.0, 0.5, 2.0, 1.0)):
        super().__init__()
        self.step_net = nn.Sequential(nn.Linear(n_vars, hidden), nn.SiLU(), nn.Linear(hidden, n_vars))
        self.feature_weights = torch.tensor(feature_weights, dtype=torch.float32)  # expect: GL106

    def forward(self, prev_state):
        return prev_state + self.step_net(prev_state)

    def weighted_mse(self, pred, target):
        return ((pred - target) ** 2 * self.feature_weights).mean()

    def unroll(self, init_state, n_steps):
        states, state = [], init_state
        for _ in range(n_steps):
            state = self(state)
            states.append(state)
        return torch.stack(states, dim=1)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
t = torch.linspace(0, 20, 400)
field = torch.stack([torch.sin(t), torch.cos(t), torch.sin(2 * t), torch.cos(0.5 * t)], dim=1)
init, target = field[:-3], torch.stack([field[1:-2], field[2:-1], field[3:]], dim=1)

model = ARModel().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
losses = []
for epoch in range(4):
    for i in range(0, len(init), 64):
        init_b, target_b = init[i:i + 64].to(device), target[i:i + 64].to(device)
        loss = model.weighted_mse(model.unroll(init_b, 3), target_b)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
