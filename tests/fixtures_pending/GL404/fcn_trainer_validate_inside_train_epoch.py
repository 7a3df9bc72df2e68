# source: https://github.com/wkentaro/pytorch-fcn/issues/57
# trainer.py: Trainer.train_epoch() calls self.model.train() once at its start and, inside its
# batch loop, self.validate() every `interval_validate` iterations; validate() switches the model
# to eval mode and never back, so the rest of the epoch trains with dropout off and batch-norm
# statistics frozen ("the training loss will suddenly become larger when a new epoch starts";
# fixed by calling self.model.train() again after validation).
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class FCN(nn.Module):
    def __init__(self, n_class=3):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Dropout2d(0.3))
        self.score = nn.Conv2d(8, n_class, 1)

    def forward(self, x):
        return self.score(self.features(x))


class Trainer:
    def __init__(self, cuda, model, optimizer, train_loader, val_loader, interval_validate):
        self.cuda = cuda
        self.model = model
        self.optim = optimizer
        self.train_loader = train_loader
        self.val_loader = val_loader
        self.interval_validate = interval_validate
        self.iteration = 0
        self.losses = []

    def validate(self):
        self.model.eval()  # expect: GL404
        val_loss = 0
        with torch.no_grad():
            for data, target in self.val_loader:
                if self.cuda:
                    data, target = data.cuda(), target.cuda()
                score = self.model(data)
                val_loss += F.cross_entropy(score, target).item()
        return val_loss / len(self.val_loader)

    def train_epoch(self):
        self.model.train()
        for batch_idx, (data, target) in enumerate(self.train_loader):
            if self.iteration % self.interval_validate == 0:
                self.validate()
            if self.cuda:
                data, target = data.cuda(), target.cuda()
            self.optim.zero_grad()
            score = self.model(data)
            loss = F.cross_entropy(score, target)
            loss.backward()
            self.optim.step()
            self.losses.append(loss.item())
            self.iteration += 1

    def train(self, max_epoch):
        for epoch in range(max_epoch):
            self.train_epoch()


cuda = torch.cuda.is_available()
torch.manual_seed(0)
images = torch.randn(64, 3, 8, 8)
labels = (images[:, 0] > 0).long() + (images[:, 1] > 0.5).long()
train_loader = [(images[i:i + 8], labels[i:i + 8]) for i in range(0, 48, 8)]
val_loader = [(images[i:i + 8], labels[i:i + 8]) for i in range(48, 64, 8)]
model = FCN()
if cuda:
    model = model.cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
trainer = Trainer(cuda, model, optimizer, train_loader, val_loader, interval_validate=4)
trainer.train(max_epoch=5)
print("GPULINT-TRAIN " + json.dumps({"first_loss": trainer.losses[0], "last_loss": trainer.losses[-1], "device": "cuda" if cuda else "cpu"}))
