# source: https://github.com/NCAR/miles-credit/pull/141 (a look-alike of its Trainer)
# The Trainer keeps the model it is given (`self.model = model`) and moves each batch to
# `self.device`; the script builds the Trainer first and then moves the model in place with the
# statement `model.to(trainer.device)` (Module.to moves the same object the Trainer holds). Correct
# code: GL112 must stay silent (it reports `self.model(x)` as a never-moved model today).
import json

import torch
import torch.nn as nn
from torch.amp import GradScaler


class Trainer:
    def __init__(self, model, rank, module=False):
        self.model = model
        self.rank = rank
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def train_one_epoch(self, epoch, conf, trainloader, optimizer, criterion, scaler, scheduler, metrics):
        grad_accum_every = conf["trainer"]["grad_accum_every"]
        grad_max_norm = conf["trainer"]["grad_max_norm"]
        amp = conf["trainer"]["amp"]
        self.model.train()
        results_dict = {"train_loss": []}
        for i, batch in enumerate(trainloader):
            x, y = batch["x"].to(self.device), batch["y"].to(self.device)
            with torch.autocast(device_type=self.device.type, enabled=amp):
                y_pred = self.model(x)
                loss = criterion(y.to(y_pred.dtype), y_pred).mean()
            scaler.scale(loss / grad_accum_every).backward()
            scaler.unscale_(optimizer)
            if grad_max_norm > 0:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm=grad_max_norm)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
            results_dict["train_loss"].append(loss.item())
        return results_dict


torch.manual_seed(0)
conf = {"trainer": {"grad_accum_every": 1, "grad_max_norm": 1.0, "amp": True}}
model = nn.Sequential(nn.Linear(10, 32), nn.GELU(), nn.Linear(32, 10))
trainer = Trainer(model, rank=0)
model.to(trainer.device)
x = torch.randn(64, 10)
trainloader = [{"x": x[i:i + 16], "y": torch.roll(x[i:i + 16], 1, dims=1)} for i in range(0, 64, 16)]
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
scaler = GradScaler(trainer.device.type, enabled=conf["trainer"]["amp"])
history = []
for epoch in range(10):
    history += trainer.train_one_epoch(epoch, conf, trainloader, optimizer, nn.MSELoss(reduction="none"), scaler, None, None)["train_loss"]
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": trainer.device.type}))
