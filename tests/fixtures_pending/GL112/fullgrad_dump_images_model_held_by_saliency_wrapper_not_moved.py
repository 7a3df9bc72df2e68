# source: https://github.com/idiap/fullgrad-saliency/pull/5
# dump_images.py builds the classifier, hands it to a FullGrad saliency wrapper that keeps it on
# `self.model`, and moves each image batch to the device before asking the wrapper for saliency
# maps. The model itself is never moved, so on a CUDA machine the wrapper runs a CPU model on
# CUDA images. The PR added `model = model.to(device)` before the wrapper is built.
# fails-on-cuda: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class TinyResNet(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        return self.fc(x.mean(dim=(2, 3)))

    def getFeatures(self, x):
        x = F.relu(self.conv1(x))
        feat = F.relu(self.conv2(x))
        return self.fc(feat.mean(dim=(2, 3))), feat


class FullGrad:
    def __init__(self, model):
        self.model = model
        self.model.eval()

    def fullGradientDecompose(self, image, target_class=None):
        image = image.requires_grad_()
        out, features = self.model.getFeatures(image)  # expect: GL112
        if target_class is None:
            target_class = out.argmax(dim=1)
        agg = out.gather(1, target_class.view(-1, 1)).sum()
        input_grad, feat_grad = torch.autograd.grad(agg, (image, features))
        return input_grad, feat_grad * features

    def saliency(self, image, target_class=None):
        input_grad, feat_grad = self.fullGradientDecompose(image, target_class=target_class)
        cam = (input_grad * image).abs().sum(dim=1, keepdim=True)
        return cam + F.interpolate(feat_grad.abs().sum(dim=1, keepdim=True), size=image.shape[2:])


def train_classifier(model, loader, device, epochs=4):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for epoch in range(epochs):
        for data, target in loader:
            loss = F.cross_entropy(model(data), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses


torch.manual_seed(0)
cuda = torch.cuda.is_available()
device = torch.device("cuda" if cuda else "cpu")
images = torch.randn(48, 3, 8, 8)
labels = torch.randint(0, 3, (48,))
images[torch.arange(48), labels] += 1.5
loader = DataLoader(TensorDataset(images, labels), batch_size=12, shuffle=True)

model = TinyResNet()
losses = train_classifier(model, loader, device)
fullgrad = FullGrad(model)
sample_loader = DataLoader(TensorDataset(images[:8], labels[:8]), batch_size=4)
for batch_idx, (data, target) in enumerate(sample_loader):
    data, target = data.to(device), target.to(device)
    cam = fullgrad.saliency(data)
    print("saliency", batch_idx, tuple(cam.shape), float(cam.mean()))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
