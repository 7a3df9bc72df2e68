# source: https://github.com/cipriancorneanu/dnn-topology/issues/3
# main.py wraps the network in torch.nn.DataParallel when CUDA is on, trains it with the Passer
# helper (passers.py), and builds the functional graph by calling
# `self.network.forward_features(inputs)` in Passer.get_function(): DataParallel forwards only
# __call__/forward, so it fails with "'DataParallel' object has no attribute 'forward_features'"
# (the reporter's fix: self.network.module.forward_features(inputs)).
# fails-on-cuda: object has no attribute 'forward_features'
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class LeNet(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.fc1 = nn.Linear(12, 16)
        self.fc2 = nn.Linear(16, 16)
        self.fc3 = nn.Linear(16, num_classes)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))

    def forward_features(self, x):
        x1 = F.relu(self.fc1(x))
        x2 = F.relu(self.fc2(x1))
        return [x1, x2, self.fc3(x2)]


class Passer:
    def __init__(self, network, loader, criterion, device):
        self.network = network
        self.criterion = criterion
        self.device = device
        self.loader = loader

    def _pass(self, optimizer=None):
        mode = self.network.train if optimizer else self.network.eval
        mode()
        losses = []
        for inputs, targets in self.loader:
            inputs, targets = inputs.to(self.device), targets.to(self.device)
            outputs = self.network(inputs)
            loss = self.criterion(outputs, targets)
            if optimizer:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            losses.append(loss.item())
        return sum(losses) / len(losses)

    def run(self, optimizer=None):
        return self._pass(optimizer)

    def get_function(self):
        self.network.eval()
        activations = []
        with torch.no_grad():
            for inputs, _ in self.loader:
                inputs = inputs.to(self.device)
                feats = self.network.forward_features(inputs)  # expect: GL305
                activations.append(torch.cat([f.flatten(1) for f in feats], dim=1).cpu())
        return torch.cat(activations)


torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"
X = torch.randn(96, 12)
Y = X[:, :3].argmax(dim=1)
loader = [(X[i:i + 32], Y[i:i + 32]) for i in range(0, 96, 32)]
net = LeNet(num_classes=3).to(device)
if device == "cuda":
    net = torch.nn.DataParallel(net)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
passer = Passer(net, loader, nn.CrossEntropyLoss(), device)
losses = []
for epoch in range(8):
    losses.append(passer.run(optimizer))
    if epoch % 4 == 3:
        features = passer.get_function()
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device}))
