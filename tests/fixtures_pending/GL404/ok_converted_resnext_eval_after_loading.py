# source: https://github.com/clcarwin/convert_torch_to_pytorch/issues/31 (the reporter's fix)
# Hard negative for GL404: `resnext_101_32x4d.eval()` right after the weights are loaded, before the
# predictions. Nothing to report.
import json
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


def make_net():
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 3),
    )


def make_images(n, generator):
    y = torch.randint(0, 3, (n,), generator=generator)
    x = torch.randn(n, 3, 12, 12, generator=generator) * 0.5
    x[torch.arange(n), y] += 1.5  # the class is the brightest channel
    return x, y


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
g = torch.Generator().manual_seed(0)

# the weights the reporter downloaded: a short training run
net = make_net().to(device)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
losses = []
for step in range(40):
    x, y = make_images(32, g)
    x, y = x.to(device), y.to(device)
    loss = F.cross_entropy(net(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
weights = os.path.join(tempfile.mkdtemp(), "resnext_101_32x4d.pth")
torch.save(net.state_dict(), weights)

# the reporter's script
resnext_101_32x4d = make_net()
resnext_101_32x4d.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))
resnext_101_32x4d.eval()
resnext_101_32x4d = resnext_101_32x4d.to(device)
predictions = []
for i in range(6):
    inp, label = make_images(1, g)
    x = inp.to(device)
    x = resnext_101_32x4d(x)
    x = F.softmax(x, dim=1)
    predictions.append(int(x.argmax()))
print("predictions", predictions)
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
