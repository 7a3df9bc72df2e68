# source: https://github.com/huggingface/pytorch-image-models/issues/2127
# An EMA helper in the ModelEmaV3 mould: a deep copy of the model, moved to `device` when one is
# given (the reporter keeps the average on the CPU to save GPU memory), updated after every step
# by lerping its state towards the live model's. The live model is on the GPU, so the lerp mixes
# host and device tensors.
# fails-on-cuda: Expected all tensors to be on the same device
import json
from copy import deepcopy

import torch
import torch.nn as nn


class ModelEma(nn.Module):
    def __init__(self, model, decay=0.9, device=None):
        super().__init__()
        self.module = deepcopy(model)
        self.module.eval()
        self.decay = decay
        self.device = device
        if self.device is not None:
            self.module.to(device=device)

    @torch.no_grad()
    def update(self, model):
        for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
            if ema_v.is_floating_point():
                ema_v.lerp_(model_v, weight=1.0 - self.decay)  # expect: GL116
            else:
                ema_v.copy_(model_v)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2)).to(device)
model_ema = ModelEma(model, decay=0.9, device="cpu")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()
X = torch.randn(64, 6)
Y = (X[:, 0] > 0).long()
losses = []
for step in range(8):
    x, y = X.to(device), Y.to(device)
    loss = criterion(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    model_ema.update(model)
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
