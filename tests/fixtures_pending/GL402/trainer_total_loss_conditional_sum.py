# source: https://github.com/RUCAIBox/RecBole/pull/307
# Trainer._train_epoch(): the epoch total starts as None and is updated with
# `total_loss = losses if total_loss is None else total_loss + losses`, i.e. the loss tensors
# themselves; every batch's graph stays referenced until the epoch ends (the PR accumulates
# `losses.item()` instead).
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class BPRModel(nn.Module):
    def __init__(self, n_users=40, n_items=60, dim=16):
        super().__init__()
        self.user = nn.Embedding(n_users, dim)
        self.item = nn.Embedding(n_items, dim)

    def calculate_loss(self, users, pos, neg):
        u = self.user(users)
        pos_score = (u * self.item(pos)).sum(-1)
        neg_score = (u * self.item(neg)).sum(-1)
        return -torch.log(torch.sigmoid(pos_score - neg_score) + 1e-8).mean()


class Trainer:
    def __init__(self, model, device, lr=0.05):
        self.device = device
        self.model = model.to(device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)

    def _train_epoch(self, train_data):
        self.model.train()
        total_loss = None
        for users, pos, neg in train_data:
            users, pos, neg = users.to(self.device), pos.to(self.device), neg.to(self.device)
            self.optimizer.zero_grad()
            losses = self.model.calculate_loss(users, pos, neg)
            total_loss = losses if total_loss is None else total_loss + losses  # expect: GL402
            losses.backward()
            self.optimizer.step()
        return total_loss

    def fit(self, train_data, epochs):
        history = []
        for epoch in range(epochs):
            train_loss = self._train_epoch(train_data)
            history.append(float(train_loss) / len(train_data))
            print(f"epoch {epoch}: {history[-1]:.4f}")
        return history


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
users = torch.randint(0, 40, (640,))
pos = (users * 3 + torch.randint(0, 2, (640,))) % 60
neg = torch.randint(0, 60, (640,))
train_data = DataLoader(TensorDataset(users, pos, neg), batch_size=64, shuffle=True)
history = Trainer(BPRModel(), device).fit(train_data, epochs=6)
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
