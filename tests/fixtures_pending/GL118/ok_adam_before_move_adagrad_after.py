# source: https://github.com/pytorch/pytorch/issues/7844
# Hard negative: Adam creates its state lazily, so building it before `model.to(device)` is fine
# (the parameters are moved in place); Adagrad is built after the move.
import json

import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
head = nn.Linear(4, 1)
opt = torch.optim.Adam(model.parameters(), lr=0.01)
model.to(device)
head.to(device)
head_opt = torch.optim.Adagrad(head.parameters(), lr=0.1)

X = torch.randn(256, 4)
Y = X.sum(dim=1, keepdim=True)
losses = []
for step in range(60):
    idx = torch.randint(0, 256, (32,))
    x, y = X[idx].to(device), Y[idx].to(device)
    loss = nn.functional.mse_loss(model(x), y) + nn.functional.mse_loss(head(x), y)
    opt.zero_grad()
    head_opt.zero_grad()
    loss.backward()
    opt.step()
    head_opt.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
