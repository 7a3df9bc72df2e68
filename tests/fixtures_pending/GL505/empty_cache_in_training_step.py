# source: https://github.com/huggingface/transformers/issues/31372
# A Trainer-style class empties the CUDA cache at the end of every training_step (guarded by
# `if torch.cuda.is_available():`); the step is called once per batch from the train loop.
import json

import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=0.01)

    def training_step(self, inputs, labels):
        self.model.train()
        loss = nn.functional.cross_entropy(self.model(inputs.to(self.device)), labels.to(self.device))
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()  # expect: GL505
        return loss.detach()

    def train(self, X, Y, steps):
        history = []
        for step in range(steps):
            idx = torch.randint(0, len(X), (32,))
            history.append(self.training_step(X[idx], Y[idx]).item())
        return history


torch.manual_seed(0)
X = torch.randn(256, 8)
Y = (X[:, 0] * X[:, 1] > 0).long()
trainer = Trainer(nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2)))
losses = trainer.train(X, Y, steps=60)
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": trainer.device.type}))
