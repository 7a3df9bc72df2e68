"""Lazy modules moved to the GPU before the first batch, torch.compile(backend="aot_eager"), memory
settings, and metrics taken back to the host with .cpu().numpy()."""
import numpy as np
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
if device.type == "cuda":
    torch.cuda.set_per_process_memory_fraction(0.9)
    print("allocator", torch.cuda.get_allocator_backend())
model = nn.Sequential(nn.LazyLinear(32), nn.ReLU(), nn.LazyLinear(3)).to(device)
model(torch.zeros(1, 10, device=device))  # materialize
model = torch.compile(model, backend="aot_eager")
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
preds_all = []
for step in range(4):
    x, y = torch.randn(16, 10, device=device), torch.randint(0, 3, (16,), device=device)
    logits = model(x)
    loss = nn.functional.cross_entropy(logits, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    preds_all.append(logits.argmax(1).detach().cpu().numpy())
    print(f"step {step} loss {loss:.4f}")
print("predictions", np.concatenate(preds_all).shape)
