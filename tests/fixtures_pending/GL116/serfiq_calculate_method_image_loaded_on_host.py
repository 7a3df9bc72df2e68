# source: https://github.com/jankolf/ser-fiq-pytorch/issues/2
# main.py: the IResNet is moved to `torch_device` (changed to CUDA by the reporter) and scored with
# its own method `resnet.calculate_serfiq(image, T=10, scaling=5.0)`; the image comes from
# `load_image()` (`.type(torch.FloatTensor) / 255.0`, normalized) and `.unsqueeze(dim=0)`, never
# moved, so `self.conv1(x)` inside the method fails on a GPU ("Input type (torch.FloatTensor) and
# weight type (torch.cuda.FloatTensor) should be the same").
# fails-on-cuda: Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same
import json

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Normalize:
    def __init__(self, mean, std):
        self.mean = torch.tensor(mean).view(-1, 1, 1)
        self.std = torch.tensor(std).view(-1, 1, 1)

    def __call__(self, img):
        return (img - self.mean) / self.std


class IResNet(nn.Module):
    def __init__(self, dropout=0.4, num_features=32, num_classes=4):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.prelu = nn.PReLU(8)
        self.dropout = nn.Dropout(p=dropout)
        self.fc = nn.Linear(8 * 8 * 8, num_features)
        self.head = nn.Linear(num_features, num_classes)

    def embed(self, x, dropout=False):
        x = self.prelu(self.bn1(self.conv1(x)))
        x = torch.flatten(x, 1)
        if dropout:
            x = F.dropout(x, p=self.dropout.p, training=True)
        return self.fc(x)

    def forward(self, x):
        return self.head(self.embed(self.dropout(x)))

    @torch.no_grad()
    def calculate_serfiq(self, image, T=10, scaling=5.0):
        x = self.prelu(self.bn1(self.conv1(image)))  # expect: GL116
        x = torch.flatten(x, 1)
        embs = torch.stack([F.normalize(self.fc(F.dropout(x, p=self.dropout.p, training=True)), dim=1) for _ in range(T)], dim=1)
        dist = torch.cdist(embs, embs).mean(dim=(1, 2))
        return 2 * (1 / (1 + torch.exp(dist))) * scaling / scaling


def read_image(seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (3, 16, 16), generator=g, dtype=torch.uint8)


def load_image(seed):
    image = read_image(seed)
    image = image.type(torch.FloatTensor) / 255.0
    image = normalize(image)
    return image


torch_device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
normalize = Normalize(mean=[0.5, 0.5, 0.5], std=[0.5, 0.5, 0.5])

resnet = IResNet(dropout=0.4, num_features=32).to(torch_device)
optimizer = torch.optim.SGD(resnet.parameters(), lr=0.05, momentum=0.9)
images = torch.stack([load_image(i) for i in range(128)])
labels = (images.mean(dim=(1, 2, 3)) > images.mean()).long() + 2 * (images[:, 0].mean(dim=(1, 2)) > 0).long()
losses = []
for epoch in range(5):
    for i in range(0, 128, 32):
        xb, yb = images[i:i + 32].to(torch_device), labels[i:i + 32].to(torch_device)
        loss = F.cross_entropy(resnet(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

resnet.eval()
image = load_image(1000).unsqueeze(dim=0)
scores = resnet.calculate_serfiq(image, T=10, scaling=5.0)
print(f"SER-FIQ Score: {scores[0].item():.8f}")

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": torch_device.type}))
