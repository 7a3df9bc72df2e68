# source: https://github.com/naver/deep-image-retrieval/issues/5
# dirtorch/test_dir.py: load_model(path, iscuda) builds the network from the checkpoint, wraps it
# with `net = nn.DataParallel(net)` when CUDA is on (common.switch_model_to_cuda), loads the
# weights into `net.module`, and then sets `net.pca = checkpoint.get('pca', net.pca)`: reading
# `net.pca` through the wrapper fails with "AttributeError: 'DataParallel' object has no attribute
# 'pca'" (fixed by the maintainers). Here the loaded network is then fine-tuned for a few steps.
# fails-on-cuda: object has no attribute 'pca'
import json
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


class ResNetRMAC(nn.Module):
    def __init__(self, out_dim=8):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(16, 32), nn.ReLU())
        self.fc = nn.Linear(32, out_dim)
        self.pca = None
        self.preprocess = dict(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])

    def forward(self, x):
        return F.normalize(self.fc(self.backbone(x)), dim=-1)


def switch_model_to_cuda(model, iscuda=True):
    if iscuda:
        model = model.cuda()
        model = nn.DataParallel(model)
    return model


def load_model(path, iscuda):
    checkpoint = torch.load(path, map_location="cpu")
    net = ResNetRMAC(out_dim=checkpoint["out_dim"])
    net = switch_model_to_cuda(net, iscuda)
    if iscuda:
        net.module.load_state_dict(checkpoint["state_dict"])
    else:
        net.load_state_dict(checkpoint["state_dict"])
    net.pca = checkpoint.get("pca", net.pca)  # expect: GL305
    return net


torch.manual_seed(0)
iscuda = torch.cuda.is_available()
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "Resnet-101-AP-GeM.pt")
    torch.save({"out_dim": 8, "state_dict": ResNetRMAC(8).state_dict()}, path)
    net = load_model(path, iscuda)

device = "cuda" if iscuda else "cpu"
queries = torch.randn(64, 16)
positives = queries + 0.1 * torch.randn(64, 16)
optimizer = torch.optim.SGD(net.parameters(), lr=0.5)
losses = []
for epoch in range(10):
    for i in range(0, 64, 16):
        q, p = queries[i:i + 16].to(device), positives[i:i + 16].to(device)
        sim = net(q) @ net(p).t()
        loss = F.cross_entropy(sim * 10, torch.arange(16, device=sim.device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device}))
