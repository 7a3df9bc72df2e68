# source: https://github.com/imrahulr/adversarial_robustness_pytorch/blob/6df6a8f0cd49/core/models/resnet.py
# Hard negative (real shape, benchmarks/PRECISION34.md P34-A1): the robustness repository's
# `Normalization` module (and the mean/std of its WideResNet / PreActResNet "with swish") keeps
# the dataset mean and std as plain host tensors made in `__init__`, plus `mean_cuda`/`sigma_cuda`
# set to None. `forward` tests the input: `if x.is_cuda:` it copies them once with `.cuda()` and
# uses the copies; only the `else:` branch, where the input is on the CPU, reads the host tensors.
# Nothing meets a device tensor on the host: it trains on the CPU and on CUDA. GL106 reports
# `self.mean` and `self.sigma` at their assignment (the forward flow does not read the branch's
# device test).
import json

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Normalization(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        num_channels = len(mean)
        self.mean = torch.FloatTensor(mean).view(1, num_channels, 1, 1)
        self.sigma = torch.FloatTensor(std).view(1, num_channels, 1, 1)
        self.mean_cuda, self.sigma_cuda = None, None

    def forward(self, x):
        if x.is_cuda:
            if self.mean_cuda is None:
                self.mean_cuda = self.mean.cuda()
                self.sigma_cuda = self.sigma.cuda()
            out = (x - self.mean_cuda) / self.sigma_cuda
        else:
            out = (x - self.mean) / self.sigma
        return out


class SmallNet(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.normalize = Normalization([0.49, 0.48, 0.45], [0.25, 0.24, 0.26])
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x):
        out = self.normalize(x)
        out = F.relu(self.conv(out))
        return self.fc(F.adaptive_avg_pool2d(out, 1).flatten(1))


if __name__ == "__main__":
    torch.manual_seed(0)
    model = SmallNet().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    xs = torch.rand(64, 3, 8, 8)
    ys = (xs[:, 0].mean((1, 2)) > xs[:, 1].mean((1, 2))).long() + (xs[:, 2].mean((1, 2)) > 0.5).long()
    first = last = None
    for epoch in range(15):
        for i in range(0, 64, 16):
            x, y = xs[i:i + 16].to(device), ys[i:i + 16].to(device)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            first = loss.item() if first is None else first
            last = loss.item()
    print("GPULINT-TRAIN " + json.dumps({"first_loss": first, "last_loss": last, "device": device.type}))
