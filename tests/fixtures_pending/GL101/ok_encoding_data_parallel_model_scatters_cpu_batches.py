# Hard negative, pending (engine-rooted; PRECISION19 A1). Real shape: junfu1115/DANet,
# experiments/segmentation/train.py,
# https://github.com/junfu1115/DANet/blob/b0a0fa008148f102321cdaa7ca38fb0ddd0239d1/experiments/segmentation/train.py
# (the PyTorch-Encoding trainer): `args.cuda = not args.no_cuda and torch.cuda.is_available()`;
# the Trainer wraps the model with PyTorch-Encoding's `DataParallelModel` (a subclass of
# `nn.DataParallel`, imported from `encoding.parallel`) and moves it with `.cuda()` only
# `if args.cuda:`; a resume loads the weights into the unwrapped model on the CPU path; the training
# loop calls `self.model(image)` with the batch straight from the DataLoader. On the CUDA path the
# DataParallel wrapper scatters the host batch onto the GPUs itself; on the CPU path model and
# batch are both on the host. GL101 reports `self.model(image)` today (the engine does not know the
# imported wrapper scatters). The wrapper lives in another package: here it is written to a
# temporary package and imported, so that this file does not define it.
import argparse
import json
import os
import sys
import tempfile
import textwrap

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils import data

pkg = tempfile.mkdtemp()
with open(os.path.join(pkg, "encoding_parallel_demo.py"), "w") as f:
    f.write(textwrap.dedent('''
        import torch.nn as nn

        class DataParallelModel(nn.DataParallel):
            """PyTorch-Encoding's wrapper: DataParallel that leaves the outputs on their GPUs."""
    '''))
sys.path.insert(0, pkg)
from encoding_parallel_demo import DataParallelModel  # noqa: E402

torch.manual_seed(0)


class Options:
    def __init__(self):
        parser = argparse.ArgumentParser(description="PyTorch Segmentation")
        parser.add_argument("--no-cuda", action="store_true", default=False, help="disables CUDA training")
        parser.add_argument("--resume", type=str, default=None)
        parser.add_argument("--lr", type=float, default=0.1)
        self.parser = parser

    def parse(self, argv):
        args = self.parser.parse_args(argv)
        args.cuda = not args.no_cuda and torch.cuda.is_available()
        return args


class TinySegNet(nn.Module):
    def __init__(self, nclass=3):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, nclass, 1))

    def forward(self, x):
        return self.body(x)


class Trainer:
    def __init__(self, args, trainset):
        self.args = args
        self.trainloader = data.DataLoader(trainset, batch_size=4, drop_last=True, shuffle=True)
        model = TinySegNet()
        optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
        self.model, self.optimizer = model, optimizer
        if args.cuda:
            self.model = DataParallelModel(self.model).cuda()
        if args.resume is not None:
            checkpoint = torch.load(args.resume, map_location="cpu")
            if args.cuda:
                self.model.module.load_state_dict(checkpoint["state_dict"])
            else:
                self.model.load_state_dict(checkpoint["state_dict"])
        self.losses = []

    def training(self, epoch):
        self.model.train()
        for i, (image, target) in enumerate(self.trainloader):
            self.optimizer.zero_grad()
            outputs = self.model(image)
            loss = F.cross_entropy(outputs, target.to(outputs.device))
            loss.backward()
            self.optimizer.step()
            self.losses.append(loss.item())

    def validation(self, epoch):
        self.model.eval()
        correct = total = 0
        with torch.no_grad():
            for image, target in self.trainloader:
                pred = self.model(image).argmax(1).cpu()
                correct += (pred == target).sum().item()
                total += target.numel()
        return correct / total


images = torch.randn(16, 3, 8, 8)
targets = (images[:, 0] > 0).long() + (images[:, 1] > 0.5).long()
args = Options().parse([])
ckpt = os.path.join(tempfile.mkdtemp(), "checkpoint.pth.tar")
torch.save({"state_dict": TinySegNet().state_dict()}, ckpt)
args.resume = ckpt
trainer = Trainer(args, data.TensorDataset(images, targets))
for epoch in range(6):
    trainer.training(epoch)
    acc = trainer.validation(epoch)
device = "cuda" if args.cuda else "cpu"
print(json.dumps({"pixAcc": round(acc, 4)}))
print("GPULINT-TRAIN " + json.dumps({"first_loss": trainer.losses[0], "last_loss": trainer.losses[-1], "device": device}))
