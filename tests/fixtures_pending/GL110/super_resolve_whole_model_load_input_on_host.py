# source: https://github.com/pytorch/examples/issues/599
# super_resolution: main.py trains the sub-pixel network with `--cuda` and saves the whole model
# with `torch.save(model, model_out_path)`; super_resolve.py then does
# `model = torch.load(opt.model)`, builds `input` from the Y channel with ToTensor, and only when
# `opt.cuda` moves `model = model.cuda(); input = input.cuda()` before `out = model(input)`.
# Run without `--cuda`, the unpickled model is restored on the GPU it was saved from while the input
# stays on the host: "Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor)
# should be the same".
# fails-on-cuda: Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same
import argparse
import json
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, upscale_factor=2):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, upscale_factor ** 2, 3, padding=1)
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

    def forward(self, x):
        return self.pixel_shuffle(self.conv2(F.relu(self.conv1(x))))


def train(model_out_path, device):
    torch.manual_seed(0)
    model = Net().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    low = torch.rand(8, 1, 4, 4)
    high = F.interpolate(low, scale_factor=2, mode="bilinear", align_corners=False)
    x, y = low.to(device), high.to(device)
    losses = []
    for epoch in range(15):
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    torch.save(model, model_out_path)
    return losses


def super_resolve(opt):
    model = torch.load(opt.model, weights_only=False)  # expect: GL110
    input = torch.rand(1, 1, 4, 4)
    if opt.cuda:
        model = model.cuda()
        input = input.cuda()
    out = model(input)
    return out.detach().cpu().clamp(0, 1)


parser = argparse.ArgumentParser()
parser.add_argument("--cuda", action="store_true")
opt = parser.parse_args([])
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
with tempfile.TemporaryDirectory() as tmp:
    opt.model = os.path.join(tmp, "model_epoch_30.pth")
    losses = train(opt.model, device)
    out = super_resolve(opt)
print("upscaled", tuple(out.shape))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
