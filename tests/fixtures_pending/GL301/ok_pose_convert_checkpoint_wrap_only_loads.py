# source: https://github.com/bearpaw/pytorch-pose/blob/edc7aece651649927764435ce0c1f03cffa2edaf/example/convert_checkpoint.py
# Hard negative (GL301, pending): a DataParallel that never runs drives no GPU. pytorch-pose's
# checkpoint converter builds the model, wraps it in DataParallel only so that the training
# checkpoint's `module.`-prefixed state_dict loads (`model.load_state_dict(checkpoint['state_dict'])`),
# builds the RMSprop optimizer to load its state, counts the parameters, then writes the state_dict
# again without the prefix. The wrapper is never called: no batch is scattered, no replica made.
# GL301 reports the wrap (the engine's `DistFacts.only_saved` accepts only `.state_dict()` uses).
import argparse
import json
import os
import tempfile
from collections import OrderedDict
from os.path import isfile, join

import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class HourglassNet(nn.Module):
    def __init__(self, num_stacks=1, num_blocks=1, num_classes=4):
        super().__init__()
        self.stem = nn.Conv2d(3, 8 * num_blocks, 3, padding=1)
        self.heads = nn.ModuleList([nn.Conv2d(8 * num_blocks, num_classes, 1) for _ in range(num_stacks)])

    def forward(self, x):
        y = torch.relu(self.stem(x))
        return [head(y) for head in self.heads]


def hg(**kwargs):
    return HourglassNet(**kwargs)


models = {"hg": hg}


def train_checkpoint(path):
    """main.py in short: the checkpoint it writes holds the DataParallel wrapper's `module.` keys."""
    net = hg(num_stacks=1, num_blocks=1, num_classes=4).to(device)
    opt = torch.optim.RMSprop(net.parameters(), lr=1e-3)
    x = torch.randn(8, 3, 16, 16, device=device)
    target = torch.randn(8, 4, 16, 16, device=device) * 0.1
    losses = []
    for _ in range(20):
        loss = nn.functional.mse_loss(net(x)[-1], target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    state = OrderedDict(("module." + k, v) for k, v in net.state_dict().items())
    torch.save({"epoch": 20, "best_acc": 0.5, "state_dict": state, "optimizer": opt.state_dict()}, path)
    return losses


def main(args):
    print("==> creating model '{}', stacks={}, blocks={}".format(args.arch, args.stacks, args.blocks))
    model = models[args.arch](num_stacks=args.stacks, num_blocks=args.blocks, num_classes=4)

    model = torch.nn.DataParallel(model).to(device)

    criterion = torch.nn.MSELoss(reduction="mean").to(device)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=args.lr)

    checkpoint = None
    if args.resume:
        if isfile(args.resume):
            print("=> loading checkpoint '{}'".format(args.resume))
            checkpoint = torch.load(args.resume, map_location=device)
            args.start_epoch = checkpoint["epoch"]
            model.load_state_dict(checkpoint["state_dict"])
            optimizer.load_state_dict(checkpoint["optimizer"])
        else:
            print("=> no checkpoint found at '{}'".format(args.resume))

    print("    Total params: %.2fM" % (sum(p.numel() for p in model.parameters()) / 1000000.0))

    # save a cleaned version of the model without DataParallel's `module.`
    clean_model = OrderedDict()
    if any(key.startswith("module") for key in checkpoint["state_dict"]):
        for k, v in checkpoint["state_dict"].items():
            clean_model[k[7:]] = v
    clean_model_path = join(args.checkpoint, "clean_model.pth.tar")
    torch.save(clean_model, clean_model_path)
    print("clean model saved: {}".format(clean_model_path))
    return clean_model_path


if __name__ == "__main__":
    out = tempfile.mkdtemp()
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", default="hg")
    parser.add_argument("--stacks", default=1, type=int)
    parser.add_argument("--blocks", default=1, type=int)
    parser.add_argument("--lr", default=2.5e-4, type=float)
    parser.add_argument("--checkpoint", default=out)
    parser.add_argument("--resume", default=os.path.join(out, "checkpoint.pth.tar"))
    parser.add_argument("--start-epoch", default=0, type=int)
    args = parser.parse_args([])
    losses = train_checkpoint(args.resume)
    path = main(args)
    plain = hg(num_stacks=1, num_blocks=1, num_classes=4)
    plain.load_state_dict(torch.load(path, map_location="cpu"))
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
