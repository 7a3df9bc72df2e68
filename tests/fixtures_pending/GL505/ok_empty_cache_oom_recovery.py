# source: https://github.com/facebookresearch/fairseq/blob/main/fairseq/trainer.py
# Hard negative: torch.cuda.empty_cache() in the step loop only inside the out-of-memory recovery
# path (skip the batch, free the cache), and once after training before evaluation.
import json

import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
w = torch.randn(8, 1)
losses = []
for step in range(50):
    x = torch.randn(64, 8)
    try:
        loss = nn.functional.mse_loss(model(x.to(device)), (x @ w).to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    except torch.cuda.OutOfMemoryError:
        print("| WARNING: ran out of memory, skipping batch")
        optimizer.zero_grad()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        continue

if torch.cuda.is_available():
    torch.cuda.empty_cache()
with torch.no_grad():
    print("eval", nn.functional.mse_loss(model(torch.randn(64, 8, device=device)), torch.zeros(64, 1, device=device)).item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
