# source: https://github.com/samuelschen/DSB2018/issues/2
# train.py wraps the CaUNet in nn.DataParallel when more than one GPU is visible and saves checkpoints
# through a helper, save_ckpt(model, optimizer, epoch, path), which stores model.state_dict(); the
# keys then carry the "module." prefix and valid.py's load_ckpt() into a plain CaUNet fails with
# "Missing key(s) in state_dict" (the reporter: only on 2 GPUs).
import json
import os
import tempfile

import torch
import torch.nn as nn


class CaUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU())
        self.out = nn.Conv2d(8, 1, 1)

    def forward(self, x):
        return self.out(self.c1(x))


def save_ckpt(model, optimizer, epoch, filepath):
    torch.save({"epoch": epoch, "name": "CaUNet", "model": model.state_dict(), "optimizer": optimizer.state_dict()}, filepath)  # expect: GL304


def load_ckpt(filepath):
    checkpoint = torch.load(filepath, map_location="cpu")
    model = CaUNet()
    model.load_state_dict(checkpoint["model"])
    return model


def train(images, masks, filepath, n_epoch):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = CaUNet()
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)
    model = model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    criterion = nn.BCEWithLogitsLoss()
    history = []
    for epoch in range(n_epoch):
        for i in range(0, len(images), 8):
            x, y = images[i : i + 8].to(device), masks[i : i + 8].to(device)
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
        history.append(loss.item())
        save_ckpt(model, optimizer, epoch, filepath)
    return history, device


if __name__ == "__main__":
    torch.manual_seed(0)
    images = torch.rand(32, 1, 12, 12)
    masks = (images > 0.6).float()
    path = os.path.join(tempfile.mkdtemp(), "300.pkl")
    history, device = train(images, masks, path, 10)
    model = load_ckpt(path)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
