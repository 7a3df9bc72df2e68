# source: https://github.com/meta-pytorch/captum/pull/1189
# captum's TCAV `DefaultClassifier.train_and_eval`: the concept activations come from the model
# on the GPU, the classifier's linear model is set to their device (`self.lm.device = device`) and
# fitted, and the predictions are mapped back to labels with
# `self.lm.classes()[torch.argmax(predict, dim=1)]`. `classes()` returns a table built on the host
# from the training labels, so indexing it with the argmax of CUDA predictions fails with
# "indices should be either on cpu or on the same device as the indexed tensor (cpu)" while the
# CAV classifier is trained on CUDA. The PR moves the predictions to the CPU first. (The network,
# its layer activations and the concept sets reduced to a small convolutional feature layer over
# two synthetic concepts; the SGD training of the linear model is kept.)
# fails-on-cuda: indices should be either on cpu or on the same device as the indexed tensor
import json
import random

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class LinearModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.device = "cpu"
        self.linear = None
        self._classes = None
        self.losses = []

    def fit(self, train_data, epochs=60, lr=0.5):
        xs, ys = [], []
        for x, y in train_data:
            xs.append(x)
            ys.append(y)
        x, y = torch.cat(xs), torch.cat(ys)
        labels = sorted(set(y.tolist()))
        self._classes = torch.tensor(labels)
        self.linear = nn.Linear(x.shape[1], len(labels)).to(self.device)
        optimizer = torch.optim.SGD(self.linear.parameters(), lr=lr)
        for _ in range(epochs):
            loss = nn.functional.cross_entropy(self.linear(x.to(self.device)), y.to(self.device).long())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            self.losses.append(loss.item())

    def forward(self, x):
        return self.linear(x)

    def classes(self):
        return self._classes


class DefaultClassifier:
    def __init__(self):
        self.lm = LinearModel()

    def train_and_eval(self, dataloader, test_split_ratio=0.33):
        inputs = []
        labels = []
        for input, label in dataloader:
            inputs.append(input)
            labels.append(label)
        device = "cpu" if input is None else input.device
        x, y = torch.cat(inputs), torch.cat(labels)
        n_test = int(len(x) * test_split_ratio)
        order = torch.randperm(len(x), device=x.device)
        x_test, y_test = x[order[:n_test]], y[order[:n_test]]
        x_train, y_train = x[order[n_test:]], y[order[n_test:]]
        self.lm.device = device
        self.lm.fit(DataLoader(TensorDataset(x_train, y_train), batch_size=16))
        predict = self.lm(x_test)
        predict = self.lm.classes()[torch.argmax(predict, dim=1)]  # expect: GL116
        score = predict.long() == y_test.long().cpu()
        return {"accs": score.float().mean()}


def concept_activations(layer, device, n=48):
    g = torch.Generator().manual_seed(0)
    striped = torch.zeros(n, 3, 8, 8)
    striped[:, :, ::2] = 1.0
    noise = torch.rand(n, 3, 8, 8, generator=g)
    images = torch.cat([striped + 0.1 * noise, noise])
    concept = torch.cat([torch.zeros(n), torch.ones(n)]).long()
    with torch.no_grad():
        acts = layer(images.to(device)).flatten(1)
    return DataLoader(TensorDataset(acts, concept.to(device)), batch_size=16)


random.seed(0)
torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
layer = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(2)).to(device)
classifier = DefaultClassifier()
result = classifier.train_and_eval(concept_activations(layer, device))
print("accs", round(result["accs"].item(), 3))
losses = classifier.lm.losses
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
