# source: https://github.com/huggingface/setfit/issues/339
# The user's compute_metrics(predictions, labels) calls predictions.numpy(); the trainer's
# evaluate() passes it the predictions of a head that runs on the GPU ("can't convert cuda:0
# device type tensor to numpy").
# fails-on-cuda: can't convert cuda:0 device type tensor to numpy
import json

import numpy as np
import torch
import torch.nn as nn


def compute_metrics(predictions, labels):
    predictions = predictions.numpy()  # expect: GL109
    return {"accuracy": float(np.mean(predictions == labels.numpy()))}


class Trainer:
    def __init__(self, model, metric, device):
        self.model = model.to(device)
        self.metric = metric
        self.device = device
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-2)

    def train(self, x, y, steps):
        losses = []
        for step in range(steps):
            idx = torch.randint(0, x.size(0), (32,))
            logits = self.model(x[idx].to(self.device))
            loss = nn.functional.cross_entropy(logits, y[idx].to(self.device))
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            losses.append(loss.item())
        return losses

    def evaluate(self, x_test, y_test):
        with torch.no_grad():
            y_pred = self.model(x_test.to(self.device)).argmax(dim=1)
        return self.metric(y_pred, y_test)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
X = torch.randn(400, 16)
Y = (X[:, :4].sum(1) > 0).long()
trainer = Trainer(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2)), compute_metrics, device)
losses = trainer.train(X[:300], Y[:300], 60)
print(trainer.evaluate(X[300:], Y[300:]))
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
