# source: https://github.com/facebookresearch/nwm/issues/16
# train_step() clears the gradients only on the float32 path; with bfloat16 enabled it runs
# backward and step without opt.zero_grad(), so gradients accumulate across steps.
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train_step(model, opt, x, y, bfloat_enable):
    loss_fn = nn.MSELoss()
    if not bfloat_enable:
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    else:
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
            loss = loss_fn(model(x).float(), y)
        loss.backward()
        opt.step()  # expect: GL401
    return loss.item()


torch.manual_seed(0)
x = torch.randn(256, 10)
y = x[:, :2] * 0.5
loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2)).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
losses = []
for epoch in range(4):
    for xb, yb in loader:
        xb, yb = xb.to(device), yb.to(device)
        losses.append(train_step(model, opt, xb, yb, bfloat_enable=True))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
