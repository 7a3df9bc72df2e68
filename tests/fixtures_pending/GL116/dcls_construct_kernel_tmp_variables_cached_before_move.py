# source: https://github.com/K-H-Ismail/Dilated-Convolution-with-Learnable-Spacings-PyTorch/pull/8
# DCLS's ConstructKernel keeps two index tensors as plain attributes (`self.IDX`, `self.lim`,
# None in __init__) and fills them lazily in a helper, `__init_tmp_variables__(device)`, on the
# device of the first call. The script runs one shape-check forward on the CPU before moving the
# network, so the cached tensors stay on the CPU after `model.to(device)` ("remain initialized on
# CPU after sanity checking"): `P + self.lim // 2` mixes them with the GPU positions.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn import Parameter

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ConstructKernel1d(nn.Module):
    def __init__(self, out_channels, in_channels, kernel_count, dilated_kernel_size):
        super().__init__()
        self.out_channels = out_channels
        self.in_channels = in_channels
        self.kernel_count = kernel_count
        self.dilated_kernel_size = dilated_kernel_size
        self.IDX = None
        self.lim = None

    def __init_tmp_variables__(self, device):
        if self.IDX is None or self.lim is None:
            I = Parameter(torch.arange(0, self.dilated_kernel_size), requires_grad=False).to(device)
            self.IDX = I.view(-1, 1, 1, 1).expand(-1, self.out_channels, self.in_channels, self.kernel_count)
            lim = torch.tensor(self.dilated_kernel_size).to(device)
            self.lim = lim.expand(1, self.out_channels, self.in_channels, self.kernel_count)

    def forward_vmax(self, W, P):
        P = P + self.lim // 2  # expect: GL116
        X = self.IDX - P
        X = F.relu(1.0 - X.abs())
        K = (X * W.unsqueeze(0)).sum(dim=-1)
        return K.permute(1, 2, 0)

    def forward(self, W, P):
        self.__init_tmp_variables__(W.device)
        return self.forward_vmax(W, P)


class Dcls1d(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_count=3, dilated_kernel_size=7):
        super().__init__()
        self.weight = Parameter(torch.randn(out_channels, in_channels, kernel_count) * 0.3)
        self.P = Parameter(torch.rand(1, out_channels, in_channels, kernel_count) * 4 - 2)
        self.bias = Parameter(torch.zeros(out_channels))
        self.padding = dilated_kernel_size // 2
        self.kernel = ConstructKernel1d(out_channels, in_channels, kernel_count, dilated_kernel_size)

    def forward(self, x):
        return F.conv1d(x, self.kernel(self.weight, self.P), self.bias, padding=self.padding)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = Dcls1d(2, 8)
        self.conv2 = Dcls1d(8, 1)

    def forward(self, x):
        return self.conv2(torch.relu(self.conv1(x)))


model = Net()
print("output shape:", tuple(model(torch.zeros(1, 2, 32)).shape))
model = model.to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
X = torch.randn(64, 2, 32)
Y = (X[:, :1].roll(3, dims=2) - X[:, 1:].roll(-2, dims=2)) * 0.5

losses = []
for epoch in range(4):
    for i in range(0, 64, 16):
        xb, yb = X[i:i + 16].to(device), Y[i:i + 16].to(device)
        loss = F.mse_loss(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
