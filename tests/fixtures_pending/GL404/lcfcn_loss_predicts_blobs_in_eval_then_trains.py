# source: https://github.com/ServiceNow/LCFCN/issues/20
# losses.py `lc_loss(model, batch)`: it calls `model.train()`, then `get_blob_dict(model, batch)`,
# which runs `model.predict(batch, method="blobs")`; `BaseModel.predict` is decorated with
# `@torch.no_grad()` and starts with `self.eval()`. Back in `lc_loss` the image/point losses are
# computed with a second forward pass and backpropagated by `utils.fit`, so every training step
# after the first prediction runs with BatchNorm (and dropout) in eval mode. The maintainer
# agreed it is not intentional.
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class BaseModel(nn.Module):
    def __init__(self, n_classes):
        super().__init__()
        self.trained_images = set()
        self.n_classes = n_classes

    @torch.no_grad()
    def predict(self, batch, method="probs"):
        self.eval()
        images = batch["images"].to(next(self.parameters()).device)
        pred_mask = self(images).max(1)[1].squeeze().cpu().numpy()
        if method == "counts":
            return np.array([[(pred_mask == c).sum() > 0 for c in range(1, self.n_classes)]], dtype=float)
        blobs = np.zeros((self.n_classes - 1,) + pred_mask.shape, int)
        for category_id in np.unique(pred_mask):
            if category_id == 0:
                continue
            blobs[category_id - 1] = (pred_mask == category_id).astype(int)
        return blobs[None]


class ResFCN(BaseModel):
    def __init__(self, n_classes):
        super().__init__(n_classes)
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Dropout2d(0.2))
        self.score = nn.Conv2d(8, n_classes, 1)

    def forward(self, x):
        return self.score(self.features(x))


def get_blob_dict(model, batch):
    blobs = model.predict(batch, method="blobs").squeeze(0)
    points = batch["points"].cpu().numpy().squeeze(0)
    n_fp = int(sum(((blobs[l] > 0) & (points != l + 1)).sum() > 0 for l in range(blobs.shape[0])))
    return {"blobs": blobs, "n_fp": n_fp}


def lc_loss(model, batch):
    model.train()
    N = batch["images"].size(0)
    blob_dict = get_blob_dict(model, batch)  # expect: GL404
    device = next(model.parameters()).device
    images = batch["images"].to(device)
    points = batch["points"].to(device)
    counts = batch["counts"].to(device)

    O = model(images)
    S = F.softmax(O, 1)
    S_log = F.log_softmax(O, 1)
    # image loss: is each class present anywhere
    Smax = S.flatten(2).max(2)[0][:, 1:]
    loss = F.binary_cross_entropy(Smax, (counts > 0).float(), reduction="sum")
    # point loss
    loss += F.nll_loss(S_log, points, ignore_index=0, reduction="sum")
    if blob_dict["n_fp"] > 0:
        loss += 0.1 * F.nll_loss(S_log, torch.zeros_like(points), reduction="mean")
    model.trained_images.add(batch["image_path"][0])
    return loss / N


def fit(model, dataloader, opt, loss_function, epoch):
    model.train()
    loss_sum = 0.0
    for i, batch in enumerate(dataloader):
        opt.zero_grad()
        loss = loss_function(model, batch)
        loss.backward()
        opt.step()
        loss_sum += loss.item()
    return {"loss": loss_sum / len(dataloader), "epoch": epoch}


class PointsDataset(Dataset):
    def __init__(self, n=16, n_classes=3, size=10):
        g = torch.Generator().manual_seed(0)
        self.images = torch.randn(n, 3, size, size, generator=g)
        self.points = torch.zeros(n, size, size, dtype=torch.long)
        for i in range(n):
            c = 1 + i % (n_classes - 1)
            self.images[i, c] += 2.0
            self.points[i, (i * 5) % size, (i * 3) % size] = c
        self.counts = torch.stack([torch.bincount(p.flatten(), minlength=n_classes)[1:] for p in self.points]).float()

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return {"images": self.images[i], "points": self.points[i], "counts": self.counts[i], "image_path": f"img_{i}.jpg"}


if __name__ == "__main__":
    torch.manual_seed(1)
    np.random.seed(1)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    trainloader = DataLoader(PointsDataset(), batch_size=1, shuffle=True)
    model = ResFCN(3).to(device)
    opt = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=1e-2, weight_decay=0.0005)
    history = []
    for epoch in range(1, 5):
        train_dict = fit(model, trainloader, opt, loss_function=lc_loss, epoch=epoch)
        history.append(train_dict["loss"])
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
