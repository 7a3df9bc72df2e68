# source: https://github.com/pytorch/vision/issues/9414
# An SSD whose DefaultBoxGenerator builds its per-level width/height pairs once in __init__
# (`self._wh_pairs = self._generate_wh_pairs(num_outputs)`, a plain list of host tensors), while
# forward builds the grid shifts on the feature maps' device; _grid_default_boxes concatenates the
# two: "Expected all tensors to be on the same device, but found at least two devices, cpu and
# cuda:0! (when checking argument for argument tensors in method wrapper_cat)". The issue proposes
# passing the device down and moving `self._wh_pairs[k]` to it.
# fails-on-cuda: Expected all tensors to be on the same device
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class DefaultBoxGenerator(nn.Module):
    def __init__(self, aspect_ratios, min_ratio=0.2, max_ratio=0.9):
        super().__init__()
        self.aspect_ratios = aspect_ratios
        num_outputs = len(aspect_ratios)
        self.scales = [min_ratio + (max_ratio - min_ratio) * k / (num_outputs - 1.0) for k in range(num_outputs)] + [1.0]
        self._wh_pairs = self._generate_wh_pairs(num_outputs)

    def _generate_wh_pairs(self, num_outputs, dtype=torch.float32, device=torch.device("cpu")):
        _wh_pairs = []
        for k in range(num_outputs):
            s_k = self.scales[k]
            s_prime_k = math.sqrt(self.scales[k] * self.scales[k + 1])
            wh_pairs = [[s_k, s_k], [s_prime_k, s_prime_k]]
            for ar in self.aspect_ratios[k]:
                sq_ar = math.sqrt(ar)
                wh_pairs.extend([[s_k * sq_ar, s_k / sq_ar], [s_k / sq_ar, s_k * sq_ar]])
            _wh_pairs.append(torch.as_tensor(wh_pairs, dtype=dtype, device=device))
        return _wh_pairs

    def num_anchors_per_location(self):
        return [2 + 2 * len(r) for r in self.aspect_ratios]

    def _grid_default_boxes(self, grid_sizes, dtype, device):
        default_boxes = []
        for k, f_k in enumerate(grid_sizes):
            shifts_x = (torch.arange(0, f_k[1], device=device) + 0.5) / f_k[1]
            shifts_y = (torch.arange(0, f_k[0], device=device) + 0.5) / f_k[0]
            shift_y, shift_x = torch.meshgrid(shifts_y.to(dtype), shifts_x.to(dtype), indexing="ij")
            shifts = torch.stack((shift_x, shift_y) * len(self._wh_pairs[k]), dim=-1).reshape(-1, 2)
            wh_pairs = self._wh_pairs[k].clamp(min=0, max=1)
            wh_pairs = wh_pairs.repeat((f_k[0] * f_k[1]), 1)
            default_box = torch.cat((shifts, wh_pairs), dim=1)  # expect: GL116
            default_boxes.append(default_box)
        return torch.cat(default_boxes, dim=0)

    def forward(self, images, feature_maps):
        grid_sizes = [feature_map.shape[-2:] for feature_map in feature_maps]
        default_boxes = self._grid_default_boxes(grid_sizes, feature_maps[0].dtype, feature_maps[0].device)
        return [default_boxes for _ in range(images.shape[0])]


class SSD(nn.Module):
    def __init__(self, aspect_ratios=([2], [2])):
        super().__init__()
        self.stage1 = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU())
        self.stage2 = nn.Sequential(nn.Conv2d(8, 8, 3, stride=2, padding=1), nn.ReLU())
        self.anchor_generator = DefaultBoxGenerator(aspect_ratios)
        n_anchors = self.anchor_generator.num_anchors_per_location()
        self.reg_heads = nn.ModuleList([nn.Conv2d(8, 4 * a, 3, padding=1) for a in n_anchors])

    def forward(self, images):
        f1 = self.stage1(images)
        f2 = self.stage2(f1)
        features = [f1, f2]
        anchors = self.anchor_generator(images, features)
        deltas = torch.cat([h(f).permute(0, 2, 3, 1).reshape(images.shape[0], -1, 4) for h, f in zip(self.reg_heads, features)], dim=1)
        return deltas, anchors


def decode_boxes(deltas, anchors):
    # (cx, cy, w, h) default boxes and SSD offsets with variances 0.1 / 0.2
    cxcy = anchors[..., :2] + 0.1 * deltas[..., :2] * anchors[..., 2:]
    wh = anchors[..., 2:] * torch.exp(0.2 * deltas[..., 2:])
    return torch.cat([cxcy, wh], dim=-1)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = SSD().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
losses = []
for step in range(40):
    images = torch.randn(4, 3, 16, 16, device=device)
    deltas, anchors = model(images)
    boxes = decode_boxes(deltas, torch.stack(anchors))
    target = anchors[0] * 0.5 + 0.25  # pull every default box halfway towards the centre
    loss = F.smooth_l1_loss(boxes, target.expand_as(boxes))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:3]) / 3, "last_loss": sum(losses[-3:]) / 3, "device": device.type}))
