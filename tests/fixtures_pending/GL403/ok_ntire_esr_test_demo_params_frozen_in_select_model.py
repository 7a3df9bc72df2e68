# source: https://github.com/nathan66666/DVMSR/issues/5
# Hard negative for GL403: DVMSR's test_demo.py (the NTIRE 2024 Efficient SR challenge harness).
# `select_model(args, device)` loads the checkpoint, calls `model.eval()`, sets
# `v.requires_grad = False` for every `model.named_parameters()` and returns the model; `run()`
# loops over the validation images and calls the helper `forward(img_lq, model, tile)` (whole image,
# or tile by tile into `torch.zeros(...).type_as(img_lq)` buffers) with no `no_grad`. The issue asked
# "Why no torch.no_grad() in test?"; the authors answered that with every parameter frozen no
# gradient is computed (no parameter needs one and the input does not either), so nothing is
# recorded, and the reporter agreed. Rebuilt with a tiny x2 pixel-shuffle SR network: the run first
# trains it for a few steps and saves it to a temporary folder (standing in for the model zoo), then
# the harness loads, freezes and evaluates it on synthetic low-resolution images.
import argparse
import json
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


class TinySR(nn.Module):
    def __init__(self, scale=2):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 3 * scale * scale, 3, padding=1))
        self.up = nn.PixelShuffle(scale)
        self.scale = scale

    def forward(self, x):
        base = F.interpolate(x, scale_factor=self.scale, mode="nearest")
        return base + self.up(self.body(x))


def train(model_path, device, steps=60):
    model = TinySR().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    g = torch.Generator().manual_seed(0)
    losses = []
    for step in range(steps):
        hr = F.avg_pool2d(torch.rand(8, 3, 32, 32, generator=g), 3, stride=1, padding=1).to(device)
        lr = F.avg_pool2d(hr, 2)
        loss = F.l1_loss(model(lr), hr)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    torch.save(model.state_dict(), model_path)
    return losses


def select_model(args, device):
    model = TinySR()
    model.load_state_dict(torch.load(args.model_path, map_location="cpu", weights_only=True), strict=True)
    model.eval()
    tile = None
    for k, v in model.named_parameters():
        v.requires_grad = False
    model = model.to(device)
    return model, "00_TinySR_baseline", 1.0, tile


def forward(img_lq, model, tile=None, tile_overlap=4, scale=2):
    if tile is None:
        output = model(img_lq)
    else:
        b, c, h, w = img_lq.size()
        tile = min(tile, h, w)
        stride = tile - tile_overlap
        h_idx_list = list(range(0, h - tile, stride)) + [h - tile]
        w_idx_list = list(range(0, w - tile, stride)) + [w - tile]
        E = torch.zeros(b, c, h * scale, w * scale).type_as(img_lq)
        W = torch.zeros_like(E)
        for h_idx in h_idx_list:
            for w_idx in w_idx_list:
                in_patch = img_lq[..., h_idx:h_idx + tile, w_idx:w_idx + tile]
                out_patch = model(in_patch)
                E[..., h_idx * scale:(h_idx + tile) * scale, w_idx * scale:(w_idx + tile) * scale].add_(out_patch)
                W[..., h_idx * scale:(h_idx + tile) * scale, w_idx * scale:(w_idx + tile) * scale].add_(torch.ones_like(out_patch))
        output = E.div_(W)
    return output


def run(model, model_name, data_range, tile, device, mode="valid"):
    g = torch.Generator().manual_seed(1)
    results = {f"{mode}_psnr": []}
    for i in range(4):
        img_hr = F.avg_pool2d(torch.rand(1, 3, 48, 48, generator=g), 3, stride=1, padding=1)
        img_lr = F.avg_pool2d(img_hr, 2).to(device)
        img_sr = forward(img_lr, model, tile).clamp(0, data_range)
        mse = F.mse_loss(img_sr.cpu(), img_hr).item()
        results[f"{mode}_psnr"].append(10 * torch.log10(torch.tensor(data_range ** 2 / mse)).item())
    return results


def main(args):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    losses = train(args.model_path, device)
    model, model_name, data_range, tile = select_model(args, device)
    valid_results = run(model, model_name, data_range, tile, device, mode="valid")
    args.tile = 16
    tiled_results = run(model, model_name, data_range, args.tile, device, mode="valid")
    print(model_name, sum(valid_results["valid_psnr"]) / 4, sum(tiled_results["valid_psnr"]) / 4)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))


if __name__ == "__main__":
    torch.manual_seed(0)
    parser = argparse.ArgumentParser("NTIRE2024-EfficientSR")
    parser.add_argument("--model_path", default=os.path.join(tempfile.mkdtemp(), "team00_tinysr.pth"), type=str)
    args = parser.parse_args()
    main(args)
