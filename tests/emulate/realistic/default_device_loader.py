"""A script that sets the default device to CUDA and shuffles with a DataLoader (CUDA generator)."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.set_default_device("cuda")
torch.manual_seed(0)
features, labels = torch.randn(64, 6), torch.randint(0, 2, (64,))
dataset = TensorDataset(features, labels)
loader = DataLoader(dataset, batch_size=16, shuffle=True, generator=torch.Generator(device="cuda"))
model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 2))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(3):
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.4f} on {x.device}")
