"""GL403 on a training loop whose backward and step run inside a call of code the file does not
define (PRECISION24 #1, ZhendongWang6/Uformer train/train_denoise.py and train_motiondeblur.py).
The script evaluates once before training (`with torch.no_grad(): model_restoration.eval(); ...`),
so the training loop starts with the model in eval mode, and the loop's only gradient work is
`loss_scaler(loss, optimizer, parameters=model_restoration.parameters())` with timm's
`NativeScaler`, which runs `loss.backward()` and `optimizer.step()`. GL403 took the training loop
for an evaluation loop, with a safe fix that wraps it in `torch.no_grad()` and breaks the backward
pass. An optimizer handed to a call of unknown code now marks the loop as one that may train.
Look-alikes: an evaluation loop that only prints the optimizer, or hands the model to torch, is
still reported."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.nn as nn
from timm.utils import NativeScaler

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.1), nn.Linear(8, 8)).to(device)
optimizer = torch.optim.Adam(model.parameters())
criterion = nn.L1Loss()
loader = [(torch.randn(4, 8), torch.randn(4, 8)) for _ in range(4)]

with torch.no_grad():
    model.eval()
    for target, inp in loader:
        restored = model(inp.to(device))

loss_scaler = NativeScaler()
for epoch in range(2):
    for target, inp in loader:
        optimizer.zero_grad()
        target, inp = target.to(device), inp.to(device)
        restored = model(inp)
        loss = criterion(restored, target)
        STEP
'''


def _lines(step):
    return [f.line for f in check(TEXT.replace("STEP", step), {"GL403"}) if f.code == "GL403"]


def test_optimizer_handed_to_an_imported_scaler_is_a_training_step():
    assert _lines("loss_scaler(loss, optimizer, parameters=model.parameters())") == []


def test_optimizer_as_keyword_of_an_imported_helper_is_a_training_step():
    assert _lines("loss_scaler(loss, optimizer=optimizer)") == []


def test_printed_optimizer_is_no_training_step():
    assert _lines("print(optimizer, loss.item())") == [21]


def test_loop_without_the_optimizer_is_still_reported():
    assert _lines("loss_scaler(loss.item())") == [21]
