# source: https://github.com/RUCAIBox/RecBole/issues/1984
# RecBole's trainer evaluates a recommender with sampled negatives: it asks the model for the
# scores of each (user, item) pair of the batch and scatters them into a -inf matrix made on the
# training device (`scores[row_idx, col_idx] = origin_scores`). The non-neural baselines return
# scores made on the host: Random's `predict()` is `torch.rand(len(interaction))`, ADMMSLIM and
# SLIMElastic wrap NumPy results with `torch.from_numpy`. With `use_gpu = True` the scatter then
# mixes devices ("Expected all tensors to be on the same device, but found at least two devices,
# cuda:0 and cpu!"); PR #1997 makes the baselines' scores on `self.device`. Here a BPR model is
# trained and evaluated with the same trainer, then the Random baseline is evaluated with it.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class GeneralRecommender(nn.Module):
    def __init__(self, n_users, n_items, device):
        super().__init__()
        self.n_users = n_users
        self.n_items = n_items
        self.device = device


class BPR(GeneralRecommender):
    def __init__(self, n_users, n_items, device, dim=16):
        super().__init__(n_users, n_items, device)
        self.user_embedding = nn.Embedding(n_users, dim)
        self.item_embedding = nn.Embedding(n_items, dim)

    def calculate_loss(self, user, pos_item, neg_item):
        u = self.user_embedding(user)
        pos = (u * self.item_embedding(pos_item)).sum(-1)
        neg = (u * self.item_embedding(neg_item)).sum(-1)
        return -torch.log(torch.sigmoid(pos - neg) + 1e-10).mean()

    def predict(self, user, item):
        return (self.user_embedding(user) * self.item_embedding(item)).sum(-1)


class Random(GeneralRecommender):
    def __init__(self, n_users, n_items, device):
        super().__init__(n_users, n_items, device)
        self.fake_loss = nn.Parameter(torch.zeros(1))

    def calculate_loss(self, user, pos_item, neg_item):
        return nn.Parameter(torch.zeros(1))

    def predict(self, user, item):
        return torch.rand(len(user)).squeeze(-1)


class Trainer:
    def __init__(self, model, device):
        self.model = model.to(device)
        self.device = device
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=0.05)

    def fit(self, train_data, epochs=20):
        losses = []
        for epoch in range(epochs):
            self.model.train()
            for user, pos_item, neg_item in train_data:
                user, pos_item, neg_item = user.to(self.device), pos_item.to(self.device), neg_item.to(self.device)
                loss = self.model.calculate_loss(user, pos_item, neg_item)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                losses.append(loss.item())
        return losses

    @torch.no_grad()
    def evaluate(self, eval_data, k=2):
        self.model.eval()
        hits, total = 0, 0
        for user, items in eval_data:
            # items[:, 0] is the held-out positive, the rest are sampled negatives
            n, width = items.shape
            row_idx = torch.arange(n, device=self.device).repeat_interleave(width)
            col_idx = torch.arange(width, device=self.device).repeat(n)
            origin_scores = self.model.predict(user.repeat_interleave(width).to(self.device), items.flatten().to(self.device))
            scores = torch.full((n, width), -float("inf"), device=self.device)
            scores[row_idx, col_idx] = origin_scores  # expect: GL116
            topk = scores.topk(k, dim=1).indices
            hits += (topk == 0).any(dim=1).sum().item()
            total += n
        return hits / total


def make_data(n_users=30, n_items=40, seed=0):
    g = torch.Generator().manual_seed(seed)
    liked = torch.stack([(torch.arange(3) + 5 * (u % 8)) % n_items for u in range(n_users)])
    users = torch.arange(n_users).repeat_interleave(3)
    pos = liked.flatten()
    train_batches = []
    for start in range(0, len(users), 30):
        u = users[start:start + 30]
        neg = torch.randint(0, n_items, (len(u),), generator=g)
        train_batches.append((u, pos[start:start + 30], neg))
    eval_batches = []
    for start in range(0, n_users, 10):
        u = torch.arange(start, min(start + 10, n_users))
        negs = torch.randint(0, n_items, (len(u), 4), generator=g)
        eval_batches.append((u, torch.cat([liked[u, :1], negs], dim=1)))
    return train_batches, eval_batches


torch.manual_seed(0)
train_data, eval_data = make_data()
bpr_trainer = Trainer(BPR(30, 40, device), device)
losses = bpr_trainer.fit(train_data)
print("BPR hit@2:", bpr_trainer.evaluate(eval_data))
random_trainer = Trainer(Random(30, 40, device), device)
print("Random hit@2:", random_trainer.evaluate(eval_data))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
