# source: https://github.com/facebookresearch/detectron2/blob/main/detectron2/evaluation/evaluator.py
# Hard negative: inference_on_dataset-style evaluation enters torch.no_grad() through an
# ExitStack (`stack.enter_context(torch.no_grad())`) together with an eval-mode context.
import json
from contextlib import ExitStack, contextmanager

import torch
import torch.nn as nn


@contextmanager
def inference_context(model):
    training_mode = model.training
    model.eval()
    yield
    model.train(training_mode)


def inference_on_dataset(model, data, device):
    correct = 0
    with ExitStack() as stack:
        if isinstance(model, nn.Module):
            stack.enter_context(inference_context(model))
        stack.enter_context(torch.no_grad())
        for x, y in data:
            outputs = model(x.to(device))
            correct += (outputs.argmax(dim=1).cpu() == y).sum().item()
    return correct / sum(len(y) for _, y in data)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
X = torch.randn(320, 8)
Y = (X[:, 0] > 0).long()
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
losses = []
for step in range(50):
    idx = torch.randint(0, 256, (32,))
    loss = nn.functional.cross_entropy(model(X[idx].to(device)), Y[idx].to(device))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
val = [(X[256 + i : 256 + i + 16], Y[256 + i : 256 + i + 16]) for i in range(0, 64, 16)]
print("val acc", inference_on_dataset(model, val, device))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
