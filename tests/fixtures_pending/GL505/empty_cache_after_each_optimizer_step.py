# source: https://github.com/inclusionAI/AReno/pull/515
# Real training-engine code: with gradient accumulation, the cache cleanup runs inside the
# `if stepped:` branch, i.e. after every optimizer step (the PR removed a ten-step cadence). On a
# GPU this returns the allocator's cached blocks every step and makes the next step re-allocate.
import json

import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
X = torch.randn(512, 16)
Y = X[:, :4].sum(1, keepdim=True)
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1)).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
accum_steps = 4
global_step = 0
losses = []
for micro_step in range(160):
    idx = torch.randint(0, 512, (16,))
    x, y = X[idx].to(device), Y[idx].to(device)
    loss = nn.functional.mse_loss(model(x), y) / accum_steps
    loss.backward()
    losses.append(loss.item() * accum_steps)
    stepped = (micro_step + 1) % accum_steps == 0
    if stepped:
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        global_step += 1
        if torch.cuda.is_available():
            torch.cuda.empty_cache()  # expect: GL505
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
