# source: https://dev-solve.com/posts/3f078da
# (a question-and-answer page on "RuntimeError: Expected all tensors to be on the same device, but
# found at least two devices, cuda:0 and cpu!" when resuming training from a checkpoint)
# The shape the page answers: on resume the script rebuilds the model and its Adam optimizer on the
# CPU, loads both state dicts from the checkpoint, and only then moves the model with
# `model.to(device)`. The optimizer's moment buffers were cast to the parameters' device (the CPU)
# by `load_state_dict`, so the first `optimizer.step()` on a GPU mixes CUDA parameters and
# gradients with CPU state. The page's fix: move the model before loading the optimizer state.
# Here both runs sit in one notebook-like script and the resume re-uses the names `model` and
# `optimizer` (the checkpoint is written by the same file). Missed: DeviceFacts.optimizer_models
# gives no model for an optimizer name bound twice (engine item).
# fails-on-cuda: Tensors of the same index must be on the same device
import json
import os
import tempfile

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class YourModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))

    def forward(self, x):
        return self.net(x)


def train_epochs(model, optimizer, loader, device, epochs, losses):
    criterion = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        for input, target in loader:
            input, target = input.to(device), target.to(device)
            loss = criterion(model(input), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
features = torch.randn(160, 6)
labels = (features[:, 0] + features[:, 1] > 0).long()
train_loader = DataLoader(TensorDataset(features, labels), batch_size=16, shuffle=True)
losses = []

# first run: train a little and save a checkpoint
model = YourModel().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
train_epochs(model, optimizer, train_loader, device, 2, losses)
ckpt_dir = tempfile.mkdtemp()
path = os.path.join(ckpt_dir, "checkpoint.pth")
torch.save({"model_state_dict": model.state_dict(), "optimizer_state_dict": optimizer.state_dict()}, path)

# resume
model = YourModel()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
checkpoint = torch.load(path, map_location="cpu")
model.load_state_dict(checkpoint["model_state_dict"])
optimizer.load_state_dict(checkpoint["optimizer_state_dict"])  # expect: GL111
model.to(device)
train_epochs(model, optimizer, train_loader, device, 2, losses)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
