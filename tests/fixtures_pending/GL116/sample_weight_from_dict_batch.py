# source: https://github.com/skorch-dev/skorch/issues/734
# A classifier wrapper with per-sample weights: the inputs come as a dict {"X": ..., "sample_weight":
# ...}; train_step() moves X["X"] to self.device for the module, and the subclass's get_loss()
# multiplies the unreduced loss (on the device) by X["sample_weight"], still on the CPU
# ("expected device cpu but got device cuda:0"; the FAQ's fix moves sample_weight to self.device).
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class NeuralNetClassifier:
    def __init__(self, module, device, lr=0.05):
        self.device = device
        self.module_ = module.to(device)
        self.optimizer_ = torch.optim.SGD(self.module_.parameters(), lr=lr)

    def get_loss(self, y_pred, y_true, X):
        return F.cross_entropy(y_pred, y_true)

    def train_step(self, X, y):
        self.module_.train()
        self.optimizer_.zero_grad()
        y_pred = self.module_(X["X"].to(self.device))
        loss = self.get_loss(y_pred, y.to(self.device), X)
        loss.backward()
        self.optimizer_.step()
        return loss.item()

    def fit(self, X, y, epochs, batch_size=50):
        history = []
        for epoch in range(epochs):
            for i in range(0, len(y), batch_size):
                Xi = {k: v[i : i + batch_size] for k, v in X.items()}
                history.append(self.train_step(Xi, y[i : i + batch_size]))
        return history


class MyNet(NeuralNetClassifier):
    def get_loss(self, y_pred, y_true, X):
        loss_unreduced = F.cross_entropy(y_pred, y_true, reduction="none")
        sample_weight = X["sample_weight"]
        loss_reduced = (sample_weight * loss_unreduced).mean()  # expect: GL116
        return loss_reduced


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
features = torch.randn(1000, 20)
y = (features[:, :10].sum(1) > 0).long()
train = {"X": features, "sample_weight": torch.randint(1, 3, (1000,)).float()}
net = MyNet(nn.Sequential(nn.Linear(20, 10), nn.ReLU(), nn.Linear(10, 2)), device)
history = net.fit(train, y, epochs=5)
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(history[:5]) / 5, "last_loss": sum(history[-5:]) / 5, "device": device.type}))
