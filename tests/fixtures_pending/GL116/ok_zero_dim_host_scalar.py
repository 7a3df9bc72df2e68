# source: https://github.com/kornia/kornia/pull/224
# Hard negative: a 0-dim host tensor (`torch.tensor(1.)`) combined element-wise with device
# tensors is allowed by PyTorch (it acts as a scalar), as is a Python float; kornia's focal loss
# does `torch.tensor(1.) - input_soft`.
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


def focal_loss(input, target, alpha=0.25, gamma=2.0):
    input_soft = F.softmax(input, dim=1)
    target_one_hot = torch.zeros_like(input).scatter_(1, target.unsqueeze(1), 1.0)
    weight = torch.pow(torch.tensor(1.0) - input_soft, gamma)
    focal = -alpha * weight * torch.log(input_soft + 1e-8)
    return torch.sum(target_one_hot * focal, dim=1).mean()


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
X = torch.randn(300, 6)
Y = (X[:, 0] + X[:, 1] > 0).long()
model = nn.Sequential(nn.Linear(6, 24), nn.ReLU(), nn.Linear(24, 2)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
temperature = torch.tensor(2.0)
losses = []
for step in range(60):
    idx = torch.randint(0, 300, (32,))
    logits = model(X[idx].to(device)) / temperature
    loss = focal_loss(logits, Y[idx].to(device))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
