# source: https://github.com/facebookresearch/ClassyVision/pull/69
# convert_to_one_hot() "used to check if cuda was available to determine the device of the
# returned tensor": the one-hot buffer goes to the GPU whenever one exists, while the targets it
# scatters from are still on the CPU (here: label smoothing done in the collate function, before
# the batch is moved).
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def convert_to_one_hot(targets, classes):
    one_hot_targets = torch.zeros((targets.shape[0], classes), dtype=torch.float)
    if torch.cuda.is_available():
        one_hot_targets = one_hot_targets.cuda()
    one_hot_targets.scatter_(1, targets.long().unsqueeze(1), 1.0)  # expect: GL116
    return one_hot_targets


def smoothing_collate(batch, classes=3, eps=0.1):
    x = torch.stack([b[0] for b in batch])
    y = torch.stack([b[1] for b in batch])
    one_hot = convert_to_one_hot(y, classes)
    return x, one_hot * (1 - eps) + eps / classes


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
X = torch.randn(256, 10)
Y = X[:, :3].argmax(dim=1)
loader = DataLoader(TensorDataset(X, Y), batch_size=32, shuffle=True, collate_fn=smoothing_collate)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
losses = []
for epoch in range(6):
    for x, soft_targets in loader:
        x, soft_targets = x.to(device), soft_targets.to(device)
        loss = torch.sum(-soft_targets * torch.log_softmax(model(x), dim=1), dim=1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
