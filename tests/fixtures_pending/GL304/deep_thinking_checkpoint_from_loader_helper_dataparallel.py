# source: https://github.com/aks2203/deep-thinking/issues/5
# deep-thinking: utils.load_model_from_checkpoint(problem, model_args, device) builds the recurrent
# net with get_model(...), moves it, wraps it with `torch.nn.DataParallel(net)` when
# `device == "cuda"`, and restores `state_dict["net"]` when a model path is given; train_model.py
# trains the returned net and saves `{"net": net.state_dict(), "epoch": ..., "optimizer": ...}`.
# On a GPU machine the saved keys carry the wrapper's `module.` prefix, so loading the checkpoint
# into the plain DTNet (the reporter's notebook) fails: "Missing key(s) in state_dict:
# "projection.0.weight", ... Unexpected key(s) in state_dict: "module.projection.0.weight"".
import json
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class DTNet(nn.Module):
    def __init__(self, width=8, in_channels=3, max_iters=3):
        super().__init__()
        self.max_iters = max_iters
        self.projection = nn.Sequential(nn.Conv2d(in_channels, width, 3, padding=1), nn.ReLU())
        self.recur_block = nn.Sequential(nn.Conv2d(width, width, 3, padding=1), nn.ReLU())
        self.head = nn.Sequential(nn.Conv2d(width, 2, 3, padding=1))

    def forward(self, x):
        out = self.projection(x)
        for _ in range(self.max_iters):
            out = self.recur_block(out) + out
        return self.head(out)


def get_model(model, width, in_channels, max_iters):
    return DTNet(width=width, in_channels=in_channels, max_iters=max_iters)


def load_model_from_checkpoint(problem, model_args, device):
    epoch = 0
    optimizer = None
    in_channels = 3
    net = get_model(model_args["model"], model_args["width"], in_channels=in_channels, max_iters=model_args["max_iters"])
    net = net.to(device)
    if device == "cuda":
        net = torch.nn.DataParallel(net)
    if model_args["model_path"] is not None:
        state_dict = torch.load(model_args["model_path"], map_location=device)
        net.load_state_dict(state_dict["net"])
        epoch = state_dict["epoch"] + 1
        optimizer = state_dict["optimizer"]
    return net, epoch, optimizer


def train(net, loader, optimizer, device):
    net.train()
    total = 0.0
    for inputs, targets in loader:
        inputs, targets = inputs.to(device), targets.to(device)
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = F.cross_entropy(outputs, targets)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / len(loader)


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    mazes = torch.rand(64, 3, 6, 6)
    solutions = (mazes[:, 0] > mazes[:, 1]).long()
    loader = DataLoader(TensorDataset(mazes, solutions), batch_size=16, shuffle=True)
    out_dir = tempfile.mkdtemp()
    model_args = {"model": "dt_net_2d", "width": 8, "max_iters": 3, "model_path": None}
    net, start_epoch, optimizer_state_dict = load_model_from_checkpoint("mazes", model_args, device)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
    if optimizer_state_dict is not None:
        optimizer.load_state_dict(optimizer_state_dict)
    history = []
    for epoch in range(start_epoch, 6):
        history.append(train(net, loader, optimizer, device))
        state = {"net": net.state_dict(), "epoch": epoch, "optimizer": optimizer.state_dict()}
        out_str = os.path.join(out_dir, "model_best.pth")
        torch.save(state, out_str)  # expect: GL304
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device}))


if __name__ == "__main__":
    main()
