# source: https://github.com/yuanyuanli85/Fast_Human_Pose_Estimation_Pytorch/issues/7
# tools/mpii_demo.py takes the device from the command line (`--device cuda`), builds the
# hourglass network, loads the checkpoint's state_dict into it and runs the preprocessed image
# moved with `.to(args.device)`; the network itself is never moved (the maintainer's fix: one line,
# `model = model.to(device)`). The checkpoint comes from a short training run first.
# fails-on-cuda: should be the same
import argparse
import json
import os
import tempfile

import torch
import torch.nn as nn


def hg(num_stacks=2, mobile=False):
    layers = [nn.Conv2d(3, 8, 3, padding=1), nn.ReLU()]
    for _ in range(num_stacks):
        layers += [nn.Conv2d(8, 8, 3, padding=1), nn.ReLU()]
    layers.append(nn.Conv2d(8, 4, 1))
    return nn.Sequential(*layers)


def train_checkpoint(path, device):
    torch.manual_seed(0)
    net = hg().to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
    images = torch.rand(32, 3, 8, 8)
    heatmaps = images.mean(1, keepdim=True).repeat(1, 4, 1, 1)
    history = []
    for step in range(30):
        loss = nn.functional.mse_loss(net(images.to(device)), heatmaps.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append(loss.item())
    torch.save({"state_dict": net.state_dict()}, path)
    return history


def main(args):
    history = train_checkpoint(args.checkpoint, args.device)
    model = hg(num_stacks=args.stacks, mobile=args.mobile)
    checkpoint = torch.load(args.checkpoint, map_location=args.device)
    model.load_state_dict(checkpoint["state_dict"])
    model.eval()
    image = torch.rand(3, 8, 8)
    input = image.unsqueeze(0).to(args.device)
    with torch.no_grad():
        out = model(input)  # expect: GL112
    print("keypoints", out.flatten(2).argmax(-1).tolist())
    return history


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("-s", "--stacks", type=int, default=2)
    parser.add_argument("--mobile", type=bool, default=True)
    parser.add_argument("--checkpoint", default=os.path.join(tempfile.mkdtemp(), "model_best.pth.tar"))
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    history = main(args)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": args.device}))
