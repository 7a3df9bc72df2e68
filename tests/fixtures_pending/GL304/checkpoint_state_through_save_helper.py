# source: https://github.com/whai362/pan_pp.pytorch/issues/14
# train.py wraps the detector in DataParallel, builds the checkpoint as
# `state = dict(epoch=..., iter=0, state_dict=model.state_dict(), optimizer=...)` after each epoch
# and hands it to a save_checkpoint(state, checkpoint_path) helper that calls torch.save; test.py
# builds the plain model and cannot load the "module."-prefixed keys (the report suggests saving
# model.module.state_dict()). The buggy script fails at that load on any machine.
import json
import os
import os.path as osp
import tempfile

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def build_model():
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 1))


def save_checkpoint(state, checkpoint_path):
    file_path = osp.join(checkpoint_path, "checkpoint.pth.tar")
    torch.save(state, file_path)


def train(train_loader, model, optimizer, device):
    model.train()
    losses = []
    for imgs, gt in train_loader:
        imgs, gt = imgs.to(device), gt.to(device)
        loss = nn.functional.binary_cross_entropy_with_logits(model(imgs), gt)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return sum(losses) / len(losses)


def main(checkpoint_path):
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    imgs = torch.randn(64, 3, 8, 8)
    gt = (imgs.mean(1, keepdim=True) > 0).float()
    train_loader = DataLoader(TensorDataset(imgs, gt), batch_size=16, shuffle=True)
    model = build_model()
    model = torch.nn.DataParallel(model).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    history = []
    for epoch in range(5):
        history.append(train(train_loader, model, optimizer, device))
        state = dict(epoch=epoch + 1, iter=0, state_dict=model.state_dict(), optimizer=optimizer.state_dict())
        save_checkpoint(state, checkpoint_path)  # expect: GL304

    # test.py
    test_model = build_model().to(device)
    checkpoint = torch.load(osp.join(checkpoint_path, "checkpoint.pth.tar"), map_location=device)
    test_model.load_state_dict(checkpoint["state_dict"])
    return history


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        history = main(tmp)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": "cuda" if torch.cuda.is_available() else "cpu"}))
