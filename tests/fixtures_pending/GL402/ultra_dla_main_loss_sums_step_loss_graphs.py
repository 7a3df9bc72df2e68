# source: https://github.com/ULTR-Community/ULTRA_pytorch/issues/6
# ULTRA's DLA learner: `DLA.train(input_feed)` builds the ranker and propensity losses, steps its two
# optimizers, and returns `self.loss`, the tensor it backpropagated. The driver loop of main.py sums
# `step_loss / steps_per_checkpoint` into `loss` between checkpoints, so every step's graph is kept
# alive until the next checkpoint; the reporter's CPU memory ran out after ~10k steps. The fix asked
# for in the issue: return `self.loss.item()`.
import json

import torch
import torch.nn as nn


class DNN(nn.Module):
    def __init__(self, feature_size):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(feature_size, 16), nn.ELU(), nn.Linear(16, 1))

    def forward(self, x):
        return self.layers(x).squeeze(-1)


class DenoisingNet(nn.Module):
    def __init__(self, list_size):
        super().__init__()
        self.propensity = nn.Linear(list_size, list_size)

    def forward(self, labels):
        return self.propensity(labels)


class DLA:
    def __init__(self, feature_size, list_size, device):
        self.device = device
        self.model = DNN(feature_size).to(device)
        self.propensity_model = DenoisingNet(list_size).to(device)
        self.opt_ranker = torch.optim.Adagrad(self.model.parameters(), lr=0.05)
        self.opt_denoise = torch.optim.Adagrad(self.propensity_model.parameters(), lr=0.05)

    def loss_func(self, output, labels, weights):
        label_dis = labels * weights / (labels * weights).sum(dim=1, keepdim=True).clamp_min(1e-6)
        return -(label_dis * torch.log_softmax(output, dim=1)).sum(dim=1).mean()

    def separate_gradient_update(self):
        self.opt_denoise.zero_grad()
        self.opt_ranker.zero_grad()
        self.loss.backward()
        self.opt_denoise.step()
        self.opt_ranker.step()

    def train(self, input_feed):
        self.model.train()
        self.propensity_model.train()
        features = input_feed["features"].to(self.device)
        labels = input_feed["labels"].to(self.device)
        train_output = self.model(features)
        propensity = self.propensity_model(labels)
        propensity_weights = torch.softmax(propensity, dim=1).detach() * labels.shape[1]
        self.rank_loss = self.loss_func(train_output, labels, propensity_weights)
        relevance_weights = torch.softmax(train_output, dim=1).detach() * labels.shape[1]
        self.exam_loss = self.loss_func(propensity, labels, relevance_weights)
        self.loss = self.exam_loss + 1.0 * self.rank_loss
        self.separate_gradient_update()
        return self.loss, None, {}


def get_batch(gen, batch_size, list_size, feature_size):
    features = torch.randn(batch_size, list_size, feature_size, generator=gen)
    scores = features[..., 0] - features[..., 1]
    labels = (scores > scores.median(dim=1, keepdim=True).values).float()
    return {"features": features, "labels": labels}


def train():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = DLA(feature_size=8, list_size=10, device=device)
    steps_per_checkpoint = 10
    loss, current_step = 0.0, 0
    history = []
    while current_step < 60:
        input_feed = get_batch(gen, 32, 10, 8)
        step_loss, _, summary = model.train(input_feed)
        loss += step_loss / steps_per_checkpoint  # expect: GL402
        current_step += 1
        if current_step % steps_per_checkpoint == 0:
            history.append(float(loss))
            loss = 0.0
    return history, device


history, device = train()
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
