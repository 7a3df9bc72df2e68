# source: https://github.com/black0017/MedicalZooPytorch/blob/master/lib/medzoo/Vnet.py
# Hard negative (PRECISION21 A2, engine-rooted). MedicalZooPytorch's models derive from
# `BaseModel` (lib/medzoo/BaseModelClass.py, another module: an nn.Module with checkpoint helpers)
# and each carries a `test(self, device='cpu')` self-check: build a random input on the host, run
# `self.forward(input_tensor)`, check the shape, and only then `summary(self.to(torch.device(device)), ...)`.
# The forward runs on the host input with the module wherever the caller left it; the file never
# places the instance (training is done by the project's trainer). GL116 reports the first layer
# of forward today ("`x` is on the CPU ... but `self.conv1` is on the accelerator"): for a class
# whose base is imported, a file that places anything makes the submodules "wherever the module
# is", which meets the host input as a mismatch; with `nn.Module` as the base it is silent. Here
# the base is written to a temporary package and imported, so that this file does not define it;
# the training below moves the model to the chosen device as the project's trainer does, and
# `test()` is run on the host model first, as the file's commented `m.test()` does.
import json
import os
import sys
import tempfile
import textwrap

import torch
import torch.nn as nn

pkg = tempfile.mkdtemp()
with open(os.path.join(pkg, "medzoo_base_model_demo.py"), "w") as f:
    f.write(textwrap.dedent('''
        from abc import ABC, abstractmethod
        import torch.nn as nn

        class BaseModel(nn.Module, ABC):
            def __init__(self):
                super().__init__()
                self.best_loss = 1000000

            @abstractmethod
            def forward(self, x):
                pass

            @abstractmethod
            def test(self):
                pass

            def count_params(self):
                return sum(p.numel() for p in self.parameters())
    '''))
sys.path.insert(0, pkg)
from medzoo_base_model_demo import BaseModel


class InputTransition(nn.Module):
    def __init__(self, in_channels, num_features=4):
        super(InputTransition, self).__init__()
        self.num_features = num_features
        self.in_channels = in_channels
        self.conv1 = nn.Conv3d(self.in_channels, self.num_features, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm3d(self.num_features)
        self.relu1 = nn.ELU(inplace=True)

    def forward(self, x):
        out = self.conv1(x)
        repeat_rate = int(self.num_features / self.in_channels)
        out = self.bn1(out)
        x16 = x.repeat(1, repeat_rate, 1, 1, 1)
        return self.relu1(torch.add(out, x16))


class VNetLight(BaseModel):
    def __init__(self, in_channels=1, classes=2):
        super(VNetLight, self).__init__()
        self.classes = classes
        self.in_channels = in_channels
        self.in_tr = InputTransition(in_channels, num_features=4)
        self.out_tr = nn.Conv3d(4, classes, kernel_size=1)

    def forward(self, x):
        out16 = self.in_tr(x)
        return self.out_tr(out16)

    def test(self, device='cpu'):
        input_tensor = torch.rand(1, self.in_channels, 8, 8, 8)
        ideal_out = torch.rand(1, self.classes, 8, 8, 8)
        out = self.forward(input_tensor)
        assert ideal_out.shape == out.shape
        print(self.to(torch.device(device)).count_params())
        print("Vnet test is complete")


torch.manual_seed(0)
model = VNetLight(in_channels=1, classes=2)
model.test()
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = model.to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
criterion = nn.CrossEntropyLoss()
volumes = torch.randn(4, 1, 8, 8, 8)
labels = (volumes[:, 0] > 0).long()
x, y = volumes.to(device), labels.to(device)
losses = []
for step in range(20):
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": x.device.type}))
