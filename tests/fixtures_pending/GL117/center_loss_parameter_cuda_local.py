# source: https://github.com/KaiyangZhou/pytorch-center-loss/issues/23
# The reporter's CenterLoss builds its centers into a local first: on the GPU path
# `centers = nn.Parameter(torch.randn(classes, feature_dims)).cuda()` (a non-leaf copy, not a
# Parameter), otherwise a plain Parameter, then `self.centers = centers`; on a GPU the module has
# no parameters and `torch.optim.SGD(list(centerLoss.parameters()), ...)` raises "optimizer got an
# empty parameter list" (the maintainers' answer: nn.Parameter(torch.randn(...).cuda())).
# fails-on-cuda: optimizer got an empty parameter list
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class CenterLoss(nn.Module):
    def __init__(self, classes, feature_dims, use_gpu=True):
        super().__init__()
        self.classes = classes
        self.feature_dims = feature_dims
        self.use_gpu = use_gpu
        if use_gpu:
            centers = nn.Parameter(torch.randn(self.classes, self.feature_dims)).cuda()  # expect: GL117
        else:
            centers = nn.Parameter(torch.randn(self.classes, self.feature_dims))
        self.centers = centers

    def forward(self, x, labels):
        return ((x - self.centers[labels]) ** 2).sum(dim=1).mean()


torch.manual_seed(0)
use_gpu = torch.cuda.is_available()
device = torch.device("cuda" if use_gpu else "cpu")
feature_net = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 8)).to(device)
classifier = nn.Linear(8, 4).to(device)
centerLoss = CenterLoss(classes=4, feature_dims=8, use_gpu=use_gpu)
SoftmaxLoss = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(list(feature_net.parameters()) + list(classifier.parameters()), lr=0.05, momentum=0.9)
optimizer_centerloss = torch.optim.SGD(list(centerLoss.parameters()), lr=0.5)
x = torch.randn(256, 10)
y = (x[:, 0] > 0).long() * 2 + (x[:, 1] > 0).long()
history = []
for epoch in range(30):
    xb, yb = x.to(device), y.to(device)
    features = feature_net(xb)
    loss = SoftmaxLoss(classifier(features), yb) + 0.01 * centerLoss(features, yb)
    optimizer.zero_grad()
    optimizer_centerloss.zero_grad()
    loss.backward()
    optimizer.step()
    optimizer_centerloss.step()
    history.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
