# source: https://github.com/huggingface/pytorch-image-models/blob/main/timm/utils/model_ema.py
# ModelEmaV2's docstring warns that it "is sensitive where it is initialized in the sequence of
# model init, GPU assignment and distributed training wrappers". Here the EMA wrapper is built
# before `model.to(device)`: its deep copy stays on the CPU, and the first update() mixes the CPU
# EMA tensors with the device weights in `self.decay * e + (1.0 - self.decay) * m`.
# fails-on-cuda: Expected all tensors to be on the same device
import json
from copy import deepcopy

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class ModelEmaV2(nn.Module):
    def __init__(self, model, decay=0.9, device=None):
        super().__init__()
        self.module = deepcopy(model)
        self.module.eval()
        self.decay = decay
        self.device = device
        if self.device is not None:
            self.module.to(device=device)

    def _update(self, model, update_fn):
        with torch.no_grad():
            for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
                if self.device is not None:
                    model_v = model_v.to(device=self.device)
                ema_v.copy_(update_fn(ema_v, model_v))

    def update(self, model):
        self._update(model, update_fn=lambda e, m: self.decay * e + (1.0 - self.decay) * m)  # expect: GL116


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
X = torch.randn(320, 10)
Y = (X[:, 0] - X[:, 2] > 0).long()
loader = DataLoader(TensorDataset(X[:256], Y[:256]), batch_size=32, shuffle=True)
val_loader = DataLoader(TensorDataset(X[256:], Y[256:]), batch_size=32)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))
model_ema = ModelEmaV2(model)
model.to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
history = []
for epoch in range(5):
    model.train()
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        model_ema.update(model)
        history.append(loss.item())
    correct = 0
    with torch.no_grad():
        for x, y in val_loader:
            x, y = x.to(device), y.to(device)
            correct += (model_ema.module(x).argmax(1) == y).sum().item()
    print(f"epoch {epoch}: ema acc {correct / 64:.3f}")
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(history[:4]) / 4, "last_loss": sum(history[-4:]) / 4, "device": device.type}))
