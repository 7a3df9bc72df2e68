# source: https://github.com/open-mmlab/mmsegmentation/issues/3231
# The Hamburger decode head's NMF builds its random bases on every forward with
# `torch.rand((B * S, D, R))` and then `.cuda()` when the input is on the GPU: a CPU tensor filled and
# copied each call. The issue asks for `torch.rand(..., device=...)` (a ~2000x faster benchmark).
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class NMF2D(nn.Module):
    def __init__(self, S=1, D=8, R=4, steps=3):
        super().__init__()
        self.S, self.D, self.R, self.steps = S, D, R, steps

    def _build_bases(self, B, S, D, R, cuda=False):
        if cuda:
            bases = torch.rand((B * S, D, R)).cuda()  # expect: GL501
        else:
            bases = torch.rand((B * S, D, R))
        return F.normalize(bases, dim=1)

    def forward(self, x):
        B, C, H, W = x.shape
        D = C // self.S
        x = x.view(B * self.S, D, H * W)
        bases = self._build_bases(B, self.S, D, self.R, cuda=x.is_cuda)
        coef = F.softmax(torch.bmm(x.transpose(1, 2), bases), dim=-1)
        for _ in range(self.steps):
            numerator = torch.bmm(x.transpose(1, 2), bases)
            denominator = coef.bmm(bases.transpose(1, 2).bmm(bases))
            coef = coef * numerator / (denominator + 1e-6)
        x = torch.bmm(bases, coef.transpose(1, 2))
        return x.view(B, C, H, W)


class LightHamHead(nn.Module):
    def __init__(self, channels=8, num_classes=3):
        super().__init__()
        self.squeeze = nn.Conv2d(3, channels, 1)
        self.hamburger = NMF2D(D=channels)
        self.cls_seg = nn.Conv2d(channels, num_classes, 1)

    def forward(self, img):
        enjoy = F.relu(self.squeeze(img))
        return self.cls_seg(enjoy + self.hamburger(enjoy))


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
images = torch.rand(48, 3, 8, 8)
masks = (images[:, 0] > 0.5).long() + (images[:, 1] > 0.5).long()
model = LightHamHead().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
losses = []
for epoch in range(20):
    for i in range(0, 48, 16):
        x, y = images[i : i + 16].to(device), masks[i : i + 16].to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
