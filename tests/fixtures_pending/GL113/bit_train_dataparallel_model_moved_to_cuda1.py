# source: https://github.com/google-research/big_transfer/issues/73
# BiT's bit_pytorch/train.py picks `device = torch.device("cuda" if torch.cuda.is_available() else
# "cpu")`, logs "Going to train on {device}", wraps the model with `torch.nn.DataParallel(model)`
# ("Moving model onto all GPUs") and then moves it with `model.to(device)`. The reporter's log shows
# "Going to train on cuda:1": with the device set to the second GPU, DataParallel (all visible GPUs,
# device_ids[0] == 0) fails at the first step: "module must have its parameters and buffers on device
# cuda:0 (device_ids[0]) but found one of them on device: cuda:1". Here: a small ResNet-like head
# fine-tuned on synthetic 32x32 images with the script's SGD + mixup-free loop.
# (Like the report, the script needs two GPUs: `gpulint run --gpus 2 file.py` fails with the error
# above; on the CPU it trains.)
# fixture: static (written for a machine with two GPUs: training runs on cuda:1; checked by hand on the CPU and with `gpulint run --gpus 2`)
# fails-on-cuda: module must have its parameters and buffers on device cuda:0 (device_ids[0])
import json
import logging

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

logging.basicConfig(level=logging.INFO)
logger = logging.getLogger("bit_common")


class ResNetV2(nn.Module):
    def __init__(self, head_size, width=16):
        super().__init__()
        self.root = nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.GroupNorm(4, width), nn.ReLU())
        self.body = nn.Sequential(nn.Conv2d(width, width, 3, stride=2, padding=1), nn.GroupNorm(4, width), nn.ReLU())
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(width, head_size, 1))

    def forward(self, x):
        return self.head(self.body(self.root(x)))[..., 0, 0]


def mktrainval(n=256, classes=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, 32, 32, generator=g)
    y = (x[:, 0].mean((1, 2)) * 4 + classes / 2).clamp(0, classes - 1).long()
    train_set = TensorDataset(x[:192], y[:192])
    valid_set = TensorDataset(x[192:], y[192:])
    return train_set, valid_set, DataLoader(train_set, batch_size=32, shuffle=True, generator=g), DataLoader(valid_set, batch_size=64)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda:1" if torch.cuda.is_available() else "cpu")  # expect: GL113
    logger.info(f"Going to train on {device}")
    train_set, valid_set, train_loader, valid_loader = mktrainval()
    model = ResNetV2(head_size=10)
    logger.info("Moving model onto all GPUs")
    model = torch.nn.DataParallel(model)
    optim = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    model = model.to(device)
    optim.zero_grad()
    model.train()
    cri = torch.nn.CrossEntropyLoss().to(device)
    losses = []
    for epoch in range(6):
        for x, y in train_loader:
            x = x.to(device, non_blocking=True)
            y = y.to(device, non_blocking=True)
            logits = model(x)
            c = cri(logits, y)
            c.backward()
            optim.step()
            optim.zero_grad()
            losses.append(c.item())
    model.eval()
    with torch.no_grad():
        correct = sum((model(x.to(device)).argmax(1).cpu() == y).sum().item() for x, y in valid_loader)
    logger.info(f"Validation accuracy {correct / len(valid_set):.2f}")
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))


if __name__ == "__main__":
    main()
