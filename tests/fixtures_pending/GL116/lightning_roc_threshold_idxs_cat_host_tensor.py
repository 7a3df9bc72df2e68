# source: https://github.com/Lightning-AI/pytorch-lightning/pull/2304
# PyTorch Lightning 0.8's functional classification metrics: _binary_clf_curve() appends the last
# index to the distinct-threshold indices with `torch.cat([..., torch.tensor([target.size(0) - 1])])`,
# made on the CPU; roc() and auroc() call it on predictions and targets living on the GPU ("roc
# metric (and auroc) errors when passed in CUDA tensors, due to torch.tensor construction without
# specifying device"; the PR pads with F.pad instead). The model's validation epoch end collects
# the scores and labels on the device and logs the AUROC.
# (A plain training script instead of a LightningModule; a small classifier on synthetic data.)
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


def _binary_clf_curve(pred, target, sample_weight=None, pos_label=1.0):
    if sample_weight is not None and not isinstance(sample_weight, torch.Tensor):
        sample_weight = torch.tensor(sample_weight, device=pred.device, dtype=torch.float)

    if pred.ndim > target.ndim:
        pred = pred[:, 0]
    desc_score_indices = torch.argsort(pred, descending=True)

    pred = pred[desc_score_indices]
    target = target[desc_score_indices]

    if sample_weight is not None:
        weight = sample_weight[desc_score_indices]
    else:
        weight = 1.0

    # pred typically has many tied values; keep the last index of each value
    distinct_value_indices = torch.where(pred[1:] - pred[:-1])[0]
    threshold_idxs = torch.cat([distinct_value_indices, torch.tensor([target.size(0) - 1])])  # expect: GL116

    target = (target == pos_label).to(torch.long)
    tps = torch.cumsum(target * weight, dim=0)[threshold_idxs]

    if sample_weight is not None:
        fps = torch.cumsum((1 - target) * weight, dim=0)[threshold_idxs]
    else:
        fps = 1 + threshold_idxs - tps

    return fps, tps, pred[threshold_idxs]


def roc(pred, target, sample_weight=None, pos_label=1.0):
    fps, tps, thresholds = _binary_clf_curve(pred=pred, target=target, sample_weight=sample_weight, pos_label=pos_label)

    # add an extra threshold position so that the curve starts at (0, 0)
    tps = torch.cat([torch.zeros(1, dtype=tps.dtype, device=tps.device), tps])
    fps = torch.cat([torch.zeros(1, dtype=fps.dtype, device=fps.device), fps])
    thresholds = torch.cat([thresholds[0][None] + 1, thresholds])

    fpr = fps / fps[-1]
    tpr = tps / tps[-1]
    return fpr, tpr, thresholds


def auc(x, y, reorder=True):
    direction = 1.0
    if reorder:
        x, x_idx = torch.sort(x)
        y = y[x_idx]
    else:
        dx = x[1:] - x[:-1]
        if (dx < 0).any():
            direction = -1.0
    return direction * torch.trapz(y, x)


def auroc(pred, target, sample_weight=None, pos_label=1.0):
    fpr, tpr, _ = roc(pred=pred, target=target, sample_weight=sample_weight, pos_label=pos_label)
    return auc(fpr, tpr)


class Classifier(nn.Module):
    def __init__(self, n_features=10):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_features, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


def validation_epoch_end(outputs):
    scores = torch.cat([o["scores"] for o in outputs])
    labels = torch.cat([o["labels"] for o in outputs])
    return {"val_auroc": auroc(scores, labels).item()}


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x = torch.randn(320, 10)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).long()
    train_x, train_y, val_x, val_y = x[:256], y[:256], x[256:], y[256:]
    model = Classifier().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for epoch in range(4):
        model.train()
        for i in range(0, 256, 32):
            xb, yb = train_x[i : i + 32].to(device), train_y[i : i + 32].to(device)
            loss = F.binary_cross_entropy_with_logits(model(xb), yb.float())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        model.eval()
        outputs = []
        with torch.no_grad():
            for i in range(0, 64, 32):
                xb, yb = val_x[i : i + 32].to(device), val_y[i : i + 32].to(device)
                outputs.append({"scores": torch.sigmoid(model(xb)), "labels": yb})
        print(f"epoch {epoch}:", validation_epoch_end(outputs))
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": device.type}))


if __name__ == "__main__":
    main()
