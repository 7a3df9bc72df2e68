# source: https://github.com/henryhungle/MTN/issues/7
# train.py: the training script runs `run_epoch(train_data, model, SimpleLossCompute(generator,
# criterion, opt=model_opt))` for training and, after `model.eval()`, the same run_epoch(...) on the
# validation data with a loss compute that has no optimizer; the validation forward is not wrapped
# in torch.no_grad(), so it builds a graph it never uses ("Require gradient false in eval mode"; the
# author wrapped the eval part in torch.no_grad()).
import json

import torch
import torch.nn as nn


class SimpleLossCompute:
    def __init__(self, criterion, opt=None):
        self.criterion = criterion
        self.opt = opt

    def __call__(self, out, target):
        loss = self.criterion(out, target)
        if self.opt is not None:
            loss.backward()
            self.opt.step()
            self.opt.zero_grad()
        return loss.item()


def run_epoch(data, model, loss_compute, device):
    total_loss = 0.0
    for src, tgt in data:
        src, tgt = src.to(device), tgt.to(device)
        out = model(src)
        total_loss += loss_compute(out, tgt)
    return total_loss / len(data)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 3)).to(device)
criterion = nn.CrossEntropyLoss()
model_opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(112, 12)
y = x[:, :3].argmax(dim=1)
train_data = [(x[i:i + 16], y[i:i + 16]) for i in range(0, 80, 16)]
valid_data = [(x[80:96], y[80:96]), (x[96:], y[96:])]
history = []
for epoch in range(8):
    model.train()
    train_loss = run_epoch(train_data, model, SimpleLossCompute(criterion, opt=model_opt), device)
    model.eval()
    valid_loss = run_epoch(valid_data, model, SimpleLossCompute(criterion, opt=None), device)  # expect: GL403
    history.append(train_loss)
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
