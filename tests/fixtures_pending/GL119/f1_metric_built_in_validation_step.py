# source: https://github.com/Lightning-AI/torchmetrics/issues/340
# The reporter builds the F1 metric inside validation_step and calls it at once:
# `F1(num_classes=...)(preds, y)`. The model and the batch are on the GPU; the fresh metric's
# state tensors are on the CPU. Rebuilt as a plain trainer class with the same method layout.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn


class F1Score(nn.Module):
    """Macro F1 with per-class stat buffers (the torchmetrics layout)."""

    def __init__(self, num_classes):
        super().__init__()
        self.num_classes = num_classes
        self.register_buffer("tp", torch.zeros(num_classes))
        self.register_buffer("fp", torch.zeros(num_classes))
        self.register_buffer("fn", torch.zeros(num_classes))

    def update(self, preds, target):
        for c in range(self.num_classes):
            self.tp[c] += ((preds == c) & (target == c)).sum()
            self.fp[c] += ((preds == c) & (target != c)).sum()
            self.fn[c] += ((preds != c) & (target == c)).sum()

    def compute(self):
        f1 = 2 * self.tp / (2 * self.tp + self.fp + self.fn).clamp(min=1)
        return f1.mean()

    def forward(self, preds, target):
        self.update(preds, target)
        return self.compute()


class ImageClassify:
    def __init__(self, num_classes, device):
        self.num_classes = num_classes
        self.device = device
        self.model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, num_classes)).to(device)
        self.loss_fn = nn.CrossEntropyLoss()
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-2)

    def training_step(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def validation_step(self, x, y):
        with torch.no_grad():
            logits = self.model(x)
        preds = torch.argmax(logits, dim=1)
        f1 = F1Score(num_classes=self.num_classes)(preds, y)  # expect: GL119
        return f1.item()


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
X = torch.randn(512, 12)
Y = X[:, :3].argmax(dim=1)
task = ImageClassify(3, device)
losses = []
for epoch in range(3):
    for i in range(0, 448, 32):
        losses.append(task.training_step(X[i : i + 32].to(device), Y[i : i + 32].to(device)))
    print("val_f1", task.validation_step(X[448:].to(device), Y[448:].to(device)))
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
