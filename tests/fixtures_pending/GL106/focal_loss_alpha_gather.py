# source: https://github.com/yatengLG/Focal-Loss-Pytorch/issues/17
# A focal loss nn.Module keeps its per-class alpha as a plain tensor attribute; the loss module is
# even moved with the model, but a plain attribute does not move, and forward gathers it with
# the device labels.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class FocalLoss(nn.Module):
    def __init__(self, alpha=0.25, gamma=2, num_classes=3):
        super().__init__()
        self.alpha = torch.zeros(num_classes)  # expect: GL106
        self.alpha[0] += alpha
        self.alpha[1:] += 1 - alpha
        self.gamma = gamma

    def forward(self, preds, labels):
        preds = preds.view(-1, preds.size(-1))
        logsoft = F.log_softmax(preds, dim=1)
        soft = torch.exp(logsoft)
        p = soft.gather(1, labels.view(-1, 1))
        logp = logsoft.gather(1, labels.view(-1, 1))
        alpha = self.alpha.gather(0, labels.view(-1))
        loss = -torch.mul(torch.pow(1 - p, self.gamma), logp)
        return torch.mul(alpha, loss.t()).mean()


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
X = torch.randn(384, 6)
Y = (X[:, 0] > 0).long() + (X[:, 1] > 0.5).long()
model = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 3)).to(device)
criterion = FocalLoss().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.3)
losses = []
for step in range(60):
    idx = torch.randint(0, 384, (48,))
    loss = criterion(model(X[idx].to(device)), Y[idx].to(device))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
