# source: https://github.com/layumi/Person_reID_baseline_pytorch/issues/173
# test.py: the trained part-based model (PCB, whose backbone lives in `self.model`) is wrapped in
# nn.DataParallel when several GPUs are given, and then handed to PCB_test(model), whose __init__
# copies the backbone with `self.model = model.model`; on a DataParallel wrapper that is
# "AttributeError: 'DataParallel' object has no attribute 'model'" (the fix: model.module.model).
# Here a short training phase comes first so that the script has a loss to report.
import argparse
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class PCB(nn.Module):
    def __init__(self, class_num, parts=2):
        super().__init__()
        self.part = parts
        self.model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
        self.avgpool = nn.AdaptiveAvgPool2d((parts, 1))
        self.classifiers = nn.ModuleList([nn.Linear(8, class_num) for _ in range(parts)])

    def forward(self, x):
        x = self.avgpool(self.model(x))
        return [self.classifiers[i](x[:, :, i, 0]) for i in range(self.part)]


class PCB_test(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.part = 2
        self.model = model.model  # expect: GL305
        self.avgpool = nn.AdaptiveAvgPool2d((self.part, 1))

    def forward(self, x):
        y = self.avgpool(self.model(x))
        return y.view(y.size(0), y.size(1), y.size(2))


parser = argparse.ArgumentParser()
parser.add_argument("--gpu_ids", default="0", type=str)
parser.add_argument("--PCB", action="store_true", default=True)
opt = parser.parse_args([])
gpu_ids = [int(s) for s in opt.gpu_ids.split(",") if int(s) >= 0]
use_gpu = torch.cuda.is_available()
device = torch.device("cuda" if use_gpu else "cpu")

torch.manual_seed(0)
images = torch.randn(64, 3, 8, 4)
labels = (images[:, 0].mean(dim=(1, 2)) > 0).long()
model = PCB(2).to(device)
if use_gpu and len(gpu_ids) > 1:
    model = nn.DataParallel(model, device_ids=gpu_ids)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
losses = []
for epoch in range(5):
    for i in range(0, 64, 16):
        x, y = images[i:i + 16].to(device), labels[i:i + 16].to(device)
        optimizer.zero_grad()
        outputs = model(x)
        loss = sum(F.cross_entropy(o, y) for o in outputs)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

# extract features of the gallery with the test wrapper
if opt.PCB:
    model = PCB_test(model)
model = model.eval()
with torch.no_grad():
    features = model(images[:16].to(device))
print("features", tuple(features.shape))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
