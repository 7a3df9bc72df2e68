# source: https://github.com/QwenAudio/FunMusic/issues/28
# main() converts the model to fp16; the epoch loop lives in an executor function and the
# optimizer update in a helper, update_parameter_and_lr, which calls scaler.unscale_(optimizer)
# before clipping: with fp16 weights the gradients are fp16.
# fails-on-cuda: Attempting to unscale FP16 gradients
import json

import torch
import torch.nn as nn


def update_parameter_and_lr(model, optimizer, scheduler, scaler, clip=1.0):
    scaler.unscale_(optimizer)  # expect: GL207
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    scaler.step(optimizer)
    scaler.update()
    scheduler.step()
    optimizer.zero_grad()


def train_one_epoch(model, optimizer, scheduler, data, scaler, device, dtype):
    losses = []
    for x, y in data:
        x, y = x.to(device, dtype), y.to(device, dtype)
        loss = nn.functional.mse_loss(model(x).float(), y.float())
        scaler.scale(loss).backward()
        update_parameter_and_lr(model, optimizer, scheduler, scaler)
        losses.append(loss.item())
    return losses


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.float16
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
    model.half()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=100, gamma=0.5)
    scaler = torch.amp.GradScaler("cuda", enabled=torch.cuda.is_available())
    w = torch.randn(8, 1) * 0.5
    data = []
    for _ in range(16):
        x = torch.randn(32, 8)
        data.append((x, x @ w))
    losses = []
    for epoch in range(3):
        losses += train_one_epoch(model, optimizer, scheduler, data, scaler, device, dtype)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))


if __name__ == "__main__":
    main()
