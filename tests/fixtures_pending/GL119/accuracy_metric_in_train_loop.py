# source: https://github.com/Lightning-AI/torchmetrics/issues/608
# train_loop() creates an accuracy metric object (an nn.Module keeping its counts as state
# tensors, torchmetrics-style) and feeds it the device predictions; the model is on the device,
# the metric is never moved.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Accuracy(nn.Module):
    """A small stateful metric in the torchmetrics mould: state lives in buffers."""

    def __init__(self):
        super().__init__()
        self.register_buffer("correct", torch.tensor(0))
        self.register_buffer("total", torch.tensor(0))

    def update(self, preds, target):
        self.correct += (preds.argmax(dim=1) == target).sum()
        self.total += target.numel()

    def compute(self):
        return self.correct.float() / self.total

    def forward(self, preds, target):
        self.update(preds, target)
        return self.compute()


def train_loop(epoch, dataloader, model, loss_fn, optim, device):
    model.train()
    metric = Accuracy()  # expect: GL119
    losses = []
    for step, (img, label) in enumerate(dataloader):
        optim.zero_grad()
        img = img.to(device).float()
        label = label.to(device).long()
        yhat = model(img)
        train_loss = loss_fn(input=yhat, target=label)
        out = torch.softmax(yhat, dim=1)
        train_step_acc = metric(out, label)
        train_loss.backward()
        optim.step()
        losses.append(train_loss.item())
    return losses, metric.compute().item()


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
X = torch.randn(320, 10)
Y = (X[:, 2] > X[:, 3]).long()
loader = DataLoader(TensorDataset(X, Y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2)).to(device)
optim = torch.optim.SGD(model.parameters(), lr=0.1)
losses = []
for epoch in range(4):
    epoch_losses, acc = train_loop(epoch, loader, model, nn.CrossEntropyLoss(), optim, device)
    losses += epoch_losses
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
