# source: https://github.com/pytorch/pytorch/issues/29807
# fails-on-cuda: Expected all tensors to be on the same device
# The module registers each tensor as a buffer in a loop and also keeps them in a plain list
# (`self.params.append(getattr(self, name))`); `.cuda()` replaces the registered buffers with moved
# copies, but the list still holds the original CPU tensors, and forward uses the list
# (maintainers: list(a.buffers()) is on the GPU, a.params is not).
import json

import torch
import torch.nn as nn


class MyModule(nn.Module):
    def __init__(self, n=4, dim=3):
        super(MyModule, self).__init__()
        g = torch.Generator().manual_seed(1)
        params = [torch.rand(1, dim, generator=g) for i in range(n)]
        self.params = []
        for i, param in enumerate(params):
            self.register_buffer("param_{}".format(i), param)
            self.params.append(getattr(self, "param_{}".format(i)))
        self.proj = nn.Linear(dim, 1)

    def forward(self, x):
        for p in self.params:
            x = x + p  # expect: GL116
        return self.proj(x).squeeze(-1)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.randn(128, 3)
y = x.sum(dim=1)
a = MyModule()
a.to(device)
optimizer = torch.optim.SGD(a.parameters(), lr=0.05)
losses = []
for step in range(40):
    idx = torch.randint(0, 128, (32,))
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(a(x[idx].to(device)), y[idx].to(device))
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
