# source: https://github.com/facebookresearch/sam3/pull/188
# SAM 3's `TransformerDecoder` (sam3/model/decoder.py) precomputes, in `__init__`, the pixel
# coordinates used for its box relative-position bias: `coords_h, coords_w = self._get_coords(
# feat_size, feat_size, device="cuda")`, kept as a plain tuple attribute `compilable_cord_cache`.
# `_get_rpb_matrix(reference_boxes, feat_size)` reuses the cache when the feature size matches and
# computes `deltas_y = coords_h.view(1, -1, 1) - boxes_xyxy.reshape(-1, 1, 4)[:, :, 1:4:2]`. Running
# the model on the CPU (the reporter's CPU inference) on a machine with a GPU fails there: "Expected
# all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"; on a
# CPU-only machine the constructor itself fails ("Torch not compiled with CUDA enabled", sam3#587).
# Here: a two-layer box-refining decoder over a 8x8 feature map, fine-tuned for a few steps on
# synthetic boxes on the device given by `--device` (the CPU by default, as in the report).
# fails-on-cuda: Expected all tensors to be on the same device
# fixture: cpu-only (the run asks for the CPU, as in the report: `--device` defaults to cpu; with a GPU present)
import argparse
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class TransformerDecoder(nn.Module):
    def __init__(self, d_model=32, num_layers=2, num_queries=4, resolution=32, stride=4):
        super().__init__()
        self.num_queries = num_queries
        self.query_embed = nn.Embedding(num_queries, d_model)
        self.layers = nn.ModuleList(nn.MultiheadAttention(d_model, 4, batch_first=True) for _ in range(num_layers))
        self.bbox_embed = nn.Linear(d_model, 4)
        self.rpb_scale = nn.Parameter(torch.tensor(1.0))
        self.compilable_cord_cache = None
        self.compilable_stored_size = None
        if resolution is not None and stride is not None:
            feat_size = resolution // stride
            coords_h, coords_w = self._get_coords(feat_size, feat_size, device="cuda")
            self.compilable_cord_cache = (coords_h, coords_w)
            self.compilable_stored_size = (feat_size, feat_size)

    @staticmethod
    def _get_coords(H, W, device):
        coords_h = torch.arange(0, H, device=device, dtype=torch.float32) / H
        coords_w = torch.arange(0, W, device=device, dtype=torch.float32) / W
        return coords_h, coords_w

    def _get_rpb_matrix(self, reference_boxes, feat_size):
        H, W = feat_size
        boxes_xyxy = reference_boxes  # normalised (x0, y0, x1, y1)
        bs, num_queries, _ = boxes_xyxy.shape
        if self.compilable_cord_cache is not None and self.compilable_stored_size == feat_size:
            coords_h, coords_w = self.compilable_cord_cache
        else:
            coords_h, coords_w = self._get_coords(H, W, reference_boxes.device)
        deltas_y = coords_h.view(1, -1, 1) - boxes_xyxy.reshape(-1, 1, 4)[:, :, 1:4:2]  # expect: GL116
        deltas_x = coords_w.view(1, -1, 1) - boxes_xyxy.reshape(-1, 1, 4)[:, :, 0:3:2]
        dy = deltas_y.abs().min(-1).values  # (bs * nq, H)
        dx = deltas_x.abs().min(-1).values  # (bs * nq, W)
        rpb = -(dy.unsqueeze(2) + dx.unsqueeze(1)).view(bs, num_queries, H * W)
        return rpb * self.rpb_scale

    def forward(self, memory, feat_size):
        bs = memory.shape[0]
        tgt = self.query_embed.weight.unsqueeze(0).expand(bs, -1, -1)
        boxes = torch.sigmoid(self.bbox_embed(tgt))
        for layer in self.layers:
            rpb = self._get_rpb_matrix(boxes.detach(), feat_size)
            mask = rpb.repeat_interleave(4, dim=0)  # one bias per head
            tgt = tgt + layer(tgt, memory, memory, attn_mask=mask)[0]
            boxes = torch.sigmoid(self.bbox_embed(tgt))
        return boxes


class Backbone(nn.Module):
    def __init__(self, d_model=32, stride=4):
        super().__init__()
        self.conv = nn.Conv2d(3, d_model, stride, stride=stride)

    def forward(self, images):
        feat = self.conv(images)
        return feat.flatten(2).transpose(1, 2), tuple(feat.shape[-2:])


parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cpu")
args = parser.parse_args()
device = torch.device(args.device)

torch.manual_seed(0)
backbone = Backbone().to(device)
decoder = TransformerDecoder().to(device)
opt = torch.optim.Adam(list(backbone.parameters()) + list(decoder.parameters()), lr=3e-3)
images = torch.rand(8, 3, 32, 32, device=device)
target_boxes = torch.tensor([[0.1, 0.1, 0.4, 0.4], [0.5, 0.1, 0.9, 0.4], [0.1, 0.5, 0.4, 0.9], [0.5, 0.5, 0.9, 0.9]],
                            device=device).expand(8, -1, -1)
losses = []
for step in range(60):
    memory, feat_size = backbone(images)
    pred = decoder(memory, feat_size)
    loss = F.l1_loss(pred, target_boxes)
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
