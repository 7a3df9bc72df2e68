# source: https://github.com/syuu1987/geekTime-semantic-segmentation/issues/1
# The geekTime semantic-segmentation lesson's UNet: the double-convolution block builds its
# normalisation and activation layers inside `forward`, `nn.BatchNorm2d(num_features=...)(x)`,
# so every call makes a fresh BatchNorm on the CPU. With the model and the images on the GPU the
# first training step fails ("Expected all tensors to be on the same device, but found at least
# two devices, cuda:0 and cpu!"); the reporter's fix builds the layers once in `__init__`.
# (Two-level UNet on synthetic 32x32 images; the training loop follows the lesson's.)
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Block(nn.Module):
    def __init__(self, in_channels, features):
        super(Block, self).__init__()
        self.features = features
        self.conv1 = nn.Conv2d(in_channels, features, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(features, features, kernel_size=3, padding=1)

    def forward(self, input):
        x = self.conv1(input)
        x = nn.BatchNorm2d(num_features=self.features)(x)  # expect: GL112
        x = nn.ReLU(inplace=True)(x)
        x = self.conv2(x)
        x = nn.BatchNorm2d(num_features=self.features)(x)  # expect: GL112
        x = nn.ReLU(inplace=True)(x)
        return x


class UNet(nn.Module):
    def __init__(self, in_channels=3, out_channels=2, init_features=8):
        super(UNet, self).__init__()
        f = init_features
        self.encoder1 = Block(in_channels, f)
        self.pool1 = nn.MaxPool2d(kernel_size=2, stride=2)
        self.bottleneck = Block(f, f * 2)
        self.upconv1 = nn.ConvTranspose2d(f * 2, f, kernel_size=2, stride=2)
        self.decoder1 = Block(f * 2, f)
        self.conv = nn.Conv2d(f, out_channels, kernel_size=1)

    def forward(self, x):
        enc1 = self.encoder1(x)
        bottleneck = self.bottleneck(self.pool1(enc1))
        dec1 = self.upconv1(bottleneck)
        dec1 = self.decoder1(torch.cat((dec1, enc1), dim=1))
        return self.conv(dec1)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
images = torch.rand(16, 3, 32, 32)
masks = (images[:, 0] > 0.5).long()
loader = DataLoader(TensorDataset(images, masks), batch_size=8, shuffle=True)
model = UNet().to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
losses = []
for epoch in range(8):
    model.train()
    for image, mask in loader:
        image, mask = image.to(device), mask.to(device)
        output = model(image)
        loss = criterion(output, mask)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
