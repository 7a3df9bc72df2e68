# source: https://github.com/sanghyun-son/EDSR-PyTorch/issues/36
# EDSR: `--precision half` makes the Model wrapper class convert its network with
# `self.model.half()` in __init__; the Trainer class then trains it with Adam and plain
# loss.backward() / optimizer.step(), no loss scaling ("Skip this batch! (Loss: inf)"; the
# maintainer: half-precision training is not supported, only half-precision testing).
# fixture: static (a float16 model needs a GPU to train at all)
import argparse

import torch
import torch.nn as nn


class EDSR(nn.Module):
    def __init__(self, n_feats=8):
        super().__init__()
        self.head = nn.Conv2d(3, n_feats, 3, padding=1)
        self.body = nn.Sequential(nn.Conv2d(n_feats, n_feats, 3, padding=1), nn.ReLU())
        self.tail = nn.Sequential(nn.Conv2d(n_feats, 3 * 4, 3, padding=1), nn.PixelShuffle(2))

    def forward(self, x):
        x = self.head(x)
        return self.tail(x + self.body(x))


class Model(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.device = torch.device("cpu" if args.cpu else "cuda")
        self.model = EDSR().to(self.device)
        if args.precision == "half":
            self.model.half()  # expect: GL206

    def forward(self, x):
        return self.model(x)


class Trainer:
    def __init__(self, args, my_model, my_loss):
        self.args = args
        self.model = my_model
        self.loss = my_loss
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=args.lr)

    def prepare(self, *tensors):
        device = torch.device("cpu" if self.args.cpu else "cuda")
        dtype = torch.float16 if self.args.precision == "half" else torch.float32
        return [t.to(device=device, dtype=dtype) for t in tensors]

    def train(self, batches):
        self.model.train()
        for batch, (lr, hr) in enumerate(batches):
            lr, hr = self.prepare(lr, hr)
            self.optimizer.zero_grad()
            sr = self.model(lr)
            loss = self.loss(sr, hr)
            if loss.item() < self.args.skip_threshold:
                loss.backward()
                self.optimizer.step()
            else:
                print("Skip this batch {}! (Loss: {})".format(batch + 1, loss.item()))


parser = argparse.ArgumentParser()
parser.add_argument("--cpu", action="store_true")
parser.add_argument("--precision", type=str, default="half", choices=("single", "half"))
parser.add_argument("--lr", type=float, default=1e-4)
parser.add_argument("--skip_threshold", type=float, default=1e8)
args = parser.parse_args()

torch.manual_seed(0)
batches = [(torch.rand(4, 3, 8, 8), torch.rand(4, 3, 16, 16)) for _ in range(8)]
t = Trainer(args, Model(args), nn.L1Loss())
for epoch in range(3):
    t.train(batches)
