# source: https://github.com/gradsflow/gradsflow-automl/issues/105
# An AutoML-style Model class moves self.learner to self.device in __init__ and keeps a metric
# object in self.metric (state tensors, never moved); train_step updates it with device tensors.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn


class MeanSquaredError(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("sum_squared_error", torch.tensor(0.0))
        self.register_buffer("total", torch.tensor(0))

    def update(self, preds, target):
        self.sum_squared_error += ((preds - target) ** 2).sum()
        self.total += target.numel()

    def compute(self):
        return self.sum_squared_error / self.total


class Model:
    def __init__(self, learner):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.learner = learner.to(self.device)
        self.optimizer = torch.optim.Adam(self.learner.parameters(), lr=0.02)
        self.loss = nn.MSELoss()
        self.metric = MeanSquaredError()  # expect: GL119

    def train_step(self, x, y):
        x, y = x.to(self.device), y.to(self.device)
        preds = self.learner(x)
        loss = self.loss(preds, y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.metric.update(preds.detach(), y)
        return loss.item()

    def fit(self, X, Y, steps):
        history = []
        for step in range(steps):
            idx = torch.randint(0, len(X), (32,))
            history.append(self.train_step(X[idx], Y[idx]))
        return history


torch.manual_seed(0)
X = torch.randn(256, 5)
Y = X @ torch.randn(5, 1) + 0.1
model = Model(nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 1)))
losses = model.fit(X, Y, steps=60)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": model.device.type}))
