# source: https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html
# Hard negative: the model keeps fp32 weights; fp16 comes from autocast, the GradScaler unscales
# fp32 gradients before clipping; a separate half() copy is used only for inference.
import copy
import json

import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_amp = device.type == "cuda"
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
w = torch.randn(8, 1) * 0.5
losses = []
for step in range(60):
    x = torch.randn(32, 8, device=device)
    with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
        loss = nn.functional.mse_loss(model(x).float(), x @ w.to(device))
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    losses.append(loss.item())
if use_amp:
    deploy = copy.deepcopy(model).half().eval()
    with torch.no_grad():
        print("deploy", deploy(torch.randn(4, 8, device=device).half()).dtype)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
