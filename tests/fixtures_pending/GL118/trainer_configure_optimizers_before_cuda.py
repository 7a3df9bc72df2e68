# source: https://github.com/Lightning-AI/pytorch-lightning/pull/554
# A home-made trainer asks the model for its optimizer (configure_optimizers, Adagrad) in
# __init__, and moves the model to the GPU only when fit() starts.
# fails-on-cuda: Tensors of the same index must be on the same device
import json

import torch
import torch.nn as nn


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self, x):
        return self.net(x)

    def configure_optimizers(self):
        return torch.optim.Adagrad(self.parameters(), lr=0.1)  # expect: GL118


class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = model.configure_optimizers()
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def fit(self, X, Y, steps):
        self.model.to(self.device)
        history = []
        for step in range(steps):
            idx = torch.randint(0, len(X), (32,))
            x, y = X[idx].to(self.device), Y[idx].to(self.device)
            loss = nn.functional.mse_loss(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            history.append(loss.item())
        return history


torch.manual_seed(0)
X = torch.randn(256, 4)
Y = X.sum(dim=1, keepdim=True)
trainer = Trainer(Regressor())
losses = trainer.fit(X, Y, steps=60)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": trainer.device.type}))
