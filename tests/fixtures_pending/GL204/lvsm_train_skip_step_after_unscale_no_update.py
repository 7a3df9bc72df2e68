# source: https://github.com/Haian-Jin/LVSM/pull/19
# train.py (a top-level `while cur_train_step <= total_train_steps:` loop) unscales the gradients
# with `scaler.unscale_(optimizer)`, clips them, and skips the optimizer step when the clipped norm
# is too large; `scaler.update()` was called only together with `scaler.step(optimizer)` under
# `if not skip_optimizer_step:`. After a skipped step the next iteration's unscale_ raises
# "unscale_() has already been called on this optimizer since the last update()". The PR calls
# scaler.update() whenever gradients were unscaled, stepped or not.
# fails-on-cuda: unscale_() has already been called on this optimizer since the last update()
import json

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_amp = device.type == "cuda"
grad_accum_steps = 1
grad_clip_norm = 1.0
allowed_gradnorm_factor = 5
total_train_steps = 40

model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 16)).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
lr_scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
optim_param_list = list(model.parameters())

inputs = torch.randn(64, 16)
targets = inputs.flip(1)
x = inputs.to(device)
# the third batch has a huge target: its gradient norm is far above the allowed norm
big = torch.zeros(64, 16)
big[:8] = 1e4

cur_train_step = 0
losses = []
while cur_train_step <= total_train_steps:
    y = (targets + (big if cur_train_step == 2 else 0)).to(device)
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=use_amp):
        loss = F.mse_loss(model(x), y)
    scaler.scale(loss / grad_accum_steps).backward()
    update_grads = (cur_train_step + 1) % grad_accum_steps == 0 or cur_train_step == total_train_steps
    cur_train_step += 1

    skip_optimizer_step = False
    if torch.isnan(loss) or torch.isinf(loss):
        skip_optimizer_step = True

    if update_grads and (not skip_optimizer_step):
        scaler.unscale_(optimizer)  # expect: GL204
        total_grad_norm = torch.nn.utils.clip_grad_norm_(optim_param_list, max_norm=grad_clip_norm).item()
        allowed_gradnorm = grad_clip_norm * allowed_gradnorm_factor
        if total_grad_norm > allowed_gradnorm:
            skip_optimizer_step = True
            print(f"WARNING: step {cur_train_step} grad norm too large {total_grad_norm} > {allowed_gradnorm}, skipping optimizer step")

        if not skip_optimizer_step:
            scaler.step(optimizer)
            scaler.update()

        lr_scheduler.step()
        optimizer.zero_grad(set_to_none=True)
    if cur_train_step != 3:
        losses.append(loss.item())

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
