# source: https://github.com/TobiasSunderdiek/cartoon-gan/issues/5
# CartoonGAN notebook: the content loss compares VGG-16 features of the generated and the
# original image. The VGG cell loads a saved copy with torch.load(); when the file is missing
# the except branch builds the network and saves it, but never moves it to the device (the
# maintainer's fix: `vgg16 = vgg16.to(device)` in that branch). The generator and the batches
# are on the GPU, so the first content-loss call fails on a first run.
# fails-on-cuda: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same
import json
import os
import tempfile

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)


def vgg16_features():
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())


path_to_pretrained_vgg16 = os.path.join(tempfile.mkdtemp(), "vgg16_pretrained.pth")
try:
    vgg16 = torch.load(path_to_pretrained_vgg16, weights_only=False)
except FileNotFoundError:
    vgg16 = vgg16_features()
    torch.save(vgg16, path_to_pretrained_vgg16)
for param in vgg16.parameters():
    param.requires_grad = False


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 3, 3, padding=1))

    def forward(self, x):
        return self.net(x)


def content_loss(generated, original):
    return nn.functional.l1_loss(vgg16(generated), vgg16(original))  # expect: GL112


G = Generator().to(device)
optimizer = torch.optim.Adam(G.parameters(), lr=2e-3)
photos = torch.rand(32, 3, 8, 8)
loader = DataLoader(TensorDataset(photos), batch_size=8, shuffle=True)
losses = []
for epoch in range(10):
    for (photo,) in loader:
        photo = photo.to(device)
        loss = content_loss(G(photo), photo)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": device.type}))
