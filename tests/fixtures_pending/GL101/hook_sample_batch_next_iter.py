# source: https://github.com/LarsKue/lightning-trainable/issues/16
# A trainable-module base class runs an `on_train_start` hook that takes one sample batch with
# next(iter(self.train_dataloader())) to initialise data-dependent state, and feeds it to the
# model that was already moved to self.device.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Trainable(nn.Module):
    def __init__(self, X, Y):
        super().__init__()
        self.device_ = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.data = TensorDataset(X, Y)
        self.net = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))

    def train_dataloader(self):
        return DataLoader(self.data, batch_size=32, shuffle=True)

    def forward(self, x):
        return self.net(x)

    def on_train_start(self):
        x, y = next(iter(self.train_dataloader()))
        with torch.no_grad():
            self.output_bias = (y - self(x)).mean()  # expect: GL101

    def fit(self, epochs=4):
        self.to(self.device_)
        self.on_train_start()
        optimizer = torch.optim.Adam(self.parameters(), lr=0.01)
        history = []
        for _ in range(epochs):
            for x, y in self.train_dataloader():
                x, y = x.to(self.device_), y.to(self.device_)
                loss = nn.functional.mse_loss(self(x) + self.output_bias, y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                history.append(loss.item())
        return history


torch.manual_seed(0)
X = torch.randn(256, 6)
Y = X[:, :2].sum(dim=1, keepdim=True) + 3.0
model = Trainable(X, Y)
losses = model.fit()
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": model.device_.type}))
