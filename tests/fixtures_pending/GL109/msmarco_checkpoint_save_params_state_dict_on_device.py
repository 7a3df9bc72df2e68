# source: https://github.com/microsoft/MSMARCO-Question-Answering/issues/3
# MS MARCO BiDAF baseline, Baseline/scripts/checkpointing.py: after each epoch `checkpoint(model,
# epoch, optimizer, dest, exp_folder)` calls `save_model(model, dest)`, which walks
# `model.state_dict().items()` and hands every value to `save_params(destination, path, params)`,
# which writes it with `destination.create_dataset(path, data=params, compression='gzip')`; h5py
# turns the data into a NumPy array. The model was moved to the GPU, so its state dict holds CUDA
# tensors: "TypeError: can't convert CUDA tensor to numpy. Use Tensor.cpu() to copy the tensor to
# host memory first." (fixed by PR #6). The h5py file is a small NumPy-backed store of the file
# here (h5py is not a test dependency).
# fails-on-cuda: can't convert cuda:0 device type tensor to numpy
import json
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn


class H5Store:
    def __init__(self):
        self.datasets = {}

    def __contains__(self, path):
        return path in self.datasets

    def create_group(self, name):
        self.datasets.setdefault(name + "/", None)

    def create_dataset(self, path, data, compression=None):
        self.datasets[path] = np.asarray(data)  # expect: GL109

    def __getitem__(self, path):
        return self.datasets[path]


def save_params(destination, path, params):
    if path not in destination:
        destination.create_dataset(path, data=params, compression="gzip")
    else:
        destination[path][...] = params


def save_model(model, destination):
    if "model" not in destination:
        destination.create_group("model")
    for name, value in model.state_dict().items():
        save_params(destination, "model/" + name, value)


def save_epoch(epoch, destination):
    if "training/epoch" not in destination:
        destination.create_dataset("training/epoch", data=epoch)
    else:
        destination["training/epoch"][()] = epoch


def checkpoint(model, epoch, optimizer, dest, exp_folder):
    save_model(model, dest)
    save_epoch(epoch, dest)
    torch.save(optimizer.state_dict(), os.path.join(exp_folder, "checkpoint.opt"))


class BidafModel(nn.Module):
    def __init__(self, n_words=40, dim=16):
        super().__init__()
        self.embedder = nn.Embedding(n_words, dim)
        self.encoder = nn.GRU(dim, dim, batch_first=True, bidirectional=True)
        self.span_start = nn.Linear(2 * dim, 1)

    def forward(self, passage):
        enc, _ = self.encoder(self.embedder(passage))
        return self.span_start(enc).squeeze(-1)


def train_epoch(model, batches, optimizer, device):
    losses = []
    for passage, start in batches:
        passage, start = passage.to(device), start.to(device)
        loss = nn.functional.cross_entropy(model(passage), start)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def main(exp_folder):
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    passages = torch.randint(0, 40, (64, 10))
    starts = (passages == 7).float().argmax(dim=1)
    batches = [(passages[i:i + 16], starts[i:i + 16]) for i in range(0, 64, 16)]
    model = BidafModel().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    dest = H5Store()
    losses = []
    for epoch in range(6):
        losses += train_epoch(model, batches, optimizer, device)
        checkpoint(model, epoch, optimizer, dest, exp_folder)
    return losses, device


with tempfile.TemporaryDirectory() as tmp:
    losses, device = main(tmp)

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
