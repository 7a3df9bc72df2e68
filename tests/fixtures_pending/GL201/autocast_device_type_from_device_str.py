# source: https://github.com/engichang1467/Open-Rig3R/issues/35
# scripts/train.py enters autocast with the device type derived from the run's device
# (`with autocast(device_type=str(device)):`) and no dtype, for training and for validation; on a
# GPU that is float16 autocast, and there is no GradScaler anywhere in the file, so small
# gradients underflow to zero (the report suggests bf16, or a scaler for fp16).
import json

import torch
import torch.nn as nn
from torch.amp import autocast
from torch.utils.data import DataLoader, TensorDataset


class MultiTaskLoss(nn.Module):
    def forward(self, outputs, targets):
        depth = nn.functional.mse_loss(outputs[:, :1], targets[:, :1])
        rays = 1 - nn.functional.cosine_similarity(outputs[:, 1:], targets[:, 1:], dim=1).mean()
        return depth + rays


def train(model, loader, optimizer, criterion, device):
    model.train()
    total = 0.0
    for images, targets in loader:
        images, targets = images.to(device), targets.to(device)
        optimizer.zero_grad()
        with autocast(device_type=str(device)):  # expect: GL201
            outputs = model(images)
            loss = criterion(outputs.float(), targets)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / len(loader)


@torch.no_grad()
def validate(model, loader, criterion, device):
    model.eval()
    total = 0.0
    for images, targets in loader:
        images, targets = images.to(device), targets.to(device)
        with autocast(device_type=str(device)):
            total += criterion(model(images).float(), targets).item()
    return total / len(loader)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
images = torch.randn(256, 12)
targets = torch.cat([images[:, :1] * 2, torch.tanh(images[:, 1:4])], dim=1)
train_loader = DataLoader(TensorDataset(images[:192], targets[:192]), batch_size=32, shuffle=True)
val_loader = DataLoader(TensorDataset(images[192:], targets[192:]), batch_size=32)
model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
criterion = MultiTaskLoss()
history = []
for epoch in range(6):
    history.append(train(model, train_loader, optimizer, criterion, device))
    print(f"epoch {epoch}: train {history[-1]:.4f} val {validate(model, val_loader, criterion, device):.4f}")
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
