# source: https://github.com/swz30/MPRNet/issues/128
# A multi-stage restoration network returns one image per stage; the training loop computes the
# loss at each stage with `np.sum([criterion(restored[j], target) for j in range(len(restored))])`.
# NumPy converts every loss tensor to an array, which fails for tensors on the GPU ("can't convert
# cuda:0 device type tensor to numpy"); the fix in the thread is torch.sum(torch.stack([...])).
# Gradients are cleared with `param.grad = None` over the parameters.
# fails-on-cuda: can't convert cuda:0 device type tensor to numpy
import json

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class CharbonnierLoss(nn.Module):
    def __init__(self, eps=1e-3):
        super().__init__()
        self.eps = eps

    def forward(self, x, y):
        diff = x - y
        return torch.mean(torch.sqrt(diff * diff + self.eps * self.eps))


class MPRNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stage1 = nn.Conv2d(3, 3, 3, padding=1)
        self.stage2 = nn.Conv2d(3, 3, 3, padding=1)

    def forward(self, x):
        s1 = x + self.stage1(x)
        s2 = s1 + self.stage2(s1)
        return [s2, s1]


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
clean = torch.rand(64, 3, 8, 8)
noisy = clean + 0.1 * torch.randn_like(clean)
train_loader = DataLoader(TensorDataset(clean, noisy), batch_size=16, shuffle=True)
model_restoration = MPRNet().to(device)
optimizer = torch.optim.Adam(model_restoration.parameters(), lr=2e-3)
criterion_char = CharbonnierLoss()
history = []
for epoch in range(1, 6):
    model_restoration.train()
    epoch_loss = 0
    for i, data in enumerate(train_loader, 0):
        for param in model_restoration.parameters():
            param.grad = None
        target = data[0].to(device)
        input_ = data[1].to(device)
        restored = model_restoration(input_)
        loss = np.sum([criterion_char(restored[j], target) for j in range(len(restored))])  # expect: GL109
        loss.backward()
        optimizer.step()
        epoch_loss += loss.item()
    history.append(epoch_loss / len(train_loader))
    print(f"epoch {epoch}: {history[-1]:.4f}")

print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
