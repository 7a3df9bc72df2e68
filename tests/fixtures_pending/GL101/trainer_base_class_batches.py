# source: https://github.com/victoresque/pytorch-template/issues/74
# A template-style trainer: BaseTrainer.__init__ picks self.device and moves self.model there;
# the subclass's _train_epoch feeds the loader's batches to self.model without moving them.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class BaseTrainer:
    def __init__(self, model, criterion, optimizer, epochs):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device)
        self.criterion = criterion
        self.optimizer = optimizer
        self.epochs = epochs
        self.history = []

    def train(self):
        for epoch in range(self.epochs):
            self._train_epoch(epoch)
        return self.history


class Trainer(BaseTrainer):
    def __init__(self, model, criterion, optimizer, data_loader, epochs=4):
        super().__init__(model, criterion, optimizer, epochs)
        self.data_loader = data_loader

    def _train_epoch(self, epoch):
        self.model.train()
        for batch_idx, (data, target) in enumerate(self.data_loader):
            self.optimizer.zero_grad()
            output = self.model(data)  # expect: GL101
            loss = self.criterion(output, target)  # expect: GL101
            loss.backward()
            self.optimizer.step()
            self.history.append(loss.item())


torch.manual_seed(0)
X = torch.randn(512, 12)
Y = (X[:, :4].sum(dim=1) > 0).long()
loader = DataLoader(TensorDataset(X, Y), batch_size=64, shuffle=True)
net = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 2))
trainer = Trainer(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1), loader)
losses = trainer.train()
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": trainer.device.type}))
