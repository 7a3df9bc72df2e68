# source: https://github.com/zenml-io/zenml/pull/91
# zenml/steps/trainer/utils.py + the PyTorch trainer step: after training on the GPU, the
# trainer runs the model over the evaluation batches and collects one dict per batch
# ({"output": ..., "label": ...}); combine_batch_results(x) turns every tensor value into a
# NumPy array with `torch.squeeze(values).detach().numpy()`, which fails for the outputs left
# on the GPU ("can't convert cuda:0 device type tensor to numpy"; the PR adds `.cpu()`).
# fails-on-cuda: can't convert cuda:0 device type tensor to numpy
import json

import numpy as np
import torch
import torch.nn as nn


def combine_batch_results(x):
    result = {}
    for batch in x:
        for feature, values in batch.items():
            if isinstance(values, torch.Tensor):
                temp = torch.squeeze(values).detach().numpy()  # expect: GL109
                values = np.reshape(temp, values.size())
            result.setdefault(feature, []).append(values)
    return {k: np.concatenate(v) for k, v in result.items()}


class BinaryClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, x):
        return torch.sigmoid(self.net(x))


def train_and_evaluate(device):
    torch.manual_seed(0)
    x_all = torch.randn(160, 6)
    y_all = (x_all[:, 0] - x_all[:, 1] > 0).float().unsqueeze(1)
    model = BinaryClassifier().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    loss_fn = nn.BCELoss()
    losses = []
    for epoch in range(5):
        for i in range(0, 128, 16):
            x, y = x_all[i:i + 16].to(device), y_all[i:i + 16].to(device)
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())

    model.eval()
    batch_list = []
    with torch.no_grad():
        for i in range(128, 160, 16):
            x = x_all[i:i + 16].to(device)
            batch_list.append({"output": model(x), "label": y_all[i:i + 16]})
    combined = combine_batch_results(batch_list)
    accuracy = float(((combined["output"] > 0.5) == combined["label"]).mean())
    return losses, accuracy


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
losses, accuracy = train_and_evaluate(device)
print("eval accuracy", accuracy)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
