# source: https://github.com/swz30/MPRNet/issues/128
# Hard negative (GL112): the thread's fixed training loop. The Charbonnier loss is an nn.Module of
# the file with no parameters and no buffers (only a float epsilon); it is never moved, and it
# does not need to be: it has nothing to move. The stage losses are summed with
# torch.sum(torch.stack([...])). Gradients are cleared with `param.grad = None`.
import json

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
        loss = torch.sum(torch.stack([criterion_char(restored[j], target) for j in range(len(restored))]))
        loss.backward()
        optimizer.step()
        epoch_loss += loss.item()
    history.append(epoch_loss / len(train_loader))
    print(f"epoch {epoch}: {history[-1]:.4f}")

print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
