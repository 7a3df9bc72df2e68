# source: https://github.com/pytorch/pytorch/issues/94828 (the answer)
# Hard negative: parameters made on the device (the move inside nn.Parameter(...)), a plain
# parameter left for model.to(device), and a non-parameter tensor moved in __init__ and
# registered as a buffer.
import json

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.t = nn.Parameter(torch.rand(10, device=device))
        self.scale = nn.Parameter(torch.ones(10).to(device))
        self.shift = nn.Parameter(torch.zeros(10))
        self.register_buffer("offset", torch.full((10,), 0.1).to(device))
        self.linear = nn.Linear(10, 1)

    def forward(self, x):
        return self.linear((x + self.t) * self.scale + self.shift + self.offset)


torch.manual_seed(0)
m = Model().to(device)
optimizer = torch.optim.Adam(m.parameters(), lr=0.02)
w = torch.randn(10, 1)
losses = []
for step in range(60):
    x = torch.randn(32, 10)
    loss = nn.functional.mse_loss(m(x.to(device)), (x @ w).to(device))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
