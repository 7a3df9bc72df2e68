# source: https://github.com/Nanne/pytorch-NetVlad/issues/62
# pytorch-NetVlad main.py: the model is moved with `if not opt.resume: model = model.to(device)`,
# and on the resume path only inside `if isfile(resume_ckpt):` after loading the state dict.
# Testing with --resume pointing at a run whose checkpoint is missing prints "no checkpoint found"
# and goes on with the model on the CPU, while test() moves every batch to the device:
# "Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same".
# (Here the run trains a few steps with the same global train/test functions.)
# fails-on-cuda: should be the same
import argparse
import json
import os
import tempfile
from os.path import isfile, join

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser(description="pytorch-NetVlad")
parser.add_argument("--nocuda", action="store_true")
parser.add_argument("--resume", type=str, default="")
parser.add_argument("--nEpochs", type=int, default=20)


def train(epoch):
    model.train()
    epoch_loss = 0.0
    for iteration, (input, target) in enumerate(training_data_loader, 1):
        input = input.to(device)
        image_encoding = model.encoder(input)  # expect: GL112
        vlad_encoding = model.pool(image_encoding)
        loss = criterion(vlad_encoding, target.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        epoch_loss += loss.item()
    return epoch_loss / len(training_data_loader)


def test(eval_set):
    model.eval()
    correct = 0
    with torch.no_grad():
        for input, target in DataLoader(eval_set, batch_size=16):
            input = input.to(device)
            vlad_encoding = model.pool(model.encoder(input))
            correct += (vlad_encoding.argmax(dim=1).cpu() == target).sum().item()
    return correct / len(eval_set)


if __name__ == "__main__":
    resume_dir = tempfile.mkdtemp()
    opt = parser.parse_args(["--resume", resume_dir])
    cuda = not opt.nocuda and torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    torch.manual_seed(0)

    images = torch.randn(64, 3, 8, 8)
    labels = (images.mean(dim=(1, 2, 3)) > 0).long()
    whole_train_set = TensorDataset(images, labels)
    training_data_loader = DataLoader(whole_train_set, batch_size=16, shuffle=True)

    encoder = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
    model = nn.Module()
    model.add_module("encoder", encoder)
    model.add_module("pool", nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 2)))

    if not opt.resume:
        model = model.to(device)

    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    criterion = nn.CrossEntropyLoss().to(device)

    if opt.resume:
        resume_ckpt = join(opt.resume, "checkpoints", "checkpoint.pth.tar")
        if isfile(resume_ckpt):
            checkpoint = torch.load(resume_ckpt, map_location=lambda storage, loc: storage)
            model.load_state_dict(checkpoint["state_dict"])
            model = model.to(device)
            optimizer.load_state_dict(checkpoint["optimizer"])
        else:
            print("=> no checkpoint found at '{}'".format(resume_ckpt))

    losses = [train(epoch) for epoch in range(1, opt.nEpochs + 1)]
    print("accuracy", test(whole_train_set))
    os.rmdir(resume_dir)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
