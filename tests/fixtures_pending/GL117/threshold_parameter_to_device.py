# source: https://github.com/pytorch/pytorch/issues/39062
# A custom layer creates its learnable threshold as nn.Parameter(torch.randn(1)).to(device):
# on a GPU the attribute is a plain tensor, absent from model.parameters(), so it is never
# trained (no crash, a silently frozen threshold).
import json

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class CustomLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.threshold = nn.Parameter(torch.randn(1)).to(device)  # expect: GL117

    def forward(self, x):
        return torch.relu(x - self.threshold)


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), CustomLayer(), nn.Linear(16, 1)).to(device)
print("trainable tensors:", len(list(model.parameters())))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
w = torch.randn(6, 1)
losses = []
for step in range(60):
    x = torch.randn(32, 6)
    y = x @ w
    loss = nn.functional.mse_loss(model(x.to(device)), y.to(device))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
