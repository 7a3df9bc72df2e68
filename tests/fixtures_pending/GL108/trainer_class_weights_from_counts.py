# source: https://github.com/sacdallago/biotrainer/issues/67
# The trainer computes per-class weights from the training labels (a CPU tensor) and builds
# self.loss_function = CrossEntropyLoss(weight=...) in a setup method; self.model is moved to
# self.device in another method, the loss never is.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Solver:
    def __init__(self, model, train_loader, use_class_weights=True):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model
        self.train_loader = train_loader
        self.use_class_weights = use_class_weights

    def _compute_class_weights(self):
        labels = torch.cat([y for _, y in self.train_loader])
        counts = torch.bincount(labels, minlength=3).float()
        return counts.sum() / (len(counts) * counts)

    def setup(self):
        weight = self._compute_class_weights() if self.use_class_weights else None
        self.loss_function = nn.CrossEntropyLoss(weight=weight)  # expect: GL108
        self.model = self.model.to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=0.01)

    def train(self, epochs):
        history = []
        for _ in range(epochs):
            for x, y in self.train_loader:
                x, y = x.to(self.device), y.to(self.device)
                self.optimizer.zero_grad()
                loss = self.loss_function(self.model(x), y)
                loss.backward()
                self.optimizer.step()
                history.append(loss.item())
        return history


torch.manual_seed(0)
X = torch.randn(480, 10)
Y = torch.where(X[:, 0] > 0.8, 2, torch.where(X[:, 1] > 0, 1, 0))
loader = DataLoader(TensorDataset(X, Y), batch_size=48, shuffle=True)
solver = Solver(nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3)), loader)
solver.setup()
losses = solver.train(epochs=4)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": solver.device.type}))
