# source: https://github.com/pytorch/pytorch/issues/7321
# Adagrad creates its per-parameter `sum` state at construction; the optimizer is built from the
# CPU model and the model is moved afterwards, so step() mixes CPU state with CUDA gradients (the foreach path names it).
# fails-on-cuda: Tensors of the same index must be on the same device
import json

import torch
from torch import nn, optim

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

linear = nn.Linear(2, 4)
o = optim.Adagrad(linear.parameters(), lr=0.1)  # expect: GL118
linear.to(device)

w = torch.randn(2, 4)
losses = []
for step in range(60):
    x = torch.randn(10, 2).to(device)
    loss = (linear(x) - x @ w.to(device)).pow(2).mean()
    o.zero_grad()
    loss.backward()
    o.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
