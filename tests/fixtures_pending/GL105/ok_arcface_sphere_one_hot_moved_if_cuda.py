# source: https://github.com/ronghuaiyang/arcface-pytorch (models/metrics.py, SphereProduct.forward)
# Hard negative (engine-rooted false positive, benchmarks/PRECISION14.md E1): the margin head builds
# its one-hot labels with `torch.zeros(cos_theta.size())` and moves them in the next statement,
# `one_hot = one_hot.cuda() if cos_theta.is_cuda else one_hot`. On the GPU the labels are moved, on
# the CPU everything is on the host: nothing mismatches. Today GL105 reports the `torch.zeros`: the
# forward-input flow (analysis/modules.py) evaluates a conditional expression as the union of both
# branches even when its test is a device test, unlike the statement form `if x.is_cuda: t = t.cuda()`.
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class SphereProduct(nn.Module):
    def __init__(self, in_features, out_features, m=2):
        super().__init__()
        self.m = m
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        nn.init.xavier_uniform_(self.weight)
        self.mlambda = [lambda x: x ** 0, lambda x: x, lambda x: 2 * x ** 2 - 1]

    def forward(self, input, label):
        cos_theta = F.linear(F.normalize(input), F.normalize(self.weight)).clamp(-1, 1)
        cos_m_theta = self.mlambda[self.m](cos_theta)
        theta = cos_theta.detach().acos()
        k = (self.m * theta / math.pi).floor()
        phi_theta = ((-1.0) ** k) * cos_m_theta - 2 * k
        norm_of_feature = torch.norm(input, 2, 1)

        one_hot = torch.zeros(cos_theta.size())
        one_hot = one_hot.cuda() if cos_theta.is_cuda else one_hot
        one_hot.scatter_(1, label.view(-1, 1), 1)

        output = (one_hot * (phi_theta - cos_theta) / 2.0) + cos_theta
        return output * norm_of_feature.view(-1, 1)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
backbone = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8)).to(device)
metric_fc = SphereProduct(8, 4).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD([{"params": backbone.parameters()}, {"params": metric_fc.parameters()}], lr=0.05)
centers = torch.randn(4, 16) * 3
labels = torch.randint(0, 4, (256,))
data = centers[labels] + 0.3 * torch.randn(256, 16)
history = []
for epoch in range(6):
    for i in range(0, 256, 32):
        x, y = data[i:i + 32].to(device), labels[i:i + 32].to(device)
        output = metric_fc(backbone(x), y)
        loss = criterion(output, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(history[:3]) / 3, "last_loss": sum(history[-3:]) / 3, "device": device.type}))
