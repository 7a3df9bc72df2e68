# source: https://github.com/NathanGavenski/IL-Datasets/issues/21
# Behavioural cloning method class (imitation-learning benchmark style): _train() moves the
# states to self.device and passes `action.to(self.device)` inline to the loss, but hands the
# loader's `action` itself to the metric helper accuracy(prediction, ground_truth), which
# compares argmax(prediction) (on the device) with the CPU ground truth ("metrics doesn't make
# sure that all inputs on the same device").
# fails-on-cuda: Expected all tensors to be on the same device
import json
from numbers import Number

import torch
import torch.nn as nn
from torch import Tensor, argmax
from torch.utils.data import DataLoader, TensorDataset


def accuracy(prediction: Tensor, ground_truth: Tensor) -> Number:
    if not isinstance(prediction, Tensor) or not isinstance(ground_truth, Tensor):
        raise ValueError("'prediction' and 'ground truth' should be a tensor")
    return ((argmax(prediction, 1) == ground_truth).sum().item() / ground_truth.size(0)) * 100  # expect: GL116


class BC(nn.Module):
    def __init__(self, observation_size, action_size, device=None):
        super().__init__()
        self.device = device or torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.policy = nn.Sequential(nn.Linear(observation_size, 32), nn.ReLU(), nn.Linear(32, action_size))
        self.loss_fn = nn.CrossEntropyLoss()
        self.to(self.device)
        self.optimizer_fn = torch.optim.Adam(self.policy.parameters(), lr=1e-2)

    def forward(self, x):
        return self.policy(x)

    def _train(self, dataset):
        metrics = {"loss": [], "accuracy": []}
        for state, action in dataset:
            self.optimizer_fn.zero_grad()
            state = state.to(self.device)
            predictions = self.forward(state)
            loss = self.loss_fn(predictions, action.to(self.device))
            loss.backward()
            self.optimizer_fn.step()
            metrics["loss"].append(loss.item())
            metrics["accuracy"].append(accuracy(predictions, action))
        return metrics


torch.manual_seed(0)
states = torch.randn(128, 4)
actions = (states[:, 0] > 0).long() + (states[:, 1] > 0).long()
dataset = DataLoader(TensorDataset(states, actions), batch_size=32, shuffle=True)
bc = BC(4, 3)
losses = []
for epoch in range(10):
    losses += bc._train(dataset)["loss"]
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": bc.device.type}))
