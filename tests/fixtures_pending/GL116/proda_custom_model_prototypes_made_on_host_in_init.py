# source: https://github.com/microsoft/ProDA/issues/49
# ProDA's CustomModel is a plain trainer class, not an nn.Module: __init__ makes the class
# prototypes `self.objective_vectors = torch.zeros([class_numbers, 256])` on the host, builds the
# networks and moves them with its init_device() helper. train.py replaces the prototypes with a
# loaded file moved to GPU 0 only in its `stage1` branch; in the reporter's run they stayed where
# __init__ made them, and step() -> get_prototype_weight() -> feat_prototype_distance() subtracts
# the host prototype from the GPU features ("Expected all tensors to be on the same device, but
# found at least two devices, cuda:0 and cpu!").
# fails-on-cuda: Expected all tensors to be on the same device
import json
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F


class SegNet(nn.Module):
    def __init__(self, num_classes, feat_dim=8):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, feat_dim, 3, padding=1), nn.ReLU())
        self.classifier = nn.Conv2d(feat_dim, num_classes, 1)

    def forward(self, x):
        feat = self.backbone(x)
        return {"feat": feat, "out": self.classifier(feat)}


class CustomModel:
    def __init__(self, opt):
        self.opt = opt
        self.class_numbers = opt.n_class
        self.default_gpu = 0
        self.objective_vectors = torch.zeros([self.class_numbers, opt.feat_dim])
        self.objective_vectors_num = torch.zeros([self.class_numbers])
        self.BaseNet = SegNet(self.class_numbers, opt.feat_dim)
        self.BaseOpti = torch.optim.SGD(self.BaseNet.parameters(), lr=opt.lr, momentum=0.9)
        self.BaseNet_DP = self.init_device(self.BaseNet, gpu_id=self.default_gpu)

    def init_device(self, net, gpu_id=None):
        gpu_id = gpu_id or self.default_gpu
        device = torch.device("cuda:{}".format(gpu_id) if torch.cuda.is_available() else "cpu")
        net = net.to(device)
        return net

    def feat_prototype_distance(self, feat):
        N, C, H, W = feat.shape
        feat_proto_distance = -torch.ones((N, self.class_numbers, H, W)).to(feat.device)
        for i in range(self.class_numbers):
            feat_proto_distance[:, i, :, :] = torch.norm(self.objective_vectors[i].reshape(-1, 1, 1).expand(-1, H, W) - feat, 2, dim=1)  # expect: GL116
        return feat_proto_distance

    def get_prototype_weight(self, feat):
        feat_proto_distance = self.feat_prototype_distance(feat)
        feat_nearest_proto_distance, _ = feat_proto_distance.min(dim=1, keepdim=True)
        feat_proto_distance = feat_proto_distance - feat_nearest_proto_distance
        return F.softmax(-feat_proto_distance * self.opt.proto_temperature, dim=1)

    def step(self, source_x, source_label, target_x):
        source_out = self.BaseNet_DP(source_x)
        loss_src = F.cross_entropy(source_out["out"], source_label)
        target_out = self.BaseNet_DP(target_x)
        weights = self.get_prototype_weight(target_out["feat"].detach())
        rectified = weights * F.softmax(target_out["out"].detach(), dim=1)
        pseudo = rectified.argmax(dim=1)
        loss_tgt = F.cross_entropy(target_out["out"], pseudo)
        loss = loss_src + self.opt.tgt_weight * loss_tgt
        self.BaseOpti.zero_grad()
        loss.backward()
        self.BaseOpti.step()
        feat = target_out["feat"].detach()
        for t in range(self.class_numbers):
            mask = (pseudo == t).unsqueeze(1).float()
            if mask.sum().item() > 0:
                vector = (feat * mask).sum(dim=(0, 2, 3)) / mask.sum()
                self.update_objective_SingleVector(t, vector)
        return loss_src.item()

    def update_objective_SingleVector(self, id, vector):
        m = self.opt.proto_momentum
        self.objective_vectors[id] = self.objective_vectors[id] * (1 - m) + m * vector.squeeze()  # expect: GL116
        self.objective_vectors_num[id] += 1


def make_batch(g, n=8, size=8):
    label = torch.randint(0, 3, (n, size, size), generator=g)
    image = F.one_hot(label, 3).permute(0, 3, 1, 2).float() + 0.3 * torch.randn(n, 3, size, size, generator=g)
    return image, label


def train(opt):
    torch.manual_seed(opt.seed)
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    model = CustomModel(opt)
    if opt.prototypes_path is not None:
        model.objective_vectors = torch.load(opt.prototypes_path, map_location="cpu").to(device)
    g = torch.Generator().manual_seed(opt.seed)
    losses = []
    for it in range(opt.train_iters):
        images, labels = make_batch(g)
        target_image, _ = make_batch(g)
        losses.append(model.step(images.to(device), labels.to(device), target_image.to(device)))
    return losses, device


opt = SimpleNamespace(n_class=3, feat_dim=8, lr=0.05, seed=0, proto_temperature=1.0, proto_momentum=0.1,
                      tgt_weight=0.1, train_iters=40, prototypes_path=None)
losses, device = train(opt)
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
