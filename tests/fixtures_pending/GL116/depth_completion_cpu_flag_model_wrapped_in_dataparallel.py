# source: https://github.com/fangchangma/self-supervised-depth-completion/pull/42 (commit 8ebfdd6)
# main.py sets `cuda = torch.cuda.is_available() and not args.cpu` and `device` from it, builds the
# network with `.to(device)`, loads the checkpoint with `map_location=device`, and then wraps the
# model in `torch.nn.DataParallel` unconditionally. Evaluating on the CPU on a machine that has a
# GPU (`python main.py --cpu --evaluate ckpt`, the reporter's command, parsed below) leaves the
# network on the host while DataParallel, seeing a GPU, scatters each batch to cuda:0 and refuses
# a module whose parameters are on the CPU. The PR wraps the model only `if cuda:`.
# fails-on-cuda: module must have its parameters and buffers on device cuda:0
import argparse
import json
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

CKPT = os.path.join(tempfile.mkdtemp(), "model_best.pth.tar")

parser = argparse.ArgumentParser(description="Sparse-to-Dense")
parser.add_argument("--epochs", default=6, type=int)
parser.add_argument("--lr", default=1e-2, type=float)
parser.add_argument("-e", "--evaluate", default="", type=str, metavar="PATH")
parser.add_argument("--cpu", action="store_true", help="run on cpu")
args = parser.parse_args(["--cpu", "--evaluate", CKPT])

cuda = torch.cuda.is_available() and not args.cpu
if cuda:
    device = torch.device("cuda")
else:
    device = torch.device("cpu")
print("=> using '{}' for computation.".format(device))


class DepthCompletionNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv_d = nn.Conv2d(1, 8, 3, padding=1)
        self.conv_rgb = nn.Conv2d(3, 8, 3, padding=1)
        self.out = nn.Conv2d(16, 1, 3, padding=1)

    def forward(self, x):
        feat = torch.cat([F.relu(self.conv_d(x["d"])), F.relu(self.conv_rgb(x["rgb"]))], 1)
        return self.out(feat)


class KittiDepth(Dataset):
    def __init__(self, split):
        g = torch.Generator().manual_seed(0 if split == "train" else 1)
        self.rgb = torch.rand(24, 3, 16, 16, generator=g)
        self.gt = self.rgb.mean(1, keepdim=True) * 5.0
        keep = (torch.rand(24, 1, 16, 16, generator=g) < 0.3).float()
        self.d = self.gt * keep

    def __len__(self):
        return len(self.rgb)

    def __getitem__(self, i):
        return {"rgb": self.rgb[i], "d": self.d[i], "gt": self.gt[i]}


def iterate(mode, loader, model, optimizer):
    model.train() if mode == "train" else model.eval()
    losses = []
    for batch_data in loader:
        batch_data = {key: val.to(device) for key, val in batch_data.items() if val is not None}
        pred = model(batch_data)  # expect: GL116
        loss = F.l1_loss(pred, batch_data["gt"])
        if mode == "train":
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        losses.append(loss.item())
    return losses


def train_checkpoint(path):
    # the earlier training run (on the GPU when there is one) that wrote the checkpoint
    train_device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = DepthCompletionNet().to(train_device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loader = DataLoader(KittiDepth("train"), batch_size=8, shuffle=True)
    losses = []
    for _ in range(args.epochs):
        for batch in loader:
            batch = {k: v.to(train_device) for k, v in batch.items()}
            loss = F.l1_loss(model(batch), batch["gt"])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)
    return losses, train_device


def main():
    checkpoint = None
    if args.evaluate:
        checkpoint = torch.load(args.evaluate, map_location=device)
    model = DepthCompletionNet().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    if checkpoint is not None:
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
    model = torch.nn.DataParallel(model)
    val_loader = DataLoader(KittiDepth("val"), batch_size=1, shuffle=False)
    with torch.no_grad():
        return iterate("eval", val_loader, model, None)


torch.manual_seed(0)
train_losses, train_device = train_checkpoint(CKPT)
val_losses = main()
print("val l1 {:.4f}".format(sum(val_losses) / len(val_losses)))
print("GPULINT-TRAIN " + json.dumps({"first_loss": train_losses[0], "last_loss": train_losses[-1], "device": train_device.type}))
