# source: https://github.com/victorchall/EveryDream2trainer/pull/175
# The trainer scales the loss and calls backward in the step loop, and steps the optimizer every
# grad_accum steps through an optimizer_step() helper that clips with --clip_grad_norm before
# scaler.step(); nothing unscales first, so the clip value acts on scaled gradients (users had
# to pass values like 1e5).
import argparse
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def optimizer_step(args, scaler, optimizer, unet):
    if args.clip_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(parameters=unet.parameters(), max_norm=args.clip_grad_norm)  # expect: GL202
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)


def main(args):
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    latents = torch.randn(256, 16)
    noise_target = latents[:, :8] * 0.5
    loader = DataLoader(TensorDataset(latents, noise_target), batch_size=16, shuffle=True)
    unet = nn.Sequential(nn.Linear(16, 32), nn.SiLU(), nn.Linear(32, 8)).to(device)
    optimizer = torch.optim.AdamW(unet.parameters(), lr=2e-3)
    use_amp = device.type == "cuda"
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    history = []
    step = 0
    for epoch in range(args.max_epochs):
        for batch, target in loader:
            batch, target = batch.to(device), target.to(device)
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
                model_pred = unet(batch)
            loss = nn.functional.mse_loss(model_pred.float(), target)
            scaler.scale(loss / args.grad_accum).backward()
            step += 1
            if step % args.grad_accum == 0:
                optimizer_step(args, scaler, optimizer, unet)
            history.append(loss.item())
    return history


parser = argparse.ArgumentParser()
parser.add_argument("--clip_grad_norm", type=float, default=1.0)
parser.add_argument("--grad_accum", type=int, default=2)
parser.add_argument("--max_epochs", type=int, default=4)
history = main(parser.parse_args([]))
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": "cuda" if torch.cuda.is_available() else "cpu"}))
