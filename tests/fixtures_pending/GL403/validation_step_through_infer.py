# source: https://github.com/skorch-dev/skorch/issues/218
# A scikit-learn-style wrapper: validation_step() sets the module to eval mode and computes the
# prediction through a helper method, infer(), which calls self.module_; no torch.no_grad()
# anywhere on that path, so each validation batch keeps its graph (the report ran out of GPU
# memory in fit(); the fix wraps validation_step in no_grad). infer() is shared with train_step,
# so the diagnostic belongs at its call in validation_step.
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class NeuralNet:
    def __init__(self, module, criterion, lr, device):
        self.device = device
        self.module_ = module.to(device)
        self.criterion_ = criterion
        self.optimizer_ = torch.optim.SGD(self.module_.parameters(), lr=lr, momentum=0.9)

    def infer(self, x):
        x = x.to(self.device)
        return self.module_(x)

    def get_loss(self, y_pred, y_true):
        return self.criterion_(y_pred, y_true.to(self.device))

    def train_step(self, Xi, yi):
        self.module_.train()
        self.optimizer_.zero_grad()
        y_pred = self.infer(Xi)
        loss = self.get_loss(y_pred, yi)
        loss.backward()
        self.optimizer_.step()
        return {"loss": loss, "y_pred": y_pred}

    def validation_step(self, Xi, yi):
        self.module_.eval()
        y_pred = self.infer(Xi)  # expect: GL403
        loss = self.get_loss(y_pred, yi)
        return {"loss": loss, "y_pred": y_pred}

    def fit(self, X, y, epochs):
        train = DataLoader(TensorDataset(X[:224], y[:224]), batch_size=32, shuffle=True)
        valid = DataLoader(TensorDataset(X[224:], y[224:]), batch_size=32)
        history = []
        for epoch in range(epochs):
            train_losses = [self.train_step(Xi, yi)["loss"].item() for Xi, yi in train]
            valid_losses = [self.validation_step(Xi, yi)["loss"].item() for Xi, yi in valid]
            history.append(sum(train_losses) / len(train_losses))
            print(f"epoch {epoch}: train {history[-1]:.4f} valid {sum(valid_losses) / len(valid_losses):.4f}")
        return history


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
X = torch.randn(288, 20)
y = (X[:, :5].sum(1) > 0).long()
net = NeuralNet(nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 2)), nn.CrossEntropyLoss(), 0.05, device)
history = net.fit(X, y, epochs=6)
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
