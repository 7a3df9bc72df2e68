# source: https://github.com/pytorch/pytorch/issues/17484 (the maintainers' answer)
# The module's only parameter is made on the device inside nn.Parameter (the form the maintainers
# recommend), so the module never needs a .to(device) of its own: its inputs are moved and it trains
# on the GPU. GL112 must not ask to move it.
import json

import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class A(torch.nn.Module):
    def __init__(self):
        super(A, self).__init__()
        self.par = torch.nn.Parameter(torch.rand(5).to(device))

    def forward(self, x):
        return (x * self.par).sum(dim=1)


torch.manual_seed(0)
x = torch.randn(128, 5)
y = x @ torch.tensor([0.5, -1.0, 2.0, 0.0, 1.5])
a = A()
optimizer = torch.optim.SGD(a.parameters(), lr=0.05)
losses = []
for step in range(40):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(a(x.to(device)), y.to(device))
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
