# source: https://github.com/DepthAnything/Depth-Anything-V2/issues/45
# Depth Anything V2's README usage: build `DepthAnythingV2(**model_configs['vitl'])`, load the
# checkpoint with `torch.load(..., map_location='cpu')`, `model.eval()`, then
# `depth = model.infer_image(raw_img)`. `infer_image` calls `image2tensor`, which picks
# `DEVICE = 'cuda' if torch.cuda.is_available() else ...` itself and moves the image there, while
# the README never moved the model: "RuntimeError: Input type (torch.cuda.FloatTensor) and weight
# type (torch.FloatTensor) should be the same". The updated README adds
# `model = model.to(DEVICE).eval()`. (Here a tiny DPT stands for the ViT + DPT head; a few host
# training steps produce the checkpoint the README loads.)
# fails-on-cuda: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same
import json
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class DepthAnythingV2(nn.Module):
    def __init__(self, encoder="vits", features=16):
        super().__init__()
        self.encoder = encoder
        self.pretrained = nn.Conv2d(3, features, kernel_size=2, stride=2)
        self.depth_head = nn.Sequential(nn.Conv2d(features, features, 3, padding=1), nn.ReLU(), nn.Conv2d(features, 1, 1))

    def forward(self, x):
        features = F.gelu(self.pretrained(x))
        depth = self.depth_head(features)
        depth = F.interpolate(depth, size=x.shape[-2:], mode="bilinear", align_corners=True)
        return F.relu(depth).squeeze(1)

    @torch.no_grad()
    def infer_image(self, raw_image, input_size=16):
        image, (h, w) = self.image2tensor(raw_image, input_size)
        depth = self.forward(image)  # expect: GL112
        depth = F.interpolate(depth[:, None], (h, w), mode="bilinear", align_corners=True)[0, 0]
        return depth.cpu().numpy()

    def image2tensor(self, raw_image, input_size=16):
        h, w = raw_image.shape[:2]
        image = raw_image[..., ::-1] / 255.0
        image = (image - np.array([0.485, 0.456, 0.406])) / np.array([0.229, 0.224, 0.225])
        image = np.ascontiguousarray(image.transpose(2, 0, 1)).astype(np.float32)
        image = torch.from_numpy(image).unsqueeze(0)
        image = F.interpolate(image, (input_size, input_size), mode="bilinear", align_corners=False)
        DEVICE = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
        image = image.to(DEVICE)
        return image, (h, w)


def train_checkpoint(path):
    torch.manual_seed(0)
    net = DepthAnythingV2(encoder="vits")
    nn.init.constant_(net.depth_head[-1].bias, 0.5)  # start at positive depths (the head ends in a ReLU)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    images = torch.rand(8, 3, 16, 16)
    target = images.mean(1) * 3.0
    first = last = None
    for step in range(40):
        loss = F.mse_loss(net(images), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
        last = loss.item()
    torch.save(net.state_dict(), path)
    return first, last


def main():
    model_configs = {"vits": {"encoder": "vits", "features": 16}}
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = os.path.join(tmp, "depth_anything_v2_vits.pth")
        first, last = train_checkpoint(ckpt)
        model = DepthAnythingV2(**model_configs["vits"])
        model.load_state_dict(torch.load(ckpt, map_location="cpu"))
        model.eval()
        raw_img = (np.random.RandomState(0).rand(24, 32, 3) * 255).astype(np.uint8)
        depth = model.infer_image(raw_img)
    print("depth", depth.shape)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": first, "last_loss": last, "device": "cpu"}))


if __name__ == "__main__":
    main()
