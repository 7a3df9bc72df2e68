# source: https://github.com/eladrich/pixel2style2pixel/blob/master/datasets/augmentations.py
# Hard negative (pending, engine): `BicubicDownSample.__init__` keeps its two separable bicubic kernels
# as plain tensors (`self.k1`, `self.k2`) and a flag of its own, `self.cuda = '.cuda' if cuda else ''`;
# `forward` converts each kernel with `self.k1.type('torch{}.FloatTensor'.format(self.cuda))` before the
# convolutions, so the kernel is on the GPU exactly when the module was built for it. The project builds
# it only inside the `BilinearResize` augmentation, with `cuda=False`, on host images in the dataset
# transform (the super-resolution task's degraded inputs). GL106 reports `self.k1` and `self.k2`: the
# engine's forward dataflow keeps the host device of the attribute through `.type(...)`, although the
# argument names a CUDA tensor type (here a formatted string; a literal 'torch.cuda.FloatTensor' is
# reported the same way). Here a tiny restoration network learns to undo the downsampling.
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
np.random.seed(0)


class BicubicDownSample(nn.Module):
    def bicubic_kernel(self, x, a=-0.50):
        abs_x = torch.abs(x)
        if abs_x <= 1.0:
            return (a + 2.0) * torch.pow(abs_x, 3.0) - (a + 3.0) * torch.pow(abs_x, 2.0) + 1
        elif 1.0 < abs_x < 2.0:
            return a * torch.pow(abs_x, 3) - 5.0 * a * torch.pow(abs_x, 2.0) + 8.0 * a * abs_x - 4.0 * a
        return torch.tensor(0.0)

    def __init__(self, factor=2, cuda=True, padding="reflect"):
        super().__init__()
        self.factor = factor
        size = factor * 4
        k = torch.tensor([float(self.bicubic_kernel((i - torch.floor(torch.tensor(size / 2)) + 0.5) / factor))
                          for i in range(size)], dtype=torch.float32)
        k = k / torch.sum(k)
        k1 = torch.reshape(k, shape=(1, 1, size, 1))
        self.k1 = torch.cat([k1, k1, k1], dim=0)
        k2 = torch.reshape(k, shape=(1, 1, 1, size))
        self.k2 = torch.cat([k2, k2, k2], dim=0)
        self.cuda = ".cuda" if cuda else ""
        self.padding = padding

    def forward(self, x):
        stride = self.factor
        pad = max(self.factor * 4 - stride, 0)
        filters1 = self.k1.type("torch{}.FloatTensor".format(self.cuda))
        filters2 = self.k2.type("torch{}.FloatTensor".format(self.cuda))
        x = F.pad(x, (0, 0, pad // 2, pad - pad // 2), self.padding)
        x = F.conv2d(input=x, weight=filters1, stride=(stride, 1), groups=3)
        x = F.pad(x, (pad // 2, pad - pad // 2, 0, 0), self.padding)
        x = F.conv2d(input=x, weight=filters2, stride=(1, stride), groups=3)
        return x


class BilinearResize:
    def __init__(self, factors=(2,)):
        self.factors = factors

    def __call__(self, img_tensor):
        factor = int(np.random.choice(self.factors, size=1)[0])
        D = BicubicDownSample(factor=factor, cuda=False)
        return D(img_tensor.unsqueeze(0))[0].clamp(0, 1)


class ImagesDataset(torch.utils.data.Dataset):
    def __init__(self, images, source_transform):
        self.images = images
        self.source_transform = source_transform

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        target = self.images[i]
        source = F.interpolate(self.source_transform(target).unsqueeze(0), size=target.shape[-2:])[0]
        return source, target


coarse = torch.rand(32, 3, 4, 4)
images = F.interpolate(coarse, size=(16, 16), mode="bilinear", align_corners=False)
loader = torch.utils.data.DataLoader(ImagesDataset(images, BilinearResize(factors=[2])), batch_size=8, shuffle=True)
net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 3, 3, padding=1)).to(device)
optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)

losses = []
for epoch in range(8):
    for source, target in loader:
        source, target = source.to(device), target.to(device)
        loss = F.mse_loss(source + net(source), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
