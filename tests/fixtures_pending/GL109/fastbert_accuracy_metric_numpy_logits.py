# source: https://github.com/appvision-ai/fast-bert/pull/159
# fast_bert/metrics.py: accuracy(y_pred, y_true) computes `np.argmax(y_pred, axis=1)` and compares
# `outputs.numpy() == y_true.numpy()`; Learner.validate() concatenates the logits and labels of the
# validation batches on the GPU and calls each metric function on them: "TypeError: can't convert
# CUDA tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first" (the PR moves
# them to the CPU first).
# fails-on-cuda: can't convert cuda
import json

import numpy as np
import torch
import torch.nn as nn


def accuracy(y_pred, y_true):
    outputs = y_pred.argmax(dim=1)
    return np.mean(outputs.numpy() == y_true.numpy())  # expect: GL109


class BertLearner:
    def __init__(self, model, train_dl, val_dl, device, metrics):
        self.model = model
        self.train_dl = train_dl
        self.val_dl = val_dl
        self.device = device
        self.metrics = metrics

    def fit(self, epochs, lr, validate=True):
        optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr)
        history = []
        for epoch in range(epochs):
            self.model.train()
            for input_ids, labels in self.train_dl:
                input_ids, labels = input_ids.to(self.device), labels.to(self.device)
                loss = nn.functional.cross_entropy(self.model(input_ids), labels)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                history.append(loss.item())
            if validate:
                results = self.validate()
        return history

    def validate(self):
        self.model.eval()
        all_logits, all_labels = None, None
        with torch.no_grad():
            for input_ids, labels in self.val_dl:
                input_ids, labels = input_ids.to(self.device), labels.to(self.device)
                logits = self.model(input_ids)
                all_logits = logits if all_logits is None else torch.cat((all_logits, logits), 0)
                all_labels = labels if all_labels is None else torch.cat((all_labels, labels), 0)
        validation_scores = {}
        for metric in self.metrics:
            validation_scores[metric["name"]] = metric["function"](all_logits, all_labels)
        return validation_scores


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
ids = torch.randint(0, 30, (96, 6))
labels = (ids < 15).sum(dim=1).gt(3).long()
train_dl = [(ids[i:i + 16], labels[i:i + 16]) for i in range(0, 64, 16)]
val_dl = [(ids[64:80], labels[64:80]), (ids[80:], labels[80:])]
model = nn.Sequential(nn.EmbeddingBag(30, 16), nn.Linear(16, 2)).to(device)
learner = BertLearner(model, train_dl, val_dl, device, [{"name": "accuracy", "function": accuracy}])
history = learner.fit(6, 2e-2)
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
