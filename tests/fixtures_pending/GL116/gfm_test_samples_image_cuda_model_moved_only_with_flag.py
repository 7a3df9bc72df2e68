# source: https://github.com/JizhiziLi/GFM/pull/5 (commit 18a0d19)
# GFM's core/test_samples.py takes a `--cuda` flag (store_true, off by default): the model is loaded
# and moved only `if args.cuda: model = model.cuda()`, but `inference_function` builds the image
# tensor with `torch.from_numpy(...).permute(0, 3, 1, 2).cuda()` unconditionally (and the loop calls
# `torch.cuda.empty_cache()`). A CPU run on a machine with a GPU feeds a CUDA image to the host model
# ("Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same");
# on a machine without CUDA the `.cuda()` itself fails. The PR moves the image only `if args.cuda:`.
# The glance/focus matting network is a small two-head CNN here, trained for a few steps first.
# fails-on-cuda: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same
import argparse
import json
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def get_args(argv):
    parser = argparse.ArgumentParser(description="Test for GFM")
    parser.add_argument("--cuda", action="store_true", help="use cuda?")
    parser.add_argument("--arch", type=str, default="e2e_resnet34_2b_gfm_tt")
    parser.add_argument("--model_path", type=str, default="")
    return parser.parse_args(argv)


class GFM(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
        self.glance = nn.Conv2d(8, 3, 1)  # background / transition / foreground
        self.focus = nn.Conv2d(8, 1, 1)  # alpha in the transition area

    def forward(self, x):
        h = self.encoder(x / 255.0)
        pred_global = F.softmax(self.glance(h), 1)
        pred_local = torch.sigmoid(self.focus(h))
        pred_fusion = pred_global[:, 2:3] + pred_global[:, 1:2] * pred_local
        return pred_global, pred_local, pred_fusion


def make_image(rng):
    img = rng.uniform(0, 60, (16, 16, 3)).astype(np.float32)
    alpha = np.zeros((16, 16), np.float32)
    r0, c0 = rng.integers(2, 8, 2)
    alpha[r0:r0 + 6, c0:c0 + 6] = 1.0
    img[alpha > 0] += 150.0
    return img, alpha


def train(args, path):
    device = torch.device("cuda" if args.cuda else "cpu")
    model = GFM().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    rng = np.random.default_rng(0)
    losses = []
    for step in range(80):
        batch = [make_image(rng) for _ in range(8)]
        img = torch.from_numpy(np.stack([b[0] for b in batch])).permute(0, 3, 1, 2).to(device)
        alpha = torch.from_numpy(np.stack([b[1] for b in batch]))[:, None].to(device)
        _, _, pred_fusion = model(img)
        loss = F.l1_loss(pred_fusion, alpha)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    torch.save(model.state_dict(), path)
    return losses


def inference_function(args, model, scale_img):
    tensor_img = torch.from_numpy(scale_img.astype(np.float32)[np.newaxis, :, :, :]).permute(0, 3, 1, 2).cuda()
    input_t = tensor_img
    pred_global, pred_local, pred_fusion = model(input_t)  # expect: GL116
    return pred_fusion[0, 0].detach().cpu().numpy()


def test_samples(args, model):
    model.eval()
    rng = np.random.default_rng(1)
    errors = []
    for _ in range(4):
        img, alpha = make_image(rng)
        with torch.no_grad():
            torch.cuda.empty_cache()
            predict = inference_function(args, model, img)
        errors.append(float(np.abs(predict - alpha).mean()))
    return errors


def load_model_and_deploy(args):
    model = GFM()
    ckpt = torch.load(args.model_path, weights_only=True)
    model.load_state_dict(ckpt, strict=True)
    if args.cuda:
        model = model.cuda()
    return test_samples(args, model)


args = get_args(["--model_path", os.path.join(tempfile.mkdtemp(), "gfm.pth")])  # the CPU run: no --cuda
torch.manual_seed(0)
losses = train(args, args.model_path)
print("sample alpha errors", load_model_and_deploy(args))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": "cpu"}))
