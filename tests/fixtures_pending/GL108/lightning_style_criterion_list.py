# source: https://github.com/Lightning-AI/pytorch-lightning/issues/2984
# One weighted CrossEntropyLoss per output position, kept in a plain Python list on the module:
# neither the list nor the weights move when the module does (rebuilt without Lightning: the
# module is moved with .to(device) by the training loop).
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn


class PositionTagger(nn.Module):
    def __init__(self, positions=2, classes=5, dim=12):
        super().__init__()
        self.body = nn.Linear(dim, positions * classes)
        self.positions, self.classes = positions, classes
        self.criterions = []  # expect: GL107
        for p in range(positions):
            weight = torch.ones(classes)
            self.criterions.append(torch.nn.CrossEntropyLoss(weight=weight))  # expect: GL108

    def forward(self, x):
        return self.body(x).view(-1, self.positions, self.classes)

    def training_step(self, batch):
        x, y = batch
        out = self(x)
        loss0 = self.criterions[0](out[:, 0, :], y[:, 0])
        loss1 = self.criterions[1](out[:, 1, :], y[:, 1])
        return loss0 + loss1


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
X = torch.randn(256, 12)
Y = torch.stack([X[:, :5].argmax(dim=1), X[:, 5:10].argmax(dim=1)], dim=1)
model = PositionTagger().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
losses = []
for step in range(50):
    idx = torch.randint(0, 256, (32,))
    loss = model.training_step((X[idx].to(device), Y[idx].to(device)))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
