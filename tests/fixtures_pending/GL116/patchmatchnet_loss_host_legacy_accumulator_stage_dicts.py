# source: https://github.com/FangjinhuaWang/PatchmatchNet/issues/35
# PatchmatchNet's training step moves the whole sample (a dict of per-stage depth maps and masks)
# with a recursive `tocuda()` helper and calls `patchmatchnet_loss()` on dicts of per-stage
# predictions. The loss helper starts its accumulator as `loss = torch.Tensor([0])`, a
# one-element tensor on the host, and adds the CUDA smooth-L1 terms of every stage and iteration
# to it, so the first addition fails on a GPU ("Expected all tensors to be on the same device,
# but found at least two devices, cuda:0 and cpu!" in the report). The maintainer's fix
# (commit 584caa0) starts the accumulator from the Python number 0.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def tocuda(vars):
    if isinstance(vars, torch.Tensor):
        return vars.to(device)
    if isinstance(vars, dict):
        return {k: tocuda(v) for k, v in vars.items()}
    if isinstance(vars, list):
        return [tocuda(v) for v in vars]
    return vars


class DepthDataset(Dataset):
    def __init__(self, n=48):
        g = torch.Generator().manual_seed(0)
        self.imgs = torch.rand(n, 3, 16, 16, generator=g)

    def __len__(self):
        return len(self.imgs)

    def __getitem__(self, i):
        img = self.imgs[i]
        depth, mask = {}, {}
        for s in range(4):
            size = 16 // (2 ** s)
            d = F.adaptive_avg_pool2d(img.mean(0, keepdim=True), size)[0] * 2.0 + 0.5
            depth[f"stage_{s}"] = d
            mask[f"stage_{s}"] = (d > 0.6).float()
        return {"imgs": img, "depth": depth, "mask": mask}


class TinyPatchmatchNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
        self.heads = nn.ModuleList([nn.Conv2d(8, 1, 3, padding=1) for _ in range(4)])

    def forward(self, imgs):
        f = self.features(imgs)
        depth_patchmatch, refined = {}, {}
        for s in range(1, 4):
            fs = F.adaptive_avg_pool2d(f, 16 // (2 ** s))
            first = self.heads[s](fs).squeeze(1)
            depth_patchmatch[f"stage_{s}"] = [first, first + 0.1 * self.heads[s](fs * 0.5).squeeze(1)]
        refined["stage_0"] = self.heads[0](f).squeeze(1)
        return depth_patchmatch, refined


def patchmatchnet_loss(depth_patchmatch, refined_depth, depth_gt, mask):
    stage = 4
    loss = torch.Tensor([0])
    for l in range(1, stage):
        depth_gt_l = depth_gt[f"stage_{l}"]
        mask_l = mask[f"stage_{l}"] > 0.5
        depth2 = depth_gt_l[mask_l]
        depth_patchmatch_l = depth_patchmatch[f"stage_{l}"]
        for i in range(len(depth_patchmatch_l)):
            depth1 = depth_patchmatch_l[i][mask_l]
            loss = loss + F.smooth_l1_loss(depth1, depth2, reduction="mean")  # expect: GL116

    mask_0 = mask["stage_0"] > 0.5
    loss = loss + F.smooth_l1_loss(refined_depth["stage_0"][mask_0], depth_gt["stage_0"][mask_0], reduction="mean")
    return loss


def train_sample(model, optimizer, sample):
    model.train()
    optimizer.zero_grad()
    sample_cuda = tocuda(sample)
    depth_gt = sample_cuda["depth"]
    mask = sample_cuda["mask"]
    depth_patchmatch, depth_est = model(sample_cuda["imgs"])
    loss = patchmatchnet_loss(depth_patchmatch, depth_est, depth_gt, mask)
    loss.backward()
    optimizer.step()
    return loss.item()


torch.manual_seed(0)
model = TinyPatchmatchNet().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
loader = DataLoader(DepthDataset(), batch_size=8, shuffle=True)
losses = []
for epoch in range(8):
    for sample in loader:
        losses.append(train_sample(model, optimizer, sample))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
