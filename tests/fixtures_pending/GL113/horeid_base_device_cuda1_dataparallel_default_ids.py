# source: https://github.com/wangguanan/HOReID/issues/28
# HOReID's trainer class `Base` picks its device in _init_device() (`torch.device('cuda')`), then
# _init_model() wraps each network as `nn.DataParallel(net).to(self.device)`. Told to train on the
# second GPU, the reporter changed the device to `torch.device('cuda:1')` ("I did it, and then the
# problem happened"): DataParallel still uses every visible GPU with device_ids[0] == 0, so the
# first forward fails with "module must have its parameters and buffers on device cuda:0
# (device_ids[0]) but found one of them on device: cuda:1". Here: an encoder, a BN classifier and a
# small graph layer, trained by the class's own train_an_epoch() on synthetic re-id batches.
# fixture: static (written for a machine with two GPUs, like the report; checked with `gpulint run --gpus 2`, which fails with the error above)
# fails-on-cuda: module must have its parameters and buffers on device cuda:0 (device_ids[0])
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class Encoder(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(3, dim, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))

    def forward(self, x):
        return self.conv(x).flatten(1)


class BNClassifier(nn.Module):
    def __init__(self, dim, class_num):
        super().__init__()
        self.bn = nn.BatchNorm1d(dim)
        self.classifier = nn.Linear(dim, class_num, bias=False)

    def forward(self, feature):
        bned = self.bn(feature)
        return bned, self.classifier(bned)


class GraphConv(nn.Module):
    def __init__(self, adj, dim):
        super().__init__()
        self.register_buffer("adj", adj)
        self.fc = nn.Linear(dim, dim)

    def forward(self, nodes):
        return F.relu(self.fc(self.adj @ nodes)) + nodes


class Base:
    def __init__(self, config):
        self.config = config
        self.pid_num = config["pid_num"]
        self._init_device()
        self._init_model()
        self._init_criterion()
        self._init_optimizer()

    def _init_device(self):
        self.device = torch.device("cuda:1")  # expect: GL113

    def _init_model(self):
        self.encoder = Encoder()
        self.bnclassifiers = BNClassifier(32, self.pid_num)
        self.encoder = nn.DataParallel(self.encoder).to(self.device)
        self.bnclassifiers = nn.DataParallel(self.bnclassifiers).to(self.device)
        adj = torch.ones(4, 4) / 4
        self.gcn = GraphConv(adj, 32).to(self.device)

    def _init_criterion(self):
        self.ide_criterion = nn.CrossEntropyLoss()

    def _init_optimizer(self):
        params = list(self.encoder.parameters()) + list(self.bnclassifiers.parameters()) + list(self.gcn.parameters())
        self.optimizer = torch.optim.Adam(params, lr=1e-2)

    def forward(self, images):
        feature = self.encoder(images)
        nodes = self.gcn(feature.view(-1, 4, 32))
        _, cls_score = self.bnclassifiers(nodes.reshape(-1, 32))
        return cls_score

    def train_an_epoch(self, batches, losses):
        self.encoder.train()
        self.bnclassifiers.train()
        for images, pids in batches:
            images, pids = images.to(self.device), pids.to(self.device)
            loss = self.ide_criterion(self.forward(images), pids)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            losses.append(loss.item())


def make_batches(pid_num=4, n=8):
    g = torch.Generator().manual_seed(0)
    centers = torch.randn(pid_num, 3, 1, 1, generator=g) * 2
    batches = []
    for _ in range(n):
        pids = torch.arange(pid_num).repeat(4)
        images = centers[pids] + 0.5 * torch.randn(len(pids), 3, 8, 8, generator=g)
        batches.append((images, pids))
    return batches


torch.manual_seed(0)
base = Base({"pid_num": 4})
losses = []
for epoch in range(5):
    base.train_an_epoch(make_batches(), losses)
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": base.device.type}))
