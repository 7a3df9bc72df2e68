# source: https://github.com/polo5/ZeroShotKnowledgeTransfer/blob/e24915d71367/utils/transition_curves.py
# Hard negative (real shape, benchmarks/PRECISION37.md P37-A2): zero-shot knowledge transfer's
# transition-curve tool. `TransitionCurves.__init__` builds the two networks on `args.device` (a
# `--use_gpu` flag picks cuda or cpu) and loads their checkpoints with `map_location=args.device`;
# then, when the experiment folder exists, it restores the matching test-image indices of an
# earlier run with `torch.load(checkpoint_path)` (no map_location) and reads
# `checkpoint['indices']`. That file is written by the same class, `save_indices()`:
# `torch.save({'indices': self.indices}, ...)`, and `self.indices` is the list
# `get_indices_where_nets_match()` builds with `indices.append(int(index))`: Python ints, no
# tensor, so the load is the same on a CPU-only machine. GL110 reports the load.
import argparse
import json
import os
import tempfile

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


def select_model():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))


class TransitionCurves(object):
    def __init__(self, args, dataset):
        self.args = args
        self.netA = select_model().to(device=args.device)
        self.netB = select_model().to(device=args.device)
        self.netA.load_state_dict(torch.load(args.netA_path, map_location=args.device))
        self.netB.load_state_dict(torch.load(args.netB_path, map_location=args.device))
        self.netA.eval()
        self.netB.eval()
        self.dataset = dataset
        self.experiment_path = os.path.join(args.log_directory_path, args.experiment_name)
        self.indices = None

        if os.path.exists(self.experiment_path):
            checkpoint_path = os.path.join(self.experiment_path, "indices.pth.tar")
            if os.path.isfile(checkpoint_path) and args.try_load_indices:
                checkpoint = torch.load(checkpoint_path)
                self.indices = checkpoint["indices"]
                print("{} matching indices restored from ckpt, sum = {}".format(len(self.indices), sum(self.indices)))
        else:
            os.makedirs(self.experiment_path)

        if self.indices is None:
            self.indices = self.get_indices_where_nets_match()
            self.save_indices()

    @torch.no_grad()
    def get_indices_where_nets_match(self):
        loader = DataLoader(self.dataset, batch_size=1, shuffle=False)
        indices = []
        for index, (x, _) in enumerate(loader):
            x = x.to(self.args.device)
            if torch.argmax(self.netA(x)) == torch.argmax(self.netB(x)):
                indices.append(int(index))
            if len(indices) == self.args.n_matching_images:
                break
        return indices

    def save_indices(self):
        torch.save({"indices": self.indices}, os.path.join(self.experiment_path, "indices.pth.tar"))


def train(net, loader, device, losses):
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = nn.functional.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())


parser = argparse.ArgumentParser()
parser.add_argument("--use_gpu", type=int, default=1)
parser.add_argument("--n_matching_images", type=int, default=5)
parser.add_argument("--try_load_indices", type=int, default=1)
args = parser.parse_args([])
args.device = torch.device("cuda") if args.use_gpu and torch.cuda.is_available() else torch.device("cpu")

x = torch.randn(96, 8)
y = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()
data = TensorDataset(x, y)
losses = []
with tempfile.TemporaryDirectory() as tmp:
    for name in ("netA", "netB"):
        net = select_model().to(args.device)
        for epoch in range(5):
            train(net, DataLoader(data, batch_size=16, shuffle=True), args.device, losses if name == "netA" else [])
        net.cpu()
        torch.save(net.state_dict(), os.path.join(tmp, name + ".pth"))
    args.netA_path, args.netB_path = os.path.join(tmp, "netA.pth"), os.path.join(tmp, "netB.pth")
    args.log_directory_path, args.experiment_name = tmp, "curves"
    first = TransitionCurves(args, data)
    second = TransitionCurves(args, data)  # restores the indices the first run saved
    assert first.indices == second.indices and all(type(i) is int for i in second.indices)

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": args.device.type}))
