# source: https://github.com/udacity/deep-learning-v2-pytorch/issues/3
# The course's MNIST MLP with a validation set: the network has dropout layers, and each epoch runs
# the training batches and then the validation batches, but the model is never put in eval mode for
# validation (nor back in train mode), so the validation loss that picks the saved checkpoint is
# measured with dropout active. The maintainer adds model.eval() before validation and model.train()
# before training.
import json
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(28 * 28, 64)
        self.fc2 = nn.Linear(64, 32)
        self.fc3 = nn.Linear(32, 10)
        self.dropout = nn.Dropout(0.2)

    def forward(self, x):
        x = x.view(-1, 28 * 28)
        x = self.dropout(F.relu(self.fc1(x)))
        x = self.dropout(F.relu(self.fc2(x)))
        return self.fc3(x)


torch.manual_seed(0)
images = torch.randn(600, 1, 28, 28)
labels = images.view(600, -1)[:, :10].argmax(dim=1)
train_loader = DataLoader(TensorDataset(images[:480], labels[:480]), batch_size=32, shuffle=True)
valid_loader = DataLoader(TensorDataset(images[480:], labels[480:]), batch_size=32)

model = Net()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
save_path = os.path.join(tempfile.mkdtemp(), "model.pt")

n_epochs = 6
valid_loss_min = np.inf
history = []
for epoch in range(1, n_epochs + 1):
    train_loss = 0.0
    valid_loss = 0.0
    for data, target in train_loader:
        optimizer.zero_grad()
        output = model(data)
        loss = criterion(output, target)
        loss.backward()
        optimizer.step()
        train_loss += loss.item() * data.size(0)
        history.append(loss.item())
    for data, target in valid_loader:  # expect: GL404
        output = model(data)
        loss = criterion(output, target)
        valid_loss += loss.item() * data.size(0)
    train_loss = train_loss / len(train_loader.dataset)
    valid_loss = valid_loss / len(valid_loader.dataset)
    if valid_loss <= valid_loss_min:
        torch.save(model.state_dict(), save_path)
        valid_loss_min = valid_loss

print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": "cpu"}))
