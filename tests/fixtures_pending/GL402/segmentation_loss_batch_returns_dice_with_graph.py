# source: https://github.com/PacktPublishing/PyTorch-Computer-Vision-Cookbook/issues/11
# Chapter 6 (single-object segmentation): loss_batch(loss_func, output, target, opt) computes the
# BCE + dice loss, then `pred = torch.sigmoid(output); _, metric_b = dice_loss(pred, target)`
# with gradients on, steps the optimizer when one is given and returns `loss.item(), metric_b`;
# loss_epoch() adds each batch's `metric_b` to `running_metric`, a tensor that chains the graph of
# every training batch of the epoch (the report: CUDA out of memory after some epochs even with
# batch size 4; the author's answer: compute the metric under torch.no_grad()).
import copy
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class SegNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.conv_out = nn.Conv2d(8, 1, 1)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        return self.conv_out(x)


def dice_loss(pred, target, smooth=1e-5):
    intersection = (pred * target).sum(dim=(2, 3))
    union = pred.sum(dim=(2, 3)) + target.sum(dim=(2, 3))
    dice = 2.0 * (intersection + smooth) / (union + smooth)
    loss = 1.0 - dice
    return loss.sum(), dice.sum()


def loss_func(pred, target):
    bce = F.binary_cross_entropy_with_logits(pred, target, reduction="sum")
    pred = torch.sigmoid(pred)
    dlv, _ = dice_loss(pred, target)
    return bce + dlv


def loss_batch(loss_func, output, target, opt=None):
    loss = loss_func(output, target)
    pred = torch.sigmoid(output)
    _, metric_b = dice_loss(pred, target)
    if opt is not None:
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item(), metric_b


def loss_epoch(model, loss_func, dataset_dl, sanity_check=False, opt=None):
    running_loss = 0.0
    running_metric = 0.0
    len_data = len(dataset_dl.dataset)
    for xb, yb in dataset_dl:
        xb = xb.to(device)
        yb = yb.to(device)
        output = model(xb)
        loss_b, metric_b = loss_batch(loss_func, output, yb, opt)
        running_loss += loss_b
        if metric_b is not None:
            running_metric += metric_b  # expect: GL402
        if sanity_check is True:
            break
    loss = running_loss / float(len_data)
    metric = running_metric / float(len_data)
    return loss, metric


def train_val(model, params):
    opt = params["optimizer"]
    loss_history = {"train": [], "val": []}
    metric_history = {"train": [], "val": []}
    best_model_wts = copy.deepcopy(model.state_dict())
    best_loss = float("inf")
    for epoch in range(params["num_epochs"]):
        model.train()
        train_loss, train_metric = loss_epoch(model, params["loss_func"], params["train_dl"], params["sanity_check"], opt)
        loss_history["train"].append(train_loss)
        metric_history["train"].append(float(train_metric))
        model.eval()
        with torch.no_grad():
            val_loss, val_metric = loss_epoch(model, params["loss_func"], params["val_dl"], params["sanity_check"])
        loss_history["val"].append(val_loss)
        metric_history["val"].append(float(val_metric))
        if val_loss < best_loss:
            best_loss = val_loss
            best_model_wts = copy.deepcopy(model.state_dict())
        params["lr_scheduler"].step(val_loss)
    model.load_state_dict(best_model_wts)
    return model, loss_history, metric_history


if __name__ == "__main__":
    torch.manual_seed(0)
    images = torch.rand(48, 1, 8, 8)
    masks = (images > 0.5).float()
    train_dl = DataLoader(TensorDataset(images[:32], masks[:32]), batch_size=4, shuffle=True)
    val_dl = DataLoader(TensorDataset(images[32:], masks[32:]), batch_size=4)
    model = SegNet().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    lr_scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=20)
    params_train = {"num_epochs": 6, "optimizer": opt, "loss_func": loss_func, "train_dl": train_dl, "val_dl": val_dl,
                    "sanity_check": False, "lr_scheduler": lr_scheduler}
    model, loss_hist, metric_hist = train_val(model, params_train)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": loss_hist["train"][0], "last_loss": loss_hist["train"][-1], "device": device.type}))
