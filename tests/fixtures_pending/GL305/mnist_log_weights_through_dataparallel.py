# source: https://github.com/pytorch/pytorch/issues/43329
# fails-on-cuda: object has no attribute 'log_weights'
# The MNIST net defines log_weights(step, writer) to write weight histograms; once the model is
# wrapped in nn.DataParallel for a GPU run, `model.log_weights(...)` in the training loop raises
# "'DataParallel' object has no attribute 'log_weights'" (answer in the issue: model.module.log_weights).
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class HistogramWriter:
    def __init__(self):
        self.records = []

    def add_histogram(self, tag, values, step):
        self.records.append((tag, step, float(values.float().std())))


def create_model():
    return Net()


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.fc1 = nn.Linear(8 * 6 * 6, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        return F.log_softmax(self.fc1(torch.flatten(x, 1)), dim=1)

    def log_weights(self, step, writer):
        writer.add_histogram("weights/conv1/weight", self.conv1.weight.data, step)
        writer.add_histogram("weights/fc1/weight", self.fc1.weight.data, step)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = create_model()
if torch.cuda.is_available():
    model = nn.DataParallel(model)
model.to(device)
writer = HistogramWriter()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
images = torch.randn(128, 1, 14, 14)
labels = (images.mean(dim=(1, 2, 3)) * 30).long().clamp(-5, 4) + 5
losses = []
for step in range(30):
    idx = torch.randint(0, 128, (32,))
    data, target = images[idx].to(device), labels[idx].to(device)
    optimizer.zero_grad()
    loss = F.nll_loss(model(data), target)
    loss.backward()
    optimizer.step()
    if step % 10 == 0:
        model.log_weights(step, writer)  # expect: GL305
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
