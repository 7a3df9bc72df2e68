# source: https://github.com/xinzhuma/monodle/issues/7
# monodle's Trainer.__init__ resumes through the load_checkpoint() helper of save_helper.py, which
# runs `optimizer.load_state_dict(checkpoint['optimizer_state'])` while the model is still on the
# host (the optimizer was built from its parameters in the script); only after that does __init__
# wrap and move the model: `self.model = DataParallel(model, device_ids).to(self.device)`. The
# loaded Adam state follows the host parameters, so the first `self.optimizer.step()` of the resumed
# run fails ("expected backend CPU and dtype Float but got backend CUDA"; the fix passes
# `model=self.model.to(self.device)` to load_checkpoint). Targets are a dict moved key by key and
# the loss is a helper function over the output and target dicts. A first run trains two epochs and
# writes the checkpoint to a temporary directory; the second run resumes from it. (The DataParallel
# wrap is left out: one device. Current PyTorch's foreach Adam names the error differently.)
# fails-on-cuda: Tensors of the same index must be on the same device
import json
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class KittiLike(Dataset):
    def __init__(self, n=64):
        g = torch.Generator().manual_seed(0)
        self.images = torch.randn(n, 3, 16, 16, generator=g)
        self.heatmap = torch.sigmoid(self.images[:, :1] * 2)
        self.depth = self.images.mean(dim=(1, 2, 3)).unsqueeze(1) * 3 + 10

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.images[i], {"heatmap": self.heatmap[i], "depth": self.depth[i]}, i


class CenterNet3D(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
        self.heatmap = nn.Conv2d(8, 1, 1)
        self.depth = nn.Linear(8, 1)

    def forward(self, x):
        feat = self.backbone(x)
        return {"heatmap": self.heatmap(feat), "depth": self.depth(feat.mean(dim=(2, 3)))}


def compute_centernet3d_loss(outputs, targets):
    heatmap_loss = F.binary_cross_entropy_with_logits(outputs["heatmap"], targets["heatmap"])
    depth_loss = F.l1_loss(outputs["depth"], targets["depth"])
    total = heatmap_loss + 0.1 * depth_loss
    return total, {"heatmap": heatmap_loss.item(), "depth": depth_loss.item()}


def save_checkpoint(state, filename):
    torch.save(state, "{}.pth".format(filename))


def load_checkpoint(model, optimizer, filename, map_location):
    checkpoint = torch.load(filename, map_location)
    epoch = checkpoint.get("epoch", -1)
    if model is not None and checkpoint["model_state"] is not None:
        model.load_state_dict(checkpoint["model_state"])
    if optimizer is not None and checkpoint["optimizer_state"] is not None:
        optimizer.load_state_dict(checkpoint["optimizer_state"])  # expect: GL111
    return epoch


class Trainer(object):
    def __init__(self, cfg, model, optimizer, train_loader):
        self.cfg = cfg
        self.model = model
        self.optimizer = optimizer
        self.train_loader = train_loader
        self.epoch = 0
        self.losses = []
        self.device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")

        if cfg.get("resume_model", None):
            self.epoch = load_checkpoint(model=self.model, optimizer=self.optimizer,
                                         filename=cfg["resume_model"], map_location=self.device)

        self.model = self.model.to(self.device)

    def train(self):
        for epoch in range(self.epoch, self.cfg["max_epoch"]):
            self.train_one_epoch()
            self.epoch += 1
        save_checkpoint({"epoch": self.epoch, "model_state": self.model.state_dict(),
                         "optimizer_state": self.optimizer.state_dict()}, self.cfg["ckpt_name"])

    def train_one_epoch(self):
        self.model.train()
        for batch_idx, (inputs, targets, _) in enumerate(self.train_loader):
            inputs = inputs.to(self.device)
            for key in targets.keys():
                targets[key] = targets[key].to(self.device)
            self.optimizer.zero_grad()
            outputs = self.model(inputs)
            total_loss, stats_batch = compute_centernet3d_loss(outputs, targets)
            total_loss.backward()
            self.optimizer.step()
            self.losses.append(total_loss.item())


def build(cfg):
    model = CenterNet3D()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    loader = DataLoader(KittiLike(), batch_size=16, shuffle=True, generator=torch.Generator().manual_seed(0))
    return Trainer(cfg, model, optimizer, loader)


torch.manual_seed(0)
with tempfile.TemporaryDirectory() as tmp:
    ckpt = os.path.join(tmp, "checkpoint_epoch_2")
    first = build({"max_epoch": 2, "ckpt_name": ckpt})
    first.train()
    resumed = build({"max_epoch": 6, "ckpt_name": ckpt, "resume_model": ckpt + ".pth"})
    resumed.train()
losses = first.losses + resumed.losses
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": resumed.device.type}))
