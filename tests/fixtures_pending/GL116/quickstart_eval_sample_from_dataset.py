# source: https://github.com/pytorch/tutorials/pull/1657
# Quickstart-style: after training on the device, one test sample is taken straight from the
# Dataset (`test_data[0][0]`, a host tensor, not a DataLoader batch) and passed to the model.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
X = torch.randn(320, 10)
Y = (X[:, 0] - X[:, 1] > 0).long()
training_data = TensorDataset(X[:256], Y[:256])
test_data = TensorDataset(X[256:], Y[256:])
train_dataloader = DataLoader(training_data, batch_size=32)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2)).to(device)
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
losses = []
for t in range(4):
    for batch, (x, y) in enumerate(train_dataloader):
        x, y = x.to(device), y.to(device)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())

classes = ["neg", "pos"]
model.eval()
x, y = test_data[0][0], test_data[0][1]
with torch.no_grad():
    pred = model(x)  # expect: GL116
    predicted, actual = classes[pred.argmax(0)], classes[y]
print(f'Predicted: "{predicted}", Actual: "{actual}"')
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
