# source: https://github.com/ivadomed/ivadomed/issues/1062
# ivadomed's training loop: each batch is moved with the `cuda(input_var, cuda_available)` helper,
# then, when the config sets `mixup_alpha`, re-bound through `mixup(data, targets, alpha)`, a
# helper of the same package that draws `lambda_` with NumPy and makes
# `lambda_tensor = torch.FloatTensor([lambda_])` on the CPU before mixing it with the device
# batch: "Expected all tensors to be on the same device, but found at least two devices, cuda:0
# and cpu!" (a one-element tensor, not a 0-dim scalar, so no implicit transfer). PR #1063 makes
# the tensor on `data.device`.
# (A small encoder-decoder segmenter and a soft Dice loss on synthetic 16x16 images with square
# lesions; the config is a dict.)
# fails-on-cuda: Expected all tensors to be on the same device
import json

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def cuda(input_var, cuda_available=True, non_blocking=False):
    if cuda_available:
        return input_var.cuda(non_blocking=non_blocking)
    return input_var


def mixup(data, targets, alpha):
    indices = torch.randperm(data.size(0))
    data2 = data[indices]
    targets2 = targets[indices]
    lambda_ = np.random.beta(alpha, alpha)
    lambda_ = max(lambda_, 1 - lambda_)  # ensure lambda_ >= 0.5
    lambda_tensor = torch.FloatTensor([lambda_])
    data = data * lambda_tensor + data2 * (1 - lambda_tensor)  # expect: GL116
    targets = targets * lambda_tensor + targets2 * (1 - lambda_tensor)
    return data, targets


class DiceLoss(nn.Module):
    def __init__(self, smooth=1.0):
        super().__init__()
        self.smooth = smooth

    def forward(self, prediction, target):
        iflat = prediction.reshape(-1)
        tflat = target.reshape(-1)
        intersection = (iflat * tflat).sum()
        return -(2.0 * intersection + self.smooth) / (iflat.sum() + tflat.sum() + self.smooth)


class Unet(nn.Module):
    def __init__(self):
        super().__init__()
        self.down = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU())
        self.up = nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(16, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 1))

    def forward(self, x):
        return torch.sigmoid(self.up(self.down(x)))


def make_data(n, size=16, seed=0):
    rng = np.random.default_rng(seed)
    images = rng.normal(0, 0.2, (n, 1, size, size)).astype(np.float32)
    masks = np.zeros((n, 1, size, size), dtype=np.float32)
    for i in range(n):
        x0, y0 = rng.integers(0, size - 6, size=2)
        masks[i, 0, y0:y0 + 6, x0:x0 + 6] = 1.0
        images[i, 0, y0:y0 + 6, x0:x0 + 6] += 1.0
    return torch.from_numpy(images), torch.from_numpy(masks)


def train(model_params, training_params, cuda_available):
    images, masks = make_data(96)
    train_loader = DataLoader(TensorDataset(images, masks), batch_size=16, shuffle=True)
    model = Unet()
    if cuda_available:
        model.cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=training_params["lr"])
    loss_fn = DiceLoss()
    mixup_alpha = training_params["mixup_alpha"]
    losses = []
    for epoch in range(1, model_params["num_epochs"] + 1):
        model.train()
        for i, batch in enumerate(train_loader):
            input_samples, gt_samples = batch
            input_samples = cuda(input_samples, cuda_available)
            gt_samples = cuda(gt_samples, cuda_available, non_blocking=True)
            if mixup_alpha:
                input_samples, gt_samples = mixup(input_samples, gt_samples, mixup_alpha)
            preds = model(input_samples)
            loss = loss_fn(preds, gt_samples)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses


def main():
    torch.manual_seed(0)
    np.random.seed(0)
    cuda_available = torch.cuda.is_available()
    model_params = {"num_epochs": 6}
    training_params = {"lr": 0.01, "mixup_alpha": 1.0}
    losses = train(model_params, training_params, cuda_available)
    device = "cuda" if cuda_available else "cpu"
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": device}))


if __name__ == "__main__":
    main()
