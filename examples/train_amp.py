"""Mixed-precision training written against the old torch.cuda.amp API."""
import torch
import torch.nn as nn
from torch.cuda.amp import GradScaler, autocast
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
data = TensorDataset(torch.randn(2048, 32), torch.randint(0, 4, (2048,)))
loader = DataLoader(data, batch_size=128, shuffle=True)

model = nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 4)).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
scaler = GradScaler()
criterion = nn.CrossEntropyLoss()

for epoch in range(3):
    for x, y in loader:
        x.to(device)
        y = y.to(device)
        optimizer.zero_grad()
        with autocast():
            loss = criterion(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
