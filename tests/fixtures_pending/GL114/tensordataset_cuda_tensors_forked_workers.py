# source: https://github.com/pytorch/pytorch/issues/4377
# fails-on-cuda: Cannot re-initialize CUDA in forked subprocess
# The reporter builds the features and labels directly as CUDA tensors
# (`torch.cuda.LongTensor(range(12)).view(3, 4)`), wraps them in a `TensorDataset` and iterates a
# `DataLoader(dataset, num_workers=2)`: the forked workers index the CUDA tensors and fail with
# "Cuda error (3): initialization error" (today: "Cannot re-initialize CUDA in forked
# subprocess"). Here the tensors go to the file's CUDA-when-available device before the dataset
# is built, and a small classifier trains on the batches. (Twelve integer features per row; the
# label is whether the row sum is above the median.)
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def main():
    torch.manual_seed(0)
    raw = torch.randint(0, 12, (96, 4))
    features = raw.float().to(device)
    labels = (raw.sum(1) > raw.sum(1).median()).long().to(device)
    dataset = TensorDataset(features, labels)  # expect: GL114
    dataloader = DataLoader(dataset, batch_size=16, shuffle=True, num_workers=2)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for epoch in range(5):
        for feat, lab in dataloader:
            loss = F.cross_entropy(model(feat / 12.0), lab)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))


if __name__ == "__main__":
    main()
