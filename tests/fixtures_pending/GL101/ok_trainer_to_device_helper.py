# source: https://github.com/victoresque/pytorch-template/issues/74 (the template's own trainer)
# Hard negative: the trainer class moves every batch in a helper method, `_to_device(batch)`,
# before self.model sees it; the model was moved in __init__.
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, model, criterion, optimizer, data_loader, epochs=4):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device)
        self.criterion = criterion
        self.optimizer = optimizer
        self.data_loader = data_loader
        self.epochs = epochs

    def _to_device(self, batch):
        return [t.to(self.device, non_blocking=True) for t in batch]

    def _train_epoch(self, history):
        self.model.train()
        for batch in self.data_loader:
            data, target = self._to_device(batch)
            self.optimizer.zero_grad()
            loss = self.criterion(self.model(data), target)
            loss.backward()
            self.optimizer.step()
            history.append(loss.item())

    def train(self):
        history = []
        for _ in range(self.epochs):
            self._train_epoch(history)
        return history


torch.manual_seed(0)
X = torch.randn(512, 12)
Y = (X[:, :4].sum(dim=1) > 0).long()
loader = DataLoader(TensorDataset(X, Y), batch_size=64, shuffle=True)
net = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 2))
trainer = Trainer(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1), loader)
losses = trainer.train()
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": trainer.device.type}))
