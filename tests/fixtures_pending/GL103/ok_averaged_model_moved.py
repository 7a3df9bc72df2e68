# source: https://pytorch.org/docs/stable/optim.html#weight-averaging-swa-and-ema
# Hard negative: torch.optim.swa_utils.AveragedModel is an nn.Module (an EMA copy of the model);
# moving it with `.to(device)` is correct, as is stepping a scheduler; nothing moves the optimizer.
import json

import torch
import torch.nn as nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(6, 24), nn.ReLU(), nn.Linear(24, 1)).to(device)
ema_model = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
ema_model.to(device)
swa = torch.optim.swa_utils.AveragedModel(model).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=20, gamma=0.5)
w = torch.randn(6, 1)
losses = []
for step in range(60):
    x = torch.randn(32, 6)
    loss = nn.functional.mse_loss(model(x.to(device)), (x @ w).to(device))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    scheduler.step()
    ema_model.update_parameters(model)
    swa.update_parameters(model)
    losses.append(loss.item())
with torch.no_grad():
    print("ema", ema_model(torch.randn(4, 6, device=device)).shape)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
