# source: https://github.com/IIPCVLAB/LCCNet/pull/4
# LCCNet's training script (sacred experiment): the calibration network is wrapped in DataParallel
# and moved with .cuda(); the val() function runs it under no_grad, then accumulates the
# translation error of each sample into `total_trasl_error = torch.tensor(0.0)`, made on the CPU,
# with `+=` of norms computed on the GPU outputs (in-place add into a CPU tensor of a CUDA value).
# fails-on-cuda: Expected all tensors to be on the same device
import json
import math

import torch
import torch.nn as nn
import torch.optim as optim


class LCCNet(nn.Module):
    def __init__(self, dim=12):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(2 * dim, 32), nn.LeakyReLU(0.1))
        self.fc_transl = nn.Linear(32, 3)
        self.fc_rot = nn.Linear(32, 4)

    def forward(self, rgb_img, refl_img):
        x = self.features(torch.cat([rgb_img, refl_img], dim=1))
        transl = self.fc_transl(x)
        rot = nn.functional.normalize(self.fc_rot(x), dim=1)
        return transl, rot


def loss_fn(target_transl, target_rot, transl_err, rot_err):
    total = nn.functional.smooth_l1_loss(transl_err, target_transl) + nn.functional.smooth_l1_loss(rot_err, target_rot)
    return {"total_loss": total}


def quaternion_distance(q, r):
    return 2 * torch.acos(torch.clamp((q * r).sum(dim=1).abs(), max=1.0))


def train(model, optimizer, rgb_img, refl_img, target_transl, target_rot):
    model.train()
    optimizer.zero_grad()
    transl_err, rot_err = model(rgb_img, refl_img)
    losses = loss_fn(target_transl, target_rot, transl_err, rot_err)
    losses["total_loss"].backward()
    optimizer.step()
    return losses


def val(model, rgb_img, refl_img, target_transl, target_rot):
    model.eval()
    with torch.no_grad():
        transl_err, rot_err = model(rgb_img, refl_img)
    losses = loss_fn(target_transl, target_rot, transl_err, rot_err)
    total_trasl_error = torch.tensor(0.0)
    total_rot_error = quaternion_distance(target_rot, rot_err) * 180.0 / math.pi
    for j in range(rgb_img.shape[0]):
        total_trasl_error += torch.norm(target_transl[j] - transl_err[j]) * 100.0  # expect: GL116
    return losses, total_trasl_error.item(), total_rot_error.sum().item()


def make_batch(n, dim=12):
    rgb = torch.randn(n, dim)
    refl = torch.randn(n, dim)
    transl = 0.1 * (rgb[:, :3] - refl[:, :3])
    rot = nn.functional.normalize(torch.cat([torch.ones(n, 1), 0.1 * rgb[:, 3:6]], dim=1), dim=1)
    return rgb, refl, transl, rot


torch.manual_seed(0)
model = LCCNet()
model = nn.DataParallel(model)
model = model.cuda() if torch.cuda.is_available() else model
optimizer = optim.Adam(model.parameters(), lr=3e-3, weight_decay=5e-6)
train_batches = [make_batch(32) for _ in range(8)]
val_batches = [make_batch(16) for _ in range(2)]
use_cuda = torch.cuda.is_available()

history = []
for epoch in range(6):
    for rgb, refl, transl, rot in train_batches:
        if use_cuda:
            rgb, refl, transl, rot = rgb.cuda(), refl.cuda(), transl.cuda(), rot.cuda()
        losses = train(model, optimizer, rgb, refl, transl, rot)
        history.append(losses["total_loss"].item())
    for rgb, refl, transl, rot in val_batches:
        if use_cuda:
            rgb, refl, transl, rot = rgb.cuda(), refl.cuda(), transl.cuda(), rot.cuda()
        val_losses, transl_error, rot_error = val(model, rgb, refl, transl, rot)
    print(f"epoch {epoch}: val transl error {transl_error:.2f} cm, rot error {rot_error:.2f} deg")

device = next(model.parameters()).device
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(history[:4]) / 4, "last_loss": sum(history[-4:]) / 4, "device": device.type}))
